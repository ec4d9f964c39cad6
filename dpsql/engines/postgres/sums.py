"""The plan's SUM and AVG on PostgreSQL: never raising, DuckDB's results.

Owns: the ``PLAN_RULES`` of ``dpsql.engines.postgres.dialect`` for aggregates. PostgreSQL's
float8 ``sum`` raises where a partial sum of finite values leaves a DOUBLE ("value out of
range: overflow"), and its float8 ``avg`` also where the running sum of squared deviations
it keeps does (values of 1e200 and -1e200); DuckDB's sum is then infinite and its average
the sum over the count. A per-person SUM or AVG (``dpsql.plan.per_person``) sums at most
``k`` values clamped to ``[lo, hi]``, which it records on the node (``BOUND``): where those
bounds prove PostgreSQL's float8 aggregate cannot overflow, it runs as it is (full speed);
otherwise it is computed in NUMERIC (exact, never raising) and mapped to DuckDB's value:
an infinity of the sum's sign beyond a DOUBLE, the nearest DOUBLE otherwise (0 below
1e-323). The decision reads the query alone. A SUM of BIGINTs is NUMERIC on PostgreSQL
(HUGEINT on DuckDB); it is typed so, so that the TRY_CAST of a per-person sum back to
BIGINT is guarded (``dpsql.engines.postgres.casts``): NULL beyond int64, as DuckDB's.
"""
from __future__ import annotations

import math

from sqlglot import exp

from ...plan.dialect import DOUBLE_MAX, SUM_BOUND as BOUND, type_name
from .guards import _numeric, numeric_double

def _float8_sum_safe(bound) -> bool:
    """Whether no partial sum of ``rows`` DOUBLEs of |x| <= magnitude can overflow (with a
    factor 2 for rounding)."""
    if bound is None:
        return False
    rows, magnitude = bound
    return math.isfinite(magnitude) and rows * magnitude <= DOUBLE_MAX / 2


def _float8_avg_safe(bound) -> bool:
    """Whether PostgreSQL's float8 ``avg`` cannot overflow: its sum as above, and its sum of
    squared deviations (each term below (2 rows magnitude)^2, rows terms) too."""
    if not _float8_sum_safe(bound):
        return False
    rows, magnitude = bound
    log_sxx = math.log(4 * rows ** 3) + 2 * math.log(max(magnitude, 1e-300))
    return log_sxx <= math.log(DOUBLE_MAX / 4)


def plan_sum(node):
    """SUM: of BIGINTs, typed NUMERIC (what PostgreSQL computes); of DOUBLEs, float8 where
    its bound proves it cannot overflow, else exact in NUMERIC, as DuckDB's DOUBLE."""
    kind = type_name(node.this)
    if kind == "BIGINT":
        node.type = exp.DataType.build("DECIMAL")
        return node
    if kind != "DOUBLE" or _float8_sum_safe(node.meta.get(BOUND)):
        return node
    exact = exp.Sum(this=_numeric(node.this))
    return _typed(numeric_double(exact))


def plan_avg(node):
    """AVG: of BIGINTs, a DOUBLE (as DuckDB's; PostgreSQL's is NUMERIC, never beyond int64);
    of DOUBLEs, float8 where its bound proves neither its sum nor its squares overflow, else
    DuckDB's sum over count: infinite where the exact sum is beyond a DOUBLE, else the
    exact average as the nearest DOUBLE."""
    kind = type_name(node.this)
    if kind == "BIGINT":
        return _typed(exp.Cast(this=node, to=exp.DataType.build("DOUBLE")))
    if kind != "DOUBLE" or _float8_avg_safe(node.meta.get(BOUND)):
        return node
    value = _numeric(node.this)
    return _typed(numeric_double(exp.Avg(this=value), exp.Sum(this=value.copy())))


def _typed(node: exp.Expression) -> exp.Expression:
    node.type = exp.DataType.build("DOUBLE")
    return node
