"""The catalog's private DuckDB: PostgreSQL's catalog relations filled from the metadata.

Owns: the database a catalog statement runs on, and what it holds. Every relation a
statement may read is a view in ``dpsql_pg`` (for ``pg_catalog``) or ``dpsql_is`` (for
``information_schema``) over a table of ``dpsql_data`` whose rows are written here, from
the metadata and fixed PostgreSQL facts; no view reads DuckDB's own catalog, so nothing
of the engine (its settings, functions, paths) is in any answer. Database-name columns
(``current_database()``'s value) come from the per-cursor variable ``dpsql_database``.

The connection has no file system at all (external access off, no allowed directories
or paths, the local file system disabled, no temporary directory, so nothing spills),
one thread, ``MEMORY_LIMIT`` of memory and a locked configuration.
"""
from __future__ import annotations

import duckdb

from .catalog_columns import INFORMATION_SCHEMA, PG_CATALOG, relations, types
from .pgcompat import MACROS, NAMESPACE_OIDS, OWNER

MEMORY_LIMIT = "32MB"
"""What one catalog statement may hold in DuckDB's memory (sorts, joins, aggregates)."""

SCHEMAS = {"pg_catalog": "dpsql_pg", "information_schema": "dpsql_is"}
"""The schema a statement names, and the catalog's schema that holds its views."""

DATABASE_VARIABLE = "dpsql_database"
OWNER_OID, DATABASE_OID, FIRST_OID = 10, 16383, 16384

PG_TYPES = {"int": (20, "bigint", "int8", 8, "d", "p"),
            "float": (701, "double precision", "float8", 8, "d", "p"),
            "string": (25, "text", "text", -1, "i", "x"),
            "boolean": (16, "boolean", "bool", 1, "c", "p"),
            "datetime": (1114, "timestamp without time zone", "timestamp", 8, "d", "p"),
            "date": (1082, "date", "date", 4, "i", "p")}
"""A metadata type's PostgreSQL type: oid, name, udt name, typlen, typalign, typstorage."""


def connect():
    """A DuckDB with no file system, one thread and ``MEMORY_LIMIT``; locked by ``lock``."""
    con = duckdb.connect(":memory:", config={
        "threads": 1, "memory_limit": MEMORY_LIMIT, "temp_directory": "",
        "autoinstall_known_extensions": False, "autoload_known_extensions": False,
        "allow_community_extensions": False, "python_enable_replacements": False})
    for setting in ("allowed_directories = []", "allowed_paths = []",
                    "enable_external_access = false",
                    "disabled_filesystems = 'LocalFileSystem'"):
        con.execute(f"SET {setting}")
    try:    # a zero divisor raises, as on PostgreSQL (22012), never +-inf or NaN (review 14)
        con.execute("SET GLOBAL ieee_floating_point_ops = false")
    except duckdb.Error:
        pass                     # a DuckDB without the setting (before 1.1) raises anyway
    return con


def lock(con) -> None:
    con.execute("SET lock_configuration = true")


MAX_DATABASE_BYTES = 63
"""The longest database name a catalog answers with (PostgreSQL truncates longer ones)."""


SETTINGS_VARIABLE = "dpsql_settings"
"""The DuckDB variable holding the session's settings (a MAP of lower-case names to text)
while a catalog statement runs: ``pg_settings`` and ``current_setting()`` show them, as
PostgreSQL does (they showed the defaults: fourteenth review of issue 33)."""
SETTING_BYTES = 1000
"""The most bytes of a session's setting that ``pg_settings`` shows (``Catalog.run`` cuts
longer ones; SHOW shows all): within ``catalog_limits.MAX_VALUE_BYTES``, the width every
other catalog value has at most, on which the widest-row bound of ``catalog_width`` rests."""


def build(con, metadata, schemas: list, parameters: dict) -> tuple:
    """Create every catalog relation and macro on ``con``; returns the allow-list,
    ``{"pg_catalog": names, "information_schema": names}``, and the widest value of
    every column, ``{(schema, relation): {column: bytes}}`` (``catalog_width``)."""
    for schema in ("dpsql_data", *SCHEMAS.values()):
        con.execute(f"CREATE SCHEMA {schema}")
    rows = _rows(metadata, schemas, parameters)
    allowed, widths = {}, {}
    for statement_schema, text in (("pg_catalog", PG_CATALOG),
                                   ("information_schema", INFORMATION_SCHEMA)):
        specs = relations(text)
        for name, columns in specs.items():
            found = rows.get((statement_schema, name), [])
            replaced = _create(con, SCHEMAS[statement_schema], name, columns, found)
            widths[(statement_schema, name)] = {
                c: width(MAX_DATABASE_BYTES * "x") if c in replaced else
                width(SETTING_BYTES * "x") if (name, c) == ("pg_settings", "setting") else max(
                    (width(r.get(c)) for r in found), default=width(None)) for c, _ in columns}
        allowed[statement_schema] = frozenset(specs)
    for name, body in MACROS.items():
        con.execute(f"CREATE MACRO dpsql_{name}{body}")
    return allowed, widths


def width(value) -> int:
    """A value's size in a result: 16 bytes, plus its text's for a string or list."""
    if isinstance(value, (list, tuple)):
        return 16 + sum(width(v) for v in value)
    return 16 + (len(value.encode()) if isinstance(value, str) else 0)


def _create(con, schema: str, name: str, columns: list, rows: list) -> list:
    """The relation ``schema.name``; returns its columns holding the database's name."""
    data = f"dpsql_data.{_quote(schema + '.' + name)}"
    con.execute(f"CREATE TABLE {data} (" + ", ".join(
        f"{_quote(c)} {t}" for c, t in columns) + ")")
    if rows:
        names = [c for c, _ in columns]
        con.executemany(f"INSERT INTO {data} VALUES ({', '.join('?' * len(names))})",
                        [[row.get(c) for c in names] for row in rows])
    replaced = [c for c, _ in columns if c.endswith("_catalog") or c == "catalog_name"
                or (name == "pg_database" and c == "datname")]
    replacements = [f"getvariable('{DATABASE_VARIABLE}')::VARCHAR AS {_quote(c)}" for c in replaced]
    if name == "pg_settings":     # the session's own value where it SET one
        replacements.append(f"COALESCE(element_at(getvariable('{SETTINGS_VARIABLE}'), "
                            'lower("name"))[1], "setting") AS "setting"')
    replace = (" REPLACE (" + ", ".join(replacements) + ")") if replacements else ""
    con.execute(f"CREATE VIEW {schema}.{_quote(name)} AS SELECT *{replace} FROM {data}")
    return replaced


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


# ---------------------------------------------------------------- rows


def _rows(metadata, schemas: list, parameters: dict) -> dict:
    """The rows of every catalog relation that has any, keyed by (schema, relation)."""
    oids = _oids(metadata, schemas)
    pg = {"pg_namespace": _namespaces(oids), "pg_type": _types(),
          "pg_database": [_database()], "pg_roles": [_role()], "pg_user": [_user()],
          "pg_settings": _settings(parameters), "pg_am": _access_methods(),
          "pg_tablespace": [{"oid": 1663, "spcname": "pg_default", "spcowner": OWNER_OID},
                            {"oid": 1664, "spcname": "pg_global", "spcowner": OWNER_OID}],
          "pg_collation": _collations(), "pg_class": [], "pg_attribute": [],
          "pg_tables": []}
    info = {"schemata": [_schema_row(s) for s in schemas], "tables": [], "columns": []}
    for table in metadata.tables.values():
        schema = table.schema or "public"
        oid = oids[(schema, table.name)]
        pg["pg_class"].append(_class(table, oid, oids[schema]))
        pg["pg_tables"].append({"schemaname": schema, "tablename": table.name,
                                "tableowner": OWNER, "hasindexes": False, "hasrules": False,
                                "hastriggers": False, "rowsecurity": False})
        info["tables"].append({"table_schema": schema, "table_name": table.name,
                               "table_type": "BASE TABLE", "is_insertable_into": "NO",
                               "is_typed": "NO"})
        for number, column in enumerate(table.columns.values(), 1):
            pg["pg_attribute"].append(_attribute(oid, number, column))
            info["columns"].append(_column(schema, table.name, number, column))
    rows = {("pg_catalog", k): v for k, v in pg.items()}
    rows.update({("information_schema", k): v for k, v in info.items()})
    return rows


def _oids(metadata, schemas: list) -> dict:
    """Oids of the metadata's schemas (by name) and tables (by (schema, name))."""
    oids = dict(NAMESPACE_OIDS)
    next_oid = FIRST_OID
    for schema in schemas:
        if schema not in oids:
            oids[schema], next_oid = next_oid, next_oid + 1
    for table in metadata.tables.values():
        oids[(table.schema or "public", table.name)], next_oid = next_oid, next_oid + 1
    return oids


def _namespaces(oids: dict) -> list:
    return [{"oid": oid, "nspname": name, "nspowner": OWNER_OID}
            for name, oid in oids.items() if isinstance(name, str)]


def _types() -> list:
    keys = ("oid typname typlen typbyval typtype typcategory typispreferred typelem typarray "
            "typinput typoutput typalign typstorage typcollation").split()
    out = []
    for values in types():
        row = dict(zip(keys, values))
        row.update(typnamespace=NAMESPACE_OIDS["pg_catalog"], typowner=OWNER_OID,
                   typisdefined=True, typdelim=",", typrelid=0, typnotnull=False,
                   typbasetype=0, typtypmod=-1, typndims=0,
                   typsubscript="array_subscript_handler" if row["typelem"] else "-")
        out.append(row)
    return out


def _database() -> dict:
    return {"oid": DATABASE_OID, "datdba": OWNER_OID, "encoding": 6, "datlocprovider": "c",
            "datistemplate": False, "datallowconn": True, "datconnlimit": -1,
            "datfrozenxid": 0, "datminmxid": 1, "dattablespace": 1663, "datcollate": "C",
            "datctype": "C"}


def _role() -> dict:
    return {"oid": OWNER_OID, "rolname": OWNER, "rolsuper": False, "rolinherit": True,
            "rolcreaterole": False, "rolcreatedb": False, "rolcanlogin": True,
            "rolreplication": False, "rolconnlimit": -1, "rolpassword": "********",
            "rolbypassrls": False}


def _user() -> dict:
    return {"usename": OWNER, "usesysid": OWNER_OID, "usecreatedb": False,
            "usesuper": False, "userepl": False, "usebypassrls": False,
            "passwd": "********"}


DPSQL_SETTINGS = ("dpsql.epsilon", "dpsql.delta", "dpsql.rho")
"""dpsql's own settings: a session's privacy (its value shown from ``SETTINGS_VARIABLE``)."""


def _settings(parameters: dict) -> list:
    return [{"name": name, "setting": value, "category": "", "short_desc": "",
             "context": "user", "vartype": "string", "source": "default",
             "boot_val": value, "reset_val": value, "pending_restart": False}
            for name, value in {**parameters, **dict.fromkeys(DPSQL_SETTINGS, "")}.items()]


def _access_methods() -> list:
    return [{"oid": 2, "amname": "heap", "amhandler": "heap_tableam_handler", "amtype": "t"},
            {"oid": 403, "amname": "btree", "amhandler": "bthandler", "amtype": "i"}]


def _collations() -> list:
    base = {"collnamespace": NAMESPACE_OIDS["pg_catalog"], "collowner": OWNER_OID,
            "collisdeterministic": True, "collencoding": -1}
    return [dict(base, oid=100, collname="default", collprovider="d"),
            dict(base, oid=950, collname="C", collprovider="c", collcollate="C",
                 collctype="C"),
            dict(base, oid=951, collname="POSIX", collprovider="c", collcollate="POSIX",
                 collctype="POSIX")]


def _class(table, oid: int, namespace: int) -> dict:
    return {"oid": oid, "relname": table.name, "relnamespace": namespace, "reltype": 0,
            "reloftype": 0, "relowner": OWNER_OID, "relam": 2, "relfilenode": 0,
            "reltablespace": 0, "relpages": 0, "reltuples": -1.0, "relallvisible": 0,
            "reltoastrelid": 0, "relhasindex": False, "relisshared": False,
            "relpersistence": "p", "relkind": "r", "relnatts": len(table.columns),
            "relchecks": 0, "relhasrules": False, "relhastriggers": False,
            "relhassubclass": False, "relrowsecurity": False, "relforcerowsecurity": False,
            "relispopulated": True, "relreplident": "d", "relispartition": False,
            "relrewrite": 0, "relfrozenxid": 0, "relminmxid": 1}


def _attribute(relation: int, number: int, column) -> dict:
    oid, _, _, length, align, storage = PG_TYPES[column.type]
    return {"attrelid": relation, "attname": column.name, "atttypid": oid,
            "attstattarget": -1, "attlen": length, "attnum": number, "attndims": 0,
            "attcacheoff": -1, "atttypmod": -1, "attbyval": length in (1, 4, 8),
            "attalign": align, "attstorage": storage, "attcompression": "",
            "attnotnull": not column.nullable, "atthasdef": False, "atthasmissing": False,
            "attidentity": "", "attgenerated": "", "attisdropped": False,
            "attislocal": True, "attinhcount": 0,
            "attcollation": 100 if column.type == "string" else 0}


def _column(schema: str, table: str, number: int, column) -> dict:
    _, name, udt, _, _, _ = PG_TYPES[column.type]
    return {"table_schema": schema, "table_name": table, "column_name": column.name,
            "ordinal_position": number, "is_nullable": "YES" if column.nullable else "NO",
            "data_type": name,
            "character_octet_length": 1073741824 if column.type == "string" else None,
            "numeric_precision": {"int": 64, "float": 53}.get(column.type),
            "numeric_precision_radix": 2 if column.type in ("int", "float") else None,
            "numeric_scale": 0 if column.type == "int" else None,
            "datetime_precision": {"datetime": 6, "date": 0}.get(column.type),
            "udt_schema": "pg_catalog", "udt_name": udt, "dtd_identifier": str(number),
            "is_self_referencing": "NO", "is_identity": "NO", "is_generated": "NEVER",
            "is_updatable": "NO"}


def _schema_row(schema: str) -> dict:
    return {"schema_name": schema, "schema_owner": OWNER}
