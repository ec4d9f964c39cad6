"""The PostgreSQL dialect's rules for numbers: DuckDB's result, or NULL where PostgreSQL raises.

Owns: the rules of ``dpsql.engines.postgres.dialect.RULES`` for literals, arithmetic and the
numeric functions, one per node and type. PostgreSQL raises where DuckDB does not: a
float result beyond a DOUBLE (overflow) or rounded to 0 (underflow), a division by zero,
``ln(0)``, ``sqrt(-1)``, ``0 ^ -1``, a NUMERIC cast back to a type that cannot hold it. Each
rule computes only what cannot raise, and decides the rest on exact (NUMERIC) values or on
bounds computed here, in Python's IEEE doubles (the same arithmetic as PostgreSQL's). A
DOUBLE literal is a DOUBLE PRECISION (PostgreSQL reads ``1.5e0`` as NUMERIC, whose
arithmetic and precision differ from DuckDB's).
"""
from __future__ import annotations

import math


from sqlglot import exp

from ...errors import QueryError
from ...plan.dialect import (DOUBLE_MAX, away, grouped, int_constant, largest_finite,
                             smallest_nonzero)
from .guards import (EXP_LIMIT, INT64, _and, _case, _cases, _finite, _float_fits, _fn,
                     _not, _num, _numeric, _or, _type, _within_int64)



def _double(node: exp.Expression) -> exp.Expression:
    return exp.Cast(this=node, to=exp.DataType.build("DOUBLE"))


def literal(node):
    """A DOUBLE literal as DOUBLE PRECISION (PostgreSQL would read it as NUMERIC)."""
    if _type(node) == "DOUBLE PRECISION":
        return _double(node)
    return node


def _guarded(node) -> bool:
    """Whether the typecheck wrapped ``node`` in TRY: an integer operation it did not wrap
    cannot overflow or divide by zero on any 64-bit operands (``dpsql.frontend.ranges``),
    on PostgreSQL as on DuckDB, so it needs no guard (and runs at full speed)."""
    return isinstance(node.parent, exp.Try)


def in_int64(node):
    """``node`` computed in BIGINT: PostgreSQL computes INTEGER operands (literals, LENGTH,
    STRPOS) in 32 bits, where DuckDB's 64-bit result would overflow."""
    for key in ("this", "expression"):
        operand = node.args.get(key)
        if operand is not None and not (isinstance(operand, exp.Cast)
                                        and operand.to.is_type("bigint")):
            operand.replace(exp.Cast(this=operand.copy(), to=exp.DataType.build("BIGINT")))
    return node


def int_arith(node):
    """+ - * of BIGINTs: NULL where the result is beyond int64 (decided on the exact NUMERIC
    result, or for + and - by comparisons alone)."""
    node = in_int64(node)
    if not _guarded(node):
        return node
    if isinstance(node, (exp.Add, exp.Sub)):
        return _int_add(node)
    exact = type(node)(this=_numeric(node.this), expression=_numeric(node.expression))
    return _case(_within_int64(exact), node)


def float_arith(node):
    """+ - * of DOUBLEs: NULL where the result of finite operands overflows or underflows,
    decided on the exact (NUMERIC) result. An infinite or NaN operand cannot raise and is
    left as PostgreSQL computes it."""
    a, b = node.this, node.expression
    exact = type(node)(this=_numeric(a), expression=_numeric(b))
    return _case(_or(_not(_and(_finite(a), _finite(b))), _float_fits(exact)), node)


def _int_add(node):
    """a + b or a - b of BIGINTs, NULL on overflow, by comparisons alone (no NUMERIC per
    row): a + b overflows iff b > 0 and a > max - b, or b < 0 and a < min - b; each bound
    is computed only in the branch where it cannot overflow itself."""
    a, b = node.this, node.expression
    constant = int_constant(b)
    if constant is not None:           # one comparison with a bound computed here
        step = constant if isinstance(node, exp.Add) else -constant
        if step == 0:
            return node
        if step > 0:
            return _cases((exp.GT(this=a.copy(), expression=_num(INT64[1] - step)), exp.Null()),
                          (exp.true(), node))
        return _cases((exp.LT(this=a.copy(), expression=_num(INT64[0] - step)), exp.Null()),
                      (exp.true(), node))
    top, bottom = _num(INT64[1]), _num(INT64[0])
    if isinstance(node, exp.Sub):      # a - b overflows iff b < 0 and a > max + b, or b > 0 and a < min + b
        high = exp.GT(this=a.copy(), expression=exp.Add(this=top, expression=b.copy()))
        low = exp.LT(this=a.copy(), expression=exp.Add(this=bottom, expression=b.copy()))
        positive, negative = low, high
    else:
        positive = exp.GT(this=a.copy(), expression=exp.Sub(this=top, expression=b.copy()))
        negative = exp.LT(this=a.copy(), expression=exp.Sub(this=bottom, expression=b.copy()))
    return _cases((exp.GT(this=b.copy(), expression=_num(0)),
                   _cases((positive, exp.Null()), (exp.true(), node.copy()))),
                  (exp.LT(this=b.copy(), expression=_num(0)),
                   _cases((negative, exp.Null()), (exp.true(), node.copy()))),
                  (exp.true(), node))


def div(node):
    """/: a float division (as in DuckDB, whatever the operands), NULL for a zero divisor
    or a result a DOUBLE cannot hold."""
    a, b = node.this, node.expression
    quotient = exp.Div(this=_double(a.copy()), expression=_double(b.copy()))
    exact = exp.Div(this=_numeric(a), expression=_numeric(b))
    finite = _and(_finite(a), _finite(b))
    return _cases((exp.EQ(this=b.copy(), expression=_num(0)), exp.Null()),
                  (_or(_not(finite), _float_fits(exact)), quotient))


def int_div(node):
    """// of BIGINTs: truncated toward zero (PostgreSQL's / of integers, as DuckDB's //),
    NULL for a zero divisor and for the one quotient beyond int64 (-2^63 // -1)."""
    a, b = node.this, node.expression
    quotient = in_int64(exp.Div(this=a, expression=b, typed=True))
    if not _guarded(node):
        return quotient
    return _cases((exp.EQ(this=b.copy(), expression=_num(0)), exp.Null()),
                  (_and(exp.EQ(this=a.copy(), expression=_num(INT64[0])),
                            exp.EQ(this=b.copy(), expression=_num(-1))), exp.Null()),
                  (exp.true(), quotient.copy()))


def int_mod(node):
    """% of BIGINTs: NULL for a zero divisor (PostgreSQL's -2^63 % -1 is 0, as DuckDB's)."""
    remainder = in_int64(exp.Mod(this=node.this, expression=node.expression))
    return _case(exp.NEQ(this=node.expression.copy(), expression=_num(0)), remainder)


def float_mod(node):
    raise QueryError("% of non-integers is not supported on PostgreSQL (it has no exact "
                     "remainder of floats); cast both operands to BIGINT, or use the DuckDB "
                     "engine")


def int_neg(node):
    """-x and ABS(x) of a BIGINT: NULL for -2^63; a negative literal is one BIGINT (its
    magnitude, 2^63, may be none)."""
    constant = int_constant(node)
    if constant is not None and isinstance(node, exp.Neg):
        return exp.Cast(this=_num(constant), to=exp.DataType.build("BIGINT"))
    node = in_int64(node)
    if _guarded(node):
        return _case(exp.NEQ(this=node.this.copy(), expression=_num(INT64[0])), node)
    return node


def ln(node):
    return _case(exp.GT(this=node.this.copy(), expression=_num(0)), node)


def sqrt(node):
    return _case(exp.GTE(this=node.this.copy(), expression=_num(0)), node)


def exp_(node):
    return _case(exp.Between(this=node.this.copy(), low=_num(-EXP_LIMIT), high=_num(EXP_LIMIT)),
                 node)


def power(node):
    """power(a, b): NULL for 0 to a negative power, a negative base to a fraction, and
    results beyond a DOUBLE (|b ln|a|| > 700, computed exactly)."""
    a, b = _double(node.this), _double(node.expression)
    size = exp.Abs(this=exp.Mul(this=_numeric(b), expression=_numeric(exp.Ln(this=exp.Abs(
        this=a.copy())))))
    result = exp.Pow(this=a.copy(), expression=b.copy())
    safe = _cases(
        (_not(_and(_finite(a), _finite(b))), exp.false()),
        (exp.EQ(this=a.copy(), expression=_num(0)), exp.GTE(this=b.copy(), expression=_num(0))),
        (_and(exp.LT(this=a.copy(), expression=_num(0)),
                  exp.NEQ(this=b.copy(), expression=_fn("FLOOR", b.copy()))), exp.false()),
        (exp.true(), exp.LTE(this=size, expression=_num(EXP_LIMIT))))
    if _type(node) == "BIGINT":
        return _cases((_not(safe), exp.Null()),
                      (_within_int64(_numeric(result)), exp.Cast(
                          this=result.copy(), to=exp.DataType.build("BIGINT"))))
    return _case(safe, result)


def log(node):
    """LOG(x) (base 10, as DuckDB and PostgreSQL), LOG(b, x), LOG2, LOG10: NULL where x <= 0,
    and where the base is not above 0 or is 1 (ln(1) = 0 would divide by zero)."""
    base, value = (node.this, node.expression) if node.expression is not None else (None, node.this)
    x = _double(value.copy())
    if base is None:
        return _case(exp.GT(this=x, expression=_num(0)), exp.Log(this=x.copy()))
    b = _double(base.copy())
    computed = exp.Div(this=exp.Ln(this=x.copy()), expression=exp.Ln(this=b.copy()))
    return _cases((_or(exp.LTE(this=b.copy(), expression=_num(0)),
                           exp.EQ(this=b.copy(), expression=_num(1))), exp.Null()),
                  (exp.GT(this=x, expression=_num(0)), computed))


# ----------------------------------------------------------------------------------
# Rounding


def _places(node) -> int | None:
    places = node.args.get("decimals")
    if places is None:
        return None
    value = int_constant(places)
    if value is None:
        raise QueryError("the digits of ROUND(x, n) must be an integer literal")
    return value


def int_round(node):
    """ROUND(x, n) of a BIGINT: x for n >= 0; else rounded in NUMERIC (half away from zero,
    as DuckDB), NULL beyond int64 (PostgreSQL's NUMERIC result would raise where it is
    used as a BIGINT)."""
    places = _places(node)
    if places is None or places >= 0:
        return node.this
    rounded = exp.Round(this=_numeric(node.this), decimals=_num(places))
    return _case(_within_int64(rounded), exp.Cast(this=rounded.copy(),
                                                  to=exp.DataType.build("BIGINT")))


def _away(value: exp.Expression) -> exp.Expression:
    """A finite DOUBLE rounded half away from zero, as C's round (PostgreSQL's round(x)
    rounds half to even): trunc(y) + trunc(2 (y - trunc(y))), exact (y - trunc(y) and its
    double are exact) and never raising."""
    whole = _fn("TRUNC", value.copy())
    fraction = exp.Sub(this=grouped(value.copy()), expression=whole.copy())
    return exp.Paren(this=exp.Add(this=whole, expression=_fn("TRUNC", exp.Mul(
        this=_num(2), expression=exp.Paren(this=fraction)))))


def float_round(node):
    """ROUND(x[, n]) of a DOUBLE as DuckDB computes it: round(x * 10^n) / 10^n (n >= 0) or
    round(x / 10^-n) * 10^-n, half away from zero, and x itself where that is not finite;
    computed only where PostgreSQL's DOUBLE arithmetic cannot overflow or underflow (the
    largest such x is found here, in the same IEEE arithmetic)."""
    x = node.this
    places = _places(node) or 0
    size = exp.Abs(this=x.copy())
    m = 10.0 ** abs(places)
    factor = _double(_num(repr(m)))
    if places >= 0:
        scaled = x.copy() if places == 0 else exp.Mul(this=grouped(x.copy()), expression=factor)
        rounded = _away(scaled)
        if places:
            rounded = exp.Div(this=rounded, expression=factor.copy())
        return _cases((exp.LTE(this=size, expression=_num(repr(largest_finite(
            lambda v: v * m)))), rounded), (exp.true(), x.copy()))
    rounded = exp.Mul(this=_away(exp.Div(this=grouped(x.copy()), expression=factor)),
                      expression=factor.copy())
    # |x| < 1e-200: x / m rounds to a zero of x's sign (and could underflow to 0, an error)
    return _cases((exp.LT(this=size, expression=_num("1e-200")),
                   exp.Mul(this=grouped(x.copy()), expression=_double(_num("0.0")))),
                  (exp.LTE(this=size.copy(), expression=_num(repr(largest_finite(
                      lambda v: away(v / m) * m)))), rounded),
                  (exp.true(), x.copy()))


# ----------------------------------------------------------------------------------
# The plan's own arithmetic


def _float_constant(node: exp.Expression) -> float | None:
    """The value of a number literal (possibly negated, parenthesized or cast), else None."""
    sign = 1.0
    while isinstance(node, (exp.Cast, exp.Paren, exp.Neg)):
        sign = -sign if isinstance(node, exp.Neg) else sign
        node = node.this
    if isinstance(node, exp.Literal) and node.is_number:
        return sign * float(node.this)
    return None


def _magnitude_at_least(value: exp.Expression, least: float) -> exp.Expression:
    """|value| >= least, by two comparisons: the plan's operand may be a BIGINT (a sum of
    integers beyond 2^53 in fixed point multiplies the clamped value by 2^-33), whose
    ABS raises on -2^63, a value within the bounds [-2^63, 2^63 - 1]."""
    return _or(exp.GTE(this=value.copy(), expression=_num(repr(least))),
               exp.LTE(this=value.copy(), expression=_num(repr(-least))))


def plan_arith(node):
    """The plan's arithmetic with a DOUBLE constant (a quantile's cell: (x - lower) * scale):
    within the metadata's bounds it can still overflow (bounds of +-1e308 span more than a
    DOUBLE) or underflow (x = 1e-300 times a scale of 1e-298), where PostgreSQL raises on
    one row. NULL where it would overflow, a zero of x's sign where it would underflow (as
    DuckDB's 0; a NULL or zero cell is cell 0 on both), decided by comparisons with bounds
    computed here; a product by a factor of at least 1 (the fixed point's 2^e, chosen to
    fit int64) or a shift by less than half a DOUBLE's range cannot raise. A square
    (VARIANCE's (x - offset)^2) underflows for |x - offset| below 1.5e-162."""
    a = node.this
    if isinstance(node, exp.Mul) and a == node.expression:          # a square (VARIANCE)
        least = smallest_nonzero(lambda v: v * v)
        return _cases((_magnitude_at_least(a, least), node),
                      (exp.true(), exp.Mul(this=grouped(a.copy()), expression=_num(0))))
    c = _float_constant(node.expression)
    if c is None or not math.isfinite(c) or (isinstance(node.expression, exp.Literal)
                                             and node.expression.is_int):
        return node
    if isinstance(node, exp.Mul):
        if c == 0 or abs(c) >= 1:
            return node
        least = smallest_nonzero(lambda v: v * abs(c))
        return _cases((_magnitude_at_least(a, least), node),
                      (exp.true(), exp.Mul(this=grouped(a.copy()), expression=_double(_num("0.0")))))
    step = c if isinstance(node, exp.Add) else -c
    if abs(step) <= DOUBLE_MAX / 2:
        return node
    if step > 0:
        return _case(exp.LTE(this=a.copy(), expression=_num(repr(largest_finite(
            lambda v: v + step)))), node)
    return _case(exp.GTE(this=a.copy(), expression=_num(repr(-largest_finite(
        lambda v: v - step)))), node)


def integral(node):
    """FLOOR/CEIL of a BIGINT are the BIGINT; SIGN is a BIGINT (PostgreSQL's is DOUBLE or
    NUMERIC)."""
    if isinstance(node, exp.Sign):
        return exp.Cast(this=node, to=exp.DataType.build("BIGINT"))
    if _type(node.this) == "BIGINT":
        return node.this
    return _case(_within_int64(_numeric(node)), exp.Cast(this=node, to=exp.DataType.build(
        "BIGINT")))


def trunc(node):
    return node.this if _type(node.this) == "BIGINT" else node


def is_inf(node):
    if _type(node.this) == "BIGINT":
        return _case(_not(exp.Is(this=node.this.copy(), expression=exp.Null())), exp.false())
    return exp.EQ(this=exp.Abs(this=node.this), expression=exp.Cast(
        this=exp.Literal.string("Infinity"), to=exp.DataType.build("DOUBLE")))


def is_nan(node):
    return exp.EQ(this=node.this, expression=exp.Cast(this=exp.Literal.string("NaN"),
                                                      to=exp.DataType.build("DOUBLE")))
