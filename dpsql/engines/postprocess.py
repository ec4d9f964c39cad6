"""Step 7: post-processing of noisy statistics, on a connection that never sees data.

Owns: evaluating the analyst's SELECT list, HAVING, ORDER BY and LIMIT over the noisy
table (one row per released group). Whatever engine holds the data, this runs on a
private in-memory DuckDB connection with no file access, no extensions and no
settings changes: it can reach noisy values only.
"""
from __future__ import annotations

import re
import threading

import duckdb
import numpy as np
import sqlglot
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

    def interrupt(self) -> None:
        """Stop the post-processing query in progress, if any (from another thread)."""
        self._con.interrupt()

    def run(self, sql: str, noisy: dict) -> dict:
        """``noisy``: column name -> numpy array. Registering a dict of arrays costs
        about a third of registering a DataFrame; results come back as arrays too."""
        with self._lock:
            try:        # registered inside: a stop (dpsql serve) may land right after it
                self._con.register(NOISY_TABLE, noisy)
                return {name: plain_column(values) for name, values in
                        self._con.execute(sql).fetchnumpy().items()}
            except duckdb.Error as err:
                raise refusal(_first_line(err), sql) from None
            finally:
                self._con.unregister(NOISY_TABLE)


def plain_column(values):
    """A masked array (DuckDB's NULLs) as a plain one of the same type: for floats pandas'
    nullable ``Float64`` (NULL stays apart from a NaN the SQL computed, so that ``dpsql
    serve`` sends NULL, not NaN), ``Int64`` and ``boolean`` for integers and booleans, NaT
    for times, None in an object array otherwise."""
    if isinstance(values, np.ma.MaskedArray):
        if not values.mask.any():
            return values.data
        kind, mask = values.dtype.kind, values.mask.copy()
        # A column keeps its type whether or not a released value is NULL (review 38, F2:
        # an integer column with a NULL was object, sent by dpsql serve as text).
        if kind in "fib":
            import pandas as pd     # only here: a result with no NULL never loads pandas
            if kind == "f":
                return pd.arrays.FloatingArray(values.data.astype(np.float64), mask)
            if kind == "i":
                return pd.arrays.IntegerArray(values.data.astype(np.int64), mask)
            return pd.arrays.BooleanArray(values.data.astype(np.bool_), mask)
        if kind == "M":
            out = values.data.copy()
            out[mask] = np.datetime64("NaT")
            return out
        out = values.data.astype(object)
        out[values.mask] = None
        return out
    return values


OUTER = "the outer ORDER BY, HAVING, LIMIT or SELECT list cannot be applied to the released rows"


def refusal(engine_text: str, sql: str) -> QueryError:
    """The analyst's message for a post-processing failure, in SQL's words: what is
    wrong where it can be named, else a general one. The engine's own text (its error
    class and wording) goes only to ``dpsql_detail`` (the server's audit log)."""
    why = _named(engine_text, sql)
    out = QueryError(f"{OUTER}: {why}" if why else
                     f"{OUTER}; check the expressions outside the aggregates: their types, "
                     "and that each names a column of the result")
    out.dpsql_detail = f"post-processing: {engine_text}"
    return out


def _named(text: str, sql: str) -> str | None:
    if "non-integer literal has no effect" in text:
        constant = _constant_order(sql)
        shown = f" ({constant})" if constant else ""
        return (f"ORDER BY a constant{shown} has no effect; order by a column of the result "
                "or by its position (ORDER BY 1)")
    bounds = re.search(r"ORDER term out of range.*?between (\d+) and (\d+)", text)
    if bounds:
        return (f"an ORDER BY position is out of range: it must be between {bounds[1]} and "
                f"{bounds[2]} (the columns of the result)")
    if text.startswith("Conversion Error"):
        return ("a released value cannot be converted to the type asked (a CAST); cast "
                "to a type that holds it")
    if "No function matches" in text:
        return "no function matches the given name and argument types"
    return None


def _constant_order(sql: str) -> str | None:
    """The first ORDER BY term of ``sql`` that names no column (a constant), as SQL."""
    try:
        tree = sqlglot.parse_one(sql, read=DIALECT)
    except Exception:  # noqa: BLE001 - only the message's detail is lost
        return None
    for ordered in tree.find_all(exp.Ordered):
        if not any(ordered.this.find_all(exp.Column)):
            text = ordered.this.sql(DIALECT)
            return text if len(text) <= 60 else text[:57] + "..."
    return None


def _first_line(err: Exception) -> str:
    return str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
