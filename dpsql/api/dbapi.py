"""A read-only PEP 249 (DB-API 2.0) connector: ``dpsql.connect``.

Owns: the DB-API surface over one reader. A connection is a session: it owns
the reader, hence its accountant (and the ledger, if one is given), so every
cursor of a connection spends from one budget. Cursors only call the reader's
``execute_df``; there is no second path to the engine. Parameters use the
``qmark`` style and are bound as literals into the parsed query tree by the
engine, never by string formatting.

Deliberate differences from a read-write driver, all for privacy:

* ``executemany`` raises ``NotSupportedError``: it exists for batches of
  writes, and looping SELECTs would spend budget on results nobody can fetch.
* ``rollback`` raises ``NotSupportedError``: a released answer cannot be
  taken back, so spent budget is never refunded. ``commit`` does nothing.
* ``threadsafety = 1`` (conservative): threads may share the module, not
  connections or cursors. A connection is one session over one DuckDB
  connection, and its cursors keep results in unsynchronised state; give each
  thread its own connection. Connections in several threads or processes may
  share one ledger file, which is locked.
"""
from __future__ import annotations

import datetime as _dt
import time as _time
from collections.abc import Mapping, Sequence

from ..errors import (DatabaseError, DataError, Error, IntegrityError, InterfaceError,
                     InternalError, NotSupportedError, OperationalError, ProgrammingError,
                     Warning)

__all__ = ["apilevel", "threadsafety", "paramstyle", "connect", "Connection", "Cursor",
           "Warning", "Error", "InterfaceError", "DatabaseError", "DataError",
           "OperationalError", "IntegrityError", "InternalError", "ProgrammingError",
           "NotSupportedError", "Date", "Time", "Timestamp", "DateFromTicks",
           "TimeFromTicks", "TimestampFromTicks", "Binary", "STRING", "BINARY", "NUMBER",
           "DATETIME", "ROWID"]

apilevel = "2.0"
threadsafety = 1
paramstyle = "qmark"


# ----------------------------------------------------------------- PEP 249 types

Date, Time, Timestamp = _dt.date, _dt.time, _dt.datetime
Binary = bytes


def DateFromTicks(ticks):  # noqa: N802 - name fixed by PEP 249
    return Date(*_time.localtime(ticks)[:3])


def TimeFromTicks(ticks):  # noqa: N802
    return Time(*_time.localtime(ticks)[3:6])


def TimestampFromTicks(ticks):  # noqa: N802
    return Timestamp(*_time.localtime(ticks)[:6])


class _TypeObject:
    """Compares equal to every ``type_code`` of its family (PEP 249)."""

    def __init__(self, name: str, *codes: str) -> None:
        self.name, self.codes = name, frozenset(codes)

    def __eq__(self, other):
        return other in self.codes if isinstance(other, str) else other is self

    def __hash__(self):
        return hash(self.name)

    def __repr__(self):
        return f"dpsql.api.dbapi.{self.name}"


STRING = _TypeObject("STRING", "VARCHAR")
BINARY = _TypeObject("BINARY", "BLOB")
NUMBER = _TypeObject("NUMBER", "BIGINT", "DOUBLE", "BOOLEAN")
DATETIME = _TypeObject("DATETIME", "DATE", "TIME", "TIMESTAMP")
ROWID = _TypeObject("ROWID")  # a released result has no row ids


def _type_code(dtype) -> str:
    """The DuckDB-style type name of a result column's pandas dtype."""
    kind = getattr(dtype, "kind", "O")
    if kind == "b" or str(dtype) == "boolean":
        return "BOOLEAN"
    if kind in "iu" or str(dtype).startswith(("Int", "UInt")):
        return "BIGINT"
    if kind == "f" or str(dtype).startswith("Float"):
        return "DOUBLE"
    if kind == "M":
        return "TIMESTAMP"
    return "VARCHAR"


# ----------------------------------------------------------------- connect

def connect(database=None, *, metadata, tables=None, privacy=None, budget=None,
            ledger=None) -> "Connection":
    """Open a read-only session over a DuckDB file, a PostgreSQL server, Spark, or tables.

    ``database``: path of a ``.duckdb`` file (opened read-only), a ``postgresql://`` URL,
    or an open DuckDB or psycopg 3 connection or ``SparkSession`` (not closed by
    ``close()``), or None.
    ``tables``: as ``dpsql.from_df``'s first argument (one DataFrame, or a
    dict of ``schema.table`` to DataFrames or .csv/.parquet paths); give
    either ``database`` or ``tables``, or both with a SparkSession (Spark DataFrames or
    Parquet paths, as ``from_connection``'s ``tables``).
    ``budget``: the session total; ``ledger``: a ledger file path (or a
    ``dpsql.privacy.ledger.Ledger``) that keeps it across processes.
    """
    from ..engines import registry
    from ..privacy.ledger import Ledger
    from .session import open_session

    both_spark = database is not None and tables is not None and registry.takes_tables(database)
    if (database is None) == (tables is None) and not both_spark:
        raise InterfaceError("connect: give either database= (a DuckDB file) or tables= "
                             "(DataFrames or .csv/.parquet paths), not both and not neither")
    if isinstance(ledger, Ledger) and budget is not None and ledger.budget != budget:
        raise OperationalError(f"connect: budget {budget} differs from the budget "
                               f"recorded in {ledger.path}; a ledger's budget is fixed "
                               "when it is created")
    if registry.is_connection(database):
        source = {"connection": database, "tables": tables}
    elif database is not None:
        source = {"database": database}
    else:
        source = {"tables": tables}
    try:
        reader, owned = open_session(metadata, privacy=privacy, budget=budget, ledger=ledger,
                                     **source)
    except (*registry.driver_errors(), OSError) as exc:
        raise OperationalError(f"connect: could not open the data: {exc}") from None
    return Connection(reader, owned)


class Connection:
    """A DB-API connection: one privacy session (reader, accountant, ledger)."""

    # PEP 249 optional extension: the exception classes as attributes.
    Warning, Error, InterfaceError, DatabaseError = Warning, Error, InterfaceError, DatabaseError
    DataError, OperationalError, IntegrityError = DataError, OperationalError, IntegrityError
    InternalError, ProgrammingError = InternalError, ProgrammingError
    NotSupportedError = NotSupportedError

    def __init__(self, reader, owned=None) -> None:
        self._reader = reader
        self._owned = owned          # a connection connect() opened itself (closed with it)
        self._closed = False

    def __repr__(self) -> str:
        """The session's tables, privacy, budget, spent and ledger: never a data value."""
        if self._closed:
            return "<dpsql.Connection closed>"
        from .display import session_summary
        return f"<dpsql.Connection {session_summary(self._reader)}>"

    def _repr_html_(self) -> str:
        from .display import session_html
        if self._closed:
            return "<div><strong>dpsql.Connection</strong> closed</div>"
        return session_html("dpsql.Connection", self._reader)

    # -- session ---------------------------------------------------------------
    @property
    def reader(self):
        """The dpsql reader of this session (explain, get_privacy_cost, ...)."""
        self._check_open()
        return self._reader

    @property
    def spent(self) -> tuple:
        """(epsilon, delta) spent in this session (the ledger's total if any)."""
        self._check_open()
        return self._reader.spent

    @property
    def closed(self) -> bool:
        return self._closed

    # -- PEP 249 -----------------------------------------------------------------
    def cursor(self) -> "Cursor":
        self._check_open()
        return Cursor(self)

    def commit(self) -> None:
        """Nothing to commit: the connection is read-only."""
        self._check_open()

    def rollback(self) -> None:
        self._check_open()
        raise NotSupportedError("rollback is not supported: dpsql is read-only and a "
                                "released answer cannot be taken back, so spent privacy "
                                "budget is never refunded")

    def close(self) -> None:
        """Close the session; its DuckDB connection too if connect() opened it.

        Closing twice raises ``InterfaceError``, as the DB-API compliance suite
        expects (the ``with`` statement closes only an open connection)."""
        self._check_open()
        self._closed = True
        if self._owned is not None:
            self._owned.close()
            self._owned = None

    def __enter__(self):
        self._check_open()
        return self

    def __exit__(self, *exc) -> None:
        if not self._closed:
            self.close()

    def _check_open(self) -> None:
        if self._closed:
            raise InterfaceError("the connection is closed; open a new one with "
                                 "dpsql.connect")


class Cursor:
    """A DB-API cursor over one connection's reader; results are held in memory."""

    def __init__(self, connection: Connection) -> None:
        self.connection = connection
        self.arraysize = 1
        self._closed = False
        self._reset()

    def _reset(self) -> None:
        self._description = None
        self._rows: list = []
        self._pos = 0
        self._rowcount = -1

    # -- attributes -------------------------------------------------------------
    @property
    def description(self):
        """7-tuples (name, type_code, None, None, None, None, None); None before a query."""
        return self._description

    @property
    def rowcount(self) -> int:
        """Rows of the last result; -1 before a query."""
        return self._rowcount

    @property
    def rownumber(self):
        """Index of the next row to fetch (PEP 249 extension); None before a query."""
        return None if self._description is None else self._pos

    lastrowid = None  # a read-only connector never inserts

    # -- execution ----------------------------------------------------------------
    def execute(self, operation: str, parameters=None) -> "Cursor":
        """Run one SELECT with qmark parameters; charges the session's budget."""
        self._check_open()
        self._reset()
        if not isinstance(operation, str):
            raise ProgrammingError(f"the query must be a str, not {type(operation).__name__}")
        params = self._params(parameters)
        try:
            result = self.connection._reader.result_rows(operation, params)
        except Error:
            raise
        except OSError as exc:  # the ledger file could not be read or written
            raise OperationalError(f"the session's ledger failed: {exc}") from exc
        except Exception as exc:  # PEP 249: every error is a dpsql.Error
            raise InternalError(f"dpsql failed unexpectedly ({type(exc).__name__}); "
                                "please report it") from exc
        self._load(*result)
        return self

    def executemany(self, operation, seq_of_parameters):
        self._check_open()
        raise NotSupportedError("executemany is not supported: every query releases a noisy "
                                "result and spends budget, and executemany would discard all "
                                "but one; call execute once per parameter set")

    def callproc(self, procname, parameters=None):
        self._check_open()
        raise NotSupportedError("callproc is not supported: dpsql runs SELECT queries only")

    def setinputsizes(self, sizes) -> None:
        self._check_open()

    def setoutputsize(self, size, column=None) -> None:
        self._check_open()

    # -- fetching -----------------------------------------------------------------
    def fetchone(self):
        self._check_result()
        if self._pos >= len(self._rows):
            return None
        self._pos += 1
        return self._rows[self._pos - 1]

    def fetchmany(self, size=None) -> list:
        self._check_result()
        size = self.arraysize if size is None else size
        if not isinstance(size, int) or isinstance(size, bool) or size < 0:
            raise ProgrammingError(f"fetchmany size must be an int >= 0, got {size!r}")
        rows = self._rows[self._pos:self._pos + size]
        self._pos += len(rows)
        return rows

    def fetchall(self) -> list:
        self._check_result()
        rows = self._rows[self._pos:]
        self._pos = len(self._rows)
        return rows

    def __iter__(self):
        return self

    def __next__(self):
        row = self.fetchone()
        if row is None:
            raise StopIteration
        return row

    def close(self) -> None:
        self._closed = True
        self._reset()

    def __enter__(self):
        self._check_open()
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- internals ----------------------------------------------------------------
    @staticmethod
    def _params(parameters):
        if parameters is None:
            return None
        if isinstance(parameters, (str, bytes)) or isinstance(parameters, Mapping) \
                or not isinstance(parameters, Sequence):
            raise ProgrammingError(
                "parameters must be a sequence (tuple or list) of values for the '?' "
                f"placeholders (paramstyle qmark), not {type(parameters).__name__}")
        return list(parameters)

    def _load(self, header, dtypes, rows) -> None:
        """Hold a result (``Reader.result_rows``: read without pandas)."""
        self._rows = [tuple(row) for row in rows]     # Python values (present.native)
        self._description = tuple(
            (str(name), _type_code(dtype), None, None, None, None, None)
            for name, dtype in zip(header, dtypes))
        self._rowcount = len(self._rows)
        self._pos = 0

    def _check_open(self) -> None:
        if self._closed:
            raise InterfaceError("the cursor is closed; open a new one with "
                                 "connection.cursor()")
        self.connection._check_open()

    def _check_result(self) -> None:
        self._check_open()
        if self._description is None:
            raise ProgrammingError("no result to fetch: call execute() with a SELECT first")
