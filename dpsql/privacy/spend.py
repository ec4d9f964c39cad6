"""What a query costs and a session has spent: one named vector and its arithmetic.

Owns: ``Spend`` and the rules that compare it with a ``Budget``. Every cost is kept
both ways and sessions add both up: (epsilon, delta) by basic sequential
composition, and (rho, delta outside zCDP). The budget's kind decides which pair is
enforced and how spending is reported. A pure-epsilon statistic is epsilon^2/2-zCDP;
thresholds' delta is not zCDP and is kept apart (``rho_delta``).
"""
from __future__ import annotations

from typing import NamedTuple

from .composition import COMPOSED, events_of, tally_of

_SLACK = 1e-12  # float sums of equal shares must not refuse the last share


class Spend(NamedTuple):
    """A cost or a total: (epsilon, delta) by basic composition, and (rho, delta outside
    zCDP). A tuple, so that it unpacks and compares like the 4-tuples of old ledgers."""

    epsilon: float = 0.0
    delta: float = 0.0
    rho: float = 0.0
    rho_delta: float = 0.0

    @classmethod
    def of(cls, cost) -> "Spend":
        """A cost given as a Spend, a 4-tuple, or an (epsilon, delta) pair: a pair is
        delta-approximately epsilon^2/2-zCDP (Bun & Steinke 2016), so that is its rho."""
        values = tuple(float(c) for c in cost)
        if len(values) == 2:
            return cls(values[0], values[1], values[0] ** 2 / 2, values[1])
        return cls(*values)

    def __add__(self, other) -> "Spend":       # element-wise, not tuple concatenation
        other = Spend.of(other)
        return Spend(*(a + b for a, b in zip(self, other)))

    @property
    def pair(self) -> tuple:
        """(epsilon, delta) by basic composition."""
        return (self.epsilon, self.delta)


ZERO = Spend()
MIN_QUERY_EPSILON = 1e-6
"""Smallest epsilon of one query (rho: its square over 2). Below it a count's noise is
millions wide: such a query answers nothing, and a budget's remainder below it is spent."""


def composed(spent: Spend, budget, tally=None, events=()) -> float:
    """A PLD or RDP budget's epsilon spent: the events of ``tally`` (or, without one, of
    the sums in ``spent``) and ``events`` on top, composed at the budget's delta less
    thresholds' (dpsql.privacy.composition)."""
    if tally is None:
        tally = tally_of(events_of(spent))
    return tally.epsilon(budget.accountant, budget.delta - spent.rho_delta, events)


def exceeds(spent: Spend, cost: Spend, budget, tally=None, events=None) -> bool:
    """True if spending ``cost`` on top of ``spent`` would pass ``budget``. ``tally`` and
    ``events``: what a PLD or RDP budget composes (the pool's events, the query's)."""
    if budget is None:
        return False
    total = spent + cost
    if budget.accountant in COMPOSED:
        events = events_of(cost) if events is None else events
        return (total.rho_delta > budget.delta / 2 * (1 + _SLACK) + 1e-300
                or composed(total, budget, tally, events) > budget.epsilon * (1 + _SLACK))
    if budget.zcdp:
        # Thresholds may use half the session's delta; the rest converts rho to epsilon.
        return (total.rho > budget.rho * (1 + _SLACK)
                or total.rho_delta > budget.delta / 2 * (1 + _SLACK) + 1e-300)
    return (total.epsilon > budget.epsilon * (1 + _SLACK)
            or total.delta > budget.delta * (1 + _SLACK) + 1e-300)


def remaining(spent: Spend, budget, tally=None) -> tuple | None:
    """(epsilon, delta) left, or for a zCDP budget (rho, delta for thresholds), for a PLD
    or RDP budget (its epsilon less the composed epsilon, delta for thresholds); never
    negative; None without a budget."""
    if budget is None:
        return None
    spent = Spend.of(spent)
    if budget.accountant in COMPOSED:
        epsilon = budget.epsilon - composed(spent, budget, tally)
        return (epsilon if epsilon >= MIN_QUERY_EPSILON else 0.0,
                max(budget.delta / 2 - spent.rho_delta, 0.0))
    if budget.zcdp:
        rho = budget.rho - spent.rho
        return (rho if rho >= MIN_QUERY_EPSILON ** 2 / 2 else 0.0,
                max(budget.delta / 2 - spent.rho_delta, 0.0))
    epsilon = budget.epsilon - spent.epsilon
    # A remainder no query can use (below the smallest per-query epsilon) counts as spent.
    return (epsilon if epsilon >= MIN_QUERY_EPSILON else 0.0, max(budget.delta - spent.delta, 0.0))


def budget_message(spent: Spend, cost: Spend, budget, tally=None, events=None) -> str:
    """Why ``cost`` does not fit, and what to do."""
    if budget.accountant in COMPOSED:
        return _composed_message(spent, cost, budget, tally, events)
    if budget.zcdp:
        return _zcdp_message(spent, cost, budget)
    if spent.epsilon > budget.epsilon - MIN_QUERY_EPSILON:
        return (f"the session budget (epsilon={budget.epsilon:.6g}) is spent (any remainder "
                f"is below {MIN_QUERY_EPSILON:g}, the smallest epsilon a query can use); this query "
                f"(epsilon={cost.epsilon:.6g}) was not run and nothing was charged. No further "
                "query can be answered in this session.")
    short = []
    if spent.epsilon + cost.epsilon > budget.epsilon * (1 + _SLACK):
        short.append("epsilon")
    if spent.delta + cost.delta > budget.delta * (1 + _SLACK) + 1e-300:
        short.append(f"delta (the budget's delta is {budget.delta:.3g}; a budget's delta is 1e-6 "
                     "unless its owner set another)")
    return (f"not enough {' and '.join(short)} left: "
            f"query would cost (epsilon={cost.epsilon:.6g}, delta={cost.delta:.3g}) but only "
            f"(epsilon={max(budget.epsilon - spent.epsilon, 0):.6g}, "
            f"delta={max(budget.delta - spent.delta, 0):.3g}) of the session budget remains; "
            "nothing was run or spent. Lower the query's epsilon/delta to fit what remains.")


def _zcdp_message(spent: Spend, cost: Spend, budget) -> str:
    short = []
    if spent.rho + cost.rho > budget.rho * (1 + _SLACK):
        short.append(f"rho (the query needs rho={cost.rho:.6g}; "
                     f"{max(budget.rho - spent.rho, 0):.6g} of rho={budget.rho:.6g} remains)")
    if spent.rho_delta + cost.rho_delta > budget.delta / 2 * (1 + _SLACK) + 1e-300:
        short.append(f"delta for thresholds (the query needs {cost.rho_delta:.3g}; thresholds "
                     f"may use half the session's delta, {budget.delta / 2:.3g}, and "
                     f"{spent.rho_delta:.3g} is spent)")
    return (f"not enough {' and '.join(short)} left in the zCDP session budget; nothing "
            "was run or spent. Lower the query's privacy to fit what remains.")


def _composed_message(spent: Spend, cost: Spend, budget, tally, events) -> str:
    total, name = spent + cost, budget.accountant.upper()
    if total.rho_delta > budget.delta / 2 * (1 + _SLACK) + 1e-300:
        return (f"not enough delta for thresholds left (the query needs {cost.rho_delta:.3g}; "
                f"thresholds may use half the session's delta, {budget.delta / 2:.3g}, and "
                f"{spent.rho_delta:.3g} is spent); nothing was run or spent. Lower the "
                "query's delta, or list the keys' public values in the metadata.")
    events = events_of(cost) if events is None else events
    after = composed(total, budget, tally, events)
    return (f"the session's releases with this query would compose (the {name} accountant, "
            f"at delta={budget.delta - total.rho_delta:.3g}) to epsilon={after:.6g}, over the "
            f"budget's epsilon={budget.epsilon:.6g} (spent so far: "
            f"{composed(spent, budget, tally):.6g}); nothing was run or spent. Lower the "
            "query's epsilon to fit what remains.")
