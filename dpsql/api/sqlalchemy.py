"""A SQLAlchemy 2 dialect over the DB-API connector: ``create_engine("dpsql://")``.

Owns: the translation between SQLAlchemy and ``dpsql.connect``: connect arguments
(from ``connect_args`` and from the URL), reflection of tables and columns from the
metadata (never from the data), and the transaction hooks of a read-only session.
Every query still goes through ``Cursor.execute``, so the session's reader, hence its
budget, is the only path to the data.

* ``dpsql://`` with ``connect_args={"metadata": ..., "tables": ...}``; or
  ``dpsql:///path/to/data.duckdb?metadata=meta.yaml&epsilon=0.5&budget_epsilon=2``.
  URL keys: ``metadata``, ``epsilon``, ``delta``, ``rho`` (the privacy of one query),
  ``budget_epsilon``, ``budget_delta``, ``budget_rho`` (the budget), ``ledger`` (a path),
  ``table=schema.table=path`` (repeatable: a .csv or .parquet file). ``connect_args``
  take precedence over the URL.
* The ``Budget`` is one object for the whole engine (built once from the URL, or the one
  in ``connect_args``), so the connections of an engine's pool spend from one pool.
* ``BEGIN``, ``COMMIT`` and ``ROLLBACK`` are no-ops: nothing is ever written, and a
  released answer is not taken back (spent budget is never refunded). Pings send no
  query. Errors are SQLAlchemy's ``DBAPIError`` subclasses wrapping dpsql's (``.orig``).

SQLAlchemy is optional (the ``sqlalchemy`` extra); ``dpsql`` registers this dialect
when SQLAlchemy is installed, and pyproject.toml declares it as an entry point.
"""
from __future__ import annotations

from sqlalchemy import types as sqltypes
from sqlalchemy.engine import default, reflection

from ..errors import InterfaceError
from ..privacy.params import Budget, Privacy

__all__ = ["DpsqlDialect", "connect_arguments"]

_TYPES = {"int": sqltypes.Integer, "float": sqltypes.Float, "string": sqltypes.String,
          "boolean": sqltypes.Boolean, "datetime": sqltypes.DateTime}
"""SQLAlchemy's type of each metadata column type (``dpsql.metadata.model.COLUMN_TYPES``)."""
_PRIVACY_KEYS = {"epsilon": "epsilon", "delta": "delta", "rho": "rho"}
_BUDGET_KEYS = {"budget_epsilon": "epsilon", "budget_delta": "delta", "budget_rho": "rho"}
URL_KEYS = ("metadata", "ledger", "table", *_PRIVACY_KEYS, *_BUDGET_KEYS, "budget_accountant")


def _number(key: str, value: str) -> float:
    try:
        return float(value)
    except ValueError:
        raise InterfaceError(f"dpsql URL: {key}={value!r} is not a number") from None


def _one(key: str, value):
    if isinstance(value, tuple):
        if len(value) != 1:
            raise InterfaceError(f"dpsql URL: {key} is given {len(value)} times; give it once")
        value = value[0]
    return value


def _tables(values) -> dict:
    tables = {}
    for item in (values,) if isinstance(values, str) else values:
        name, sep, path = item.partition("=")
        if not sep or not name or not path:
            raise InterfaceError(f"dpsql URL: table={item!r} must be schema.table=path "
                                 "(a .csv or .parquet file)")
        tables[name] = path
    return tables


def connect_arguments(url) -> dict:
    """``dpsql.connect``'s keyword arguments from a ``dpsql://`` URL (a SQLAlchemy URL)."""
    if url.host or url.port or url.username or url.password:
        raise InterfaceError("dpsql URL: no host or user: dpsql runs in process; write "
                             "dpsql:///relative/path.duckdb or dpsql:////absolute/path.duckdb")
    query = dict(url.query)
    unknown = sorted(set(query) - set(URL_KEYS))
    if unknown:
        raise InterfaceError(f"dpsql URL: unknown parameter(s) {', '.join(unknown)}; known: "
                             f"{', '.join(URL_KEYS)}")
    args: dict = {}
    if url.database:
        args["database"] = url.database
    for key in ("metadata", "ledger"):
        if key in query:
            args[key] = _one(key, query[key])
    if "table" in query:
        args["tables"] = _tables(query["table"])
    privacy = {field: _number(key, _one(key, query[key]))
               for key, field in _PRIVACY_KEYS.items() if key in query}
    if privacy:
        args["privacy"] = Privacy(**privacy)
    budget = {field: _number(key, _one(key, query[key]))
              for key, field in _BUDGET_KEYS.items() if key in query}
    if "budget_accountant" in query:     # pld or rdp: docs/privacy.md, Composed budgets
        budget["accountant"] = _one("budget_accountant", query["budget_accountant"])
    if budget:
        args["budget"] = Budget(**budget)
    return args


def _metadata(connection):
    """The dpsql metadata of a SQLAlchemy connection's session."""
    return connection.connection.dbapi_connection.reader.metadata


class DpsqlDialect(default.DefaultDialect):
    """SQLAlchemy's view of a dpsql session: read-only, qmark parameters, no DDL."""

    name = "dpsql"
    driver = "dpsql"
    default_paramstyle = "qmark"
    supports_statement_cache = True
    supports_native_boolean = True
    supports_native_decimal = False
    supports_alter = False
    supports_sequences = False
    supports_comments = False
    supports_default_values = False
    supports_empty_insert = False
    supports_multivalues_insert = False
    postfetch_lastrowid = False
    max_identifier_length = 255

    @classmethod
    def import_dbapi(cls):
        from . import dbapi
        return dbapi

    def create_connect_args(self, url):
        return [], connect_arguments(url)

    # -- a read-only session: no transactions, no pings ---------------------------
    def do_begin(self, dbapi_connection) -> None:
        """Nothing to begin: the session is read-only."""

    def do_commit(self, dbapi_connection) -> None:
        """Nothing to commit."""

    def do_rollback(self, dbapi_connection) -> None:
        """Nothing to roll back; spent budget is never refunded (as ``Connection.rollback``
        says by raising, which SQLAlchemy's pool would otherwise do on every return)."""

    def do_ping(self, dbapi_connection) -> bool:
        """Alive if not closed: a query would be refused (and could spend budget)."""
        return not dbapi_connection.closed

    def do_close(self, dbapi_connection) -> None:
        if not dbapi_connection.closed:
            dbapi_connection.close()

    def _get_default_schema_name(self, connection):
        """The one schema of the metadata's tables, if there is one."""
        schemas = {t.schema for t in _metadata(connection).tables.values()}
        return schemas.pop() if len(schemas) == 1 else None

    def get_isolation_level(self, dbapi_connection) -> str:
        return "SERIALIZABLE"   # read-only: every read sees the same data

    def get_isolation_level_values(self, dbapi_connection) -> list:
        return ["SERIALIZABLE", "AUTOCOMMIT"]

    def set_isolation_level(self, dbapi_connection, level) -> None:
        """Accepted: a read-only session has no transactions to isolate."""

    # -- reflection, from the metadata -----------------------------------------------
    def _tables_in(self, connection, schema) -> list:
        schema = self.default_schema_name if schema is None else schema
        key = (schema or "").lower()
        return [t for t in _metadata(connection).tables.values()
                if (t.schema or "").lower() == key]

    def _table(self, connection, table_name, schema):
        name = str(table_name).lower()
        return next((t for t in self._tables_in(connection, schema) if t.name.lower() == name),
                    None)

    @reflection.cache
    def get_schema_names(self, connection, **kw) -> list:
        return sorted({t.schema for t in _metadata(connection).tables.values() if t.schema})

    @reflection.cache
    def get_table_names(self, connection, schema=None, **kw) -> list:
        return [t.name for t in self._tables_in(connection, schema)]

    def get_view_names(self, connection, schema=None, **kw) -> list:
        return []

    def has_table(self, connection, table_name, schema=None, **kw) -> bool:
        return self._table(connection, table_name, schema) is not None

    @reflection.cache
    def get_columns(self, connection, table_name, schema=None, **kw) -> list:
        from sqlalchemy import exc
        table = self._table(connection, table_name, schema)
        if table is None:
            raise exc.NoSuchTableError(f"{schema}.{table_name}" if schema else table_name)
        return [{"name": c.name, "type": _TYPES.get(c.type, sqltypes.NullType)(),
                 "nullable": c.nullable, "default": None, "autoincrement": False}
                for c in table.columns.values()]

    def get_pk_constraint(self, connection, table_name, schema=None, **kw) -> dict:
        return {"constrained_columns": [], "name": None}

    def get_foreign_keys(self, connection, table_name, schema=None, **kw) -> list:
        return []

    def get_indexes(self, connection, table_name, schema=None, **kw) -> list:
        return []

    def get_unique_constraints(self, connection, table_name, schema=None, **kw) -> list:
        return []

    def get_check_constraints(self, connection, table_name, schema=None, **kw) -> list:
        return []
