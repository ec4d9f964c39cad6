"""The building blocks of PostgreSQL guards: conditions that cannot raise themselves.

Owns: the constants and small tree builders the PostgreSQL dialect's rules share (int64
and DOUBLE ranges, CASE in evaluation order, exact NUMERIC operands). PostgreSQL may
evaluate the operands of AND and OR in any order, but CASE branches in order: a guard that
must not evaluate something is a CASE.
"""
from __future__ import annotations

from sqlglot import exp

INT64 = (-(2 ** 63), 2 ** 63 - 1)
FLOAT_MAX = "1.7976931348623157e308"
EXP_LIMIT = 700       # |b ln|a|| below this: power and exp neither overflow nor underflow


def _col(name: str) -> exp.Column:
    return exp.column(name, quoted=True)


def _type(node: exp.Expression) -> str | None:
    t = node.type
    return t.sql("postgres").upper() if t is not None and not t.is_type("unknown") else None


def _numeric(node: exp.Expression) -> exp.Expression:
    return exp.Cast(this=node.copy(), to=exp.DataType.build("DECIMAL"))


def _num(value) -> exp.Expression:
    return exp.Literal.number(value)


def _case(condition: exp.Expression, value: exp.Expression) -> exp.Expression:
    return exp.Case(ifs=[exp.If(this=condition, true=value)])


def _fn(name: str, *args) -> exp.Expression:
    return exp.Anonymous(this=name, expressions=list(args))


def _within_int64(value: exp.Expression) -> exp.Expression:
    return exp.Between(this=value, low=_num(INT64[0]), high=_num(INT64[1]))


FITS_MAX = "1.797693134862e308"
FITS_TINY = "1e-323"
"""Inner margins of a DOUBLE's range for results computed in NUMERIC from DOUBLE operands:
PostgreSQL converts a DOUBLE to NUMERIC with 15 significant digits, so such a result is off
by a relative 1e-14 at most; these margins (2e-13 below the largest DOUBLE, twice the
smallest) keep a value that passes from overflowing or underflowing for real."""


def _float_fits(exact: exp.Expression) -> exp.Expression:
    """A NUMERIC result (exact, or from DOUBLEs rounded to 15 digits) that a DOUBLE holds
    without overflow or underflow, with the margins above."""
    magnitude = exp.Abs(this=exact)
    return _or(exp.EQ(this=exact.copy(), expression=_num(0)),
                   exp.Between(this=magnitude, low=_num(FITS_TINY), high=_num(FITS_MAX)))


def _finite(node: exp.Expression) -> exp.Expression:
    """A float that is neither infinite nor NaN (NaN is the greatest float in PostgreSQL)."""
    return exp.Between(this=node.copy(), low=exp.Neg(this=_num(FLOAT_MAX)), high=_num(FLOAT_MAX))


def _and(*conditions) -> exp.Expression:
    """AND of fresh conditions (sqlglot's ``and_`` would copy each: a guard's operands are
    large)."""
    return exp.and_(*conditions, copy=False)


def _or(*conditions) -> exp.Expression:
    return exp.or_(*conditions, copy=False)


def _not(condition) -> exp.Expression:
    return exp.not_(condition, copy=False)


def _cases(*branches) -> exp.Expression:
    """CASE WHEN c1 THEN v1 ... END: PostgreSQL evaluates the branches in order and skips
    the rest, unlike AND and OR, whose operands it may evaluate in any order."""
    return exp.Case(ifs=[exp.If(this=c, true=v) for c, v in branches])


DOUBLE_MAX_15 = "1.79769313486232e308"
"""The largest DOUBLE as PostgreSQL's NUMERIC holds it (15 significant digits)."""


HALF_TINY = "2.4703282292062328e-324"
"""Just above half the smallest DOUBLE: PostgreSQL's cast of a NUMERIC below it (not 0)
would underflow to 0, an error; from it on, it gives a DOUBLE."""


def numeric_double(exact: exp.Expression, total: exp.Expression | None = None) -> exp.Expression:
    """A NUMERIC (a sum of DOUBLEs computed exactly, or an average with its sum ``total``) as
    DuckDB's DOUBLE of it, never raising: an infinity of the sum's sign where the sum is beyond
    the largest DOUBLE as NUMERIC holds it (15 digits), the largest DOUBLE between that and the
    largest DOUBLE (where PostgreSQL's cast would overflow), 0 below half the smallest DOUBLE
    (where it would underflow), else the nearest DOUBLE; NULL stays NULL."""
    total = exact.copy() if total is None else total
    double = exp.DataType.build("DOUBLE")
    infinite = exp.Mul(this=exp.Cast(this=_fn("SIGN", total.copy()), to=double),
                       expression=exp.Cast(this=exp.Literal.string("Infinity"), to=double.copy()))
    largest = _num("1.7976931348623157e308")    # GREATEST and LEAST skip NULL: tested first
    within = exp.Greatest(this=exp.Least(this=exact.copy(), expressions=[largest]),
                          expressions=[exp.Neg(this=largest.copy())])
    tiny = exp.LT(this=exp.Abs(this=exact), expression=_num(HALF_TINY))
    return _cases((exp.GT(this=exp.Abs(this=total.copy()), expression=_num(DOUBLE_MAX_15)),
                   infinite),
                  (exp.Is(this=total, expression=exp.Null()), exp.Cast(this=exp.Null(),
                                                                     to=double.copy())),
                  (exp.true(), exp.Cast(this=_cases((tiny, _num(0)), (exp.true(), within)),
                                        to=double.copy())))
