"""PostgreSQL's functions and reg* casts, as the catalog's DuckDB answers them.

Owns: the macros that stand for PostgreSQL catalog functions DuckDB lacks or answers
differently (``format_type``, ``pg_get_userbyid``, ...), and turning a cast of a name to a reg* type into the oid it names, before the catalog
runs the query (DuckDB has no reg* types; JDBC's ``getTables`` compares
``classoid = 'pg_class'::regclass``). System relations have PostgreSQL's fixed oids; a
metadata table has the oid of the catalog's own pg_class; an unknown name is NULL.
"""
from __future__ import annotations

from sqlglot import exp

from ..errors import ProgrammingError

OWNER = "dpsql"


class TooLarge(ProgrammingError):
    """A catalog result past its row limit (SQLSTATE 54000, program_limit_exceeded)."""

    sqlstate = "54000"


PG_TYPE_NAMES = {16: "boolean", 20: "bigint", 21: "smallint", 23: "integer", 25: "text",
                  700: "real", 701: "double precision", 1043: "character varying",
                  1082: "date", 1114: "timestamp without time zone",
                  1184: "timestamp with time zone", 1700: "numeric"}

_MACROS = {
    "pg_get_userbyid": "(role) AS '" + OWNER + "'",
    "pg_table_is_visible": "(rel) AS rel IN (SELECT oid FROM dpsql_pg.pg_class)",
    "pg_get_expr": "(expr, rel) AS NULL::VARCHAR, (expr, rel, pretty) AS NULL::VARCHAR",
    "pg_get_serial_sequence": "(tab, col) AS NULL::VARCHAR",
    "to_regtype": "(name) AS NULL::BIGINT", "to_regclass": "(name) AS NULL::BIGINT",
    "pg_relation_is_publishable": "(rel) AS false", "pg_encoding_to_char": "(e) AS 'UTF8'",
    "pg_get_statisticsobjdef_columns": "(oid) AS NULL::VARCHAR",
    "array_upper": "(arr, dim) AS len(arr)",
    "array_lower": "(arr, dim) AS CASE WHEN len(arr) > 0 THEN 1 END",
    "obj_description": "(o, c := NULL) AS NULL::VARCHAR", "col_description": "(o, n) AS NULL",
    "pg_get_constraintdef": "(o, p := NULL) AS NULL::VARCHAR",
    "has_table_privilege": "(a, b, c := NULL) AS true", "pg_is_in_recovery": "() AS false",
    "has_schema_privilege": "(a, b, c := NULL) AS true", "pg_backend_pid": "() AS 0",
    "has_database_privilege": "(a, b, c := NULL) AS true", "pg_collation_is_visible": "(c) AS true",
    "format_type": "(t, m) AS CASE t " + " ".join(
        f"WHEN {oid} THEN '{name}'" for oid, name in PG_TYPE_NAMES.items())
        + " ELSE format_type(t, m) END",
}
"""PostgreSQL functions DuckDB lacks or answers differently, as macros named
``dpsql_<name>``; calls are renamed to them."""


SYSTEM_OIDS = {"pg_class": 1259, "pg_type": 1247, "pg_attribute": 1249, "pg_proc": 1255,
               "pg_namespace": 2615, "pg_constraint": 2606, "pg_index": 2610,
               "pg_description": 2609, "pg_database": 1262, "pg_authid": 1260,
               "pg_trigger": 2620, "pg_attrdef": 2604, "pg_am": 2601}
NAMESPACE_OIDS = {"pg_catalog": 11, "public": 2200, "information_schema": 13000}
TYPE_OIDS = {"bool": 16, "boolean": 16, "bytea": 17, "int8": 20, "bigint": 20, "int2": 21,
             "smallint": 21, "int4": 23, "integer": 23, "text": 25, "oid": 26,
             "float4": 700, "real": 700, "float8": 701, "double precision": 701,
             "varchar": 1043, "character varying": 1043, "date": 1082, "timestamp": 1114,
             "timestamptz": 1184, "numeric": 1700}


def _reg_type(to) -> str | None:
    if isinstance(to, exp.ObjectIdentifier):
        name = to.name.lower()
    elif isinstance(to, exp.DataType) and to.this == exp.DType.USERDEFINED and to.args.get("kind"):
        kind = to.args["kind"]
        name = (kind.name if isinstance(kind, (exp.Dot, exp.Identifier)) else str(kind)).lower()
    else:
        return None
    name = name.split(".")[-1]
    return name if name in ("regclass", "regtype", "regnamespace") else None


def resolve(tree: exp.Expression, relation_oid) -> exp.Expression:
    """``tree`` with every string literal cast to a reg* type replaced by its oid (NULL if
    unknown). ``relation_oid(name)`` is the oid of a metadata table, or None."""
    for cast in list(tree.find_all(exp.Cast)):
        kind = _reg_type(cast.to)
        if kind is None or not (isinstance(cast.this, exp.Literal) and cast.this.is_string):
            continue
        name = cast.this.this.strip().strip('"')
        key = name.lower()
        if kind == "regclass":
            oid = SYSTEM_OIDS.get(key.removeprefix("pg_catalog."))
            oid = relation_oid(name) if oid is None else oid
        elif kind == "regnamespace":
            oid = NAMESPACE_OIDS.get(key)
        else:
            oid = TYPE_OIDS.get(key.removeprefix("pg_catalog."))
        new = exp.Literal.number(oid) if oid is not None else exp.Cast(
            this=exp.Null(), to=exp.DataType.build("BIGINT"))
        if cast is tree:
            return new
        cast.replace(new)
    return tree
