"""Rewrite rules: small functions from sqlglot tree to sqlglot tree.

Owns: the row-level transformations of the bounded plan (typing columns as the
metadata declares them, guarding expressions against value-dependent errors,
clamping, fixed-point scaling) and the node substitution used to turn a user's
SELECT list into a post-processing query over noisy results. Like sqlglot's
optimizer rules, each takes a tree and returns a tree; none pastes strings.
"""
from __future__ import annotations

from sqlglot import exp

from .metadata import Column

INTEGER_TYPES = {"TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT",
                 "UINTEGER", "UBIGINT", "UHUGEINT"}
FLOAT_TYPES = {"FLOAT", "DOUBLE", "REAL"} | INTEGER_TYPES
_TARGET = {"string": ("VARCHAR", {"VARCHAR"}),
           "int": ("BIGINT", INTEGER_TYPES), "float": ("DOUBLE", FLOAT_TYPES),
           "boolean": ("BOOLEAN", {"BOOLEAN"}),
           "datetime": ("TIMESTAMP", {"TIMESTAMP", "DATE", "TIMESTAMP WITH TIME ZONE"})}

# Nodes whose evaluation can never raise, whatever the row's values.
_SAFE = (exp.Column, exp.Literal, exp.Boolean, exp.Null, exp.Identifier, exp.Paren, exp.And,
         exp.Or, exp.Not, exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.Is, exp.In,
         exp.Between, exp.Like, exp.ILike, exp.Case, exp.If, exp.Coalesce, exp.TryCast,
         exp.NullSafeEQ, exp.NullSafeNEQ, exp.Tuple, exp.DataType, exp.Lower,
         exp.Upper, exp.Length, exp.Round, exp.Floor, exp.Ceil, exp.Try,
         exp.Greatest, exp.Least, exp.Var, exp.Star)


def typed_column(col: Column, engine_type: str) -> exp.Expression:
    """The column as its metadata type; TRY_CAST so bad cells become NULL, never errors.

    The PUMS files declare integer codes as ``string``: such a column is read as
    VARCHAR, so ``sex = '1'`` and ``sex = 1`` both work (DuckDB casts the number
    literal) and a literal that is not a number can never raise a conversion
    error whose occurrence would depend on the data.
    """
    node: exp.Expression = exp.column(col.name, quoted=True)
    if typed_type(col, engine_type) != _base(engine_type):
        node = exp.TryCast(this=node, to=exp.DataType.build(_TARGET[col.type][0]))
    if col.missing_value is not None:
        from .parse import literal
        node = exp.Coalesce(this=node, expressions=[literal(col.missing_value)])
    return node


def _base(engine_type: str) -> str:
    return (engine_type or "").upper().split("(")[0]


def typed_type(col: Column, engine_type: str) -> str:
    """The DuckDB type the bounded plan sees for ``col``."""
    target = _TARGET.get(col.type)
    base = _base(engine_type)
    if target is None or base in target[1]:
        return base or "VARCHAR"
    return target[0]


def guard_errors(tree: exp.Expression) -> exp.Expression:
    """Make a row-level expression total: an error must never depend on a row's values.

    CAST becomes TRY_CAST; any other node that might raise (arithmetic overflow,
    a function on a bad argument) is wrapped whole in TRY(...), which yields
    NULL instead. Comparisons and boolean logic are left alone (they cannot
    fail), so common predicates pay nothing.
    """
    def visit(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Cast) and not isinstance(node, exp.TryCast):
            node = exp.TryCast(this=node.this, to=node.args["to"])
        if not isinstance(node, _SAFE):
            return exp.Try(this=node)
        for key, value in list(node.args.items()):
            if isinstance(value, exp.Expression):
                node.set(key, visit(value))
            elif isinstance(value, list):
                node.set(key, [visit(v) if isinstance(v, exp.Expression) else v for v in value])
        return node
    return visit(tree.copy())


def clamp(node: exp.Expression, lower, upper) -> exp.Expression:
    """CASE keeps NULL as NULL (DuckDB's GREATEST would turn NULL into a bound)."""
    lo, hi = exp.Literal.number(lower), exp.Literal.number(upper)
    return exp.Case(ifs=[exp.If(this=exp.LT(this=node.copy(), expression=lo), true=lo.copy()),
                         exp.If(this=exp.GT(this=node.copy(), expression=hi), true=hi.copy())],
                    default=node.copy())


def shift(node: exp.Expression, offset) -> exp.Expression:
    if not offset:
        return node
    return exp.Sub(this=node, expression=exp.Literal.number(offset))


def fixed_point(node: exp.Expression, exponent: int) -> exp.Expression:
    """round(x * 2^exponent) as BIGINT, so a float sum is exact integer arithmetic."""
    scaled = exp.Mul(this=exp.Paren(this=node), expression=exp.Literal.number(2.0 ** exponent))
    return exp.Cast(this=exp.Round(this=scaled), to=exp.DataType.build("BIGINT"))


def substitute(tree: exp.Expression, mapping: list) -> exp.Expression:
    """Replace every subtree equal to a key of ``mapping`` (pairs) by its value, outermost first."""
    def visit(node: exp.Expression) -> exp.Expression:
        for old, new in mapping:
            if node == old:
                return new.copy()
        for key, value in list(node.args.items()):
            if isinstance(value, exp.Expression):
                node.set(key, visit(value))
            elif isinstance(value, list):
                node.set(key, [visit(v) if isinstance(v, exp.Expression) else v for v in value])
        return node
    return visit(tree.copy())


def column(name: str) -> exp.Column:
    return exp.column(name, quoted=True)
