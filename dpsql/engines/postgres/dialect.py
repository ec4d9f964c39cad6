"""The PostgreSQL engine's dialect: the plan's engine-neutral nodes, and guards, in PostgreSQL.

Owns: compiling a bounded plan for PostgreSQL. PostgreSQL has no ``TRY``, and it raises
where DuckDB does not (float overflow and underflow, ``ln(0)``, a negative substring
length, an infinite timestamp's epoch), so every node of an analyst's expression is
compiled by a rule that makes it total on every value of its type, by the type the
typecheck recorded on it; ``exp.Try`` is then redundant and dropped. The rules are an
allow-list: a node type without one, in an expression the analyst wrote, is refused
here (before anything runs, for free) with a message that names it. Plan-generated
arithmetic (clamping, fixed point, histogram cells) works on clamped values and cannot
fail; it carries no type and is rendered as it is.

Truncation: ``ROW_NUMBER() OVER (PARTITION BY person ORDER BY random())`` keeps at most
k uniformly random rows per person; ``TruncatedGroups`` ranks a person's groups by a
hash of (person, keys, a seed drawn once per run), as the DuckDB dialect does.
"""
from __future__ import annotations

from sqlglot import exp

from ...errors import QueryError
from ...frontend.allowed import ENTRIES
from ...plan.dialect import Dialect, apply_rules, date_diff_tree, int_constant
from ...plan.nodes import Truncated, TruncatedGroups
from .casts import try_cast as _try_cast
from .guards import (EXP_LIMIT, INT64, _case, _cases, _col, _finite,
                     _float_fits, _fn, _num, _numeric, _type, _within_int64)

NAME = "postgres"


class Postgres(Dialect):
    """PostgreSQL's compilation of the plan (sqlglot dialect ``postgres``)."""

    name = NAME

    # -- truncation ---------------------------------------------------------------
    def truncated(self, node: Truncated) -> exp.Select:
        pid, k = node.args["pid"], node.args["k"]
        fields = list(node.args["fields"]) or ["_one"]
        rows = self.lower(node.this)
        rank = exp.Window(this=exp.RowNumber(), partition_by=[_col(pid)],
                          order=exp.Order(expressions=[exp.Ordered(this=exp.Rand())]))
        numbered = exp.select(exp.Star(), exp.alias_(rank, "_dpsql_rn", quoted=True)).from_(
            exp.Subquery(this=rows, alias=exp.TableAlias(this=exp.to_identifier("_rows"))))
        values = [_col(f) if f != "_one" else exp.alias_(_num(1), "_one", quoted=True)
                  for f in fields]
        return exp.select(*values).from_(exp.Subquery(
            this=numbered, alias=exp.TableAlias(this=exp.to_identifier("_numbered")))).where(
            exp.LTE(this=_col("_dpsql_rn"), expression=_num(k)))

    def truncated_groups(self, node: TruncatedGroups) -> exp.Select:
        pid, keys = node.args["pid"], [self.lower(k) for k in node.args["keys"]]
        # The seed is an uncorrelated scalar subquery: PostgreSQL evaluates it once per run
        # (an InitPlan), so every row of a group gets the same hash.
        seed = exp.Subquery(this=exp.select(exp.Cast(this=exp.Mul(
            this=exp.Rand(), expression=_num(2 ** 62)), to=exp.DataType.build("BIGINT"))))
        text = exp.Cast(this=exp.Anonymous(this="ROW", expressions=[_col(pid)] + [
            k.copy() for k in keys]), to=exp.DataType.build("TEXT"))
        hashed = _fn("hashtextextended", text, seed)
        group_rank = exp.Window(this=exp.Anonymous(this="DENSE_RANK"), partition_by=[_col(pid)],
                                order=exp.Order(expressions=[exp.Ordered(this=hashed)] + [
                                    exp.Ordered(this=k.copy(), nulls_first=False) for k in keys]))
        ranked = exp.select(exp.Star(), exp.alias_(group_rank, "_dpsql_g", quoted=True),
                            exp.alias_(exp.Rand(), "_dpsql_u", quoted=True)).from_(
            exp.Subquery(this=self.lower(node.this), alias=exp.TableAlias(
                this=exp.to_identifier("_gr"))))
        row_rank = exp.Window(this=exp.RowNumber(), partition_by=[_col(pid), _col("_dpsql_g")],
                              order=exp.Order(expressions=[exp.Ordered(this=_col("_dpsql_u"))]))
        numbered = exp.select(exp.Star(), exp.alias_(row_rank, "_dpsql_r", quoted=True)).from_(
            exp.Subquery(this=ranked, alias=exp.TableAlias(this=exp.to_identifier("_gk"))))
        return exp.select(exp.Star()).from_(exp.Subquery(
            this=numbered, alias=exp.TableAlias(this=exp.to_identifier("_rk")))).where(exp.and_(
                exp.LTE(this=_col("_dpsql_g"), expression=_num(node.args["max_groups"])),
                exp.LTE(this=_col("_dpsql_r"), expression=_num(node.args["max_rows"]))))

    # -- every other node ------------------------------------------------------------
    def lower(self, tree: exp.Expression) -> exp.Expression:
        return apply_rules(super().lower(tree), lambda node: RULES.get(type(node)), _check_total)


def _check_total(node: exp.Expression) -> None:
    """Refuse an analyst-written (typed) function or operator with no rule and not total."""
    if node.type is None or isinstance(node, TOTAL) or not isinstance(
            node, (exp.Func, exp.Binary, exp.Unary)):
        return
    raise QueryError(f"{node.key.upper()} is not supported on PostgreSQL (it could fail on "
                     "some values there); use the DuckDB engine")


# ----------------------------------------------------------------------------------
# Rules: node -> a node that cannot raise on any value of its operands' types


def _arith(node):
    """+ - * of analyst expressions: NULL where the engine type would overflow (and, for
    floats of finite operands, underflow), decided on the exact (NUMERIC) result. An
    infinite or NaN operand cannot raise and is left as PostgreSQL computes it."""
    kind = _type(node)
    if kind is None:
        return node
    if kind == "BIGINT":
        node = _in_int64(node)
        if not _guarded(node):
            return node
    if kind == "BIGINT" and isinstance(node, (exp.Add, exp.Sub)):
        return _int_add(node)
    exact = type(node)(this=_numeric(node.this), expression=_numeric(node.expression))
    if kind == "BIGINT":
        return _case(_within_int64(exact), node)
    a, b = node.this, node.expression
    return _case(exp.or_(exp.not_(exp.and_(_finite(a), _finite(b))), _float_fits(exact)), node)


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


def _in_int64(node):
    """``node`` computed in BIGINT: PostgreSQL computes INTEGER operands (literals, LENGTH,
    STRPOS) in 32 bits, where DuckDB's 64-bit result would overflow."""
    for key in ("this", "expression"):
        operand = node.args.get(key)
        if operand is not None and not (isinstance(operand, exp.Cast)
                                        and operand.to.is_type("bigint")):
            operand.replace(exp.Cast(this=operand.copy(), to=exp.DataType.build("BIGINT")))
    return node


def _guarded(node) -> bool:
    """Whether the typecheck wrapped ``node`` in TRY: an integer operation it did not wrap
    cannot overflow or divide by zero on any 64-bit operands (``dpsql.frontend.ranges``),
    on PostgreSQL as on DuckDB, so it needs no guard (and runs at full speed)."""
    return isinstance(node.parent, exp.Try)


def _div(node):
    """/: a float division (as in DuckDB, whatever the operands), NULL for a zero divisor
    or a result a DOUBLE cannot hold."""
    if _type(node) is None:
        return node
    a, b = node.this, node.expression
    double = exp.DataType.build("DOUBLE")
    quotient = exp.Div(this=exp.Cast(this=a.copy(), to=double),
                       expression=exp.Cast(this=b.copy(), to=double.copy()))
    exact = exp.Div(this=_numeric(a), expression=_numeric(b))
    finite = exp.and_(_finite(a), _finite(b))
    return _cases((exp.EQ(this=b.copy(), expression=_num(0)), exp.Null()),
                  (exp.or_(exp.not_(finite), _float_fits(exact)), quotient))


def _int_div(node):
    """// of integers: truncated toward zero (as DuckDB), NULL for a zero divisor."""
    if _type(node) != "BIGINT":
        raise QueryError("// of non-integers is not supported on PostgreSQL; use FLOOR(a / b)")
    a, b = node.this, node.expression
    if not _guarded(node):      # both BIGINT: PostgreSQL's / truncates toward zero as well
        return _in_int64(exp.Div(this=a, expression=b, typed=True))
    exact = _fn("TRUNC", exp.Div(this=_numeric(a), expression=_numeric(b)))
    return _cases((exp.EQ(this=b.copy(), expression=_num(0)), exp.Null()),
                  (_within_int64(exact.copy()), exp.Cast(this=exact, to=exp.DataType.build(
                      "BIGINT"))))


def _mod(node):
    a, b = node.this, node.expression
    remainder = exp.Mod(this=a, expression=b)
    if _type(node) == "BIGINT":
        remainder = _in_int64(remainder)
    return _case(exp.NEQ(this=b.copy(), expression=_num(0)), remainder)


def _neg(node):
    if _type(node) == "BIGINT":
        node = _in_int64(node)
    if _type(node) == "BIGINT" and _guarded(node):
        return _case(exp.NEQ(this=node.this.copy(), expression=_num(INT64[0])), node)
    return node


def _abs(node):
    return _neg(node)


def _ln(node):
    return _case(exp.GT(this=node.this.copy(), expression=_num(0)), node)


def _sqrt(node):
    return _case(exp.GTE(this=node.this.copy(), expression=_num(0)), node)


def _exp(node):
    return _case(exp.Between(this=node.this.copy(), low=_num(-EXP_LIMIT), high=_num(EXP_LIMIT)),
                 node)


def _pow(node):
    """power(a, b): NULL for 0 to a negative power, a negative base to a fraction, and
    results beyond a DOUBLE (|b ln|a|| > 700, computed exactly)."""
    double = exp.DataType.build("DOUBLE")
    a = exp.Cast(this=node.this, to=double)
    b = exp.Cast(this=node.expression, to=double.copy())
    size = exp.Abs(this=exp.Mul(this=_numeric(b), expression=_numeric(exp.Ln(this=exp.Abs(
        this=a.copy())))))
    power = exp.Pow(this=a.copy(), expression=b.copy())
    safe = _cases(
        (exp.not_(exp.and_(_finite(a), _finite(b))), exp.false()),
        (exp.EQ(this=a.copy(), expression=_num(0)), exp.GTE(this=b.copy(), expression=_num(0))),
        (exp.and_(exp.LT(this=a.copy(), expression=_num(0)),
                  exp.NEQ(this=b.copy(), expression=_fn("FLOOR", b.copy()))), exp.false()),
        (exp.true(), exp.LTE(this=size, expression=_num(EXP_LIMIT))))
    if _type(node) == "BIGINT":
        return _cases((exp.not_(safe), exp.Null()),
                      (_within_int64(_numeric(power)), exp.Cast(this=power.copy(),
                                                                to=exp.DataType.build("BIGINT"))))
    return _case(safe, power)


def _round(node):
    """ROUND(x[, n]): PostgreSQL rounds a DOUBLE to places only as NUMERIC."""
    places = node.args.get("decimals")
    if places is None or _type(node) == "BIGINT":
        return node
    rounded = exp.Round(this=_numeric(node.this), decimals=places)
    return _case(_finite(node.this), exp.Cast(this=rounded, to=exp.DataType.build("DOUBLE")))


def _integral(node):
    """FLOOR/CEIL/SIGN: the type the analyst's expression has (PostgreSQL returns DOUBLE or
    NUMERIC); of an integer, FLOOR and CEIL are the integer itself."""
    if _type(node) != "BIGINT":
        return node
    if _type(node.this) == "BIGINT" and not isinstance(node, exp.Sign):
        return node.this
    return exp.Cast(this=node, to=exp.DataType.build("BIGINT")) if isinstance(
        node, exp.Sign) else _case(_within_int64(_numeric(node)), exp.Cast(
            this=node, to=exp.DataType.build("BIGINT")))


_PARTS = {exp.Year: "YEAR", exp.Month: "MONTH", exp.Day: "DAY", exp.Quarter: "QUARTER",
          exp.Hour: "HOUR", exp.Minute: "MINUTE", exp.Second: "SECOND", exp.DayOfWeek: "DOW",
          exp.DayOfYear: "DOY"}


def _date_part(node):
    """YEAR(x) ... DAYOFYEAR(x), EXTRACT: a whole number (seconds truncated, as DuckDB),
    NULL for an infinite timestamp."""
    if isinstance(node, exp.Extract):
        value, part = node.expression, node.this
    else:
        value, part = node.this, exp.var(_PARTS[type(node)])
    extract = exp.Extract(this=part.copy(), expression=value.copy())
    return _case(_fn("ISFINITE", value.copy()), exp.Cast(this=_fn("TRUNC", extract),
                                                         to=exp.DataType.build("BIGINT")))


def _date_diff(node):
    """DATE_DIFF('part', a, b) as DuckDB counts it, from whole days and the fields of the time
    of day (``dpsql.plan.dialect.date_diff_tree``), NULL for an infinite date (DuckDB: NULL,
    PostgreSQL: an error)."""
    a, b = node.expression, node.this
    bigint = exp.DataType.build("BIGINT")

    def field(name, value):
        extract = exp.Extract(this=exp.var(name), expression=exp.Cast(
            this=value.copy(), to=exp.DataType.build("TIMESTAMP")))
        return _fn("FLOOR", extract) if name == "SECOND" else extract
    days = exp.Cast(this=exp.Paren(this=exp.Sub(
        this=exp.Cast(this=b.copy(), to=exp.DataType.build("DATE")),
        expression=exp.Cast(this=a.copy(), to=exp.DataType.build("DATE")))), to=bigint)
    value = date_diff_tree(node.unit.name.lower(), days, lambda name: exp.Paren(
        this=exp.Sub(this=field(name, b), expression=field(name, a))))
    finite = exp.and_(_fn("ISFINITE", a.copy()), _fn("ISFINITE", b.copy()))
    return _case(finite, exp.Cast(this=value, to=bigint.copy()))


def _log(node):
    """LOG(x) (base 10, as DuckDB and PostgreSQL), LOG(b, x), LOG2, LOG10: NULL where x <= 0,
    and where the base is not above 0 or is 1 (ln(1) = 0 would divide by zero)."""
    base, value = (node.this, node.expression) if node.expression is not None else (None, node.this)
    double = exp.DataType.build("DOUBLE")
    x = exp.Cast(this=value.copy(), to=double)
    if base is None:
        return _case(exp.GT(this=x, expression=_num(0)), exp.Log(this=x.copy()))
    b = exp.Cast(this=base.copy(), to=double.copy())
    computed = exp.Div(this=exp.Ln(this=x.copy()), expression=exp.Ln(this=b.copy()))
    return _cases((exp.or_(exp.LTE(this=b.copy(), expression=_num(0)),
                           exp.EQ(this=b.copy(), expression=_num(1))), exp.Null()),
                  (exp.GT(this=x, expression=_num(0)), computed))


def _is_inf(node):
    if _type(node.this) == "BIGINT":
        return _case(exp.not_(exp.Is(this=node.this.copy(), expression=exp.Null())), exp.false())
    return exp.EQ(this=exp.Abs(this=node.this), expression=exp.Cast(
        this=exp.Literal.string("Infinity"), to=exp.DataType.build("DOUBLE")))


def _literal_positions(node):
    """SUBSTRING, LEFT, RIGHT: positions and lengths must be literals (a start >= 1, a length
    >= 0): PostgreSQL counts a negative start from before the string, DuckDB from its end."""
    args = [node.args.get(k) for k in ("start", "length", "expression") if node.args.get(k)]
    for arg in args:
        value = arg.this if isinstance(arg, exp.Neg) else arg
        if not (isinstance(value, exp.Literal) and not isinstance(arg, exp.Neg)):
            raise QueryError(f"{node.key.upper()} with a position or length that is not a "
                             "literal is not supported on PostgreSQL (it counts negative "
                             "positions differently); use the DuckDB engine")
    start = node.args.get("start")
    if start is not None and int(float(start.name)) < 1:
        raise QueryError(f"{node.key.upper()} from position {start.name} is not supported on "
                         "PostgreSQL; start at 1 or later")
    return node


def _epoch_us(node):
    """Microseconds since 1970 as BIGINT: NULL for infinite timestamps and for those near
    PostgreSQL's ends whose microseconds an int64 does not hold."""
    value = node.this
    micros = _fn("TRUNC", exp.Mul(this=exp.Extract(this=exp.var("EPOCH"), expression=value.copy()),
                                  expression=_num(1_000_000)))
    return _case(exp.and_(_fn("ISFINITE", value.copy()), _within_int64(micros.copy())),
                 exp.Cast(this=micros, to=exp.DataType.build("BIGINT")))


def _substring(node):
    return _literal_positions(node)


def _is_nan(node):
    return exp.EQ(this=node.this, expression=exp.Cast(this=exp.Literal.string("NaN"),
                                                      to=exp.DataType.build("DOUBLE")))


def _contains(node):
    return exp.GT(this=_fn("STRPOS", node.this, node.expression), expression=_num(0))


def _like(node):
    """LIKE without ESCAPE: DuckDB has no escape character, PostgreSQL has backslash."""
    if isinstance(node.parent, exp.Escape):
        return node
    return exp.Escape(this=node.copy(), expression=exp.Literal.string(""))


def _try(node):
    return node.this          # every rule above is total already


def _list(node):
    if node.name.upper() == "LIST":
        return exp.Anonymous(this="ARRAY_AGG", expressions=node.expressions)
    if node.name.upper() == "DATE_PART" and _type(node) == "BIGINT":
        part, value = node.expressions
        return _case(_fn("ISFINITE", value.copy()), exp.Cast(
            this=_fn("TRUNC", _fn("DATE_PART", part, value)), to=exp.DataType.build("BIGINT")))
    return node


def _trunc(node):
    return node.this if _type(node.this) == "BIGINT" else node


RULES = {
    exp.Add: _arith, exp.Sub: _arith, exp.Mul: _arith, exp.Div: _div, exp.IntDiv: _int_div,
    exp.Mod: _mod, exp.Neg: _neg, exp.Abs: _abs, exp.Ln: _ln, exp.Sqrt: _sqrt, exp.Exp: _exp,
    exp.Pow: _pow, exp.Round: _round, exp.Floor: _integral, exp.Ceil: _integral,
    exp.Sign: _integral, exp.Extract: _date_part, **{t: _date_part for t in _PARTS},
    exp.Log: _log, exp.IsInf: _is_inf, exp.Left: _literal_positions,
    exp.Right: _literal_positions, exp.Trunc: _trunc, exp.UnixMicros: _epoch_us, exp.Substring: _substring,
    exp.IsNan: _is_nan, exp.Contains: _contains, exp.Like: _like, exp.ILike: _like,
    exp.Try: _try, exp.TryCast: _try_cast, exp.Anonymous: _list, exp.DateDiff: _date_diff,
}

TOTAL = (exp.Column, exp.Literal, exp.Paren, exp.Case, exp.If, exp.Coalesce, exp.Cast,
         exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.And, exp.Or, exp.Not,
         exp.Is, exp.In, exp.Between, exp.NullSafeEQ, exp.NullSafeNEQ, exp.DPipe, exp.Upper,
         exp.Lower, exp.Length, exp.StartsWith, exp.TimestampTrunc, exp.Escape,
         exp.Concat, exp.Greatest, exp.Least, exp.Trim, exp.Nullif, exp.Cbrt, exp.Reverse,
         exp.StrPosition, exp.Like, exp.ILike)
"""Analyst-writable nodes that cannot raise in PostgreSQL on any value of their types."""

SUPPORT: dict = {
    "CAST, TRY_CAST, ::": "yes, except text to DATE or TIMESTAMP",
    "SUBSTRING(s, start [, len]), LEFT, RIGHT": "literal positions only (start >= 1)",
}
"""Allow-list entry (``dpsql.frontend.allowed``) -> "yes" or what PostgreSQL refuses of it
(the PostgreSQL column of docs/sql.md; tests/engines/test_postgres_allowed.py checks both)."""

for _entry in ENTRIES:
    SUPPORT.setdefault(_entry.sql, "yes")
