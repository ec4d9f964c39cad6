"""How many more releases like one query a budget still buys.

Owns: that count, under the budget's own accountant (basic, zCDP, PLD, RDP): the most n
such that n more releases of the query's cost (and privacy events) fit what remains.
``explain`` and ``dpsql query --accuracy-target`` show it; it runs nothing and spends
nothing. Under PLD the n releases are composed as one self-composed distribution (a
count may differ by one from asking them one at a time), and the search stops at
``PLD_MOST`` (a larger self-composition takes seconds): beyond, the count is a lower
bound, as is basic composition's count when it is larger (the smaller epsilon holds).
"""
from __future__ import annotations

from .composition import COMPOSED, events_of, tally_of
from .spend import _SLACK, Spend, exceeds

MOST = 10 ** 9
"""Counts stop here (a query that costs nothing, or next to nothing)."""
PLD_MOST = 100_000


def _largest(fits, low: int, high: int) -> int:
    """The largest n in [low, high] with fits(n), given fits(low) (fits is monotone)."""
    step = max(low, 1)
    while low < high and fits(min(low + step, high)):
        low, step = min(low + step, high), 2 * step
    top = min(low + step, high + 1)
    while top - low > 1:
        middle = (low + top) // 2
        low, top = (middle, top) if fits(middle) else (low, middle)
    return low


def how_many(spent: Spend, cost: Spend, budget, tally=None, events=None) -> tuple | None:
    """(n, exact): more releases of ``cost`` (with ``events``) that fit ``budget`` on top
    of ``spent`` (and ``tally``'s events), and whether n is the count (False: at least
    n); None without a budget."""
    if budget is None:
        return None
    spent, cost = Spend.of(spent), Spend.of(cost)
    events = events_of(cost) if events is None else tuple(events)
    if not any(cost) and not events:
        return MOST, False

    def times(n: int) -> Spend:
        return Spend(*(n * c for c in cost))

    if budget.accountant not in COMPOSED:
        def fits(n: int) -> bool:
            return not exceeds(spent, times(n), budget)
        return (_largest(fits, 0, MOST), True) if fits(1) else (0, True)
    tally = tally_of(events_of(spent)) if tally is None else tally

    def thresholds(n: int) -> bool:     # thresholds may use half the budget's delta
        return (spent + times(n)).rho_delta <= budget.delta / 2 * (1 + _SLACK) + 1e-300

    def basic(n: int) -> bool:          # basic composition holds under any accountant
        return thresholds(n) and not exceeds(spent, times(n), _AsBasic(budget))

    def composed(n: int) -> bool:
        return thresholds(n) and tally.epsilon_repeated(
            budget.accountant, budget.delta - (spent + times(n)).rho_delta, events, n
        ) <= budget.epsilon * (1 + _SLACK)

    floor = _largest(basic, 0, MOST) if basic(1) else 0
    most = MOST if budget.accountant == "rdp" else max(PLD_MOST, floor)
    if floor >= most or not composed(floor + 1):
        return floor, floor < most
    found = _largest(composed, floor + 1, most)
    return found, found < most


class _AsBasic:
    """A PLD or RDP budget read as basic composition (its epsilon and delta)."""

    accountant, zcdp = "basic", False

    def __init__(self, budget) -> None:
        self.epsilon, self.delta = budget.epsilon, budget.delta
