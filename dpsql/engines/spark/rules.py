"""Spark SQL's compilation of the analyst's expressions: DuckDB's meaning, and never a failure.

Owns: one rule per allow-listed node whose Spark spelling or meaning differs from DuckDB's.
dpsql's Spark session runs with ANSI mode off, where nothing in the allow-list raises, but
several things silently mean something else: 64-bit arithmetic wraps around, a division
by zero is NULL, ``ln(0)`` is NULL, a double cast to BIGINT saturates and truncates, ``log(x)``
is natural, ``floor`` returns BIGINT, ``concat`` is NULL if any part is. Each rule below
gives the DuckDB result (as ``TRY``: NULL where DuckDB would raise), decided by comparisons
(Spark's ``try_*`` functions throw and catch per row: a timing channel). ``dpsql.engines.spark.dialect.RULES`` says which rule each
node of an analyst's expression gets, by its type; a node without one is refused (for free,
before anything runs) with a message naming it. The rules do not rely on ANSI mode being
off to be total: a guarded division, remainder or cast reaches Spark's operator only where
ANSI mode would not raise either.
"""
from __future__ import annotations

from sqlglot import exp

from ...errors import QueryError
from ...plan.dialect import (away, grouped, int_constant, largest_finite, let, let_pair,
                             register_let)

INT64 = (-(2 ** 63), 2 ** 63 - 1)
EXACT_DOUBLE = 2 ** 52
"""Doubles at least this large in magnitude are whole numbers already."""


def _num(value) -> exp.Expression:
    return exp.Literal.number(value)


def _fn(name: str, *args) -> exp.Expression:
    return exp.Anonymous(this=name, expressions=list(args))


def _type(node: exp.Expression) -> str | None:
    t = node.type
    return t.sql("duckdb").upper() if t is not None and not t.is_type("unknown") else None


def _and(*conditions) -> exp.Expression:
    """AND of fresh conditions (sqlglot's ``and_`` would copy each)."""
    return exp.and_(*conditions, copy=False)


def _or(*conditions) -> exp.Expression:
    return exp.or_(*conditions, copy=False)


def _not(condition) -> exp.Expression:
    return exp.not_(condition, copy=False)


def _cases(*branches, default=None) -> exp.Expression:
    return exp.Case(ifs=[exp.If(this=c, true=v) for c, v in branches], default=default)


def _double(text: str) -> exp.Expression:
    return exp.Cast(this=exp.Literal.string(text), to=exp.DataType.build("DOUBLE"))


def _guarded(node) -> bool:
    """The typecheck wrapped ``node`` in TRY: it could overflow on some 64-bit operands
    (``dpsql.frontend.ranges`` proved the others cannot)."""
    return isinstance(node.parent, exp.Try)


# ----------------------------------------------------------------------------------
# Arithmetic


def _arith(node):
    """+ - *: 64-bit overflow is NULL, not a wrap; floats are IEEE, as DuckDB. Never Spark's
    ``try_add``/``try_multiply``: they throw and catch an exception on each overflowing row
    (issue 33's twenty-fourth review: about 15 us a row and term, +0.76 s with a person's
    1,000 stored rows), so the time told whether one person's value overflowed. Decided by
    comparisons instead (with an integer literal c, one comparison of a with the bound c
    leaves), or for a product of two columns on its exact DECIMAL(38, 0) value, which a
    product of two 64-bit integers cannot overflow."""
    if _type(node) != "BIGINT" or not _guarded(node):
        return node
    constant = int_constant(node.expression)
    if isinstance(node, exp.Mul):
        return _mul(node, constant)
    if constant is not None:
        step = constant if isinstance(node, exp.Add) else -constant
        return _within(node, node.this, *_shifted_bounds(step)) if step else node
    return _add(node)


def _shifted_bounds(step: int) -> tuple:
    """The a for which a + step stays in int64."""
    return max(INT64[0], INT64[0] - step), min(INT64[1], INT64[1] - step)


def _within(node, a, low: int, high: int):
    """``node`` where ``a`` lies in [low, high] (bounds within int64), NULL elsewhere; a is
    read once (``let``: a CASE that tests a, then computes with it, read it twice, so that
    nested guards were 2^depth copies)."""
    if (low, high) == INT64:
        return node
    if low > high:
        return exp.Cast(this=exp.Null(), to=exp.DataType.build("BIGINT"))

    def body(v):
        tests = [c for c in (exp.GTE(this=v, expression=_num(low)) if low > INT64[0] else None,
                             exp.LTE(this=v.copy(), expression=_num(high)) if high < INT64[1]
                             else None) if c is not None]
        return _cases((_and(*tests), type(node)(this=v.copy(), expression=node.expression)))
    return let(a, body)


def _add(node):
    """a + b or a - b of BIGINTs, NULL on overflow: a + b overflows iff b > 0 and a > max - b,
    or b < 0 and a < min - b; each bound is computed only in the branch where it cannot
    overflow itself. a and b are read once each (``let``)."""
    def body(u, v):
        top, bottom = _num(INT64[1]), _num(INT64[0])
        if isinstance(node, exp.Sub):  # a - b overflows iff b < 0 and a > max + b, or b > 0 and a < min + b
            positive = exp.LT(this=u.copy(), expression=exp.Add(this=bottom, expression=v.copy()))
            negative = exp.GT(this=u.copy(), expression=exp.Add(this=top, expression=v.copy()))
        else:
            positive = exp.GT(this=u.copy(), expression=exp.Sub(this=top, expression=v.copy()))
            negative = exp.LT(this=u.copy(), expression=exp.Sub(this=bottom, expression=v.copy()))
        return _cases((_and(exp.GT(this=v.copy(), expression=_num(0)), positive), exp.Null()),
                      (_and(exp.LT(this=v.copy(), expression=_num(0)), negative), exp.Null()),
                      default=type(node)(this=u.copy(), expression=v.copy()))
    return let_pair(node.this, node.expression, body, "ELEMENT_AT")


def _mul(node, constant):
    """a * b of BIGINTs, NULL on overflow."""
    a = node.this
    if constant is not None:
        if constant == 0:
            return node
        low, high = sorted((-(INT64[0] // -constant) if constant > 0 else INT64[1] // constant,
                            INT64[1] // constant if constant > 0 else -(INT64[0] // -constant)))
        low, high = max(low, INT64[0]), min(high, INT64[1])
        return _within(node, a, *_exact_range(constant, low, high))
    wide = exp.DataType.build("DECIMAL(38, 0)")

    def body(u, v):
        exact = exp.Mul(this=exp.Cast(this=u, to=wide), expression=exp.Cast(this=v, to=wide.copy()))
        return _cases((_and(exp.GTE(this=exact, expression=_num(INT64[0])),
                            exp.LTE(this=exact.copy(), expression=_num(INT64[1]))),
                       exp.Mul(this=u.copy(), expression=v.copy())))
    return let_pair(a, node.expression, body, "ELEMENT_AT")


def _exact_range(c: int, low: int, high: int) -> tuple:
    """[low, high] narrowed to the a whose product with c is within int64 (the division
    bounds above may be one off at an end; checked exactly here)."""
    while low <= high and not INT64[0] <= low * c <= INT64[1]:
        low += 1
    while high >= low and not INT64[0] <= high * c <= INT64[1]:
        high -= 1
    while low - 1 >= INT64[0] and INT64[0] <= (low - 1) * c <= INT64[1]:
        low -= 1
    while high + 1 <= INT64[1] and INT64[0] <= (high + 1) * c <= INT64[1]:
        high += 1
    return low, high


def _div(node):
    """/: a float division, as DuckDB's (IEEE: by zero +-Infinity, or NaN for 0/0; Spark: NULL).
    A divisor the typecheck made NULL for 0 (``NULLIF(b, 0)``, which ``_nullif`` hands on as
    b, marked) is divided by with ``try_divide`` (NULL for 0, without an exception: 0.31 s for
    5,000,000 zero divisors against 0.34 s for none); the test for 0 repeated both operands,
    so that nested divisions were 4^depth copies (6 levels planned for 119 s on Spark)."""
    if _type(node) is None:
        return node
    double = exp.DataType.build("DOUBLE")
    nonzero = node.expression.meta.get(NONZERO)
    a, b = (exp.Cast(this=node.this, to=double), exp.Cast(this=node.expression, to=double.copy()))
    if nonzero:
        return _fn("try_divide", a, b)
    return ieee_div(a, b)


NONZERO = "dpsql_nonzero_divisor"
"""Marks the divisor of a ``/`` whose NULLIF(b, 0) ``_nullif`` removed."""


def _nullif(node):
    """NULLIF(a, b) reading a once: ``element_at(transform(array(a), v -> CASE WHEN v = b THEN
    NULL ELSE v END), 1)``. Spark's own NULLIF is a CASE with two copies of a, so nested ones
    were 2^depth (12 levels: 4.3 s to plan and run on 1,000 rows; 19 in 0.56 s this way; 58 ns
    a row more than NULLIF). The typecheck's NULLIF(b, 0) of a float division's divisor is b,
    marked for ``_div``'s ``try_divide``."""
    parent, zero = node.parent, node.expression
    if isinstance(parent, exp.Div) and node.arg_key == "expression" and isinstance(
            zero, exp.Literal) and zero.is_number and float(zero.this) == 0:
        divisor = node.this
        divisor.meta[NONZERO] = True
        return divisor
    if isinstance(zero, (exp.Literal, exp.Column)):
        return let(node.this, lambda v: _cases((exp.EQ(this=v, expression=zero), exp.Null()),
                                               default=v.copy()))
    return let_pair(node.this, zero, lambda u, v: _cases((exp.EQ(this=u, expression=v), exp.Null()),
                                                         default=u.copy()), "ELEMENT_AT")


register_let("spark", "ELEMENT_AT(TRANSFORM(ARRAY({value}), {name} -> {body}), 1)",
             "ARRAY({values})")


def simple_case(node):
    """CASE x WHEN ... : Spark compares a copy of x with each WHEN (nested, WHENs^depth), so a
    computed x is read once through ``let``."""
    operand = node.args.get("this")
    if operand is None or isinstance(operand, (exp.Column, exp.Literal)):
        return node
    node.set("this", None)
    return let(operand, lambda v: _with_operand(node, v))


def _with_operand(node, v):
    node.set("this", v)
    return node


def ieee_div(a: exp.Expression, b: exp.Expression) -> exp.Expression:
    """a / b of DOUBLEs as DuckDB divides (Spark's / is NULL for a zero divisor): by zero, a
    times infinity (+-Infinity by a's sign, NaN for 0 or NaN, NULL for NULL)."""
    return _cases((exp.EQ(this=b.copy(), expression=_num(0)),
                   exp.Mul(this=a.copy(), expression=_double("Infinity"))),
                  default=exp.Div(this=a, expression=b))


def _mod(node):
    """% of DOUBLEs: NaN for a zero divisor, as DuckDB's fmod (Spark: NULL)."""
    if _type(node) != "DOUBLE":
        return node
    return _cases((_or(exp.Is(this=node.this.copy(), expression=exp.Null()),
                           exp.Is(this=node.expression.copy(), expression=exp.Null())), exp.Null()),
                  (exp.EQ(this=node.expression.copy(), expression=_num(0)), _double("NaN")),
                  default=node)


def _int_mod(node):
    """% of BIGINTs: NULL for a zero divisor (Spark's, without ANSI mode; with it, an error),
    and Java's remainder otherwise (the dividend's sign, -2^63 % -1 = 0, as DuckDB)."""
    return _cases((exp.EQ(this=node.expression.copy(), expression=_num(0)), exp.Null()),
                  default=node)


def _int_div(node):
    """// of integers: truncated toward zero (Spark's DIV), NULL for a zero divisor (Spark's
    is, without ANSI mode; with it, an error) and for the one overflowing quotient
    (-2^63 // -1)."""
    if _type(node) != "BIGINT":
        raise QueryError("// of non-integers is not supported on Spark; use FLOOR(a / b)")
    a, b = node.this, node.expression
    quotient = exp.IntDiv(this=a, expression=b)
    if not _guarded(node):
        return quotient
    return _cases((exp.EQ(this=b.copy(), expression=_num(0)), exp.Null()),
                  (_and(exp.EQ(this=a.copy(), expression=_num(INT64[0])),
                        exp.EQ(this=b.copy(), expression=_num(-1))), exp.Null()),
                  default=quotient)


def _neg(node):
    """-x and ABS(x): NULL for -2^63, which Spark would wrap."""
    if _type(node) == "BIGINT" and _guarded(node):
        return _cases((exp.EQ(this=node.this.copy(), expression=_num(INT64[0])), exp.Null()),
                      default=node)
    return node


def _ln(node):
    """LN: -Infinity at 0 and NaN below, as DuckDB (Spark: NULL for both)."""
    return ln_of(node.this)


def ln_of(value) -> exp.Expression:
    x = exp.Cast(this=value.copy(), to=exp.DataType.build("DOUBLE"))
    return _log_of(x, lambda v: exp.Ln(this=v))


def _log_of(value, compute) -> exp.Expression:
    x = exp.Cast(this=value.copy(), to=exp.DataType.build("DOUBLE"))
    return _cases((exp.EQ(this=x.copy(), expression=_num(0)), _double("-Infinity")),
                  (exp.LT(this=x.copy(), expression=_num(0)), _double("NaN")),
                  default=compute(x))


def _log(node):
    """LOG(x) is base 10 in DuckDB (natural in Spark); LOG(b, x) = ln x / ln b, in IEEE."""
    if node.expression is None:
        return _log_of(node.this, lambda x: _fn("log10", x))
    return ieee_div(ln_of(node.expression), ln_of(node.this))


def _pow(node):
    """POWER: as DuckDB (IEEE pow); an integer result out of int64 is NULL."""
    double = exp.DataType.build("DOUBLE")
    power = exp.Pow(this=exp.Cast(this=node.this, to=double),
                    expression=exp.Cast(this=node.expression, to=double.copy()))
    if _type(node) == "BIGINT":
        return _to_bigint(power)
    return power


def _to_bigint(double: exp.Expression) -> exp.Expression:
    """A DOUBLE rounded half to even to BIGINT (DuckDB's cast), NULL beyond int64 (Spark
    saturates)."""
    return _cases((_and(exp.GTE(this=double.copy(), expression=_double("-9.223372036854775808E18")),
                            exp.LT(this=double.copy(), expression=_double("9.223372036854775808E18"))),
                   exp.Cast(this=_fn("bround", double.copy()), to=exp.DataType.build("BIGINT"))))


def _integral(node):
    """FLOOR, CEIL, TRUNC of a DOUBLE stay DOUBLE (Spark's FLOOR/CEIL return BIGINT; its
    TRUNC truncates dates); of an integer, the integer."""
    value = node.this
    if _type(value) == "BIGINT":
        return value if _type(node) == "BIGINT" else exp.Cast(this=value, to=exp.DataType.build("DOUBLE"))
    kind = {exp.Floor: "floor", exp.Ceil: "ceil"}.get(type(node))
    whole = _fn(kind, value.copy()) if kind else _cases(
        (exp.GTE(this=value.copy(), expression=_num(0)), _fn("floor", value.copy())),
        default=_fn("ceil", value.copy()))
    rounded = _cases((exp.LT(this=exp.Abs(this=value.copy()), expression=_num(EXACT_DOUBLE)),
                      exp.Cast(this=whole, to=exp.DataType.build("DOUBLE"))), default=value)
    if _type(node) == "BIGINT":
        return _to_bigint(rounded)
    return rounded


def _round(node):
    """ROUND(x[, n]): half away from zero, as DuckDB; of a BIGINT to negative places,
    computed in DECIMAL and NULL beyond int64 (Spark's would wrap)."""
    places = node.args.get("decimals")
    value = node.this
    if _type(node) == "BIGINT":
        if places is None:
            return value
        wide = exp.Round(this=exp.Cast(this=value, to=exp.DataType.build("DECIMAL(38, 0)")),
                         decimals=places)
        return _cases((exp.Between(this=wide.copy(), low=_num(INT64[0]), high=_num(INT64[1])),
                       exp.Cast(this=wide, to=exp.DataType.build("BIGINT"))))
    if places is None:
        return _whole(value)
    return _double_round(value, int_constant(places))


def _whole(value) -> exp.Expression:
    """A DOUBLE rounded half away from zero (Spark's ROUND of a DOUBLE rounds its shortest
    decimal form HALF_UP, which is the same), itself where it has no fraction."""
    return _cases((exp.LT(this=exp.Abs(this=value.copy()), expression=_num(EXACT_DOUBLE)),
                   exp.Round(this=value.copy())), default=value.copy())


def _double_round(value, places: int) -> exp.Expression:
    """ROUND(x, n) of a DOUBLE as DuckDB computes it (Spark rounds x's shortest decimal form,
    which differs: 0.285 is 0.28 in DuckDB, 0.29 in Spark): round(x * 10^n) / 10^n, or
    round(x / 10^-n) * 10^-n, half away from zero (Spark's ROUND of a DOUBLE to no places),
    and x itself where that is not finite (beyond the largest x found here)."""
    m = 10.0 ** abs(places)
    factor = _double(repr(m))
    if places >= 0:
        rounded = exp.Div(this=exp.Round(this=exp.Mul(this=grouped(value.copy()), expression=factor)),
                          expression=factor.copy())
        top = largest_finite(lambda v: v * m)
    else:
        rounded = exp.Mul(this=exp.Round(this=exp.Div(this=grouped(value.copy()), expression=factor)),
                          expression=factor.copy())
        top = largest_finite(lambda v: away(v / m) * m)
    return _cases((exp.LTE(this=exp.Abs(this=value.copy()), expression=_double(repr(top))),
                   rounded), default=value.copy())


def _sign(node):
    """SIGN as a BIGINT (Spark's is a DOUBLE); of NaN 0, as DuckDB (a NaN cast to BIGINT
    would raise with ANSI mode on)."""
    target = "BIGINT" if _type(node) == "BIGINT" else "DOUBLE"
    sign = exp.Cast(this=exp.Sign(this=node.this), to=exp.DataType.build(target))
    if _type(node.this) != "DOUBLE":
        return sign
    return _cases((_fn("isnan", node.this.copy()), exp.Cast(this=_num(0), to=exp.DataType.build(
        target))), default=sign)


def _is_inf(node):
    if _type(node.this) == "BIGINT":
        return _cases((_not(exp.Is(this=node.this.copy(), expression=exp.Null())), exp.false()))
    return exp.EQ(this=exp.Abs(this=node.this), expression=_double("Infinity"))
