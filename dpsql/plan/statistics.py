"""Step 3a: from each aggregate of the query to the noisy statistics it needs.

Owns: the stability map of every statistic (its L1 and L2 sensitivity under
adding or removing one person who contributes at most ``k`` rows) and the
post-processing expression that rebuilds the user's aggregate from noisy
statistics. The book's chapter 3 table, tightened where the query allows:
- COUNT: k per person (L1 = L2 = k, in one group or spread over k groups).
- COUNT(DISTINCT private_id): 1 per group a person is in: L1 = 1 ungrouped,
  L1 = k and L2 = sqrt(k) over groups.
- SUM of x clamped to [L, U]: k * max(|L|, |U|); centred on the midpoint m
  when the query also releases COUNT(x): k * (U - L) / 2, and
  SUM = centred sum + m * COUNT (this halves PUMS income's sensitivity).
- AVG, VAR, STDDEV: post-processed from a centred sum, a centred sum of
  squares and a count; a statistic needed twice is noised once.
"""
from __future__ import annotations

import math

from sqlglot import exp

from ..errors import QueryError
from ..privacy.params import Mechanisms, Stat
from .rewrite import bound_literal, clamp, column, fixed_point, shift
from ..frontend.typecheck import check, float_literal
from .statistic import Statistic
from ..frontend.dialect import ANALYST_DIALECT

FIXED_POINT_BITS = 30
"""Float columns are summed as integers of |x| <= 2^30 units (exact in DuckDB)."""


class StatisticSet:
    """The statistics of one query, deduplicated by their exact aggregate."""

    def __init__(self, k: int, grouped: bool, private_id: str | None, mechanisms: Mechanisms,
                 types: dict | None = None):
        self.k, self.grouped, self.private_id, self.mechanisms = k, grouped, private_id, mechanisms
        # A person moves at most `groups` cells of a grouped statistic (k, or max_groups),
        # each by at most `per_group` rows (with max_rows_per_group; else k in all).
        self.groups, self.per_group = k, None
        self.types = types or {}
        self.in_bounds: set = set()   # columns whose values are known to lie within their bounds
        self.items: list[Statistic] = []
        # Per aggregate of the query: statistic name -> how much that statistic's noise
        # variance moves the aggregate (dpsql.plan.split shares privacy by these).
        self.outputs: list[dict] = []

    def weigh(self, stat: Statistic, log_weight: float) -> None:
        """Add to how much ``stat``'s noise variance moves the aggregate being planned.

        Weights are kept as logarithms: bounds such as 1e300 square beyond a float."""
        old = self.outputs[-1].get(stat.name, -math.inf)
        top = max(old, log_weight)
        if top == -math.inf:
            self.outputs[-1][stat.name] = top
            return
        self.outputs[-1][stat.name] = top + math.log(math.exp(old - top) + math.exp(log_weight - top))

    def bound_groups(self, max_groups: int, max_rows_per_group: int) -> None:
        """Use the table's max_groups / max_rows_per_group: L1 = g * r rows, L2 = sqrt(g) * r."""
        self.groups, self.per_group = int(max_groups), int(max_rows_per_group)

    @property
    def l1_rows(self) -> float:
        return self.groups * self.per_group if self.grouped and self.per_group else self.k

    @property
    def l2_rows(self) -> float:
        return (math.sqrt(self.groups) * self.per_group if self.grouped and self.per_group
                else self.k)

    def add(self, label, aggregate, stat, l1, l2, integer, step=1.0, centre=None) -> Statistic:
        for existing in self.items:
            if (existing.aggregate == aggregate and existing.step == step
                    and existing.centre == centre):
                return existing
        item = Statistic(f"_s{len(self.items)}", label, aggregate, stat, l1, l2, integer, step,
                         centre=centre)
        self.items.append(item)
        return item

    # -- counts -------------------------------------------------------------
    def count_rows(self, stat: Stat = Stat.count) -> Statistic:
        return self.add("COUNT(*)", exp.Count(this=exp.Star()), stat, self.l1_rows, self.l2_rows, True)

    def count_distinct_persons(self, stat: Stat = Stat.count) -> Statistic:
        """COUNT(DISTINCT private_id): one per group a person is in (at most ``groups``:
        k, or max_groups). ``stat``: threshold when only the threshold reads it."""
        agg = exp.Count(this=exp.Distinct(expressions=[column(self.private_id)]))
        label = f"COUNT(DISTINCT {self.private_id})"
        if self.grouped:
            item = self.add(label, agg, stat, self.groups, math.sqrt(self.groups), True)
        else:
            item = self.add(label, agg, stat, 1, 1, True)
        item.persons = True     # counts persons: a threshold needs no shift
        return item

    def count_of(self, node: exp.Count) -> Statistic:
        arg = node.this
        if isinstance(arg, exp.Star) or (isinstance(arg, (exp.Literal, exp.Boolean))):
            return self.count_rows()           # COUNT(1) is COUNT(*): one statistic
        if isinstance(arg, exp.Distinct):
            if len(arg.expressions) != 1:
                raise QueryError("COUNT(DISTINCT ...) takes one expression")
            inner = arg.expressions[0]
            if (self.private_id and isinstance(inner, exp.Column)
                    and inner.name.lower() == self.private_id.lower()):
                return self.count_distinct_persons()
            agg = exp.Count(this=exp.Distinct(expressions=[check(inner, self.types, "COUNT")[0]]))
            return self.add(node.sql(ANALYST_DIALECT), agg, Stat.count, self.l1_rows, self.l2_rows, True)
        return self.add(node.sql(ANALYST_DIALECT), exp.Count(this=check(arg, self.types, "COUNT")[0]),
                        Stat.count, self.l1_rows, self.l2_rows, True)

    # -- sums ---------------------------------------------------------------
    def _sum_stat(self, bound: float, integer: bool) -> Stat:
        if not integer:
            return Stat.sum_float
        return Stat.sum_large_int if bound > self.mechanisms.large else Stat.sum_int

    def sum_of(self, value: exp.Expression, lower, upper, integer: bool, offset=0,
               square_offset=None, label="", count: Statistic | None = None,
               in_bounds: bool = False, what: str | None = None) -> Statistic:
        """SUM of clamp(value) - offset, or of (clamp(value) - offset)^2 - square_offset.

        The last subtraction is not done per row: the engine sums clamp(value) (or
        the square) and release subtracts offset * COUNT exactly, from the exact
        count ``count`` of the same rows (docs/performance.md). Only the
        sensitivity depends on the centring, and it is the centred one.
        """
        row = value if in_bounds else clamp(value, lower, upper)
        bound = max(abs(upper - offset), abs(lower - offset))
        if not math.isfinite(float(bound) * (float(bound) if square_offset is not None else 1.0) * self.l1_rows):
            # ``what``: the analyst's aggregate, when the label names the plan's own columns
            raise QueryError(f"{what or label}: the column's bounds are too wide for this statistic "
                             "(its sensitivity would be infinite); narrow the bounds")
        magnitude, subtract = max(abs(upper), abs(lower)), offset
        if square_offset is not None:
            if integer and bound >= 2 ** 31:
                # d * d would pass 2^62: sum the square in fixed point instead, so that
                # no row and no sum can overflow whatever the stored type was.
                integer = False
                value = exp.Cast(this=value, to=exp.DataType.build("DOUBLE"))
                row = clamp(value, float(lower), float(upper))
            d = shift(row, offset)
            # d * d stays an exact integer (below 2^62) for int columns.
            row = exp.Mul(this=exp.Paren(this=d), expression=exp.Paren(this=d.copy()))
            magnitude, subtract = bound * bound, square_offset
            bound = max(square_offset, bound * bound - square_offset)
        step = 1.0
        if not integer:
            exponent = FIXED_POINT_BITS - max(math.ceil(math.log2(magnitude)), -60) if magnitude > 0 else 0
            row, step = fixed_point(row, exponent), 2.0 ** -exponent
            # Rounding each row to the grid moves it by half a step at most; the
            # final int->float conversion of a sum of up to 2^40 rows by one ulp.
            bound += step / 2 + magnitude * 2.0 ** -12
        centre = None
        # Every row's value lies in [lower, upper] (clamped or by construction): an engine
        # whose sums could wrap may use it (one part instead of two on Spark).
        span = (lower, upper) if integer and square_offset is None and step == 1.0 else None
        if subtract and count is None:
            # No exact count of exactly these rows: subtract per row, a whole number of
            # units so the sum stays integer (its rounding: another half step).
            row = shift(row, subtract if step == 1.0 else round(subtract / step))
            bound += step / 2 if step != 1.0 else 0
            span = (lower - subtract, upper - subtract) if span else None
        elif subtract:
            centre = (subtract / step, count.name)
        if bound <= 0:
            # A constant column (lower == upper): the centred sum is always 0. Its noise
            # is calibrated to one step rather than refused (a sensitivity of 0 is not a
            # mechanism); it costs accuracy only.
            bound = step
        agg = exp.Sum(this=row)
        if span is not None:
            agg.meta["dpsql_span"] = span
        return self.add(label, agg, self._sum_stat(bound, integer), self.l1_rows * bound,
                        self.l2_rows * bound, integer, step, centre)


def _bounds(col, node) -> tuple:
    if col.type == "boolean":
        return 0, 1, True
    if col.type not in ("int", "float"):
        raise QueryError(f"{node.sql(ANALYST_DIALECT)}: column {col.name!r} is of type {col.type}; "
                         "SUM/AVG/VAR/STDDEV need a numeric column (int or float) with bounds")
    if col.lower is None or col.upper is None:
        raise QueryError(f"{node.sql(ANALYST_DIALECT)}: column {col.name!r} has no lower and upper "
                         "bound in the metadata, so its sensitivity is unknown; add both bounds "
                         "(chosen without looking at the data)")
    # Integer arithmetic is exact below 2^53; wider bounds are summed in fixed point.
    integer = (col.type == "int" and float(col.lower).is_integer() and float(col.upper).is_integer()
               and max(abs(col.lower), abs(col.upper)) < 2 ** 53)
    return col.lower, col.upper, integer


def _integral_bounds(col) -> bool:
    return col.type == "boolean" or (col.lower is not None and col.upper is not None and float(
        col.lower).is_integer() and float(col.upper).is_integer())


def _value(col) -> exp.Expression:
    node = column(col.name)
    if col.type == "boolean":
        return exp.Cast(this=node, to=exp.DataType.build("INT"))
    return node


def _log_abs(x) -> float:
    """log |x| for ints of any size and floats; -inf at 0."""
    if not x:
        return -math.inf
    try:
        return math.log(abs(x))
    except OverflowError:
        return math.log(abs(x) / 2) + math.log(2)


def _log_width(lower, upper) -> float:
    """log (upper - lower), without overflow; a zero-width range counts as width 1."""
    if upper == lower:
        return 0.0
    width = upper - lower
    if isinstance(width, float) and math.isinf(width):
        return _log_abs(upper / 2 - lower / 2) + math.log(2)
    return _log_abs(width)


def sum_type(node, table) -> str:
    """The released type of a SUM: int for an integer column with integral bounds."""
    if isinstance(node.this, exp.Column):
        col = table.column(node.this.name)
        if col is not None and col.type in ("int", "boolean") and _integral_bounds(col):
            return "int"
    return "float"


def column_of(node, table):
    """The metadata column an aggregate reads (lifting has made every argument one)."""
    if not isinstance(node.this, exp.Column):
        raise QueryError(f"{node.sql(ANALYST_DIALECT)}: {node.sql_name()} takes a column of the "
                         "table, not an expression (its bounds would be unknown); compute with "
                         "the aggregate instead, e.g. SUM(x) * 2")
    return table.column(node.this.name)


def value_of(col) -> exp.Expression:
    """The column as a number (booleans as 0/1)."""
    return _value(col)


def plan_count(node, table, stats: StatisticSet, counted: set) -> exp.Expression:
    count = stats.count_of(node)
    stats.weigh(count, 0.0)       # a count's error against the count (log weight)
    return column(count.name)


class _Moments:
    """What SUM, AVG, VAR and STDDEV of one bounded column share: its bounds, its count
    and its centred sum (SUM = centred sum + mid * count)."""

    def __init__(self, node, table, stats: StatisticSet, counted: set):
        col = column_of(node, table)
        self.node, self.col, self.stats = node, col, stats
        self.written = node.meta.get("dpsql_written") or node.sql(ANALYST_DIALECT)
        self.lower, self.upper, self.integer = _bounds(col, node)
        self.value = _value(col)
        self.in_bounds = col.name.lower() in stats.in_bounds
        # Weights (dpsql.plan.split): each output's error against its natural range.
        self.log_width = _log_width(self.lower, self.upper)
        self.centred = col.name.lower() in counted or ("*" in counted and col.nullable is False)

    def plain_sum(self) -> exp.Expression:
        total = self.stats.sum_of(self.value, self.lower, self.upper, self.integer,
                                  label=self.node.sql(ANALYST_DIALECT), in_bounds=self.in_bounds)
        self.stats.weigh(total, -2 * self.log_width)
        return column(total.name)

    def centre(self) -> None:
        """The count and the sum centred on the midpoint, as statistics."""
        lower, upper, col, stats = self.lower, self.upper, self.col, self.stats
        self.mid = (lower + upper) // 2 if self.integer else (lower + upper) / 2
        # A column declared non-nullable has COUNT(x) = COUNT(*): one statistic fewer. Sums
        # are then centred per row, since a cell that fails its cast is NULL all the same.
        self.counter = (stats.count_rows() if col.nullable is False
                        else stats.count_of(exp.Count(this=self.node.this.copy())))
        self.same_rows = self.counter if col.nullable is not False else None
        self.n = column(self.counter.name)
        self.centred_sum = stats.sum_of(self.value, lower, upper, self.integer, offset=self.mid,
                                        in_bounds=self.in_bounds, count=self.same_rows,
                                        label=f"SUM({col.name} - {self.mid})",
                                        what=self.written)
        self.s = column(self.centred_sum.name)
        self.safe_n = _greatest(self.n, exp.Literal.number(1))
        self.mean = exp.Div(this=exp.Cast(this=self.s, to=exp.DataType.build("DOUBLE")),
                            expression=self.safe_n)

    def centred_total(self) -> exp.Expression:
        self.stats.weigh(self.centred_sum, -2 * self.log_width)
        self.stats.weigh(self.counter, 2 * _log_abs(self.mid) - 2 * self.log_width)
        s, n, mid = self.s, self.n, self.mid
        # Rebuilt from noisy values: computed where it cannot overflow (HUGEINT for
        # integers, DOUBLE otherwise), so post-processing never fails on a noisy count.
        if self.integer:
            wide = exp.DataType.build("HUGEINT")
            total = exp.Add(this=exp.Cast(this=s, to=wide), expression=exp.Mul(
                this=bound_literal(mid), expression=exp.Cast(this=n, to=wide.copy())))
            return exp.TryCast(this=total, to=exp.DataType.build("BIGINT"))
        double = exp.DataType.build("DOUBLE")
        return exp.Add(this=exp.Cast(this=s, to=double), expression=exp.Mul(
            this=float_literal(float(mid)), expression=exp.Cast(this=n, to=double.copy())))

    def average(self) -> exp.Expression:
        self.stats.weigh(self.centred_sum, -2 * self.log_width)
        # (mean - mid) / n per unit of n, against the width: E[(mean - mid)^2] taken as
        # half^2 / 2, between a mean spread evenly over the bounds (half^2 / 3) and one at
        # an end (half^2), where skewed data such as incomes put it.
        self.stats.weigh(self.counter, -math.log(8))
        return _between(exp.Add(this=self.mean, expression=float_literal(float(self.mid))),
                        self.lower, self.upper)

    def variance(self, sample: bool) -> tuple:
        """(variance expression, its largest value): population or sample variance."""
        lower, upper, mid, col, stats = self.lower, self.upper, self.mid, self.col, self.stats
        half = max(upper - mid, mid - lower)
        centre2 = (half * half) // 2 if self.integer else half * half / 2
        s2 = column(stats.sum_of(self.value, lower, upper, self.integer, offset=mid,
                                 square_offset=centre2, count=self.same_rows,
                                 label=f"SUM(({col.name} - {mid})^2 - {centre2})",
                                 what=self.written).name)
        # VAR = s2/n + c2 - (s/n)^2 against width^2: d/ds2 = 1/n; d/ds = -2 (mean - mid)/n;
        # d/dn = (c2 - E(x - mid)^2 + 2 (mean - mid)^2) / n. Both depend on the data; taken
        # at |mean - mid| = half / 4 and a derivative in n of c2, which gives the three
        # statistics equal shares: the choice that was not worse on any column measured
        # (tests/benchmarks/bench_accuracy.py; docs/privacy.md).
        stats.weigh(next(t for t in stats.items if t.name == s2.name), -4 * self.log_width)
        stats.weigh(self.centred_sum, -2 * self.log_width - 2 * math.log(4))
        stats.weigh(self.counter, -2 * math.log(8))
        second = exp.Add(this=exp.Div(this=exp.Cast(this=s2, to=exp.DataType.build("DOUBLE")),
                                      expression=self.safe_n.copy()),
                         expression=float_literal(float(centre2)))
        var_pop = exp.Sub(this=second, expression=exp.Pow(this=self.mean.copy(),
                                                          expression=exp.Literal.number(2)))
        if not sample:
            return var_pop, half * half
        n_minus_1 = _greatest(exp.Sub(this=self.n.copy(), expression=exp.Literal.number(1)),
                              exp.Literal.number(1))
        return exp.Div(this=exp.Mul(this=exp.Paren(this=var_pop), expression=self.safe_n.copy()),
                       expression=n_minus_1), half * half * 2


def plan_sum(node, table, stats: StatisticSet, counted: set) -> exp.Expression:
    moments = _Moments(node, table, stats, counted)
    if not moments.centred:
        return moments.plain_sum()
    moments.centre()
    return moments.centred_total()


def plan_average(node, table, stats: StatisticSet, counted: set) -> exp.Expression:
    moments = _Moments(node, table, stats, counted)
    moments.centre()
    return moments.average()


def plan_spread(node, table, stats: StatisticSet, counted: set) -> exp.Expression:
    """VAR_SAMP/VAR_POP and STDDEV_SAMP/STDDEV_POP (VARIANCE and STDDEV are the samples)."""
    moments = _Moments(node, table, stats, counted)
    moments.centre()
    var, top = moments.variance(isinstance(node, (exp.Variance, exp.Stddev, exp.StddevSamp)))
    var = _between(var, 0, top)
    if isinstance(node, (exp.Stddev, exp.StddevPop, exp.StddevSamp)):
        return exp.Sqrt(this=var)
    return var


def _greatest(*args) -> exp.Expression:
    # Anonymous: sqlglot would expand exp.Greatest into NULL-guarding CASEs.
    return exp.Anonymous(this="GREATEST", expressions=list(args))


def _between(node, lower, upper) -> exp.Expression:
    """Post-processing: an average can only lie within its bounds."""
    return exp.Anonymous(this="LEAST", expressions=[
        _greatest(node, float_literal(float(lower))), float_literal(float(upper))])
