"""The PostgreSQL catalog a client sees: names and types from the metadata, never data.

Owns: answering the catalog queries PostgreSQL clients send on connect and while
browsing (``SELECT version()``, psql's ``\\dt`` and ``\\d``, SQLAlchemy's reflection,
``information_schema``), because clients refuse to work without them and the
metadata they need is public. The answers come from a private in-memory DuckDB
holding one EMPTY table per metadata table, so no query can reach data; it is
locked (no files, no extensions, no settings changes) once built. A query is
answered only if ``answers`` accepts it: one SELECT over ``pg_catalog`` /
``information_schema`` relations with allow-listed functions. The accepted tree is
rewritten (relations to dpsql's own views, PostgreSQL-only functions and operators
to DuckDB macros) and only the rewritten tree is run, so what was checked is what runs.
"""
from __future__ import annotations

import re

import duckdb
import sqlglot
from sqlglot import exp

from ..errors import ProgrammingError
from . import pgcompat
from .pgcompat import _MACROS, OWNER

VERSION = "PostgreSQL 15.0 (dpsql)"
MAX_ROWS = 10_000
"""Most rows of a catalog result (clients list tables and columns; nothing needs more)."""

PARAMETERS = {
    "server_version": "15.0", "server_version_num": "150000", "server_encoding": "UTF8",
    "client_encoding": "UTF8", "DateStyle": "ISO, MDY", "TimeZone": "UTC",
    "integer_datetimes": "on", "standard_conforming_strings": "on",
    "IntervalStyle": "postgres", "is_superuser": "off", "application_name": "",
    "search_path": '"$user", public', "transaction_isolation": "read committed",
    "default_transaction_read_only": "on", "transaction_read_only": "on",
    "extra_float_digits": "1", "max_identifier_length": "63", "lc_collate": "C",
    "lc_ctype": "C", "session_authorization": "", "in_hot_standby": "off",
}
"""What a PostgreSQL server reports on startup and through SHOW (a fixed list)."""

_SHOW_ALIASES = {"transaction isolation level": "transaction_isolation",
                 "time zone": "TimeZone", "session authorization": "session_authorization"}

DUCK_TYPES = {"int": "BIGINT", "float": "DOUBLE", "string": "VARCHAR", "boolean": "BOOLEAN",
              "datetime": "TIMESTAMP", "date": "DATE"}

_DUCK_TO_PG = {"BIGINT": "bigint", "DOUBLE": "double precision", "VARCHAR": "text",
               "BOOLEAN": "boolean", "TIMESTAMP": "timestamp without time zone",
               "DATE": "date", "INTEGER": "integer"}

_PASS_THROUGH = ("pg_attrdef", "pg_constraint", "pg_depend",
                 "pg_description", "pg_enum", "pg_index", "pg_indexes", "pg_sequence",
                 "pg_sequences", "pg_tablespace", "pg_type")
"""DuckDB's own pg_catalog views that list nothing but types or our (constraint-free,
index-free) tables."""

_EMPTY = {
    "pg_collation": "oid BIGINT, collname VARCHAR, collnamespace BIGINT, collowner BIGINT, "
                    "collprovider VARCHAR, collisdeterministic BOOLEAN, collencoding INTEGER, "
                    "collcollate VARCHAR, collctype VARCHAR",
    "pg_policy": "polname VARCHAR, polrelid BIGINT, polcmd VARCHAR, polpermissive BOOLEAN, "
                 "polroles BIGINT[], polqual VARCHAR, polwithcheck VARCHAR",
    "pg_statistic_ext": "oid BIGINT, stxrelid BIGINT, stxname VARCHAR, stxnamespace BIGINT, "
                        "stxowner BIGINT, stxstattarget INTEGER, stxkeys SMALLINT[], "
                        "stxkind VARCHAR[]",
    "pg_publication": "oid BIGINT, pubname VARCHAR, pubowner BIGINT, puballtables BOOLEAN",
    "pg_publication_namespace": "oid BIGINT, pnpubid BIGINT, pnnspid BIGINT",
    "pg_publication_rel": "oid BIGINT, prpubid BIGINT, prrelid BIGINT, prqual VARCHAR, "
                          "prattrs SMALLINT[]",
    "pg_inherits": "inhrelid BIGINT, inhparent BIGINT, inhseqno INT, inhdetachpending BOOL",
    "pg_trigger": "oid BIGINT, tgrelid BIGINT, tgname VARCHAR, tgisinternal BOOLEAN",
    "pg_views": "schemaname VARCHAR, viewname VARCHAR, viewowner VARCHAR, definition VARCHAR",
}

_ALLOWED_FUNCTIONS = frozenset("""
    abs and any array array_agg array_length array_position array_to_string between bool_and
    bool_or btrim case cast char_length coalesce collate concat concat_ws count current_catalog
    current_database current_role current_schema current_schemas current_user current_version
    exists exploding_generate_series generate_series generate_subscripts greatest group_concat
    if ilike in initcap is json_object least left length like lower ltrim max min not nullif
    or position quote_ident regexp_like regexp_replace replace right rtrim session_user
    split_part string_agg strpos substr substring sum trim try_cast unnest upper version
""".split()) | set(_MACROS) | {"json_build_object"}
"""Functions a catalog query may call: catalog helpers, strings, comparisons, casts."""

_REFUSED_NODES = tuple(getattr(exp, n) for n in (
    "Insert", "Update", "Delete", "Merge", "Create", "Drop", "Alter", "Command", "Copy", "Set",
    "Pragma", "Use", "Attach", "Detach", "Describe", "Show", "LoadData", "Into", "Lock",
    "Transaction", "Commit", "Rollback", "Summarize", "Export", "Install", "Kill", "Grant",
    "Revoke", "TruncateTable", "Analyze", "Placeholder", "SessionParameter", "Lambda")
    if hasattr(exp, n))
_QUERY_ROOTS = (exp.Select, exp.Union, exp.Intersect, exp.Except)
_SHOW = re.compile(r"^\s*show\s+([a-z_ ]+?)\s*;?\s*$", re.I)
_PG_CATALOG, _INFO_SCHEMA = "pg_catalog", "information_schema"


class Catalog:
    """The pg_catalog and information_schema of one metadata collection, in DuckDB."""

    def __init__(self, metadata) -> None:
        self.metadata = metadata
        self.database = metadata.collection
        self.schemas = _schemas(metadata)
        self.current_schema = self.schemas[0]
        self.search_path = ", ".join(
            s if re.fullmatch(r"[a-z_][a-z0-9_]*", s) else _quote(s) for s in self.schemas)
        self._con = duckdb.connect(":memory:", config={
            "enable_external_access": False, "autoinstall_known_extensions": False,
            "autoload_known_extensions": False, "allow_community_extensions": False,
            "threads": 1, "memory_limit": "256MB"})
        _create_tables(self._con, metadata)
        _create_pg_views(self._con, self.schemas)
        _create_is_views(self._con, self.schemas, self.database)
        for name, body in _MACROS.items():
            self._con.execute(f"CREATE MACRO dpsql_{name}{body}")
        self.relations = {_PG_CATALOG: _view_names(self._con, "dpsql_pg"),
                          _INFO_SCHEMA: _view_names(self._con, "dpsql_is")}
        self._con.execute("SET lock_configuration = true")

    # ------------------------------------------------------------ the check

    def answers(self, sql: str) -> bool:
        """True iff ``sql`` is one catalog SELECT (or a SHOW of a known parameter) that
        ``run`` answers; never raises."""
        try:
            return self._show_name(sql) is not None or self._parse(sql) is not None
        except Exception:  # noqa: BLE001 - any failure to understand means "not ours"
            return False

    def _show_name(self, sql: str) -> str | None:
        match = _SHOW.match(sql)
        if not match:
            return None
        name = " ".join(match.group(1).split()).lower()
        name = _SHOW_ALIASES.get(name, name)
        return next((k for k in PARAMETERS if k.lower() == name), None)

    def _parse(self, sql: str):
        """The checked tree of a catalog SELECT, or None."""
        trees = [t for t in sqlglot.parse(sql, read="postgres") if t is not None]
        if len(trees) != 1 or not isinstance(trees[0], _QUERY_ROOTS):
            return None
        tree = trees[0]
        ctes = {c.alias_or_name.lower() for c in tree.find_all(exp.CTE)}
        for node in tree.walk():
            if isinstance(node, _REFUSED_NODES) or (
                    isinstance(node, exp.Select) and not node.expressions):
                return None
            if isinstance(node, exp.Table) and not self._relation_ok(node, ctes):
                return None
            if isinstance(node, exp.Func) and _function_name(node) not in _ALLOWED_FUNCTIONS:
                return None
            if isinstance(node, exp.Dot) and not _dot_ok(node):
                return None
            if isinstance(node, exp.Operator) and _operator_name(node) not in _OPERATORS:
                return None
        return tree

    def _relation_ok(self, table: exp.Table, ctes: set) -> bool:
        if not isinstance(table.this, exp.Identifier):
            return isinstance(table.this, exp.ExplodingGenerateSeries) and table.db in (
                "", _PG_CATALOG) and not table.catalog
        name, db = table.name.lower(), table.db.lower()
        if table.catalog:
            return False
        if not db:
            return name in ctes or name in self.relations[_PG_CATALOG]
        return db in self.relations and name in self.relations[db]

    # ------------------------------------------------------------ the answer

    def run(self, sql: str, params: list | None = None, *, user: str = OWNER,
            cursors: list | None = None):
        """(columns as (name, DuckDB type name), rows) of a catalog query; raises
        ``ProgrammingError`` for anything ``answers`` refuses or DuckDB rejects, and past
        MAX_ROWS rows. ``cursors`` receives the running cursor (to interrupt it)."""
        try:
            show = self._show_name(sql)
            tree = None if show else self._parse(sql)
        except Exception:  # noqa: BLE001
            show = tree = None
        if show is not None:
            return [(show, "VARCHAR")], [(self._parameter(show, user),)]
        if tree is None:
            raise ProgrammingError("not a catalog query dpsql answers from the metadata")
        try:
            text = self._rewrite(tree, user).sql(dialect="duckdb")
        except Exception as error:  # noqa: BLE001 - a tree DuckDB cannot be given
            raise ProgrammingError(f"catalog query not supported: {_one_line(error)}") from None
        try:
            cursor = self._con.cursor()
            if cursors is not None:
                cursors.append(cursor)
            try:
                cursor.execute(text, list(params) if params else None)
                columns = [(d[0], str(d[1])) for d in cursor.description]
                rows = cursor.fetchmany(MAX_ROWS + 1)
            finally:
                cursor.close()
            if len(rows) > MAX_ROWS:
                raise pgcompat.TooLarge(f"a catalog query returns at most {MAX_ROWS:,} rows")
            return columns, rows
        except duckdb.Error as error:
            raise ProgrammingError(_one_line(error)) from None

    def _parameter(self, name: str, user: str) -> str:
        if name == "search_path":
            return self.search_path
        if name == "session_authorization":
            return user
        return PARAMETERS[name]

    def _rewrite(self, tree, user: str):
        """The tree DuckDB runs: dpsql's views and macros, PostgreSQL's column names."""
        tree = pgcompat.resolve(tree.copy(), self._relation_oid)
        ctes = {c.alias_or_name.lower() for c in tree.find_all(exp.CTE)}
        names = _output_names(tree)
        for node in reversed(list(tree.walk(bfs=False))):
            new = self._rewrite_node(node, ctes, user)
            if new is not node:
                node.replace(new)
        first = tree
        while isinstance(first, (exp.Union, exp.Intersect, exp.Except)):
            first = first.this
        if isinstance(first, exp.Select):
            first.set("expressions", [
                e if n is None or isinstance(e, exp.Alias) else exp.alias_(e, n, quoted=True)
                for e, n in zip(first.expressions, names)])
        return tree

    def _relation_oid(self, name: str):
        schema, _, table = name.rpartition(".")
        found = self._con.cursor().execute(
            "SELECT c.oid FROM dpsql_pg.pg_class c JOIN dpsql_pg.pg_namespace n ON "
            "n.oid = c.relnamespace WHERE c.relname = ? AND (? = '' OR n.nspname = ?)",
            [table, schema, schema]).fetchone()
        return found[0] if found else None

    def _rewrite_node(self, node, ctes: set, user: str):
        if isinstance(node, exp.Table):
            return _rewrite_table(node, ctes)
        if isinstance(node, exp.Dot) and isinstance(node.this, exp.Identifier) and (
                node.this.name.lower() == _PG_CATALOG):
            return node.expression
        constant = self._constant(node, user)
        if constant is not None:
            return constant
        if isinstance(node, exp.Anonymous) and node.name.lower() in _MACROS:
            node.set("this", f"dpsql_{node.name.lower()}")
        if isinstance(node, exp.Column) and node.args.get("db") is not None:
            _rewrite_column(node)
        if isinstance(node, exp.Operator):
            return _operator(node)
        if isinstance(node, exp.Collate):
            return node.this
        if isinstance(node, exp.ObjectIdentifier):
            return exp.DataType.build("bigint")
        if isinstance(node, exp.DataType):
            return _data_type(node)
        if isinstance(node, exp.Anonymous) and node.name.lower() == "json_build_object":
            node.set("this", "json_object")
        return node

    def _constant(self, node, user: str):
        """Session functions, answered from the metadata and the connection."""
        name = _function_name(node) if isinstance(node, exp.Func) else None
        if name in ("current_version", "version"):
            return exp.Literal.string(VERSION)
        if name in ("current_user", "session_user", "current_role"):
            return exp.Literal.string(user)
        if name in ("current_database", "current_catalog"):
            return exp.Literal.string(self.database)
        if name == "current_schema":
            return exp.Literal.string(self.current_schema)
        if name == "current_schemas":
            implicit = [] if isinstance(node.this, exp.Boolean) and not node.this.this else [
                "pg_catalog"]
            return exp.Array(expressions=[exp.Literal.string(s)
                                          for s in implicit + self.schemas])
        return None


# ---------------------------------------------------------------- building


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


def _create_tables(con, metadata) -> None:
    con.execute("CREATE SCHEMA IF NOT EXISTS public")
    for table in metadata.tables.values():
        schema = _quote(table.schema or "public")
        con.execute(f"CREATE SCHEMA IF NOT EXISTS {schema}")
        columns = ", ".join(
            f"{_quote(c.name)} {DUCK_TYPES[c.type]}{'' if c.nullable else ' NOT NULL'}"
            for c in table.columns.values())
        con.execute(f"CREATE TABLE {schema}.{_quote(table.name)} ({columns})")


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _in_list(names) -> str:
    return "(" + ", ".join("'" + n.replace("'", "''") + "'" for n in names) + ")"


def _create_pg_views(con, schemas: list) -> None:
    """pg_catalog as dpsql shows it: the metadata's schemas, tables and columns only."""
    shown = _in_list(schemas + ["public", _PG_CATALOG, _INFO_SCHEMA])
    ours = _in_list(schemas + ["public"])
    con.execute("CREATE SCHEMA dpsql_pg")
    con.execute(f"""CREATE VIEW dpsql_pg.pg_namespace AS
        SELECT oid, schema_name AS nspname, 0::BIGINT AS nspowner, NULL::VARCHAR AS nspacl
        FROM duckdb_schemas() WHERE schema_name IN {shown}
          AND database_name = (CASE WHEN schema_name IN {ours} THEN current_database()
                                    ELSE 'system' END)""")
    con.execute(f"""CREATE VIEW dpsql_pg.pg_class AS
        SELECT * REPLACE ('d' AS relreplident, 2::BIGINT AS relam),
               false AS relforcerowsecurity
        FROM pg_catalog.pg_class WHERE relkind = 'r' AND relnamespace IN
          (SELECT oid FROM dpsql_pg.pg_namespace WHERE nspname IN {ours})""")
    con.execute("""CREATE VIEW dpsql_pg.pg_attribute AS
        SELECT * REPLACE (CASE atttypid WHEN 1043 THEN 25 ELSE atttypid END AS atttypid)
        FROM pg_catalog.pg_attribute WHERE attrelid IN (SELECT oid FROM dpsql_pg.pg_class)""")
    con.execute(f"""CREATE VIEW dpsql_pg.pg_tables AS SELECT n.nspname AS schemaname,
        c.relname AS tablename, '{OWNER}' AS tableowner, NULL::VARCHAR AS tablespace,
        false AS hasindexes, false AS hasrules, false AS hastriggers, false AS rowsecurity
        FROM dpsql_pg.pg_class c JOIN dpsql_pg.pg_namespace n ON n.oid = c.relnamespace""")
    con.execute(f"""CREATE VIEW dpsql_pg.pg_roles AS
        SELECT 10::BIGINT AS oid, '{OWNER}' AS rolname, false AS rolsuper, false AS rolinherit,
               false AS rolcreaterole, false AS rolcreatedb, true AS rolcanlogin,
               -1 AS rolconnlimit, NULL::VARCHAR[] AS rolconfig""")
    con.execute("CREATE VIEW dpsql_pg.pg_am AS SELECT 2::BIGINT AS oid, 'heap' AS amname, "
                "0::BIGINT AS amhandler, 't' AS amtype")
    con.execute("CREATE VIEW dpsql_pg.pg_user AS SELECT rolname AS usename, oid AS usesysid, "
                "false AS usesuper FROM dpsql_pg.pg_roles")
    con.execute("CREATE VIEW dpsql_pg.pg_settings AS SELECT * FROM (VALUES " + ", ".join(
        f"('{k}', '{v}')" for k, v in PARAMETERS.items()) + ") AS s(name, setting)")
    for name in _PASS_THROUGH:
        con.execute(f"CREATE VIEW dpsql_pg.{name} AS SELECT * FROM pg_catalog.{name}")
    for name, columns in _EMPTY.items():
        con.execute(f"CREATE TABLE dpsql_pg.{name} ({columns})")


def _create_is_views(con, schemas: list, database: str) -> None:
    """information_schema (and pg_database) as dpsql shows it: the metadata's tables,
    PostgreSQL's type names."""
    ours, catalog = _in_list(schemas), "'" + database.replace("'", "''") + "'"
    con.execute(f"""CREATE VIEW dpsql_pg.pg_database AS SELECT 1::BIGINT AS oid,
        {catalog} AS datname, 10::BIGINT AS datdba, 6 AS encoding, 'C' AS datcollate,
        'C' AS datctype, false AS datistemplate, true AS datallowconn, -1 AS datconnlimit""")
    pg_type = "CASE data_type " + " ".join(
        f"WHEN '{d}' THEN '{p}'" for d, p in _DUCK_TO_PG.items()) + " ELSE lower(data_type) END"
    con.execute("CREATE SCHEMA dpsql_is")
    con.execute(f"""CREATE VIEW dpsql_is.schemata AS SELECT * REPLACE ({catalog} AS catalog_name)
        FROM information_schema.schemata WHERE schema_name IN {ours}
        AND catalog_name = current_database()""")
    con.execute(f"""CREATE VIEW dpsql_is.tables AS SELECT * REPLACE ({catalog} AS table_catalog)
        FROM information_schema.tables WHERE table_schema IN {ours}
        AND table_catalog = current_database()""")
    con.execute(f"""CREATE VIEW dpsql_is.columns AS SELECT * REPLACE ({catalog} AS table_catalog,
        {pg_type} AS data_type) FROM information_schema.columns WHERE table_schema IN {ours}
        AND table_catalog = current_database()""")
    for name in ("views table_constraints key_column_usage constraint_column_usage "
                 "constraint_table_usage referential_constraints check_constraints").split():
        column = "constraint_schema" if "_constraints" in name[-12:] else "table_schema"
        con.execute(f"CREATE VIEW dpsql_is.{name} AS SELECT * FROM "
                    f"information_schema.{name} WHERE {column} IN {ours}")


def _view_names(con, schema: str) -> frozenset:
    rows = con.execute("SELECT table_name FROM information_schema.tables WHERE table_schema = ?",
                       [schema]).fetchall()
    return frozenset(r[0] for r in rows)


# ---------------------------------------------------------------- checking and rewriting


def _function_name(node: exp.Func) -> str:
    if isinstance(node, exp.Anonymous):
        return node.name.lower()
    return node.sql_name().lower() if hasattr(node, "sql_name") else type(node).__name__.lower()


def _dot_ok(node: exp.Dot) -> bool:
    """``pg_catalog.f(...)`` is fine; other dotted expressions are column paths."""
    if isinstance(node.expression, exp.Func):
        return isinstance(node.this, exp.Identifier) and node.this.name.lower() == _PG_CATALOG
    return True


def _rewrite_table(table: exp.Table, ctes: set):
    """Catalog relations to dpsql's views, aliased by their own name (as PostgreSQL
    lets columns name them); table functions lose their ``pg_catalog.``."""
    if not isinstance(table.this, exp.Identifier):
        table.set("db", None)
        return table
    name, db = table.name.lower(), table.db.lower()
    if not db and name in ctes:
        return table
    schema = "dpsql_is" if db == _INFO_SCHEMA else "dpsql_pg"
    new = exp.Table(this=exp.to_identifier(name), db=exp.to_identifier(schema),
                    alias=table.args.get("alias") or exp.TableAlias(this=exp.to_identifier(name)))
    return new


def _rewrite_column(column: exp.Column) -> None:
    """``pg_catalog.pg_class.relname`` names the relation the way its FROM did."""
    if column.args["db"].name.lower() in (_PG_CATALOG, _INFO_SCHEMA):
        column.set("db", None)
        column.set("table", exp.to_identifier(column.table.lower()))


_OPERATORS = {"~": lambda a, b: exp.RegexpLike(this=a, expression=b),
              "!~": lambda a, b: exp.not_(exp.RegexpLike(this=a, expression=b)),
              "=": lambda a, b: exp.EQ(this=a, expression=b),
              "<>": lambda a, b: exp.NEQ(this=a, expression=b)}
"""``OPERATOR(pg_catalog.x)`` forms psql writes, as plain DuckDB expressions."""


def _operator_name(node: exp.Operator) -> str:
    return str(node.args.get("operator", "")).split(".")[-1].strip()


def _operator(node: exp.Operator):
    right = node.expression.this if isinstance(node.expression, exp.Collate) else node.expression
    return _OPERATORS[_operator_name(node)](node.this, right)


def _data_type(node: exp.DataType):
    """PostgreSQL-only types as DuckDB ones: reg* and oid as BIGINT, pg_catalog.x as x."""
    kind = node.args.get("kind")
    if node.this != exp.DType.USERDEFINED or kind is None:
        return node
    name = (kind.name if isinstance(kind, (exp.Dot, exp.Identifier)) else str(kind)).lower()
    name = "bigint" if name.startswith("reg") or name == "oid" else name.split(".")[-1]
    try:
        return exp.DataType.build(name, dialect="postgres")
    except Exception:  # noqa: BLE001
        raise ProgrammingError(f"type {name} is not supported in catalog queries") from None


def _output_names(tree) -> list:
    """The column names PostgreSQL gives the outermost select list (None: keep)."""
    first = tree
    while isinstance(first, (exp.Union, exp.Intersect, exp.Except)):
        first = first.this
    if not isinstance(first, exp.Select):
        return []
    return [None if isinstance(e, (exp.Alias, exp.Star)) else _pg_name(e)
            for e in first.expressions]


def _pg_name(node) -> str:
    """PostgreSQL's FigureColname: columns, functions, casts, CASE, else ?column?."""
    if isinstance(node, exp.Column):
        return node.name if not isinstance(node.this, exp.Star) else None
    if isinstance(node, exp.Dot):
        return _pg_name(node.expression)
    if isinstance(node, exp.Cast):
        inner = _pg_name(node.this)
        return inner if inner != "?column?" else node.to.sql("postgres").lower().split(".")[-1]
    if isinstance(node, exp.Case):
        default = node.args.get("default")
        inner = _pg_name(default) if default is not None else "?column?"
        return inner if inner != "?column?" else "case"
    if isinstance(node, exp.Subquery) and isinstance(node.this, exp.Select):
        return _pg_name(node.this.expressions[0]) if node.this.expressions else "?column?"
    if isinstance(node, exp.Array):
        return "array"
    if isinstance(node, exp.Func):
        name = _function_name(node)
        return {"current_version": "version", "regexp_like": "?column?"}.get(name, name)
    return "?column?"


def _one_line(error: Exception) -> str:
    text = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    return re.sub(r"(/[\w.-]+)+", "<path>", text)[:300]
