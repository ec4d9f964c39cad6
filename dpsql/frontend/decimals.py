"""Exact arithmetic on number literals, folded at plan time into one literal.

Owns: the value of a constant numeric expression (number literals joined by ``+ - * /``,
unary minus and brackets) and of comparisons between such constants. SQL reads a decimal
literal (``0.06``) as an exact number, so ``0.06 + 0.01`` is exactly 0.07; computed in
DOUBLE it would be 0.06999999999999999, and ``discount BETWEEN 0.06 - 0.01 AND 0.06 + 0.01``
would lose the rows whose discount is 0.07. Here the constant is computed exactly, in
Python's rationals, then becomes one literal of the type the allow-list gives it: an
integer that fits 64 bits stays ``int``; any other result is the nearest DOUBLE, rounded
once, which is what DuckDB compares a DECIMAL with a DOUBLE column by.

The kinds of a constant follow DuckDB's literals:

- ``int``: a whole number that fits 64 bits (beyond, dpsql's literal rule makes it DOUBLE);
- ``decimal``: digits with a point and at most 38 of them (DuckDB's DECIMAL(38)), exact;
- ``double``: a number with an exponent (``1e-3``), or a decimal of more than 38 digits.

``int`` with ``int`` stays ``int`` when the result fits 64 bits; otherwise it is NULL (of
type ``int``), as every engine's guarded arithmetic computes it, and so is every constant
computed from it (review 39, F3: left to the engine, ``-(-9223372036854775808)`` was NULL on
DuckDB but refused by PostgreSQL, which folds constants itself when it plans). Exact with exact stays
exact while the result has at most ``MAX_DIGITS`` digits (``+ - *`` of two decimals always
terminate; ``/`` is exact when the quotient terminates: ``0.3 / 0.1`` is 3, where DuckDB's
DOUBLE division gives 2.9999999999999996); beyond, or with a ``double``, the value is the
nearest DOUBLE and the arithmetic is IEEE, as DuckDB's. Dividing by zero, and a DOUBLE
result that is not finite, are not folded: the engine computes them as the allow-list says.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from fractions import Fraction

from sqlglot import exp

from .allowed import GUARD
from .literals import INT64, float_literal, int_literal

MAX_DIGITS = 38
"""The most digits an exact constant keeps (DuckDB's widest DECIMAL)."""
_DECIMAL = re.compile(r"(\d*)\.(\d*)")
_OPERATIONS = (exp.Add, exp.Sub, exp.Mul, exp.Div)
_COMPARISONS = {exp.EQ: lambda a, b: a == b, exp.NEQ: lambda a, b: a != b,
                exp.LT: lambda a, b: a < b, exp.LTE: lambda a, b: a <= b,
                exp.GT: lambda a, b: a > b, exp.GTE: lambda a, b: a >= b,
                exp.NullSafeEQ: lambda a, b: a == b, exp.NullSafeNEQ: lambda a, b: a != b}


@dataclass(frozen=True)
class Constant:
    """A folded constant: its value (a Fraction when exact, else a float) and its kind."""

    value: object
    kind: str                 # "int", "decimal" or "double"

    def as_float(self) -> float:
        return float(self.value)


OVERFLOW = Constant(None, "int")
"""An ``int`` constant beyond 64 bits: NULL."""


def _digits(value: Fraction) -> int | None:
    """Digits of ``value`` written as a terminating decimal (its integer digits and its
    scale, as DuckDB counts a DECIMAL's precision), or None if it does not terminate."""
    d, powers = value.denominator, {}
    for p in (2, 5):
        powers[p] = 0
        while d % p == 0:
            d //= p
            powers[p] += 1
    if d != 1:
        return None
    scale = max(powers.values())
    return max(len(str(abs(value.numerator * 10 ** scale // value.denominator))), scale)


def _exact(value: Fraction, kind: str = "decimal") -> Constant:
    """``value`` kept exact if it has at most MAX_DIGITS digits, else the nearest DOUBLE."""
    digits = _digits(value)
    if digits is not None and digits <= MAX_DIGITS:
        return Constant(value, kind)
    return Constant(float(value), "double")


def literal_constant(text: str, negative: bool = False) -> Constant | None:
    """The constant of a number literal's text; None if it has no finite value (the
    literal rule refuses it, naming its place)."""
    clean = text.strip().replace("_", "")
    sign = -1 if negative else 1
    if clean.isdigit():
        if len(clean.lstrip("0")) <= 19:
            value = sign * int(clean)
            if INT64[0] <= value <= INT64[1]:
                return Constant(Fraction(value), "int")
        return _double(sign * float(clean))
    decimal = _DECIMAL.fullmatch(clean)
    if decimal is not None and (decimal.group(1) or decimal.group(2)):
        whole, fraction = decimal.group(1).lstrip("0"), decimal.group(2)
        if len(whole) + len(fraction) <= MAX_DIGITS:
            return Constant(sign * Fraction(int(whole or "0") * 10 ** len(fraction)
                                            + int(fraction or "0"), 10 ** len(fraction)), "decimal")
    try:
        return _double(sign * float(clean))
    except (ValueError, OverflowError):
        return None


def _double(value: float) -> Constant | None:
    return Constant(value, "double") if math.isfinite(value) else None


def constant(node: exp.Expression) -> Constant | None:
    """The exact value of a constant numeric expression, or None if ``node`` is not one
    (or is one this module leaves to the engine: see the module doc)."""
    if isinstance(node, exp.Paren):
        return constant(node.this)
    if isinstance(node, exp.Literal):
        return None if node.is_string else literal_constant(node.this)
    if isinstance(node, exp.Neg):
        inner = node.this
        if isinstance(inner, exp.Literal) and not inner.is_string:
            return literal_constant(inner.this, negative=True)
        found = constant(inner)
        if found is None or found is OVERFLOW:
            return found
        if found.kind == "int" and -found.value > INT64[1]:
            return OVERFLOW
        return Constant(-found.value, found.kind)
    if isinstance(node, _OPERATIONS):
        a = constant(node.this)
        b = constant(node.expression) if a is not None else None
        if b is None:
            return None
        return OVERFLOW if OVERFLOW in (a, b) else _operate(type(node), a, b)
    return None


def _operate(op, a: Constant, b: Constant) -> Constant | None:
    if op is exp.Div and b.value == 0:
        return None
    if "double" in (a.kind, b.kind):
        x, y = a.as_float(), b.as_float()
        result = {exp.Add: lambda: x + y, exp.Sub: lambda: x - y, exp.Mul: lambda: x * y,
                  exp.Div: lambda: x / y}[op]()
        return _double(result)
    x, y = a.value, b.value
    result = {exp.Add: lambda: x + y, exp.Sub: lambda: x - y, exp.Mul: lambda: x * y,
              exp.Div: lambda: x / y}[op]()
    if op is not exp.Div and a.kind == b.kind == "int":
        return Constant(result, "int") if INT64[0] <= result <= INT64[1] else OVERFLOW
    return _exact(result)


def folded(node: exp.Expression) -> tuple | None:
    """(literal, type) of a constant arithmetic expression, or None to type it as usual.
    A bare literal is left to the literal rule (which names its place if it is refused)."""
    bare = node
    while isinstance(bare, exp.Paren):
        bare = bare.this
    if isinstance(bare, exp.Literal) or (isinstance(bare, exp.Neg) and isinstance(bare.this, exp.Literal)):
        return None
    found = constant(node)
    if found is None:
        return None
    if found is OVERFLOW:
        return exp.Cast(this=exp.Null(), to=exp.DataType.build("BIGINT")), "int"
    if found.kind == "int" and not isinstance(bare, exp.Div):
        return int_literal(int(found.value)), "int"
    return float_literal(found.as_float()), "float"


def compared(node: exp.Expression) -> exp.Expression | None:
    """TRUE or FALSE for a comparison (``= <> < <= > >=``, ``IS [NOT] DISTINCT FROM``,
    ``BETWEEN``, ``IN``) of number constants only, decided exactly; else None. An exact
    constant meets a DOUBLE one as its nearest DOUBLE, as in DuckDB."""
    if isinstance(node, exp.Between):
        keys, operands = {"this", "low", "high"}, [node.this, node.args.get("low"), node.args.get("high")]
    elif isinstance(node, exp.In):
        keys, operands = {"this", "expressions"}, [node.this] + list(node.expressions)
    elif type(node) in _COMPARISONS:
        keys, operands = {"this", "expression"}, [node.this, node.expression]
    else:
        return None
    if len(operands) < 2 or any(v not in (None, False, []) for k, v in node.args.items()
                                if k not in keys):
        return None          # IN (SELECT ...), BETWEEN SYMMETRIC, ...: typed (or refused) as usual
    values = []
    for operand in operands:
        found = constant(operand) if operand is not None else None
        if found is None or found is OVERFLOW:
            return None          # a NULL operand: typed as usual (``folded``)
        values.append(found)
    if any(v.kind == "double" for v in values):
        values = [v.as_float() for v in values]
    else:
        values = [v.value for v in values]
    if isinstance(node, exp.Between):
        truth = values[1] <= values[0] <= values[2]
    elif isinstance(node, exp.In):
        truth = values[0] in values[1:]
    else:
        truth = _COMPARISONS[type(node)](values[0], values[1])
    return exp.Boolean(this=bool(truth))


def nonzero(divisor: exp.Expression) -> exp.Expression:
    """A divisor of /, // or %, with zero made NULL: a division by zero is NULL on every
    engine and every DuckDB version (DuckDB 2's / gives +-inf and NaN, its // and % an error
    that TRY makes NULL; PostgreSQL raises; Spark's / is NULL; thirteenth review)."""
    if isinstance(divisor, exp.Literal) and divisor.is_number and float(divisor.this) != 0:
        return divisor
    guarded = exp.Nullif(this=divisor, expression=exp.Literal.number(0))
    guarded.meta[GUARD] = True          # shown as the divisor in messages (allowed.written)
    return guarded
