"""A session's bounded caches: plans, releases and public reads kept for queries asked again.

Owns: ``Bounded``, a least-recently-stored cache of at most ``size`` entries and, when a
``weigh(key, value)`` is given, at most ``limit`` of their weight in all (it always keeps the
newest entry; an entry's weight is taken when it is stored). ``dpsql serve`` keeps an analyst's session for months: a cache without bounds grew
the server by 7 MB a query (the eleventh review of issue 33). The caller holds its lock.
``PublicReads``: the planner's reads of public tables, kept for the session (its own lock).
"""
from __future__ import annotations

import threading
import time
from collections import OrderedDict
from typing import Callable

PUBLIC_READS = 64
PUBLIC_CELLS = 200_000
"""Public reads kept per session: at most 64 queries and 200,000 cells of their rows in all
(a read of a lookup's values is up to 32 columns of 1,000 values: one larger than the whole
limit is read again each time, not kept)."""
PUBLIC_READ_S = 60.0
"""How long a public read is kept: a change the owner makes to a public table is seen by
every query planned from a minute later (``dpsql serve`` keeps a session for months)."""


class Bounded:
    def __init__(self, size: int, weigh: Callable | None = None, limit: float = float("inf"),
                 evicted: Callable | None = None) -> None:
        self.size, self.weigh, self.limit, self.evicted = size, weigh, limit, evicted
        self._items: OrderedDict = OrderedDict()
        self._weights: dict = {}
        self._weight = 0

    def get(self, key):
        return self._items.get(key)

    def clear(self) -> None:
        self._items.clear()
        self._weights.clear()
        self._weight = 0

    def __len__(self) -> int:
        return len(self._items)

    def put(self, key, value) -> None:
        if key in self._items:
            self._weight -= self._weights.pop(key)
            del self._items[key]
        self._items[key] = value
        self._weights[key] = self.weigh(key, value) if self.weigh is not None else 0
        self._weight += self._weights[key]
        while len(self._items) > 1 and (len(self._items) > self.size or self._weight > self.limit):
            old_key, old = self._items.popitem(last=False)
            self._weight -= self._weights.pop(old_key)
            if self.evicted is not None:
                self.evicted(old)


class PublicReads:
    """``read(select, tables)`` (an engine's ``public_rows``), each distinct read done once
    per session and minute (``PUBLIC_READ_S``). The planner reads a public table's
    statistics, values and key repetitions for every plan that touches it: on Spark each read is a job (0.1-0.3 s), and a session's
    queries over one star schema read the same lookups again and again. Kept as long as the
    session's plans are at most, and as safe: every bound taken from public data is enforced
    in the plan (``dpsql.plan.resolve.read_public``, ``plan.joins``), so a public table
    changed after it was read makes answers miss its new rows, never a sensitivity too low
    (docs/metadata.md, "Several tables")."""

    def __init__(self, read: Callable) -> None:
        self.read = read
        self._rows = Bounded(PUBLIC_READS, weigh=_cells, limit=PUBLIC_CELLS)
        self._since = time.monotonic()    # every kept read is dropped together: a plan's
        self._lock = threading.Lock()     # reads of one table come from one moment

    def __call__(self, select, tables) -> list:
        key = (select.sql(), tuple(t.full_name for t in tables))
        with self._lock:
            if time.monotonic() - self._since >= PUBLIC_READ_S:
                self._rows.clear()
                self._since = time.monotonic()
            kept = self._rows.get(key)
        if kept is not None:
            return list(kept)
        rows = tuple(tuple(row) for row in self.read(select, tables))
        if _cells(key, rows) <= PUBLIC_CELLS:
            with self._lock:
                self._rows.put(key, rows)
        return list(rows)


def _cells(key, rows) -> int:
    return len(key[0]) + sum(len(row) for row in rows)
