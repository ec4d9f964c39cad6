"""Rewrite rules: small functions from sqlglot tree to sqlglot tree.

Owns: the row-level transformations of the bounded plan (typing columns as the
metadata declares them, guarding expressions against value-dependent errors,
clamping, fixed-point scaling) and the node substitution used to turn a user's
SELECT list into a post-processing query over noisy results. Like sqlglot's
optimizer rules, each takes a tree and returns a tree; none pastes strings.
"""
from __future__ import annotations

from sqlglot import exp

from .errors import QueryError
from .metadata import Column
from .parse import literal

INTEGER_TYPES = {"TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT",
                 "UINTEGER", "UBIGINT", "UHUGEINT"}
FLOAT_TYPES = {"FLOAT", "DOUBLE", "REAL"} | INTEGER_TYPES
_TARGET = {"string": ("VARCHAR", {"VARCHAR"}),
           "int": ("BIGINT", INTEGER_TYPES), "float": ("DOUBLE", FLOAT_TYPES),
           "boolean": ("BOOLEAN", {"BOOLEAN"}),
           "datetime": ("TIMESTAMP", {"TIMESTAMP", "DATE", "TIMESTAMP WITH TIME ZONE"})}

# Nodes whose evaluation can never raise, whatever the row's values.
# (CASE, COALESCE, GREATEST, ROUND, ... are not here: mixed operand types make DuckDB
# cast at run time, which can fail on one row's value.)
_SAFE = (exp.Column, exp.Literal, exp.Boolean, exp.Null, exp.Identifier, exp.Paren, exp.And,
         exp.Or, exp.Not, exp.Is, exp.TryCast, exp.Tuple, exp.DataType, exp.Like, exp.ILike,
         exp.Lower, exp.Upper, exp.Length, exp.Try, exp.Var, exp.Star)
_PREDICATES = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.NullSafeEQ,
               exp.NullSafeNEQ, exp.In, exp.Between, exp.Is, exp.Like, exp.ILike, exp.And,
               exp.Or, exp.Not, exp.Boolean, exp.Null)


def typed_column(col: Column, engine_type: str) -> exp.Expression:
    """The column as its metadata type; TRY_CAST so bad cells become NULL, never errors.

    The PUMS files declare integer codes as ``string``: such a column is read as
    VARCHAR, so ``sex = '1'`` and ``sex = 1`` both work (DuckDB casts the number
    literal) and a literal that is not a number can never raise a conversion
    error whose occurrence would depend on the data.
    """
    node: exp.Expression = exp.column(col.name, quoted=True)
    if col.type == "string" and _base(engine_type) in ("DOUBLE", "FLOAT", "REAL"):
        # Codes read as floats (a CSV column with NULLs, through pandas) keep the text
        # they have elsewhere: 1.0 reads as '1', as it would from the file.
        whole = exp.and_(exp.EQ(this=node.copy(), expression=exp.Anonymous(this="TRUNC", expressions=[node.copy()])),
                         exp.LT(this=exp.Abs(this=node.copy()), expression=exp.Literal.number(2 ** 53)))
        as_int = exp.TryCast(this=exp.TryCast(this=node.copy(), to=exp.DataType.build("BIGINT")),
                             to=exp.DataType.build("VARCHAR"))
        node = exp.Case(ifs=[exp.If(this=whole, true=as_int)],
                        default=exp.TryCast(this=node.copy(), to=exp.DataType.build("VARCHAR")))
    elif typed_type(col, engine_type) != _base(engine_type):
        node = exp.TryCast(this=node, to=exp.DataType.build(_TARGET[col.type][0]))
    if col.missing_value is not None:
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


_COMPARISONS = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.NullSafeEQ,
                exp.NullSafeNEQ, exp.In, exp.Between)


def _operand_slots(node: exp.Expression) -> list:
    if isinstance(node, exp.In):
        return [("this", None)] + [("expressions", i) for i in range(len(node.expressions))]
    if isinstance(node, exp.Between):
        return [("this", None), ("low", None), ("high", None)]
    return [("this", None), ("expression", None)]


def _get(node, slot):
    key, index = slot
    value = node.args.get(key)
    return value[index] if index is not None else value


def _put(node, slot, value) -> None:
    key, index = slot
    if index is None:
        node.set(key, value)
    else:
        items = list(node.args[key])
        items[index] = value
        node.set(key, items)


def _kind(operand, types: dict) -> str | None:
    if isinstance(operand, exp.Paren):
        return _kind(operand.this, types)
    if isinstance(operand, exp.Column):
        return types.get(operand.name.lower())
    if isinstance(operand, exp.Null):
        return "null"
    if isinstance(operand, exp.Literal):
        return "string_literal" if operand.is_string else "number_literal"
    if isinstance(operand, exp.Boolean):
        return "boolean_literal"
    if isinstance(operand, exp.Neg) and isinstance(operand.this, exp.Literal) and not operand.this.is_string:
        return "number_literal"
    return None


_SAFE_KINDS = {"string": {"string", "string_literal", "null"},
               "int": {"int", "float", "number_literal", "null"},
               "float": {"int", "float", "number_literal", "null"},
               "boolean": {"boolean", "boolean_literal", "null"}}


def _typed_comparison(node: exp.Expression, types: dict) -> exp.Expression:
    """Make a comparison's operands agree with the column's metadata type at plan time.

    DuckDB would otherwise cast at run time (a VARCHAR column to a number, a string
    literal to a number), and whether that raises would depend on the rows reached.
    """
    slots = _operand_slots(node)
    kinds = [_kind(_get(node, slot), types) for slot in slots]
    columns = {k for k in kinds if k in _SAFE_KINDS}
    if len(columns) != 1:
        return exp.Try(this=node)          # mixed or unknown types: NULL instead of an error
    column_kind = columns.pop()
    for slot, kind in zip(slots, kinds):
        operand = _get(node, slot)
        if column_kind == "string" and kind == "number_literal":
            _put(node, slot, exp.Literal.string(operand.sql("duckdb").replace(" ", "")))
        elif column_kind in ("int", "float") and kind == "string_literal":
            try:
                float(operand.this)
            except ValueError:
                raise QueryError(f"{node.sql('duckdb')}: {operand.sql('duckdb')} is not a number, "
                                 "but the column is numeric in the metadata") from None
            _put(node, slot, exp.Literal.number(operand.this.strip()))
    kinds = [_kind(_get(node, slot), types) for slot in slots]
    if all(k in _SAFE_KINDS[column_kind] for k in kinds):
        return node
    return exp.Try(this=node)


def _as_predicate(node: exp.Expression, types: dict) -> exp.Expression:
    """A boolean operand as a boolean: DuckDB would cast a VARCHAR to BOOLEAN at run time."""
    inner = node.this if isinstance(node, exp.Paren) else node
    if isinstance(inner, _PREDICATES) or (isinstance(inner, exp.Try) and isinstance(inner.this, _PREDICATES)):
        return node
    if isinstance(inner, exp.Column) and types.get(inner.name.lower()) == "boolean":
        return node
    return exp.TryCast(this=node, to=exp.DataType.build("BOOLEAN"))


def guard_errors(tree: exp.Expression, types: dict | None = None,
                 predicate: bool = False) -> exp.Expression:
    """Make a row-level expression total: an error must never depend on a row's values.

    CAST becomes TRY_CAST; comparisons get operands of the column's metadata type
    (``types``: column name -> metadata type); any other node that might raise
    (arithmetic overflow, a function on a bad argument) is wrapped whole in TRY(...),
    which yields NULL instead. Boolean logic and well-typed comparisons cannot fail
    and are left alone, so common predicates pay nothing.
    """
    types = types or {}

    def visit(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Cast) and not isinstance(node, exp.TryCast):
            node = exp.TryCast(this=node.this, to=node.args["to"])
        if isinstance(node, _COMPARISONS):
            for key, value in list(node.args.items()):
                if isinstance(value, exp.Expression):
                    node.set(key, visit(value))
                elif isinstance(value, list):
                    node.set(key, [visit(v) if isinstance(v, exp.Expression) else v for v in value])
            return _typed_comparison(node, types)
        if not isinstance(node, _SAFE):
            return exp.Try(this=node)
        for key, value in list(node.args.items()):
            if isinstance(value, exp.Expression):
                node.set(key, visit(value))
            elif isinstance(value, list):
                node.set(key, [visit(v) if isinstance(v, exp.Expression) else v for v in value])
        if isinstance(node, (exp.And, exp.Or)):
            node.set("this", _as_predicate(node.this, types))
            node.set("expression", _as_predicate(node.expression, types))
        elif isinstance(node, exp.Not):
            node.set("this", _as_predicate(node.this, types))
        return node
    guarded = visit(tree.copy())
    return _as_predicate(guarded, types) if predicate else guarded


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
