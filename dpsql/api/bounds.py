"""``reader.estimate_bounds``: a column's bounds with differential privacy, charged like a query.

Owns: running a bounds estimate through the session (plan, budget check, engine, charge,
noise: ``dpsql.plan.bounds_estimate`` and ``dpsql.mechanisms.bounds``), the result
(``Bounds``: the pair, and how it was found) and, when no bounds can be given, the error
that says so, with what it would take.
"""
from __future__ import annotations

import math

from sqlglot import exp

from ..errors import OperationalError, ProgrammingError, QueryError, warn
from ..plan import build_plan
from ..plan import quantiles as quantile_plan
from ..plan.validate import validate
from ..privacy.params import Privacy, large_privacy_warning


class Bounds(tuple):
    """(lower, upper) of a column, estimated with differential privacy: ints for an int
    column, floats for a float one. Also: ``epsilon`` (the cost), ``threshold`` (the noisy
    count a power-of-two range of values needed to count) and ``estimate``
    (``dpsql.mechanisms.bounds.Estimate``: the noisy counts of the two ranges found)."""

    def __new__(cls, estimate, mechanism, name: str):
        self = super().__new__(cls, (estimate.lower, estimate.upper))
        self.estimate, self.epsilon, self.name = estimate, mechanism.epsilon, name
        self.threshold = estimate.threshold
        return self

    @property
    def lower(self):
        return self[0]

    @property
    def upper(self):
        return self[1]

    def describe(self) -> str:
        """How the bounds were found, in a sentence (post-processing: no data read)."""
        low, high = self.estimate.counts
        return (f"the edges of the lowest and highest power-of-two ranges of values found by "
                f"noisy count (they hold about {low} and {high} rows; one range alone needs "
                f"{self.threshold}); values beyond them are clamped by later queries")


class NoBoundsError(OperationalError):
    """No range of values cleared the threshold: the table is too small for the epsilon.
    The estimate was charged. ``estimate`` holds what was released."""

    def __init__(self, message: str, estimate) -> None:
        super().__init__(message)
        self.estimate = estimate


def estimate_bounds(reader, table: str, column: str, epsilon: float) -> Bounds:
    """Run the estimate on ``reader``'s data (see ``Reader.estimate_bounds``)."""
    if not isinstance(table, str) or not isinstance(column, str):
        raise ProgrammingError("estimate_bounds(table, column, epsilon): table and column "
                               "are names (str), e.g. 'PUMS.PUMS', 'income'")
    privacy = Privacy(epsilon=epsilon, delta=0.0)
    if large_privacy_warning(privacy) is not None:
        warn(large_privacy_warning(privacy))
    found = reader.metadata.find_table(table)
    col = found.column(column) if found is not None else None
    if col is not None and col.type not in ("int", "float"):
        raise QueryError(f"estimate_bounds: column {column!r} of {table} is of type "
                         f"{col.type}; bounds are estimated for int and float columns")
    value = exp.column(col.name if col is not None else column, quoted=True)
    tree = exp.select(exp.alias_(exp.PercentileDisc(
        this=value, expression=exp.Literal.number("0.5")), "bounds")).from_(exp.to_table(table))
    with quantile_plan.bounds_mode():
        query = validate(tree, reader.metadata, reader.engine.public_rows)
        plan = build_plan(query, privacy, reader.engine.pre_cut_work)
    name = f"{query.table.full_name}.{col.name if col is not None else column}"
    # What the ledger and the release table show: not the carrier query's quantile.
    plan.bound_sql = f"ESTIMATE BOUNDS OF {name} (noisy histogram over powers of two)"
    reader._compile(plan)
    try:
        noisy = reader._fresh(plan)
    finally:
        reader._forget(plan)
    stat = plan.statistics[0]
    estimate = noisy[0][stat.name][0]
    if not estimate.ok:
        raise NoBoundsError(too_small(name, float(epsilon), estimate, query.table.rows,
                                      stat.mechanism.epsilon), estimate)
    return Bounds(estimate, stat.mechanism, name)


def too_small(name: str, epsilon: float, estimate, rows, charged: float) -> str:
    """Why there are no bounds, and the size or epsilon that would give them."""
    head = (f"no bounds for {name}: at epsilon={epsilon:g} a power-of-two range of values "
            f"(such as 1024..2047) must hold about {estimate.needed} rows to be told apart from "
            "the noise (fewer per range when the values spread over several adjacent ranges), "
            "and none does, so the table is too small for this epsilon")
    factor = estimate.factor
    if factor is not None:
        size = (f" (the metadata's rows: {rows:,}; about {math.ceil(rows * factor):,} would do)"
                if rows else "")
        more = (f"; it takes about {factor:.2g} times as many rows with the same spread of "
                f"values{size}, or epsilon={epsilon * factor:.2g} on this table")
    elif rows:
        more = (f"; no range stands out from the noise: even with all of the metadata's {rows:,} "
                f"rows in one range it would take epsilon={epsilon * estimate.needed / rows:.2g} "
                "(more when the values spread over several ranges)")
    else:
        more = (f"; no range stands out from the noise: it takes at least {estimate.needed} rows "
                "within a factor of two of each other, or a larger epsilon")
    return (f"{head}{more}. Bounds from a codebook or the law need no data. The estimate's "
            f"cost (epsilon={charged:.6g}) was charged")
