"""The relations a compiled plan reads in place of its tables, built once per engine.

Owns: ``Relations``: for each metadata table an engine binds, its typed relation (what a
plan reads the table as: ``dpsql.plan.rewrite.typed_relation``, or a server's own) and its
dry-run relation (one row of NULLs, and on a server one of ordinary values), built on
first use; and the dry run's first CTEs as text, rendered once per set of tables. They
depend on the metadata and the stored column types alone, never on a query, so keeping
them changes no plan; rebuilding and rendering them for every new query was a fixed cost
per query (docs/performance.md, "Fixed cost per query, fifth round"). Compiling lowers
the typed relations in place, so each query gets copies.
"""
from __future__ import annotations

import threading

from ..plan.rewrite import typed_name

MAX_HEADS = 256
"""Sets of tables whose dry-run CTEs are kept as text (a join reads several)."""


class Relations:
    """One engine's typed and dry-run relations, per metadata table it binds."""

    def __init__(self, metadata, typed, dry, dialect) -> None:
        self._known = {id(t): t for t in metadata.tables.values()}
        self._typed, self._dry, self._dialect = typed, dry, dialect
        self._built: dict = {}        # id(table) -> (typed SELECT, dry-run SELECT)
        self._heads: dict = {}        # ids of a plan's tables -> the dry run's first CTEs
        self._lock = threading.Lock()

    def of(self, tables) -> tuple:
        """(name -> typed relation, the caller's copy; name -> dry-run relation, which
        the caller must copy before changing; the dry run's first CTEs as text, or None)
        of a plan reading ``tables``."""
        if any(self._known.get(id(t)) is not t for t in tables):
            # Not this engine's metadata table: built for this query alone.
            return ({typed_name(t): self._typed(t) for t in tables},
                    {typed_name(t): self._dry(t) for t in tables}, None)
        typed = self.typed(tables)
        nulls = {typed_name(t): self._built_for(t)[1] for t in tables}
        key = tuple(id(t) for t in tables)
        heads = self._heads.get(key)
        if heads is None:
            heads = self._dialect.stand_in(nulls)
            with self._lock:
                if len(self._heads) < MAX_HEADS:
                    self._heads[key] = heads
        return typed, nulls, heads

    def typed(self, tables) -> dict:
        """Name -> typed relation of each of ``tables``, the caller's copy."""
        if any(self._known.get(id(t)) is not t for t in tables):
            return {typed_name(t): self._typed(t) for t in tables}
        return {typed_name(t): self._built_for(t)[0].copy() for t in tables}

    def _built_for(self, table) -> tuple:
        found = self._built.get(id(table))
        if found is None:
            found = (self._typed(table), self._dry(table))
            with self._lock:
                self._built[id(table)] = found
        return found
