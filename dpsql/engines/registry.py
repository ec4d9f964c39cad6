"""Which engine reaches what the user passed: the one table the API layer asks.

Owns: binding a user's data source to an engine. Each engine registers one
``Registration``: the names ``engine=`` accepts for it, what it claims (a test on the
object the user passed: a DuckDB connection, a psycopg connection, a SparkSession, ...),
and how it binds that object and the metadata into an engine. Opening a database the
user names (a DuckDB file, a ``postgresql://`` URL) and scanning DataFrames or files
(DuckDB) are here too, so that the API layer never imports an engine's driver: a new
engine plugs in with ``register`` and nothing in ``api/`` changes (docs/architecture.md).
The engines' modules and drivers are imported only when an object of theirs is bound,
so that ``import dpsql`` loads no pyspark or psycopg.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Callable

from ..errors import DataError, NotSupportedError, OperationalError, ProgrammingError


@dataclass(frozen=True)
class Registration:
    """One engine: ``names`` (what ``engine=`` accepts, the first is its own name),
    ``claims(obj)`` (whether ``obj`` is a connection it reaches) and
    ``bind(obj, metadata, tables)`` (the engine over it). ``takes_tables``: whether
    ``tables=`` may come with the connection (Spark's DataFrames or Parquet paths).
    ``refusal``: a message for a connection that is claimed but not supported."""
    names: tuple
    claims: Callable[[object], bool]
    bind: Callable | None = None
    takes_tables: bool = False
    refusal: str | None = None
    whose: str = ""                  # "DuckDB's": the connection in messages

    @property
    def name(self) -> str:
        return self.names[0]

    @property
    def connection(self) -> str:
        return self.whose or f"{self.name}'s"


_REGISTRY: list = []


def register(registration: Registration, first: bool = False) -> None:
    """Add an engine (``first``: before the built-in ones, e.g. to claim a subclass)."""
    if first:
        _REGISTRY.insert(0, registration)
    else:
        _REGISTRY.append(registration)


def unregister(registration: Registration) -> None:
    _REGISTRY.remove(registration)


def engine_names() -> tuple:
    """Every name ``engine=`` accepts, the engines' own names first."""
    own = [r.name for r in _REGISTRY if r.bind is not None]
    return tuple(own + [n for r in _REGISTRY for n in r.names[1:] if r.bind is not None])


def claimant(obj) -> Registration | None:
    """The engine that reaches ``obj``, or None."""
    return next((r for r in _REGISTRY if _claims(r, obj)), None)


def is_connection(obj) -> bool:
    """An open connection some engine claims (it may still refuse it: psycopg2's)."""
    return claimant(obj) is not None


def takes_tables(obj) -> bool:
    found = claimant(obj)
    return found is not None and found.takes_tables


def engine_for(connection, meta, named: str | None = None, tables: dict | None = None):
    """The engine over ``connection``'s tables, chosen by the connection's type;
    ``named`` (``engine=``, for SmartNoise compatibility) must agree with it."""
    named = None if named is None else str(named).lower()
    names = engine_names()
    if named is not None and named not in names:
        own = [r.name for r in _REGISTRY if r.bind is not None]
        raise ProgrammingError(f"engine {named!r} is not supported; dpsql runs on "
                               f"{', '.join(own)} (or leave engine out: it follows "
                               "from the connection)")
    found = claimant(connection)
    if found is None:
        kind = type(connection)
        raise ProgrammingError(f"from_connection needs {_kinds()}, not "
                               f"{kind.__module__}.{kind.__qualname__} (for DataFrames or "
                               "files use dpsql.from_df)")
    if found.refusal is not None:
        raise NotSupportedError(found.refusal)
    if tables is not None and not found.takes_tables:
        raise ProgrammingError("tables= with a connection binds Spark DataFrames or Parquet "
                               "paths, and needs a SparkSession")
    if named is not None and named not in found.names:
        raise ProgrammingError(f"engine={named!r} but the connection is {found.connection}")
    if found.takes_tables:
        return found.bind(connection, meta, tables)
    return found.bind(connection, meta)


def _claims(registration: Registration, obj) -> bool:
    try:
        return bool(registration.claims(obj))
    except Exception:   # noqa: BLE001 - an engine whose test cannot run does not claim it
        return False


def _kinds() -> str:
    return ", ".join(_KINDS.get(r.name, r.name + "'s connection")
                     for r in _REGISTRY if r.bind is not None)


_KINDS = {"duckdb": "a duckdb.DuckDBPyConnection (from duckdb.connect())",
          "postgres": "a psycopg 3 connection", "spark": "a pyspark.sql.SparkSession"}


# -- the built-in engines --------------------------------------------------------------

def _module_of(obj) -> str:
    return type(obj).__module__ or ""


def is_spark(obj) -> bool:
    kind = type(obj)
    return _module_of(obj).startswith("pyspark.sql") and kind.__name__ == "SparkSession"


def _is_duckdb(obj) -> bool:
    if not _module_of(obj).startswith(("duckdb", "_duckdb")):
        return False
    import duckdb
    return isinstance(obj, duckdb.DuckDBPyConnection)


def _is_psycopg2(obj) -> bool:
    return _module_of(obj).startswith("psycopg2")


def _is_postgres(obj) -> bool:
    return _module_of(obj).startswith("psycopg") and hasattr(obj, "cursor")


def _bind_duckdb(connection, meta):
    from .duckdb.engine import Engine
    return Engine.from_connection(connection, meta)


def _bind_postgres(connection, meta):
    from .postgres.engine import PostgresEngine
    return PostgresEngine.from_connection(connection, meta)


def _bind_spark(session, meta, tables):
    from .spark.engine import SparkEngine
    return SparkEngine.from_session(session, meta, tables)


PSYCOPG2 = (
    "a psycopg2 connection is not supported: dpsql's PostgreSQL engine runs on psycopg 3 "
    "(pip install 'psycopg[binary]'). Open the same server with it, e.g. from the psycopg2 "
    "connection conn: psycopg.connect(**conn.get_dsn_parameters(), "
    "password=conn.info.password); or give dpsql.connect the server's URL, "
    "'postgresql://user@host/db' (the password from PGPASSWORD or ~/.pgpass)")

register(Registration(("duckdb",), _is_duckdb, _bind_duckdb, whose="DuckDB's"))
register(Registration(("postgres", "postgresql"), _is_postgres, _bind_postgres,
                      whose="PostgreSQL's"))
register(Registration(("spark",), is_spark, _bind_spark, takes_tables=True,
                      whose="a SparkSession"))
register(Registration(("psycopg2",), _is_psycopg2, refusal=PSYCOPG2), first=True)


# -- sources the user names rather than opens --------------------------------------------

def open_database(path):
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
    import duckdb

    from .duckdb.engine import own_connection
    try:
        return own_connection(path, read_only=True)
    except duckdb.Error as err:
        raise OperationalError(f"connect: could not open the data: {_first_line(err)}") from None


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
        raise OperationalError(f"cannot connect to the PostgreSQL server: "
                               f"{_first_line(err)}") from None


def engine_over_tables(data, meta):
    """DuckDB over DataFrames or .csv/.parquet paths (one, or a dict by table name)."""
    import duckdb

    from .duckdb.engine import Engine
    try:
        return Engine.from_data(data, meta)
    except duckdb.Error as err:
        raise DataError(f"DuckDB cannot scan the data: {_first_line(err)}; pass DataFrames "
                        "with plain columns (e.g. df.copy()) or .csv/.parquet paths") from None


def shared_spark(master: str, conf: dict, meta, tables: dict | None = None):
    """A server's data on Spark (``dpsql serve`` with ``spark:``): one SparkSession started
    now with ``conf``, every metadata table bound once (``tables``' Parquet data, else the
    Spark catalog); ``.engine()`` gives each analyst's session its engine over them and
    ``.close()`` stops the session."""
    try:
        from .spark.session import SharedSpark, SparkMissing
    except ImportError:
        raise OperationalError("spark: needs pyspark (pip install pyspark) and Java 17") from None
    try:
        return SharedSpark(master, conf, meta, tables)
    except SparkMissing:
        raise OperationalError("spark: needs pyspark (pip install pyspark) and Java 17") from None


def driver_errors() -> tuple:
    """The exception classes of the drivers loaded so far (for an API layer that must
    turn a driver's error met while opening into a dpsql error)."""
    import sys
    found = [getattr(sys.modules.get(name), "Error", None) for name in ("duckdb", "psycopg")]
    return tuple(e for e in found if isinstance(e, type))


def _first_line(err: BaseException) -> str:
    return (str(err).strip().splitlines() or [type(err).__name__])[0]
