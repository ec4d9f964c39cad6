"""CORR, COVAR_POP, COVAR_SAMP, REGR_SLOPE and REGR_INTERCEPT from noisy sums.

Owns: the planner of the two-column moments. As VARIANCE is built
(``dpsql.plan.statistics``), everything is centred on the midpoints m_x, m_y of the
metadata bounds, over the rows where both columns are non-NULL (SQL's pairs):

- n = COUNT(pairs); L1 = k rows.
- S_x = SUM(x - m_x), S_y = SUM(y - m_y); L1 = k h_x, k h_y (h: half the bounds' width).
- S_xx = SUM((x - m_x)^2 - c_x), S_yy likewise (c = h^2 / 2); L1 = k h^2 / 2.
- S_xy = SUM((x - m_x)(y - m_y)); L1 = k h_x h_y.

Post-processing (noisy values only): with a = S_x / n, b = S_y / n,
COVAR_POP = S_xy / n - a b (kept within +-h_x h_y), VAR_POP(x) = S_xx / n + c_x - a^2,
COVAR_SAMP = COVAR_POP n / (n - 1), CORR = COVAR_POP / sqrt(VAR_POP(x) VAR_POP(y)) within
[-1, 1], REGR_SLOPE(y, x) = COVAR_POP / VAR_POP(x), REGR_INTERCEPT(y, x) =
(m_y + b) - slope (m_x + a). Each aggregate's share of the query's privacy is split
over the statistics it reads to make its error smallest at data-free typical values
(``_Pair.weigh``), as VARIANCE's is.
"""
from __future__ import annotations

import math

from sqlglot import exp

from ..errors import QueryError
from ..frontend.dialect import ANALYST_DIALECT
from ..frontend.typecheck import float_literal
from ..privacy.params import Stat
from .rewrite import clamp, column, fixed_point, shift
from .statistics import (FIXED_POINT_BITS, StatisticSet, _between, _bounds, _greatest,
                         column_of, value_of)

_DOUBLE = "DOUBLE"


def _second_column(node, table):
    arg = node.expression
    if not isinstance(arg, exp.Column) or table.column(arg.name) is None:
        written = node.meta.get("dpsql_written") or node.sql(ANALYST_DIALECT)
        raise QueryError(f"{written}: {node.sql_name()} takes two columns of the table with "
                         "bounds in the metadata (not expressions)")
    return table.column(arg.name)


def _d(expr) -> exp.Expression:
    return exp.Cast(this=exp.Paren(this=expr), to=exp.DataType.build(_DOUBLE))


class _Pair:
    """The statistics of one (x, y) pair of bounded columns."""

    def __init__(self, node, table, stats: StatisticSet):
        self.node, self.stats = node, stats
        self.written = node.meta.get("dpsql_written") or node.sql(ANALYST_DIALECT)
        cols = (column_of(node, table), _second_column(node, table))
        self.bounds = [_bounds(col, node) for col in cols]
        values = [value_of(col) for col in cols]
        nullable = any(col.nullable is not False for col in cols)
        if nullable:    # SQL's pairs: a row counts only where both are non-NULL
            values = [exp.Case(ifs=[exp.If(this=exp.Is(this=other.copy(), expression=exp.Null()),
                                           true=exp.Null())], default=v)
                      for v, other in zip(values, reversed(values))]
        self.values, self.names = values, [col.name for col in cols]
        if nullable:
            self.counter = stats.add(f"COUNT(pairs {self.names[0]}, {self.names[1]})",
                                     exp.Count(this=values[0].copy()), Stat.count,
                                     stats.l1_rows, stats.l2_rows, True)
        else:
            self.counter = stats.count_rows()
        self.same_rows = self.counter if nullable else None
        self.mids, self.halves, self.sums = [], [], []
        for (lower, upper, integer), value, name in zip(self.bounds, values, self.names):
            mid = (lower + upper) // 2 if integer else (lower + upper) / 2
            self.mids.append(mid)
            self.halves.append(max(upper - mid, mid - lower))
            self.sums.append(stats.sum_of(value, lower, upper, integer, offset=mid,
                                          count=self.same_rows,
                                          label=f"SUM({name} - {mid}) over pairs",
                                          what=self.written))
        self.cross = self._cross()

    def square(self, i: int) -> tuple:
        """(S_ii, c_i): the centred sum of squares of column i (read by CORR and REGR_*)."""
        lower, upper, integer = self.bounds[i]
        half, mid, name = self.halves[i], self.mids[i], self.names[i]
        c2 = (half * half) // 2 if integer else half * half / 2
        return self.stats.sum_of(self.values[i], lower, upper, integer, offset=mid,
                                 square_offset=c2, count=self.same_rows,
                                 label=f"SUM(({name} - {mid})^2 - {c2}) over pairs",
                                 what=self.written), c2

    def _cross(self):
        """SUM((x - m_x)(y - m_y)): exact integers when both halves are below 2^31."""
        stats = self.stats
        (lx, ux, ix), (ly, uy, iy) = self.bounds
        hx, hy = self.halves
        bound = hx * hy
        integer = ix and iy and max(hx, hy) < 2 ** 31
        if integer:
            dx = shift(clamp(self.values[0], lx, ux), self.mids[0])
            dy = shift(clamp(self.values[1], ly, uy), self.mids[1])
            row, step = exp.Mul(this=exp.Paren(this=dx), expression=exp.Paren(this=dy)), 1.0
        else:
            dx = shift(clamp(_d(self.values[0]), float(lx), float(ux)), float(self.mids[0]))
            dy = shift(clamp(_d(self.values[1]), float(ly), float(uy)), float(self.mids[1]))
            magnitude = float(bound)
            if not math.isfinite(magnitude * stats.l1_rows):
                raise QueryError(f"{self.node.sql(ANALYST_DIALECT)}: the columns' bounds are "
                                 "too wide (the sensitivity would be infinite); narrow them")
            exponent = (FIXED_POINT_BITS - max(math.ceil(math.log2(magnitude)), -60)
                        if magnitude > 0 else 0)
            row = fixed_point(exp.Mul(this=exp.Paren(this=dx), expression=exp.Paren(this=dy)),
                              exponent)
            step = 2.0 ** -exponent
            bound = magnitude + step / 2 + magnitude * 2.0 ** -12
        bound = bound if bound > 0 else step
        label = f"SUM(({self.names[0]} - {self.mids[0]}) * ({self.names[1]} - {self.mids[1]}))"
        stat = Stat.sum_float if not integer else (
            Stat.sum_large_int if bound > stats.mechanisms.large else Stat.sum_int)
        return stats.add(label, exp.Sum(this=row), stat, stats.l1_rows * bound,
                         stats.l2_rows * bound, integer, step)

    def weigh(self, constants: dict) -> None:
        """How much each statistic's noise variance moves the aggregate, against the
        aggregate's natural scale (``StatisticSet.weigh``; dpsql.plan.split shares privacy
        by these): log a = constant - 2 log(one row's largest value), the constants from
        the derivatives at data-free typical values, as VARIANCE's are (|mean - mid| = h/4,
        a spread of h/2, |CORR| = 1/2, a slope of h_y / (2 h_x)). Keys of ``constants``:
        "n", "x", "y" (centred sums), "xy", "xx", "yy"; a missing key is not read."""
        logs = [math.log(max(float(h), 1e-300)) for h in self.halves]
        rows = {"n": (self.counter, 0.0), "x": (self.sums[0], logs[0]),
                "y": (self.sums[1], logs[1]), "xy": (self.cross, logs[0] + logs[1])}
        for i, name in ((0, "xx"), (1, "yy")):
            if name in constants:
                rows[name] = (self.square(i)[0], 2 * logs[i])
        for name, (stat, log_row) in rows.items():
            self.stats.weigh(stat, constants[name] - 2 * log_row)

    # -- post-processing expressions ------------------------------------------------
    def _n(self):
        return _greatest(column(self.counter.name), exp.Literal.number(1))

    def _mean(self, i: int) -> exp.Expression:
        return exp.Div(this=_d(column(self.sums[i].name)), expression=self._n())

    def covariance(self) -> exp.Expression:
        cov = exp.Sub(this=exp.Div(this=_d(column(self.cross.name)), expression=self._n()),
                      expression=exp.Mul(this=self._mean(0), expression=self._mean(1)))
        top = float(self.halves[0] * self.halves[1])
        return _between(cov, -top, top)

    def variance(self, i: int) -> exp.Expression:
        stat, c2 = self.square(i)
        second = exp.Add(this=exp.Div(this=_d(column(stat.name)), expression=self._n()),
                         expression=float_literal(float(c2)))
        var = exp.Sub(this=second, expression=exp.Pow(this=self._mean(i),
                                                      expression=exp.Literal.number(2)))
        return _between(var, 0.0, float(self.halves[i]) ** 2)

    def sample_covariance(self) -> exp.Expression:
        n_minus_1 = _greatest(exp.Sub(this=column(self.counter.name),
                                      expression=exp.Literal.number(1)), exp.Literal.number(1))
        return exp.Div(this=exp.Mul(this=exp.Paren(this=self.covariance()),
                                    expression=self._n()), expression=n_minus_1)

    def slope(self) -> exp.Expression:
        """REGR_SLOPE(y, x): x is the second argument (index 1)."""
        return exp.Div(this=exp.Paren(this=self.covariance()),
                       expression=_greatest(self.variance(1), float_literal(1e-300)))

    def correlation(self) -> exp.Expression:
        product = exp.Mul(this=_greatest(self.variance(0), float_literal(1e-300)),
                          expression=_greatest(self.variance(1), float_literal(1e-300)))
        return _between(exp.Div(this=exp.Paren(this=self.covariance()),
                                expression=exp.Sqrt(this=product)), -1.0, 1.0)

    def intercept(self) -> exp.Expression:
        """REGR_INTERCEPT(y, x) = mean(y) - slope * mean(x)."""
        mean_y = exp.Add(this=self._mean(0), expression=float_literal(float(self.mids[0])))
        mean_x = exp.Add(this=self._mean(1), expression=float_literal(float(self.mids[1])))
        return exp.Sub(this=mean_y, expression=exp.Mul(this=exp.Paren(this=self.slope()),
                                                       expression=exp.Paren(this=mean_x)))


_L2, _L4, _L8 = math.log(2), math.log(4), math.log(8)
_COVARIANCE = {"xy": 0.0, "x": -2 * _L4, "y": -2 * _L4, "n": -2 * _L8}
_REGRESSION = {"xy": 2 * _L4, "yy": 2 * _L2, "x": 0.0, "y": 0.0, "n": -2 * _L2}
_WEIGHTS = {exp.CovarPop: _COVARIANCE, exp.CovarSamp: _COVARIANCE,
            exp.Corr: {"xy": 2 * _L4, "xx": 0.0, "yy": 0.0, "x": 0.0, "y": 0.0, "n": -2 * _L2},
            exp.RegrSlope: _REGRESSION, exp.RegrIntercept: _REGRESSION}
"""Log-weight constants per aggregate (``_Pair.weigh``): CORR reads both sums of squares,
REGR_SLOPE(y, x) and REGR_INTERCEPT(y, x) that of x, the second argument ("yy": the pair is
(first argument, second argument))."""


def plan_bivariate(node, table, stats: StatisticSet, counted: set) -> exp.Expression:
    """Statistics and post-processing of CORR, COVAR_POP/SAMP, REGR_SLOPE/INTERCEPT."""
    pair = _Pair(node, table, stats)
    pair.weigh(_WEIGHTS[type(node)])
    if isinstance(node, exp.CovarPop):
        return pair.covariance()
    if isinstance(node, exp.CovarSamp):
        return pair.sample_covariance()
    if isinstance(node, exp.RegrSlope):
        return pair.slope()
    if isinstance(node, exp.RegrIntercept):
        return pair.intercept()
    return pair.correlation()
