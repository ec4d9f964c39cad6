"""PostgreSQL's functions and reg* casts, as the catalog's DuckDB answers them.

Owns: the macros that stand for PostgreSQL catalog functions DuckDB lacks or answers
differently (``format_type``, ``pg_get_userbyid``, ...), and turning a cast of a name to a
reg* type into what it names, before the catalog runs the query (DuckDB has no reg*
types; JDBC's ``getTables`` compares ``classoid = 'pg_class'::regclass``). System
relations have PostgreSQL's fixed oids; a metadata table has the oid of the catalog's own
pg_class; an unknown name is NULL; a ``regproc`` is the function's name. Every macro uses
each of its parameters once (a parameter used twice would copy the caller's expression,
and nested calls would grow the statement exponentially).
"""
from __future__ import annotations

from sqlglot import exp

from ..errors import ProgrammingError

OWNER = "dpsql"


class TooLarge(ProgrammingError):
    """A catalog statement or result past one of its limits (SQLSTATE 54000,
    program_limit_exceeded)."""

    sqlstate = "54000"


PG_TYPE_NAMES = {16: "boolean", 20: "bigint", 21: "smallint", 23: "integer", 25: "text",
                 26: "oid", 700: "real", 701: "double precision", 1043: "character varying",
                 1082: "date", 1114: "timestamp without time zone",
                 1184: "timestamp with time zone", 1700: "numeric", 18: "\"char\"",
                 19: "name", 1042: "character", 114: "json", 3802: "jsonb", 2950: "uuid",
                 17: "bytea", 1083: "time without time zone", 1186: "interval",
                 1009: "text[]", 1007: "integer[]", 1016: "bigint[]", 1005: "smallint[]",
                 1000: "boolean[]", 1022: "double precision[]", 1015: "character varying[]",
                 1028: "oid[]", 22: "int2vector", 30: "oidvector", 2205: "regclass",
                 2206: "regtype", 24: "regproc", 4089: "regnamespace"}
"""format_type's answer for the types it knows (others: NULL)."""

_VISIBLE = ("pg_type_is_visible pg_function_is_visible pg_collation_is_visible "
            "pg_opclass_is_visible pg_opfamily_is_visible pg_conversion_is_visible "
            "pg_ts_config_is_visible pg_operator_is_visible pg_statistics_obj_is_visible")
_NULL_TEXT = ("pg_get_serial_sequence:2 pg_get_statisticsobjdef_columns:1 "
              "pg_get_function_result:1 pg_get_function_arguments:1 pg_get_viewdef:1 "
              "pg_get_function_identity_arguments:1 pg_get_triggerdef:1 pg_get_ruledef:1 "
              "pg_get_function_sqlbody:1 pg_size_pretty:1 shobj_description:2 "
              "pg_get_partkeydef:1 col_description:2")
_NULL_BIGINT = "pg_table_size:1 pg_database_size:1 pg_relation_size:1 pg_total_relation_size:1"


def _params(n: int) -> str:
    return "(" + ", ".join(f"a{i}" for i in range(n)) + ")"


MACROS = {
    "pg_get_userbyid": f"(role) AS CASE WHEN role = 10 THEN '{OWNER}' END",
    "pg_table_is_visible": "(rel) AS rel IN (SELECT oid FROM dpsql_pg.pg_class)",
    "pg_get_expr": "(expr, rel, pretty := NULL) AS NULL::VARCHAR",
    "pg_get_indexdef": "(o, c := NULL, p := NULL) AS NULL::VARCHAR",
    "pg_get_constraintdef": "(o, p := NULL) AS NULL::VARCHAR",
    "obj_description": "(o, c := NULL) AS NULL::VARCHAR",
    "to_regtype": "(wanted) AS (SELECT min(oid) FROM dpsql_pg.pg_type WHERE typname = wanted)",
    "to_regclass": "(wanted) AS (SELECT min(oid) FROM dpsql_pg.pg_class "
                   "WHERE relname = wanted)",
    "current_setting": "(wanted, missing_ok := false) AS (SELECT CASE WHEN dpsql_s.name IS NOT "
                       "NULL OR dpsql_o.ok THEN dpsql_s.setting ELSE error('dpsql catalog "
                       "error 42704: unrecognized configuration parameter \"' || wanted || "
                       "'\"') END FROM (SELECT "
                       "missing_ok AS ok) dpsql_o LEFT JOIN dpsql_pg.pg_settings dpsql_s ON "
                       "dpsql_s.name = wanted)",
    "pg_relation_is_publishable": "(rel) AS false", "pg_encoding_to_char": "(e) AS 'UTF8'",
    "pg_char_to_encoding": "(e) AS 6", "getdatabaseencoding": "() AS 'UTF8'",
    "pg_tablespace_location": "(o) AS ''",
    "array_upper": "(arr, dim) AS len(arr)",
    "array_lower": "(arr, dim) AS CASE WHEN len(arr) > 0 THEN 1 END",
    "has_table_privilege": "(a, b, c := NULL) AS true", "pg_is_in_recovery": "() AS false",
    "has_schema_privilege": "(a, b, c := NULL) AS true", "pg_backend_pid": "() AS 0",
    "has_database_privilege": "(a, b, c := NULL) AS true",
    "_pg_expandarray": "(arr) AS unnest(list_transform(arr, lambda e, i: {'x': e, 'n': i}))",
    "format_type": "(t, m) AS CASE t " + " ".join(
        f"WHEN {oid} THEN '{name}'" for oid, name in PG_TYPE_NAMES.items()) + " END",
}
MACROS.update({name: "(o) AS true" for name in _VISIBLE.split()})
MACROS.update({name: f"{_params(int(n))} AS NULL::VARCHAR"
               for name, n in (item.split(":") for item in _NULL_TEXT.split())})
MACROS.update({name: f"{_params(int(n))} AS NULL::BIGINT"
               for name, n in (item.split(":") for item in _NULL_BIGINT.split())})
"""PostgreSQL functions DuckDB lacks or answers differently, as macros named
``dpsql_<name>``; calls are renamed to them."""


SYSTEM_OIDS = {"pg_class": 1259, "pg_type": 1247, "pg_attribute": 1249, "pg_proc": 1255,
               "pg_namespace": 2615, "pg_constraint": 2606, "pg_index": 2610,
               "pg_description": 2609, "pg_database": 1262, "pg_authid": 1260,
               "pg_trigger": 2620, "pg_attrdef": 2604, "pg_am": 2601, "pg_extension": 3079,
               "pg_roles": 1260, "pg_collation": 3456, "pg_tablespace": 1213,
               "pg_policy": 3256, "pg_statistic_ext": 3381, "pg_publication": 6104,
               "pg_inherits": 2611, "pg_rewrite": 2618, "pg_language": 2612}
NAMESPACE_OIDS = {"pg_catalog": 11, "public": 2200, "information_schema": 13000}
TYPE_OIDS = {"bool": 16, "boolean": 16, "bytea": 17, "char": 18, "name": 19, "int8": 20,
             "bigint": 20, "int2": 21, "smallint": 21, "int4": 23, "integer": 23, "int": 23,
             "text": 25, "oid": 26, "json": 114, "float4": 700, "real": 700, "float8": 701,
             "double precision": 701, "bpchar": 1042, "varchar": 1043,
             "character varying": 1043, "date": 1082, "timestamp": 1114,
             "timestamp without time zone": 1114, "timestamptz": 1184,
             "timestamp with time zone": 1184, "numeric": 1700, "uuid": 2950, "jsonb": 3802}
_REG = ("regclass", "regtype", "regnamespace", "regproc", "regprocedure")


def reg_type(to) -> str | None:
    """``regclass``, ``regtype``, ... if ``to`` (a cast's target) is one, else None."""
    if isinstance(to, exp.ObjectIdentifier):
        name = to.name.lower()
    elif isinstance(to, exp.DataType) and to.this == exp.DType.USERDEFINED and to.args.get("kind"):
        kind = to.args["kind"]
        name = (kind.name if isinstance(kind, (exp.Dot, exp.Identifier)) else str(kind)).lower()
    else:
        return None
    name = name.split(".")[-1]
    return name if name in _REG else None


def _name_of(cast: exp.Cast):
    """The literal text a reg* cast names (through nested casts to text), or None."""
    inner = cast.this
    while isinstance(inner, exp.Cast) and reg_type(inner.to) is None:
        inner = inner.this
    if isinstance(inner, exp.Literal) and inner.is_string:
        return inner.this
    return None


def resolve(tree: exp.Expression, relation_oid) -> exp.Expression:
    """``tree`` with every string literal cast to a reg* type replaced by what it names:
    an oid (NULL if unknown), or for ``regproc`` the function's name.
    ``relation_oid(name)`` is the oid of a metadata table, or None."""
    for cast in list(tree.find_all(exp.Cast)):
        kind = reg_type(cast.to)
        name = _name_of(cast) if kind is not None else None
        if name is None:
            continue
        key = name.strip().strip('"').lower().removeprefix("pg_catalog.")
        if kind in ("regproc", "regprocedure"):
            new = exp.Literal.string(key.split("(")[0])
        else:
            new = _oid(kind, name.strip().strip('"'), key, relation_oid)
        if cast is tree:
            return new
        cast.replace(new)
    return tree


def _oid(kind: str, name: str, key: str, relation_oid):
    if kind == "regclass":
        oid = SYSTEM_OIDS.get(key)
        oid = relation_oid(name) if oid is None else oid
    elif kind == "regnamespace":
        oid = NAMESPACE_OIDS.get(key)
    else:
        oid = TYPE_OIDS.get(key)
    if oid is None:
        return exp.Cast(this=exp.Null(), to=exp.DataType.build("BIGINT"))
    return exp.Literal.number(oid)
