"""Step 7: post-processing of noisy statistics, on a connection that never sees data.

Owns: evaluating the analyst's SELECT list, HAVING, ORDER BY and LIMIT over the noisy
table (one row per released group). Whatever engine holds the data, this runs on a
private in-memory DuckDB connection with no file access, no extensions and no
settings changes: it can reach noisy values only.
"""
from __future__ import annotations

import threading

import duckdb
import numpy as np
from sqlglot import exp

from ..errors import QueryError
from ..plan import NOISY_TABLE

DIALECT = "duckdb"


def render(tree: exp.Expression, pretty: bool = False) -> str:
    """The post-processing query as this connection runs it."""
    return tree.sql(DIALECT, pretty=pretty)


_DATABASE = None
_DATABASE_LOCK = threading.Lock()


def _database():
    """The process's post-processing database, made on first use: in memory, one thread
    (its tables have one row per group, and thread hand-offs cost more than they save:
    docs/performance.md), no file access, settings locked. Opening a database costs
    10-18 ms; a connection to it (a cursor) 3 microseconds, so each session gets its own
    connection to this one database. A table registered on one connection is not
    visible on another."""
    global _DATABASE
    with _DATABASE_LOCK:
        if _DATABASE is None:
            _DATABASE = duckdb.connect(config={"enable_external_access": False, "threads": 1,
                                               "lock_configuration": True})
        return _DATABASE


class PostProcessor:
    """One session's post-processing connection."""

    def __init__(self) -> None:
        self._con = _database().cursor()
        self._lock = threading.Lock()

    def run(self, sql: str, noisy: dict) -> dict:
        """``noisy``: column name -> numpy array. Registering a dict of arrays costs
        about a third of registering a DataFrame; results come back as arrays too."""
        with self._lock:
            self._con.register(NOISY_TABLE, noisy)
            try:
                return {name: _plain(values) for name, values in
                        self._con.execute(sql).fetchnumpy().items()}
            except duckdb.Error as err:
                raise QueryError(f"post-processing failed: {_first_line(err)}") from None
            finally:
                self._con.unregister(NOISY_TABLE)


def _plain(values):
    """A masked array (DuckDB's NULLs) as a plain one: NaN for floats, None otherwise."""
    if isinstance(values, np.ma.MaskedArray):
        if not values.mask.any():
            return values.data
        if values.dtype.kind == "f":
            return values.filled(np.nan)
        out = values.data.astype(object)
        out[values.mask] = None
        return out
    return values


def _first_line(err: Exception) -> str:
    return str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
