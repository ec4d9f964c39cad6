"""Opening a session: data, metadata, ledger and budget, the same way for every client.

Owns: the one opener behind ``dpsql.from_df``, ``dpsql.from_connection``,
``dpsql.connect`` and the ``dpsql`` command. It reads the metadata, binds the data to
an engine (DataFrames and files, an open connection, or a database file opened
read-only), turns a ledger path into a ``Ledger`` with the session's budget, and
returns a ``Reader``. Nothing is read from the private data here beyond column types.
"""
from __future__ import annotations

import os

import duckdb
import numpy as np
import pandas as pd

from ..engines.duckdb.engine import Engine, own_connection
from ..errors import DataError, NotSupportedError, OperationalError, ProgrammingError
from ..metadata.model import Metadata
from ..privacy.params import Budget, Privacy
from .options import session_budget, session_privacy
from .reader import Reader


def open_session(metadata, *, tables=None, connection=None, database=None,
                 privacy: Privacy | None = None, budget: Budget | None = None, ledger=None,
                 engine: str | None = None) -> tuple:
    """(reader, connection the session opened itself or None) over exactly one of
    ``tables`` (as ``from_df``), ``connection`` (an open DuckDB or psycopg connection, or a
    SparkSession, which also takes ``tables``: DataFrames or Parquet paths) or ``database``
    (the path of a DuckDB file, opened read-only, or a postgresql:// URL). ``privacy`` and
    ``budget`` may be numbers (epsilon per query, the session's total epsilon); they are
    checked first, before the metadata or data are read."""
    privacy, budget = session_privacy(privacy), session_budget(budget)
    meta = Metadata.load(metadata)
    if tables is not None and connection is None:
        return _reader(_engine_over_tables(tables, meta), meta, privacy, budget, ledger), None
    owned = _open_database(database) if database is not None else None
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
    try:
        return Engine.from_data(data, meta)
    except duckdb.Error as err:
        first = (str(err).strip().splitlines() or [type(err).__name__])[0]
        raise DataError(f"DuckDB cannot scan the data: {first}; pass DataFrames with plain "
                        "columns (e.g. df.copy()) or .csv/.parquet paths") from None


ENGINES = ("duckdb", "postgres", "spark", "postgresql")


def _engine_over_connection(connection, meta: Metadata, engine: str | None,
                            spark_tables: dict | None = None):
    """The engine that reaches ``connection``'s tables, from the connection's type."""
    named = None if engine is None else str(engine).lower()
    if named is not None and named not in ENGINES:
        raise ProgrammingError(f"engine {engine!r} is not supported; dpsql runs on "
                               f"{', '.join(ENGINES[:3])} (or leave engine out: it follows "
                               "from the connection)")
    if is_spark(connection):
        if named not in (None, "spark"):
            raise ProgrammingError(f"engine={engine!r} but the connection is a SparkSession")
        from ..engines.spark.engine import SparkEngine
        return SparkEngine.from_session(connection, meta, spark_tables)
    if spark_tables is not None:
        raise ProgrammingError("tables= with a connection binds Spark DataFrames or Parquet "
                               "paths, and needs a SparkSession")
    if type(connection).__module__.startswith("psycopg2"):
        raise NotSupportedError(_PSYCOPG2)
    if _is_postgres(connection):
        if named not in (None, "postgres", "postgresql"):
            raise ProgrammingError(f"engine={engine!r} but the connection is PostgreSQL's")
        from ..engines.postgres.engine import PostgresEngine
        return PostgresEngine.from_connection(connection, meta)
    if not isinstance(connection, duckdb.DuckDBPyConnection):
        kind = type(connection)
        raise ProgrammingError(f"from_connection needs a duckdb.DuckDBPyConnection (from "
                               f"duckdb.connect()), a psycopg 3 connection or a "
                               f"pyspark.sql.SparkSession, not "
                               f"{kind.__module__}.{kind.__qualname__} (for DataFrames or "
                               "files use dpsql.from_df)")
    if named not in (None, "duckdb"):
        raise ProgrammingError(f"engine={engine!r} but the connection is DuckDB's")
    return Engine.from_connection(connection, meta)


_PSYCOPG2 = (
    "a psycopg2 connection is not supported: dpsql's PostgreSQL engine runs on psycopg 3 "
    "(pip install 'psycopg[binary]'). Open the same server with it, e.g. from the psycopg2 "
    "connection conn: psycopg.connect(**conn.get_dsn_parameters(), "
    "password=conn.info.password); or give dpsql.connect the server's URL, "
    "'postgresql://user@host/db' (the password from PGPASSWORD or ~/.pgpass)")


def is_connection(obj) -> bool:
    """An open connection a session can run on: DuckDB's, psycopg's, or a SparkSession."""
    return isinstance(obj, duckdb.DuckDBPyConnection) or _is_postgres(obj) or is_spark(obj)


def is_spark(connection) -> bool:
    kind = type(connection)
    return kind.__module__.startswith("pyspark.sql") and kind.__name__ == "SparkSession"


def _is_postgres(connection) -> bool:
    kind = type(connection)
    return kind.__module__.startswith("psycopg") and hasattr(connection, "cursor") and not \
        isinstance(connection, duckdb.DuckDBPyConnection)


def _open_database(path):
    """A DuckDB database file, read-only; or a PostgreSQL server named by a libpq URL
    (``postgresql://user@host/db``; the password comes from libpq's environment or
    password file, and no URL is ever repeated in a message)."""
    if isinstance(path, str) and path.startswith(("postgresql://", "postgres://")):
        return _connect_postgres(path)
    if not isinstance(path, (str, bytes, os.PathLike)):
        kind = type(path)
        raise ProgrammingError(
            f"connect: database must be the path of a DuckDB file, a postgresql:// URL or "
            f"a duckdb.DuckDBPyConnection, not {kind.__module__}.{kind.__qualname__}")
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise OperationalError(f"connect: database file not found: {path}")
    return own_connection(path, read_only=True)


def _connect_postgres(url: str):
    try:
        import psycopg
    except ImportError:
        raise OperationalError("a postgresql:// database needs psycopg 3 (pip install "
                               "'psycopg[binary]')") from None
    try:
        return psycopg.connect(url)
    except psycopg.Error as err:
        # libpq's message names the host and user, never the password; the URL (which
        # may hold one) is not repeated.
        first = (str(err).strip().splitlines() or [type(err).__name__])[0]
        raise OperationalError(f"cannot connect to the PostgreSQL server: {first}") from None


def _reversed_view(array) -> bool:
    buffers = [array] + [getattr(array, name, None)
                         for name in ("_ndarray", "_data", "_mask", "_codes")]
    return any(isinstance(b, np.ndarray) and any(s < 0 for s in b.strides) for b in buffers)


def _scannable(frame):
    """``frame`` as DuckDB can scan it in place (see ``from_df``)."""
    if not isinstance(frame, pd.DataFrame):
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
