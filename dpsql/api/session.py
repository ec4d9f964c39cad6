"""Opening a session: data, metadata, ledger and budget, the same way for every client.

Owns: the one opener behind ``dpsql.from_df``, ``dpsql.from_connection``,
``dpsql.connect`` and the ``dpsql`` command. It reads the metadata, binds the data to
an engine (DataFrames and files, an open connection, or a database file opened
read-only), turns a ledger path into a ``Ledger`` with the session's budget, and
returns a ``Reader``. Nothing is read from the private data here beyond column types.
"""
from __future__ import annotations

import os

import numpy as np

from ..engines import registry
from ..engines.intake import is_frame
from ..errors import ProgrammingError
from ..metadata.model import Metadata
from ..privacy.params import Budget, Privacy
from .options import session_budget, session_privacy
from .reader import Reader


def open_session(metadata, *, tables=None, connection=None, database=None,
                 privacy: Privacy | None = None, budget: Budget | None = None, ledger=None,
                 engine: str | None = None, shared=None) -> tuple:
    """(reader, connection the session opened itself or None) over exactly one of
    ``tables`` (as ``from_df``), ``connection`` (an open DuckDB or psycopg connection, or a
    SparkSession, which also takes ``tables``: DataFrames or Parquet paths), ``database``
    (the path of a DuckDB file, opened read-only, or a postgresql:// URL) or ``shared``
    (data bound once for several sessions, ``registry.shared_spark``: this session gets an
    engine of its own over it). ``privacy`` and ``budget`` may be numbers (epsilon per
    query, the session's total epsilon); they are checked first, before the metadata or
    data are read."""
    privacy, budget = session_privacy(privacy), session_budget(budget)
    meta = Metadata.load(metadata)
    if shared is not None:
        return _reader(shared.engine(), meta, privacy, budget, ledger), None
    if tables is not None and connection is None:
        return _reader(_engine_over_tables(tables, meta), meta, privacy, budget, ledger), None
    owned = registry.open_database(database) if database is not None else None
    try:
        bound = _engine_over_connection(owned or connection, meta, engine, tables)
        return _reader(bound, meta, privacy, budget, ledger), owned
    except BaseException:
        if owned is not None:
            owned.close()
        raise


def _reader(engine, meta: Metadata, privacy, budget, ledger) -> Reader:
    return Reader(engine, meta, privacy, budget, ledger_for(ledger, budget))


def from_df(data, metadata, privacy: Privacy | None = None, budget: Budget | None = None,
            ledger=None) -> Reader:
    """A session over DataFrames (or .csv/.parquet paths), scanned in place by DuckDB.

    A DataFrame whose columns are views with negative strides (``df.iloc[::-1]``)
    cannot be scanned by DuckDB: those columns alone are copied, the rest are
    shared (copy on write). The index is not data, except a named one
    (``df.set_index('age')``), which becomes columns again unless a column
    already has its name.
    """
    return open_session(metadata, tables=data, privacy=privacy, budget=budget, ledger=ledger)[0]


def from_connection(connection, metadata, privacy: Privacy | None = None,
                    budget: Budget | None = None, ledger=None, engine: str | None = None,
                    tables: dict | None = None) -> Reader:
    """A session over tables that already live where ``connection`` reaches: a DuckDB
    connection, a psycopg 3 connection (PostgreSQL) or a ``pyspark.sql.SparkSession``.

    ``engine`` ("duckdb", "postgres", "spark") is accepted for SmartNoise compatibility and
    must agree with the connection. ``tables`` (Spark only) binds metadata tables to
    DataFrames or Parquet paths: ``{"schema.table": df_or_path}``.
    """
    return open_session(metadata, connection=connection, privacy=privacy, budget=budget,
                        ledger=ledger, engine=engine, tables=tables)[0]


def ledger_for(ledger, budget):
    """A ledger path as a ``Ledger`` holding ``budget``; a Ledger object as it is."""
    if ledger is None or hasattr(ledger, "charge"):
        return ledger
    if not isinstance(ledger, (str, os.PathLike)):
        raise ProgrammingError(f"ledger must be a file path (str or os.PathLike) or a "
                               f"dpsql Ledger, not {type(ledger).__name__}")
    from ..privacy.ledger import Ledger
    return Ledger(ledger, budget)


def _engine_over_tables(data, meta: Metadata):
    if isinstance(data, dict):
        data = {name: _scannable(source) for name, source in data.items()}
    else:
        data = _scannable(data)
    return registry.engine_over_tables(data, meta)


def _engine_over_connection(connection, meta: Metadata, engine: str | None,
                            spark_tables: dict | None = None):
    """The engine that reaches ``connection``'s tables (engines/registry.py)."""
    return registry.engine_for(connection, meta, engine, spark_tables)


def _reversed_view(array) -> bool:
    buffers = [array] + [getattr(array, name, None)
                         for name in ("_ndarray", "_data", "_mask", "_codes")]
    return any(isinstance(b, np.ndarray) and any(s < 0 for s in b.strides) for b in buffers)


def _scannable(frame):
    """``frame`` as DuckDB can scan it in place (see ``from_df``)."""
    if not is_frame(frame):
        return frame
    names = [n for n in frame.index.names if n is not None]
    if names and not any(n in frame.columns for n in names):
        frame = frame.reset_index()
    flipped = [i for i in range(frame.shape[1]) if _reversed_view(frame.iloc[:, i].array)]
    if not flipped:
        return frame
    out = frame.copy(deep=False)
    for i in flipped:
        out.isetitem(i, frame.iloc[:, i].copy(deep=True))
    return out
