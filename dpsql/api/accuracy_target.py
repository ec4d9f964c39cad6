"""``reader.epsilon_for``: the smallest epsilon that meets an accuracy target, and how
many such queries the remaining budget buys.

Owns: the search over a query's epsilon (its plans at each candidate, no data read,
nothing spent) and the budget line of ``explain``. A statistic's accuracy is its
mechanism's own (``NoiseMechanism.accuracy``, what ``explain`` prints as "95% accuracy"),
from the noise's exact distribution at the calibrated scale; it shrinks as epsilon
grows, so a binary search over log(epsilon) finds the smallest epsilon that gives every
statistic an error within the target with probability at least 1 - alpha.
"""
from __future__ import annotations

import math

from ..errors import ProgrammingError, QueryError
from ..frontend.bigquery import query_privacy
from ..frontend.parse import parse_query, typed_params, union_parts
from ..plan import build_plan
from ..plan.validate import validate
from ..privacy.affordable import MOST, how_many
from ..privacy.params import MAX_QUERY_EPSILON, Privacy
from ..privacy.spend import MIN_QUERY_EPSILON
from ..release.intervals import check_alpha

_STEPS = 48          # halvings of log(epsilon) from [1e-6, 1e6]: far below 1e-6 relative


def _at(base: Privacy, epsilon: float) -> Privacy:
    return Privacy(epsilon=epsilon, delta=base.delta, mechanisms=base.mechanisms,
                   split=base.split)


def _error(reader, sql: str, params, privacy: Privacy, alpha: float) -> float:
    """The largest (1 - alpha) error of the query's noisy statistics at ``privacy``."""
    params, _ = typed_params(params)
    tree = parse_query(sql, params)
    if query_privacy(tree, privacy) is not privacy:
        raise QueryError("the query sets its own epsilon or delta (WITH DIFFERENTIAL_PRIVACY "
                         "OPTIONS); leave them out to find the epsilon an accuracy needs")
    worst = 0.0
    for part in union_parts(tree):
        plan = build_plan(validate(part, reader.metadata, reader.engine.public_rows), privacy,
                          reader.engine.pre_cut_work)
        for stat in plan.statistics:
            if stat.mechanism.value_bounds() is not None:
                raise QueryError(
                    f"{stat.label} is released by {stat.mechanism.name}, whose accuracy is a "
                    "rank, not a value (explain states it); an accuracy target applies to "
                    "counts, sums and the aggregates made of them: ask without it")
            worst = max(worst, stat.mechanism.accuracy(alpha))
    return worst


def epsilon_for(reader, sql: str, accuracy: float, alpha: float = 0.05, params=None,
                privacy: Privacy | None = None) -> float:
    """The smallest epsilon (to 3 significant digits, rounded up) at which every noisy
    statistic of ``sql`` is within ``accuracy`` of its exact value with probability at
    least ``1 - alpha`` (each statistic on its own), at ``privacy``'s delta, mechanisms
    and split (default: the reader's). Reads no data, spends nothing."""
    if isinstance(accuracy, bool) or not isinstance(accuracy, (int, float)) \
            or not math.isfinite(accuracy) or accuracy <= 0:
        raise ProgrammingError(f"epsilon_for: accuracy must be a finite number > 0 (the "
                               f"largest error wanted, in the statistics' units), got "
                               f"{accuracy!r}")
    alpha = check_alpha(alpha)
    base = reader.privacy if privacy is None else privacy
    reader._privacy_key(base)         # checked like any query's privacy

    def meets(epsilon: float) -> bool:
        return _error(reader, sql, params, _at(base, epsilon), alpha) <= accuracy

    low, high = math.log(MIN_QUERY_EPSILON), math.log(MAX_QUERY_EPSILON)
    if meets(MIN_QUERY_EPSILON):
        return MIN_QUERY_EPSILON
    if not meets(MAX_QUERY_EPSILON):
        raise QueryError(f"no epsilon up to {MAX_QUERY_EPSILON:g} gives every statistic an "
                         f"error within {accuracy:g} at {1 - alpha:.0%}: ask for a larger "
                         "accuracy, or about larger groups")
    for _ in range(_STEPS):
        middle = (low + high) / 2
        low, high = (low, middle) if meets(math.exp(middle)) else (middle, high)
    found = math.exp(high)
    digits = 2 - math.floor(math.log10(found))
    rounded = math.ceil(found * 10 ** digits) / 10 ** digits
    return rounded if rounded <= MAX_QUERY_EPSILON and meets(rounded) else found


def queries_left(reader, plan) -> tuple | None:
    """(n, exact): how many more releases like ``plan`` fit every pool of the session
    (exact False: at least n); None without a budget."""
    counts = [how_many(spent, plan.spend, budget, tally, plan.events)
              for spent, budget, tally in reader.accountant._pools()]
    return min(counts) if counts else None


def budget_line(reader, plan) -> str:
    """``explain``'s last line: what the budget still buys at this query's cost."""
    left = queries_left(reader, plan)
    budget = reader.accountant.budget
    if left is None:
        return "budget: none set; nothing limits how many queries like this one are answered"
    how = {"basic": "basic composition", "zcdp": "zCDP"}.get(
        budget.accountant, f"the {budget.accountant.upper()} accountant")
    n, exact = left
    if n >= MOST:
        many = "no limit (it costs nothing)" if not any(plan.spend) else f"at least {n:,}"
    else:
        about = "about " if budget.accountant == "pld" and n > 0 else ""
        many = f"{about}{n:,}" if exact else f"at least {n:,}"
    return f"budget: {many} more queries like this one fit in what remains (composed by {how})"


def summary(reader, sql: str, accuracy: float, alpha: float = 0.05) -> str:
    """``dpsql query --accuracy-target``'s text: the epsilon and what the budget buys."""
    epsilon = epsilon_for(reader, sql, accuracy, alpha)
    privacy = _at(reader.privacy, epsilon)
    plan = reader._plan(sql, privacy=privacy)
    return (f"epsilon={epsilon:.6g} (delta={privacy.delta:g}): the smallest at which every "
            f"noisy statistic is within {accuracy:g} of its exact value with probability "
            f"{1 - alpha:.4g}; nothing was run or spent\n{budget_line(reader, plan)}\n")
