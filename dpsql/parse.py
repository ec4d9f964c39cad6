"""Step 1: SQL text -> one sqlglot SELECT tree.

Owns: parsing, SmartNoise's ``TOP n``, and binding of qmark parameters as
literals into the tree (never by string formatting, so a parameter can never
change the query's shape). Everything after this step works on trees.
"""
from __future__ import annotations

import datetime as _dt
import decimal
import math
from typing import Sequence

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError

from .errors import QueryError

DIALECT = "duckdb"


def _where(err: ParseError) -> str:
    info = (err.errors or [{}])[0]
    line, col = info.get("line"), info.get("col")
    return f" at line {line}, column {col}" if line else ""


def _parse_all(sql: str) -> list:
    try:
        return sqlglot.parse(sql, read=DIALECT)
    except ParseError as first:
        # SmartNoise accepts T-SQL's ``SELECT TOP n``; DuckDB's grammar does not.
        if "top" in sql.lower():
            try:
                return sqlglot.parse(sql, read="tsql")
            except ParseError:
                pass
        msg = str((first.errors or [{}])[0].get("description") or "invalid SQL")
        raise QueryError(f"cannot parse the query{_where(first)}: {msg}. "
                         "Write one SELECT statement in DuckDB/ANSI SQL.") from None


def literal(value) -> exp.Expression:
    """A Python value as a SQL literal node (parameters and public key values)."""
    if value is None:
        return exp.Null()
    if isinstance(value, bool):
        return exp.Boolean(this=value)
    if isinstance(value, (int, float, decimal.Decimal)) and not isinstance(value, bool):
        if isinstance(value, float) and not math.isfinite(value):
            raise QueryError(f"a parameter is {value!r}; pass a finite number, a string or None")
        node = exp.Literal.number(repr(value) if isinstance(value, float) else str(value))
        return exp.Paren(this=node) if value < 0 else node
    if isinstance(value, str):
        return exp.Literal.string(value)
    if isinstance(value, _dt.datetime):
        return exp.Cast(this=exp.Literal.string(value.isoformat(sep=" ")), to=exp.DataType.build("TIMESTAMP"))
    if isinstance(value, _dt.date):
        return exp.Cast(this=exp.Literal.string(value.isoformat()), to=exp.DataType.build("DATE"))
    if hasattr(value, "item"):  # numpy scalars
        return literal(value.item())
    raise QueryError(f"a parameter of type {type(value).__name__} cannot be bound; "
                     "use int, float, str, bool, date, datetime or None")


def bind_params(tree: exp.Expression, params: Sequence | None) -> exp.Expression:
    """Replace each ``?`` with its parameter, in order of appearance."""
    # Pre-order (depth-first) traversal visits placeholders in textual order.
    holders = [p for p in tree.dfs() if isinstance(p, exp.Placeholder)]
    params = list(params or [])
    if len(holders) != len(params):
        raise QueryError(f"the query has {len(holders)} '?' placeholder(s) but "
                         f"{len(params)} parameter(s) were given")
    for holder, value in zip(holders, params):
        parent = holder.parent
        if isinstance(parent, exp.Group) or (isinstance(parent, exp.Ordered) and parent.this is holder):
            raise QueryError("a '?' parameter cannot stand for a GROUP BY or ORDER BY position; "
                             "parameters are values, they never change the query's shape")
        holder.replace(literal(value))
    return tree


def parse_query(sql: str, params: Sequence | None = None) -> exp.Select:
    """Parse exactly one SELECT statement (with parameters bound)."""
    if not isinstance(sql, str) or not sql.strip():
        raise QueryError("the query is empty; pass one SELECT statement")
    statements = [s for s in _parse_all(sql) if s is not None]
    if len(statements) != 1:
        raise QueryError(f"expected one SQL statement, got {len(statements)}; "
                         "send each query separately")
    tree = statements[0]
    if not isinstance(tree, exp.Select):
        kind = tree.key.upper() if tree.key in ("insert", "update", "delete", "create", "drop",
                                                 "alter", "merge", "command", "union", "intersect",
                                                 "except", "pragma", "set", "copy") else "not a SELECT"
        raise QueryError(f"only SELECT queries are answered, this statement is {kind}; "
                         "dpsql is read-only and releases aggregates only")
    return bind_params(tree, params)
