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
k uniformly random rows per person (DuckDB's random-tag cut measured 2.2x slower here:
docs/engines.md); ``TruncatedGroups`` ranks a person's groups by a
hash of (person, keys, a seed drawn once per run), as the DuckDB dialect does.
"""
from __future__ import annotations

from sqlglot import exp

from ...errors import QueryError
from ...frontend.allowed import ENTRIES
from ...plan.dialect import (Dialect, apply_rules, date_diff_tree, int_constant, total,
                             type_name)
from ...plan.fences import check_expansion, fence_inlining
from ..filters import counted_bases, restored_filters
from ...plan.nodes import Truncated, TruncatedGroups
from ...plan.rewrite import TYPED_SOURCE
from . import numbers as n
from .casts import try_cast as _try_cast
from .sums import plan_avg, plan_sum
from .guards import _and, _case, _cases, _col, _fn, _num, _within_int64

NAME = "postgres"


class Postgres(Dialect):
    """PostgreSQL's compilation of the plan (sqlglot dialect ``postgres``)."""

    name = NAME

    # -- truncation ---------------------------------------------------------------
    def truncated(self, node: Truncated) -> exp.Select:
        pid, k = node.args["pid"], node.args["k"]
        fields = list(node.args["fields"]) or ["_one"]
        rows = self._truncations(node.this)
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
        pid, keys = node.args["pid"], [self._truncations(k) for k in node.args["keys"]]
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
            exp.Subquery(this=self._truncations(node.this), alias=exp.TableAlias(
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
    def lowered(self, tree: exp.Expression) -> exp.Expression:
        """The rules, once over the whole plan (truncations' rows and keys included), then
        the truncations (whose own SQL needs no rule); the typed relations inlined; an
        aggregate of a filtered column as PostgreSQL's FILTER, a count of a shifted or clamped
        column as the count of the column (``engines.filters``); guards that PostgreSQL would
        inline into guards level by level fenced, and a plan too large once expanded refused
        (``plan.fences``)."""
        lowered = _inline_typed(self._truncations(apply_rules(tree, RULES, _refusal, PLAN_RULES)))
        check_expansion(lowered)
        selects = list(lowered.find_all(exp.Select))
        return fence_inlining(counted_bases(restored_filters(lowered, selects), selects),
                              _offset_zero)

    def _truncations(self, tree: exp.Expression) -> exp.Expression:
        return self.compile_nodes(tree)


def _offset_zero(select: exp.Select) -> bool:
    """PostgreSQL's fence: it never pulls up a subquery with an OFFSET (``*`` included)."""
    select.set("offset", exp.Offset(expression=exp.Literal.number(0)))
    return False


def _inline_typed(tree: exp.Expression) -> exp.Expression:
    """Each typed relation (casts and guards of one stored row: deterministic) NOT
    MATERIALIZED: PostgreSQL stores a CTE that is read twice, computing every column of
    every stored row, read or not (review 28: the cut of a heavy statement reads its
    table twice, and a person's 20,000 rows of 256-character text cost +0.23 s in a
    query that read none of it)."""
    with_ = tree.args.get("with_") if isinstance(tree, exp.Query) else None
    for cte in with_.expressions if with_ is not None else []:
        if cte.alias.startswith(TYPED_SOURCE) and cte.args.get("materialized") is None:
            cte.set("materialized", False)
    return tree


def _refusal(node: exp.Expression) -> QueryError:
    """An analyst's node with no rule (for its type): refused before anything runs."""
    kind = type_name(node)
    what = node.key.upper() + (f" of {kind}" if kind and isinstance(RULES.get(type(node)), dict)
                               else "")
    return QueryError(f"{what} is not supported on PostgreSQL (it could fail on some values "
                      "there); use the DuckDB engine")


# ----------------------------------------------------------------------------------
# Rules: node -> a node that cannot raise on any value of its operands' types


_PARTS = {exp.Year: "year", exp.Month: "month", exp.Day: "day", exp.Quarter: "quarter",
          exp.Hour: "hour", exp.Minute: "minute", exp.Second: "second", exp.DayOfWeek: "dow",
          exp.DayOfYear: "doy"}
FIELDS = {"year": "YEAR", "quarter": "QUARTER", "month": "MONTH", "week": "WEEK", "day": "DAY",
          "dayofweek": "DOW", "dow": "DOW", "dayofyear": "DOY", "doy": "DOY", "hour": "HOUR",
          "minute": "MINUTE", "second": "SECOND", "isodow": "ISODOW", "isoyear": "ISOYEAR"}
"""DuckDB's date parts (``dpsql.frontend.allowed.DATE_PARTS``) -> PostgreSQL's field of the
same meaning (day of week 0 = Sunday, ISO weeks and years); a part not here is refused when
the query is compiled, never left for PostgreSQL to reject on the first row it reads."""


def _date_part(node):
    """YEAR(x) ... DAYOFYEAR(x), EXTRACT, DATE_PART: a whole number (seconds truncated, as
    DuckDB), NULL for an infinite timestamp; of a DATE, as of its midnight (PostgreSQL has
    no hour of a date)."""
    if isinstance(node, exp.Extract):
        value, part = node.expression, node.this.name
    elif isinstance(node, exp.Anonymous):
        part, value = node.expressions[0].name, node.expressions[1]
    else:
        value, part = node.this, _PARTS[type(node)]
    part = part.lower()
    field = FIELDS.get(part)
    if field is None:
        raise QueryError(f"the date part {part!r} is not supported on PostgreSQL; use one of "
                         f"{', '.join(sorted(FIELDS))}")
    if type_name(value) == "DATE":
        value = exp.Cast(this=value, to=exp.DataType.build("TIMESTAMP"))
    extract = exp.Extract(this=exp.var(field), expression=value.copy())
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
    finite = _and(_fn("ISFINITE", a.copy()), _fn("ISFINITE", b.copy()))
    return _case(finite, exp.Cast(this=value, to=bigint.copy()))


FIRST_TRUNCATED = {"year": "4713-01-01 00:00:00 BC", "quarter": "4713-01-01 00:00:00 BC",
                   "month": "4714-12-01 00:00:00 BC"}
"""DATE_TRUNC's unit -> the first timestamp whose truncation PostgreSQL can hold: its range
starts at 4714-11-24 BC, so the year, quarter or month of an earlier instant begins before
it, and PostgreSQL raises "timestamp out of range" (review 34b, F2). Week (4714-11-24 BC
is a Monday), day and shorter units never leave the range; decade, century and millennium
are not on the allow-list."""


def _trunc(node):
    """DATE_TRUNC('unit', t): NULL for a finite t whose year, quarter or month begins before
    PostgreSQL's first timestamp (``FIRST_TRUNCATED``); a DATE is truncated as the TIMESTAMP
    of its midnight (PostgreSQL would read it as a timestamptz, in the session's time
    zone). A DATE here is a timestamp's (``CAST(t AS DATE)``: a stored date column is read
    as a datetime, NULL past the last timestamp), so that cast cannot fail."""
    value = node.this
    if type_name(value) == "DATE":
        value = exp.Cast(this=value, to=exp.DataType.build("TIMESTAMP"))
    unit = node.unit.name.lower()
    truncated = exp.TimestampTrunc(this=value, unit=exp.var(unit.upper()))
    first = FIRST_TRUNCATED.get(unit)
    if first is None:
        return truncated
    early = _and(_fn("ISFINITE", value.copy()), exp.LT(this=value.copy(), expression=exp.Cast(
        this=exp.Literal.string(first), to=exp.DataType.build("TIMESTAMP"))))
    return _cases((early, exp.Cast(this=exp.Null(), to=exp.DataType.build("TIMESTAMP"))),
                  (exp.true(), truncated))


INT32_MAX = 2 ** 31 - 1


def _literal_positions(node):
    """SUBSTRING, LEFT, RIGHT: positions and lengths must be literals (a start >= 1, a length
    >= 0): PostgreSQL counts a negative start from before the string, DuckDB from its end.
    PostgreSQL's positions are 32-bit: a literal past 2^31 - 1 is 2^31 - 1 (past any text:
    a cell holds at most MAX_TEXT_CELL characters), and from 2^32 on, where DuckDB's TRY
    gives NULL, SUBSTRING and LEFT are NULL."""
    for key in ("start", "length", "expression"):
        arg = node.args.get(key)
        if arg is None:
            continue
        value = int_constant(arg)
        if value is None or value < 0:
            raise QueryError(f"{node.key.upper()} with a position or length that is not a "
                             "literal of at least 0 is not supported on PostgreSQL (it counts "
                             "other positions differently); use the DuckDB engine")
        if value >= 2 ** 32 and not isinstance(node, exp.Right):
            return exp.Cast(this=exp.Null(), to=exp.DataType.build("TEXT"))
        node.set(key, _num(min(value, INT32_MAX)))
    start = node.args.get("start")
    if start is not None and int(start.name) < 1:
        raise QueryError(f"{node.key.upper()} from position {start.name} is not supported on "
                         "PostgreSQL; start at 1 or later")
    return node


def _epoch_us(node):
    """Microseconds since 1970 as BIGINT: NULL for infinite timestamps and for those near
    PostgreSQL's ends whose microseconds an int64 does not hold."""
    value = node.this
    micros = _fn("TRUNC", exp.Mul(this=exp.Extract(this=exp.var("EPOCH"), expression=value.copy()),
                                  expression=_num(1_000_000)))
    return _case(_and(_fn("ISFINITE", value.copy()), _within_int64(micros.copy())),
                 exp.Cast(this=micros, to=exp.DataType.build("BIGINT")))


def _contains(node):
    return exp.GT(this=_fn("STRPOS", node.this, node.expression), expression=_num(0))


def _like(node):
    """LIKE without ESCAPE: DuckDB has no escape character, PostgreSQL has backslash."""
    if isinstance(node.parent, exp.Escape):
        return node
    return exp.Escape(this=node.copy(), expression=exp.Literal.string(""))


def _try(node):
    return node.this          # every rule is total already


def _cast(node):
    """A CAST the typecheck wrote: of a literal (converted and checked when the query was
    planned), else as TRY_CAST."""
    value = node.this
    while isinstance(value, (exp.Paren, exp.Neg)):
        value = value.this
    if isinstance(value, (exp.Literal, exp.Null, exp.Boolean)):
        return node
    return _try_cast(node)


def _list(node):
    if node.name.upper() == "LIST":
        return exp.Anonymous(this="ARRAY_AGG", expressions=node.expressions)
    return node


_NAMED = {"COALESCE", "GREATEST", "LEAST", "CONCAT"}


def _anonymous(node):
    """The functions the typecheck spells by name (so that sqlglot keeps their NULL rules):
    COALESCE, GREATEST, LEAST, CONCAT, which cannot raise; DATE_PART('part', t)."""
    name = node.name.upper()
    if name == "DATE_PART" and len(node.expressions) == 2:
        return _date_part(node)
    if name not in _NAMED:
        raise _refusal(node)
    return node


RULES: dict = {
    # values
    exp.Column: total, exp.Literal: n.literal, exp.Boolean: total, exp.Null: total,
    exp.Paren: total, exp.Try: _try, exp.Interval: total,
    # logic and comparison (operands of one type, as the typecheck unified them)
    **{t: total for t in (exp.And, exp.Or, exp.Not, exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT,
                          exp.LTE, exp.Is, exp.In, exp.Between, exp.NullSafeEQ,
                          exp.NullSafeNEQ)},
    # conditionals
    **{t: total for t in (exp.Case, exp.If, exp.Coalesce, exp.Greatest, exp.Least, exp.Nullif)},
    exp.Cast: _cast, exp.TryCast: _try_cast,
    # arithmetic
    exp.Add: {"BIGINT": n.int_arith, "DOUBLE": n.float_arith, "TIMESTAMP": total},
    exp.Sub: {"BIGINT": n.int_arith, "DOUBLE": n.float_arith, "TIMESTAMP": total},
    exp.Mul: {"BIGINT": n.int_arith, "DOUBLE": n.float_arith},
    exp.Div: {"DOUBLE": n.div}, exp.IntDiv: {"BIGINT": n.int_div},
    exp.Mod: {"BIGINT": n.int_mod, "DOUBLE": n.float_mod},
    exp.Neg: {"BIGINT": n.int_neg, "DOUBLE": total}, exp.Abs: {"BIGINT": n.int_neg, "DOUBLE": total},
    exp.Sign: {"BIGINT": n.integral},
    exp.Round: {"BIGINT": n.int_round, "DOUBLE": n.float_round},
    exp.Floor: {"BIGINT": n.integral, "DOUBLE": total}, exp.Ceil: {"BIGINT": n.integral, "DOUBLE": total},
    exp.Trunc: {"BIGINT": n.trunc, "DOUBLE": total},
    exp.Ln: {"DOUBLE": n.ln}, exp.Sqrt: {"DOUBLE": n.sqrt}, exp.Exp: {"DOUBLE": n.exp_},
    exp.Pow: {"DOUBLE": n.power, "BIGINT": n.power}, exp.Log: {"DOUBLE": n.log},
    exp.Cbrt: {"DOUBLE": total}, exp.IsNan: n.is_nan, exp.IsInf: n.is_inf,
    # text (no function here makes a text longer than the sum of its operands)
    **{t: total for t in (exp.Lower, exp.Upper, exp.Trim, exp.Reverse, exp.Length,
                          exp.StrPosition, exp.StartsWith, exp.DPipe, exp.Concat, exp.Escape)},
    exp.Substring: _literal_positions, exp.Left: _literal_positions,
    exp.Right: _literal_positions, exp.Contains: _contains, exp.Like: _like, exp.ILike: _like,
    # dates and times (an INTERVAL is added only within the range the plan computed)
    exp.Extract: _date_part, **{t: _date_part for t in _PARTS}, exp.Anonymous: _anonymous,
    exp.TimestampTrunc: _trunc, exp.DateDiff: _date_diff,
}
"""The analyst's nodes PostgreSQL runs: class (and, where it matters, type) -> its rule
(``dpsql.plan.dialect.apply_rules``). Anything else is refused, for free, before anything
runs; ``tests/engines/test_totality.py`` checks every allow-list construct has an entry."""

PLAN_RULES: dict = {exp.Try: _try, exp.TryCast: _try_cast, exp.UnixMicros: _epoch_us,
                    exp.Anonymous: _list, exp.IsNan: n.is_nan, exp.Add: n.plan_arith,
                    exp.Sub: n.plan_arith, exp.Mul: n.plan_arith, exp.Sum: plan_sum,
                    exp.Avg: plan_avg}
"""The plan's own nodes that PostgreSQL spells otherwise (no TRY, TRY_CAST, isnan, LIST), or
where it raises on values within the metadata's bounds (arithmetic with a DOUBLE, a sum or
average of DOUBLEs, a per-person sum of BIGINTs cast back)."""

SUPPORT: dict = {
    "CAST, TRY_CAST, ::": "yes, except text to DATE or TIMESTAMP",
    "//, %, MOD": "yes, except % of floats",
    "SUBSTRING(s, start [, len]), LEFT, RIGHT": "literal positions only (start >= 1)",
}
"""Allow-list entry (``dpsql.frontend.allowed``) -> "yes" or what PostgreSQL refuses of it
(the PostgreSQL column of docs/sql.md; tests/engines/test_postgres_allowed.py checks both)."""

for _entry in ENTRIES:
    SUPPORT.setdefault(_entry.sql, "yes")
