"""The aggregates dpsql knows: one registry entry per aggregate function.

Owns: which aggregate functions a query may use, where (released by the DP
aggregation, inside a per-person aggregation), whether their argument needs bounds,
the type of what they release, and the planner that turns each into noisy statistics
and a post-processing expression (``dpsql.plan.statistics`` for counts and moments,
``dpsql.plan.quantiles`` for quantiles, MIN and MAX). To add an aggregate: write its
planner, and add one entry here (docs/architecture.md).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from sqlglot import exp

from ..errors import QueryError
from .bivariate import plan_bivariate
from .quantiles import is_list, output_type, plan_quantile, quantile_bounds
from .statistics import (StatisticSet, column_of, plan_average, plan_count, plan_spread,
                         plan_sum, sum_type, value_of)


@dataclass(frozen=True)
class Aggregate:
    """One aggregate function and how dpsql plans it."""

    plan: Callable | None    # (node, table, stats, counted) -> post-processing expression
    output_type: Callable    # (node, table) -> the language type of its released value
    bounded: bool            # its argument needs bounds (an expression becomes a column)
    per_person: bool         # allowed inside a per-person aggregation (GROUP BY the id)
    reads_count: bool        # releases the count of its column (lets a SUM be centred)
    weight: int = 1          # its planning work, in units of a SUM's (MAX_STATISTICS); a
                             # list of quantiles adds 1 per 4 probabilities (weight_of)


def _quantile(node, table, stats: StatisticSet, counted: set) -> exp.Expression:
    col = column_of(node, table)
    lower, upper, integer = quantile_bounds(col, node)
    return plan_quantile(node, col, value_of(col), lower, upper, integer, stats,
                         col.name.lower() in stats.in_bounds)


def _count_type(node, table) -> str:
    return "int"


def _float_type(node, table) -> str:
    return "float"


_MOMENT = dict(output_type=_float_type, bounded=True, reads_count=True)
_SPREAD = dict(plan=plan_spread, per_person=False, weight=2, **_MOMENT)
_PAIR = dict(plan=plan_bivariate, per_person=False, output_type=_float_type, bounded=True,
             reads_count=False, weight=8)
_QUANTILE = dict(plan=_quantile, output_type=output_type, bounded=True, reads_count=False,
                 weight=8)

REGISTRY: dict = {
    exp.Count: Aggregate(plan_count, _count_type, bounded=False, per_person=True,
                         reads_count=True),
    exp.Sum: Aggregate(plan_sum, sum_type, bounded=True, per_person=True, reads_count=False),
    exp.Avg: Aggregate(plan_average, per_person=True, **_MOMENT),
    exp.Variance: Aggregate(**_SPREAD),
    exp.VariancePop: Aggregate(**_SPREAD),
    exp.Stddev: Aggregate(**_SPREAD),
    exp.StddevPop: Aggregate(**_SPREAD),
    exp.StddevSamp: Aggregate(**_SPREAD),
    exp.Corr: Aggregate(**_PAIR),
    exp.CovarPop: Aggregate(**_PAIR),
    exp.CovarSamp: Aggregate(**_PAIR),
    exp.RegrSlope: Aggregate(**_PAIR),
    exp.RegrIntercept: Aggregate(**_PAIR),
    exp.PercentileCont: Aggregate(per_person=False, **_QUANTILE),
    exp.PercentileDisc: Aggregate(per_person=False, **_QUANTILE),
    exp.Min: Aggregate(per_person=True, **_QUANTILE),
    exp.Max: Aggregate(per_person=True, **_QUANTILE),
}

RELEASED = tuple(REGISTRY)
"""Node types the DP aggregation releases."""
BOUNDED = tuple(t for t, a in REGISTRY.items() if a.bounded)
PER_PERSON = tuple(t for t, a in REGISTRY.items() if a.per_person)


MAX_STATISTICS = 256
"""Most planning work of a statement's released aggregates (each distinct one once, every
UNION part and grouping set counted), in units of a SUM's: a variance or standard
deviation 2, a CORR, COVAR, REGR, quantile, MIN or MAX 8. Planning takes time that
grows with them (issue 33's thirty-first review: 300 CORRs, 9 kB, planned for 18 s; 60
MEDIANs 11 s), so a statement over the limit is refused before it is planned."""


def weight_of(node: exp.Expression) -> int:
    """An aggregate's planning work in units of a SUM's (0 for one dpsql does not release)."""
    if type(node) not in REGISTRY:
        return 0
    extra = len(node.expression.expressions) // 4 if is_list(node) else 0
    return REGISTRY[type(node)].weight + extra


def check_statistics(before: int, aggregates: list, limit: int = MAX_STATISTICS) -> int:
    """``before`` plus the weight of ``aggregates``; QueryError (free) over ``limit`` (the
    engine's: MAX_STATISTICS, or less where the engine plans slower)."""
    total = before + sum(weight_of(a) for a in aggregates)
    if total > limit:
        raise QueryError(
            f"the query asks for more than {limit} units of statistics (dpsql's limit on this "
            "engine's planning work: COUNT, SUM and AVG count 1 each, VARIANCE and STDDEV 2, "
            "CORR, COVAR, REGR, a quantile, MEDIAN, MIN or MAX 8, a list of quantiles 1 more "
            "per 4 probabilities; repeated aggregates once; each grouping set and UNION part "
            "again): split it into several queries")
    return total


def entry(node: exp.Expression) -> Aggregate | None:
    return REGISTRY.get(type(node))


def aggregate_type(node, table) -> str:
    """The language type of an aggregate's released value (for post-processing)."""
    return REGISTRY[type(node)].output_type(node, table)


def counted_columns(aggregates: list) -> set:
    """Columns whose COUNT the query releases anyway ("*": COUNT(*)), so sums of them
    are centred on their midpoint (half the sensitivity)."""
    counted = set()
    for node in aggregates:
        if isinstance(node, exp.Count) and isinstance(node.this, (exp.Star, exp.Literal,
                                                                  exp.Boolean)):
            counted.add("*")   # COUNT(*): every row, so the count of a non-nullable column
        elif isinstance(node, exp.Count):
            if isinstance(node.this, exp.Column):
                counted.add(node.this.name.lower())
        elif REGISTRY[type(node)].reads_count:
            counted.add(node.this.name.lower() if isinstance(node.this, exp.Column) else None)
    return counted


def plan_aggregates(aggregates: list, table, stats: StatisticSet) -> list:
    """Map each aggregate node to its post-processing expression over statistic columns."""
    counted = counted_columns(aggregates)
    planned = []
    for node in aggregates:
        stats.outputs.append({})
        planned.append((node, REGISTRY[type(node)].plan(node, table, stats, counted)))
    return planned
