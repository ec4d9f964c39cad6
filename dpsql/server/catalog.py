"""The PostgreSQL catalog a client sees: names and types from the metadata, never data.

Owns: answering the catalog statements PostgreSQL clients send on connect and while
browsing (``SELECT version()``, psql's ``\\l``, ``\\dn``, ``\\du``, ``\\df``, ``\\dt``,
``\\d``, JDBC's DatabaseMetaData, SQLAlchemy's inspector, ``information_schema``),
because clients refuse to work without them and the metadata they need is public.

A statement is a catalog statement only if ``catalog_scope`` resolves every relation in
it, by SQL scope, to a CTE of the statement, a relation of the catalog's allow-list or an
allowed table function, and every function and node in it is allow-listed. It runs on
the private DuckDB of ``catalog_build`` (only the catalog's own relations, built from the
metadata; no file system, no temporary directory, bounded memory, a locked
configuration), after the rewrites of ``catalog_scope`` (every name DuckDB sees is the
catalog's or a renamed CTE), ``catalog_rewrite`` (PostgreSQL's spellings) and
``catalog_limits`` (sizes): what was checked is what runs. An engine error reaches the
analyst as a fixed message with a SQLSTATE; its text goes to the server's log.
"""
from __future__ import annotations

import re
import threading

import duckdb

from .. import errors
from . import catalog_build, catalog_limits, catalog_rewrite, catalog_scope, catalog_width, \
    pgcompat
from .catalog_limits import CatalogError
from .pgcompat import OWNER, TooLarge

VERSION = "PostgreSQL 15.0 (dpsql)"
MAX_ROWS = 10_000
"""Most rows of a catalog result (clients list tables and columns; nothing needs more)."""
MAX_RESULT_BYTES = 8 << 20
"""Most bytes of a catalog result's values (fetched in batches of _BATCH rows)."""
_BATCH = 256

PARAMETERS = {
    "server_version": "15.0", "server_version_num": "150000", "server_encoding": "UTF8",
    "client_encoding": "UTF8", "DateStyle": "ISO, MDY", "TimeZone": "UTC",
    "integer_datetimes": "on", "standard_conforming_strings": "on",
    "IntervalStyle": "postgres", "is_superuser": "off", "application_name": "",
    "search_path": '"$user", public', "transaction_isolation": "read committed",
    "default_transaction_read_only": "on", "transaction_read_only": "on",
    "extra_float_digits": "1", "max_identifier_length": "63", "lc_collate": "C",
    "lc_ctype": "C", "session_authorization": "", "in_hot_standby": "off",
    "default_table_access_method": "heap", "max_index_keys": "32",
}
"""What a PostgreSQL server reports on startup and through SHOW (a fixed list)."""
SETTINGS = {"statement_timeout": "0", "lock_timeout": "0",
            "idle_in_transaction_session_timeout": "0"}
"""Settings SHOW, pg_settings and current_setting() show, not reported on startup: a
session's own timeouts (0: none of its own; the owner's ``statement_timeout_s`` always
applies, and a shorter one the session SETs applies too: review 43, F3)."""

_SHOW_ALIASES = {"transaction isolation level": "transaction_isolation",
                 "time zone": "TimeZone", "session authorization": "session_authorization"}
_SHOW = re.compile(r"^\s*show\s+([a-z_ ]+?)\s*;?\s*$", re.I)
_NOT_OURS = "not a catalog query dpsql answers from the metadata"
_NOT_CATALOG = ("the query names a relation that is not in the catalog (pg_catalog's and "
                "information_schema's relations, and CTEs in their scope)")
_CACHE_SIZE, _CACHE_MAX_SQL = 8, 32 << 10
"""Checked trees kept (a 32 KiB statement's tree holds about 4 MB)."""


class Catalog:
    """The pg_catalog and information_schema of one metadata collection, in DuckDB."""

    def __init__(self, metadata) -> None:
        self.metadata = metadata
        self.database = metadata.collection
        self.schemas = _schemas(metadata)
        self.current_schema = self.schemas[0]
        self.search_path = ", ".join(
            s if re.fullmatch(r"[a-z_][a-z0-9_]*", s) else _quote(s) for s in self.schemas)
        self._con = catalog_build.connect()
        self.relations, self._widths = catalog_build.build(self._con, metadata, self.schemas,
                                                           {**PARAMETERS, **SETTINGS})
        catalog_build.lock(self._con)
        self._checked: dict = {}
        self._checked_lock = threading.Lock()

    # ------------------------------------------------------------ the check

    def answers(self, sql: str) -> bool:
        """True iff ``sql`` is one catalog statement (or a SHOW of a known parameter) that
        ``run`` answers; never raises."""
        try:
            return self._show_name(sql) is not None or not isinstance(self._check(sql), str)
        except Exception:  # noqa: BLE001 - any failure to understand means "not ours"
            return False

    def _show_name(self, sql: str) -> str | None:
        match = _SHOW.match(sql)
        if not match:
            return None
        name = " ".join(match.group(1).split()).lower()
        name = _SHOW_ALIASES.get(name, name)
        return next((k for k in PARAMETERS if k.lower() == name), None)

    def _check(self, sql: str):
        """The checked tree of a catalog statement (a copy to rewrite), or the refusal's
        SQLSTATE: 42601 for a statement of another shape, 42P01 for one that names a
        relation outside the catalog. The last few are kept, as ``answers`` and ``run``
        check the same text one after the other."""
        with self._checked_lock:
            found = self._checked.get(sql)
        if found is None:
            found = "42601"
            tree = catalog_scope.parse(sql)
            if tree is not None and catalog_scope.shape_ok(tree):
                resolved = catalog_scope.resolve(tree, self.relations)
                found = tree if resolved is not None else "42P01"
            if len(sql) <= _CACHE_MAX_SQL:
                with self._checked_lock:
                    if len(self._checked) >= _CACHE_SIZE:
                        self._checked.pop(next(iter(self._checked)))
                    self._checked[sql] = found
        return found if isinstance(found, str) else found.copy()

    # ------------------------------------------------------------ the answer

    def run(self, sql: str, params: list | None = None, *, user: str = OWNER,
            database: str | None = None, cursors: list | None = None,
            settings: dict | None = None):
        """(columns as (name, DuckDB type name), rows) of a catalog statement, for ``user``
        connected to ``database`` (``current_database()``; the metadata's collection if
        not given). Raises a ``ProgrammingError`` with a SQLSTATE for anything ``answers``
        refuses, past a limit (54000, also past MAX_ROWS rows) or that the engine rejects
        (its text is logged, never shown). ``cursors`` receives the running cursor (to
        interrupt it); ``settings`` the session's (shown by ``pg_settings``)."""
        show = self._show_name(sql)
        if show is not None:
            return [(show, "VARCHAR")], [(self._parameter(show, user),)]
        try:
            tree = self._check(sql)
        except Exception:  # noqa: BLE001 - a statement we cannot parse is not ours
            tree = "42601"
        if isinstance(tree, str):
            raise CatalogError(_NOT_OURS if tree == "42601" else _NOT_CATALOG, tree)
        database = _truncated(self.database if database is None else database)
        try:
            text = self._compile(tree, params, user, database)
        except errors.Error:
            raise
        except Exception as error:  # noqa: BLE001 - only dpsql errors reach the analyst
            raise catalog_limits.engine_error(error, sql) from None
        return self._execute(text, database, cursors, sql, settings or {})

    def _compile(self, tree, params, user: str, database: str) -> str:
        """The DuckDB text of a checked tree: parameters inlined, limits checked, relations
        and expressions rewritten, sizes guarded."""
        tree = catalog_limits.inline(tree, params)
        catalog_limits.check(tree)
        catalog_width.check(tree, self._widths)
        tree = pgcompat.resolve(tree, self._relation_oid)
        resolved = catalog_scope.resolve(tree, self.relations)
        if resolved is None:            # inlining changed nothing a scope sees; kept safe
            raise CatalogError(_NOT_CATALOG, "42P01")
        catalog_scope.rewrite(tree, resolved)
        session = catalog_rewrite.Session(VERSION, user, database, self.current_schema,
                                          self.schemas)
        tree = catalog_rewrite.rewrite(tree, session)
        tree = catalog_limits.guard(tree)
        return tree.sql(dialect="duckdb")

    def _execute(self, text: str, database: str, cursors, sql: str, settings: dict):
        cursor = self._con.cursor()
        if cursors is not None:
            cursors.append(cursor)
        try:
            cursor.execute(f"SET VARIABLE {catalog_build.DATABASE_VARIABLE} = ?", [database])
            cursor.execute(f"SET VARIABLE {catalog_build.SETTINGS_VARIABLE} = "
                           "map(?::VARCHAR[], ?::VARCHAR[])",
                           [[k.lower() for k in settings], [_cut(str(v)) for v in settings.values()]])
            cursor.execute(text)
            columns = [(d[0], str(d[1])) for d in cursor.description]
            rows = _fetch(cursor)
        except duckdb.Error as error:
            raise catalog_limits.engine_error(error, sql) from None
        finally:
            cursor.close()
        return columns, rows

    def _parameter(self, name: str, user: str) -> str:
        if name == "search_path":
            return self.search_path
        if name == "session_authorization":
            return user
        return PARAMETERS[name]

    def _relation_oid(self, name: str):
        schema, _, table = name.rpartition(".")
        found = self._con.cursor().execute(
            "SELECT c.oid FROM dpsql_pg.pg_class c JOIN dpsql_pg.pg_namespace n ON "
            "n.oid = c.relnamespace WHERE c.relname = ? AND (? = '' OR n.nspname = ?)",
            [table, schema, schema]).fetchone()
        return found[0] if found else None


def _cut(value: str) -> str:
    """At most ``catalog_build.SETTING_BYTES`` bytes of ``value`` (whole characters)."""
    return value.encode()[:catalog_build.SETTING_BYTES].decode(errors="ignore")


def _fetch(cursor) -> list:
    """The result's rows, at most MAX_ROWS of at most MAX_RESULT_BYTES (54000 past them)."""
    rows, size = [], 0
    while True:
        batch = cursor.fetchmany(_BATCH)
        rows.extend(batch)
        size += sum(_size(v) for row in batch for v in row)
        if len(rows) > MAX_ROWS:
            raise TooLarge(f"a catalog query returns at most {MAX_ROWS:,} rows")
        if size > MAX_RESULT_BYTES:
            raise TooLarge(f"a catalog query returns at most {MAX_RESULT_BYTES >> 20} MiB")
        if len(batch) < _BATCH:
            return rows


def _size(value) -> int:
    if isinstance(value, (str, bytes)):
        return len(value)
    if isinstance(value, (list, tuple)):
        return 8 + sum(_size(v) for v in value)
    if isinstance(value, dict):
        return 8 + sum(_size(v) for v in value.values())
    return 8


def _schemas(metadata) -> list:
    """The schemas in search-path order: public first when it holds a table."""
    named = []
    for table in metadata.tables.values():
        schema = table.schema or "public"
        if schema not in named:
            named.append(schema)
    if "public" in named or not named:
        return ["public"] + [s for s in named if s != "public"]
    return named


def _truncated(database: str) -> str:
    """A database name as PostgreSQL keeps it: at most 63 bytes."""
    return database.encode()[:catalog_build.MAX_DATABASE_BYTES].decode(errors="ignore")


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'
