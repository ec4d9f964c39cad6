"""A checked catalog statement's expressions as the catalog's DuckDB runs them.

Owns: PostgreSQL spellings turned into DuckDB ones (``pg_catalog.f(...)``, ``OPERATOR(
pg_catalog.~)``, ``COLLATE``, reg* and other PostgreSQL-only types, ``pg_catalog.pg_class
.relname`` column paths), session functions answered from the connection
(``current_user``, ``current_database()``, ...), calls renamed to the macros of
``pgcompat``, and the output column names PostgreSQL would give. Relations are
``catalog_scope``'s; sizes are ``catalog_limits``'.
"""
from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from ..errors import ProgrammingError
from .catalog_scope import INFO_SCHEMA, PG_CATALOG, function_name, operator_name
from .pgcompat import MACROS


@dataclass
class Session:
    """What the session functions answer."""

    version: str
    user: str
    database: str
    schema: str
    schemas: list


def rewrite(tree, session: Session):
    """``tree`` (rewritten in place where it can be) with DuckDB's spellings."""
    names = output_names(tree)
    for node in reversed(list(tree.walk(bfs=False))):
        new = _node(node, session)
        if new is not node:
            if node is tree:
                return new
            node.replace(new)
    first = tree
    while isinstance(first, (exp.Union, exp.Intersect, exp.Except)):
        first = first.this
    if isinstance(first, exp.Select):
        first.set("expressions", [
            e if n is None or isinstance(e, exp.Alias) else exp.alias_(e, n, quoted=True)
            for e, n in zip(first.expressions, names)])
    return tree


def _node(node, session: Session):
    if isinstance(node, exp.Dot) and not isinstance(node.expression, exp.Identifier) and (
            isinstance(node.this, exp.Identifier) and node.this.name in (PG_CATALOG, INFO_SCHEMA)):
        return node.expression          # pg_catalog.f(...), already rewritten: f's own
    constant = _constant(node, session)
    if constant is not None:
        return constant
    if isinstance(node, exp.Anonymous) and node.name.lower() in MACROS:
        node.set("this", f"dpsql_{node.name.lower()}")
    if isinstance(node, exp.Anonymous) and node.name.lower() == "json_build_object":
        node.set("this", "json_object")
    if isinstance(node, exp.Column) and node.args.get("db") is not None:
        _column(node)
    if isinstance(node, exp.Operator):
        return _operator(node)
    if isinstance(node, exp.Collate):
        return node.this
    if isinstance(node, exp.ObjectIdentifier):
        return exp.DataType.build("bigint")
    if isinstance(node, exp.DataType):
        return _data_type(node)
    return node


def _constant(node, session: Session):
    """Session functions, answered from the metadata and the connection."""
    name = function_name(node) if isinstance(node, exp.Func) else None
    if name in ("current_version", "version"):
        return exp.Literal.string(session.version)
    if name in ("current_user", "session_user", "current_role"):
        return exp.Literal.string(session.user)
    if name in ("current_database", "current_catalog"):
        return exp.Literal.string(session.database)
    if name == "current_schema":
        return exp.Literal.string(session.schema)
    if name == "current_schemas":
        implicit = [] if isinstance(node.this, exp.Boolean) and not node.this.this else [
            PG_CATALOG]
        return exp.Array(expressions=[exp.Literal.string(s)
                                      for s in implicit + session.schemas])
    return None


def _column(column: exp.Column) -> None:
    """``pg_catalog.pg_class.relname`` names the relation the way its FROM did."""
    if column.args["db"].name in (PG_CATALOG, INFO_SCHEMA):
        column.set("db", None)


_OPERATORS = {"~": lambda a, b: exp.RegexpLike(this=a, expression=b),
              "!~": lambda a, b: exp.not_(exp.RegexpLike(this=a, expression=b)),
              "=": lambda a, b: exp.EQ(this=a, expression=b),
              "<>": lambda a, b: exp.NEQ(this=a, expression=b)}
"""``OPERATOR(pg_catalog.x)`` forms psql writes, as plain DuckDB expressions."""


def _operator(node: exp.Operator):
    right = node.expression.this if isinstance(node.expression, exp.Collate) else node.expression
    return _OPERATORS[operator_name(node)](node.this, right)


_TYPES = {"name": "VARCHAR", "char": "VARCHAR", "bpchar": "VARCHAR", "text": "VARCHAR",
          "regproc": "VARCHAR", "regprocedure": "VARCHAR", "int2vector": "SMALLINT[]",
          "oidvector": "BIGINT[]", "aclitem": "VARCHAR", "pg_node_tree": "VARCHAR",
          "xid": "BIGINT", "oid": "BIGINT", "int2": "SMALLINT", "int4": "INTEGER",
          "int8": "BIGINT", "float4": "REAL", "float8": "DOUBLE", "bool": "BOOLEAN"}


def _data_type(node: exp.DataType):
    """PostgreSQL-only types as DuckDB ones: reg* and oid as BIGINT (regproc: its name),
    ``pg_catalog.x`` as x, name and "char" as VARCHAR."""
    if node.this == exp.DType.NAME:
        return exp.DataType.build("VARCHAR")
    kind = node.args.get("kind")
    if node.this != exp.DType.USERDEFINED or kind is None:
        return node
    name = (kind.name if isinstance(kind, (exp.Dot, exp.Identifier)) else str(kind)).lower()
    name = name.split(".")[-1]
    if name in _TYPES:
        return exp.DataType.build(_TYPES[name])
    if name.startswith("reg"):
        return exp.DataType.build("BIGINT")
    try:
        return exp.DataType.build(name, dialect="postgres")
    except Exception:  # noqa: BLE001
        raise ProgrammingError(f"type {name} is not supported in catalog queries") from None


def output_names(tree) -> list:
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
        name = function_name(node)
        return {"current_version": "version", "regexp_like": "?column?",
                "group_concat": "string_agg", "logical_and": "bool_and",
                "logical_or": "bool_or", "array_size": "array_length",
                "explode": "unnest"}.get(name, name)
    return "?column?"
