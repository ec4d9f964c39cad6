"""How many more releases like one query a budget still buys.

Owns: that count, under the budget's own accountant (basic, zCDP, PLD, RDP): the most n
such that n more releases of the query's cost (and privacy events) fit what remains.
``explain`` and ``dpsql query --accuracy-target`` show it; it runs nothing and spends
nothing. Under PLD the n releases are composed as one self-composed distribution, so
the count may differ by one from asking them one at a time.
"""
from __future__ import annotations

from .composition import COMPOSED, events_of, tally_of
from .spend import _SLACK, Spend, exceeds

MOST = 10 ** 9
"""Counts stop here (a query that costs nothing, or next to nothing)."""


def how_many(spent: Spend, cost: Spend, budget, tally=None, events=None) -> int | None:
    """More releases of ``cost`` (with ``events``) that fit ``budget`` on top of ``spent``
    (and ``tally``'s events); None without a budget."""
    if budget is None:
        return None
    spent, cost = Spend.of(spent), Spend.of(cost)
    events = events_of(cost) if events is None else tuple(events)
    if budget.accountant in COMPOSED and tally is None:
        tally = tally_of(events_of(spent))

    def fits(n: int) -> bool:
        times = Spend(*(n * c for c in cost))
        if budget.accountant not in COMPOSED:
            return not exceeds(spent, times, budget)
        total = spent + times
        if total.rho_delta > budget.delta / 2 * (1 + _SLACK) + 1e-300:
            return False
        return tally.epsilon_repeated(budget.accountant, budget.delta - total.rho_delta,
                                      events, n) <= budget.epsilon * (1 + _SLACK)

    if not any(cost) and not events:
        return MOST
    if not fits(1):
        return 0
    low, high = 1, 2
    while high <= MOST and fits(high):
        low, high = high, 2 * high
    high = min(high, MOST + 1)
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if fits(middle) else (low, middle)
    return low
