"""The DuckDB dialect's guards: every analyst expression total, without ``TRY`` and without
copies of an operand.

Owns: compiling the plan's ``exp.Try`` (the typecheck's "NULL where this would raise") and
``exp.Nullif`` for DuckDB. DuckDB's ``TRY(e)`` runs ``e`` on a vector of up to 2,048 rows
and, if one row raises, runs the vector again row by row: one person's value that makes an
operation overflow slowed the statement by a vector of other persons' rows (twenty-fourth
review of issue 33: +0.024 s over the wire between the PUMS neighbours, one person's income
deciding whether ``income * C`` overflows; +0.74 s on a person's 997 stored rows). No
operator here raises on any value, so the time does not depend on whether one would have:

- a 64-bit ``+ - * -x ABS`` that could overflow is computed on HUGEINT (64-bit operands
  cannot overflow it) and is NULL outside the BIGINT range; ``a // b`` is NULL for the one
  quotient beyond it (-2^63 // -1) and ``ROUND(x, -n)`` outside the range of x that rounds
  within it, both decided by comparisons on BIGINT (DuckDB's HUGEINT division and rounding
  take longer the larger the value: twenty-fifth review, +75 and +149 ns a row);
- ``DATE_TRUNC`` and ``EPOCH_US`` get NULL for a finite date or time beyond TIMESTAMP's range
  (``_far_times``);
- ``SUBSTRING`` and ``LEFT`` get NULL for an offset or length DuckDB would reject
  (measured on DuckDB 2.0.1: SUBSTRING outside [-2^32, 2^32 - 1], LEFT from 2^32; RIGHT
  takes every BIGINT), which is TRY's NULL;
- every other node the typecheck wraps (float arithmetic, which is IEEE, ``%`` and ``//``
  by a divisor already NULL for 0, SIGN, FLOOR, CEIL, TRUNC, ROUND of a DOUBLE, SQRT ... POWER,
  the date parts, DATE_DIFF) does not raise on any value on DuckDB 2.0.1
  (``tests/safety/test_duckdb_guards.py`` runs each on the extremes of its types) and runs
  as it is. A wrapped node of any other kind is refused: the list is closed.

A guard that needs its value twice (``v BETWEEN lo AND hi THEN v``) reads it once through a
one-element list and a lambda (``let``): DuckDB expands ``NULLIF(a, b)`` into a CASE with two
copies of ``a``, so ``a / (b / (c / ...))``, whose divisors are NULLIF'd, was 2^depth copies
(14 levels: 11.8 s on 1,000 rows). ``NULLIF`` is compiled the same way. The list costs about
6 ns a row (measured: 8.5 against 2.3 ns for ``a * b``), whatever the values.
"""
from __future__ import annotations

from sqlglot import exp

from ...errors import QueryError
from ...plan.dialect import Let, int_constant, let, let_pair, register_let
from ...plan.guard_limits import check_guards, statement_total

INT64 = (-(2 ** 63), 2 ** 63 - 1)
OFFSETS = (-(2 ** 32), 2 ** 32 - 1)
"""The offsets and lengths DuckDB 2.0.1's SUBSTRING accepts; others raise."""

_WIDE = (exp.Add, exp.Sub, exp.Mul, exp.Neg, exp.Abs)
_TOTAL = (exp.Add, exp.Sub, exp.Mul, exp.Div, exp.IntDiv, exp.Mod, exp.Neg, exp.Abs, exp.Round,
          exp.Sign, exp.Floor, exp.Ceil, exp.Trunc, exp.Sqrt, exp.Cbrt, exp.Ln, exp.Log,
          exp.Exp, exp.Pow, exp.Extract, exp.TimestampTrunc, exp.DateTrunc, exp.DateDiff,
          exp.Year, exp.Quarter, exp.Month, exp.Day, exp.Hour, exp.Minute, exp.Second,
          exp.DayOfWeek, exp.DayOfYear, exp.UnixMicros, exp.Right)
"""Nodes that do not raise on DuckDB 2.0.1 on any value of their operands' types, once the
integer ones below are widened (``tests/safety/test_duckdb_guards.py``)."""


MAX_LETS = 64
"""Most guards one statement (all its parts together: ``dpsql.plan.guard_limits``) may bind
through a lambda on DuckDB (a guard of a small operand copies it instead): DuckDB prepares
each in about 5 ms on a loaded 2-core machine, in a step that neither a cancel nor a timeout
interrupts, and a statement is prepared for its dry run and its run (review 38, F1: five
chains of 50 guarded products, 245 lambdas within the 256 guards allowed, took 15-17.6 s
through dpsql serve and a cancel landed 3.9 s late; review 39, F1: 64 a part let a CUBE of
four sets of 64 run past a 20 s timeout). The fixture files' plans bind at most 4."""


def never_raising(tree: exp.Expression) -> exp.Expression:
    """``tree`` with every ``exp.Try`` and ``exp.Nullif`` compiled (in place, innermost first)."""
    check_guards(tree)
    for node in reversed(list(tree.find_all(exp.Try, exp.Nullif))):
        if isinstance(node, exp.Nullif):
            node.replace(_nullif(node))
        else:
            node.replace(_total(node.this))
    lets = statement_total("lets", sum(1 for _ in tree.find_all(Let)))
    if lets > MAX_LETS:
        raise QueryError(f"the query has {lets:,} guarded operations on computed values (a "
                         "chain such as a * 2 * 3 * ..., where each result is checked before "
                         f"the next step), more than dpsql's limit of {MAX_LETS} on this "
                         "engine (all its UNION ALL parts and grouping sets together), which "
                         "bounds the time DuckDB takes to prepare it; compute shorter chains")
    return tree


register_let("duckdb", "LIST_EXTRACT(LIST_TRANSFORM([{value}], LAMBDA {name}: {body}), 1)",
             "[{values}]")


def _nullif(node: exp.Nullif) -> exp.Expression:
    other = node.expression
    if isinstance(other, (exp.Literal, exp.Column)):
        return let(node.this, lambda v: exp.Case(ifs=[exp.If(
            this=exp.EQ(this=v, expression=other), true=exp.Null())], default=v.copy()))
    return let_pair(node.this, other, lambda u, v: exp.Case(ifs=[exp.If(
        this=exp.EQ(this=u, expression=v), true=exp.Null())], default=u.copy()), "LIST_EXTRACT")


def _type(node: exp.Expression) -> str | None:
    t = node.type
    return t.sql("duckdb").upper() if t is not None and not t.is_type("unknown") else None


def _total(inner: exp.Expression) -> exp.Expression:
    if isinstance(inner, exp.IntDiv) and _type(inner) == "BIGINT":
        return _int_div(inner)
    if isinstance(inner, exp.Round) and _type(inner) == "BIGINT":
        return _round(inner)
    if isinstance(inner, _WIDE) and _type(inner) == "BIGINT":
        return _widened(inner)
    if isinstance(inner, (exp.Substring, exp.Left)):
        return _offsets(inner)
    if isinstance(inner, (exp.TimestampTrunc, exp.DateTrunc, exp.UnixMicros)):
        return _far_times(inner)
    if isinstance(inner, _TOTAL):
        return inner
    raise QueryError(f"{inner.key.upper()} is not supported on DuckDB here (it could fail on "
                     "some values); rewrite the expression without it")


FIRST_TIME, LAST_DATE = "-290307-01-01", "294247-01-10"
"""DATE_TRUNC and EPOCH_US of a date or time before the first or (a date) after the last of
these raise on DuckDB 2.0.1 (the result would fall outside TIMESTAMP's range; the neighbour
test of a date at year 300000 failed for that person only); they are NULL there."""

DATE_LIMITS = {"YEAR": ("-290307-01-01", "294247-12-31"),
               "QUARTER": ("-290307-01-01", "294247-03-31"),
               "MONTH": ("-290307-01-01", "294247-01-31")}
"""A DATE's first and last whose truncation to the unit DuckDB 2.0.1 computes (measured; a
week, a day, a smaller unit and EPOCH_US: DAY_LIMITS): the truncated date must be a
TIMESTAMP. NULL beyond them, as TRY gives."""
DAY_LIMITS = ("-290308-12-22", LAST_DATE)


def _far_times(node: exp.Expression) -> exp.Expression:
    """DATE_TRUNC or EPOCH_US, NULL for a finite date or time beyond TIMESTAMP's range (a
    timestamp before FIRST_TIME: a little wider than DuckDB's own limit, at the far end of
    the range it can hold)."""
    value = node.this
    kind = _type(value) or ""
    if kind not in ("DATE", "TIMESTAMP"):
        return node
    unit = node.args.get("unit")
    unit = (unit.name if isinstance(unit, exp.Expression) else str(unit or "")).upper()
    first, last = (DATE_LIMITS.get(unit, DAY_LIMITS) if kind == "DATE"
                   else (FIRST_TIME, None))

    def body(v):
        def bound(text):
            return exp.Cast(this=exp.Literal.string(text), to=exp.DataType.build(kind))
        beyond = exp.LT(this=v.copy(), expression=bound(first))
        if last is not None:
            beyond = exp.or_(beyond, exp.GT(this=v.copy(), expression=bound(last)))
        far = exp.and_(exp.Anonymous(this="ISFINITE", expressions=[v.copy()]), beyond)
        computed = node.copy()
        computed.set("this", v.copy())
        return exp.Case(ifs=[exp.If(this=far, true=exp.Null())], default=computed)
    return let(value, body)


def _int_div(node: exp.IntDiv) -> exp.Expression:
    """a // b of BIGINTs (b is NULL for 0 already), NULL for -2^63 // -1."""
    return let_pair(node.this, node.expression, lambda u, v: exp.Case(ifs=[exp.If(
        this=exp.and_(exp.EQ(this=u, expression=_num(INT64[0])),
                      exp.EQ(this=v, expression=_num(-1))), true=exp.Null())],
        default=exp.IntDiv(this=u.copy(), expression=v.copy())), "LIST_EXTRACT")


def rounding_range(digits: int) -> tuple:
    """The BIGINTs that ROUND(x, digits) (half away from zero) keeps within BIGINT."""
    if digits >= 0:
        return INT64
    power = 10 ** -digits
    top = min(INT64[1], INT64[1] // power * power + power // 2 - 1)
    bottom = max(INT64[0], -((-INT64[0]) // power * power + power // 2 - 1))
    return bottom, top


def _round(node: exp.Round) -> exp.Expression:
    decimals = node.args.get("decimals")
    digits = int_constant(decimals) if decimals is not None else 0
    if digits is None:
        raise QueryError("the digits of ROUND(x, n) must be an integer literal")
    low, high = rounding_range(digits)
    if (low, high) == INT64:
        return node
    value = node.this
    return let(value, lambda v: exp.Case(ifs=[exp.If(
        this=exp.Between(this=v, low=_num(low), high=_num(high)),
        true=exp.Round(this=v.copy(), decimals=decimals.copy()))]))


def _widened(node: exp.Expression) -> exp.Expression:
    """A BIGINT + - * -x ABS computed on HUGEINT, NULL outside BIGINT's range (HUGEINT's
    + - * take the same time whatever the values)."""
    for key in ("this", "expression"):
        operand = node.args.get(key)
        if operand is not None:      # moved, not copied: a chain of n guards copied O(n^2)
            cast = exp.Cast(this=exp.Null(), to=exp.DataType.build("HUGEINT"))
            operand.replace(cast)
            cast.set("this", operand)
    return let(node, lambda v: exp.Case(ifs=[exp.If(
        this=exp.Between(this=v, low=_num(INT64[0]), high=_num(INT64[1])),
        true=exp.Cast(this=v.copy(), to=exp.DataType.build("BIGINT")))]))


def _offsets(node: exp.Expression) -> exp.Expression:
    """SUBSTRING and LEFT with NULL for the offsets and lengths DuckDB rejects."""
    keys = ("start", "length") if isinstance(node, exp.Substring) else ("expression",)
    for key in keys:
        operand = node.args.get(key)
        if operand is None:
            continue
        if isinstance(node, exp.Left):
            bad = lambda v: exp.GT(this=v, expression=_num(OFFSETS[1]))  # noqa: E731
        else:
            bad = lambda v: exp.not_(exp.Between(  # noqa: E731
                this=v, low=_num(OFFSETS[0]), high=_num(OFFSETS[1])))
        constant = int_constant(operand)
        if constant is not None:
            if _bad_constant(node, constant):
                operand.replace(exp.Cast(this=exp.Null(), to=exp.DataType.build("BIGINT")))
            continue
        operand.replace(let(operand.copy(), lambda v, bad=bad: exp.Case(ifs=[exp.If(
            this=bad(v), true=exp.Null())], default=v.copy())))
    return node


def _bad_constant(node: exp.Expression, value: int) -> bool:
    if isinstance(node, exp.Left):
        return value > OFFSETS[1]
    return not OFFSETS[0] <= value <= OFFSETS[1]


def _num(value: int) -> exp.Expression:
    return exp.Literal.number(value)
