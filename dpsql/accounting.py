"""The session accountant: checks a query's cost before it runs, charges it
before its result is returned.

Owns: spending. Composition is basic sequential composition: costs add up in
epsilon and in delta. With a ledger the spending lives in a file shared by
processes (see ``dpsql.ledger``); the accountant then delegates to it, so a
budget cannot be escaped by starting a new process.
"""
from __future__ import annotations

import threading
import warnings

from .errors import BudgetExceededError
from .privacy import Budget

_SLACK = 1e-12  # float sums of equal shares must not refuse the last share


def exceeds(spent: tuple, cost: tuple, budget: Budget | None) -> bool:
    """True if spending ``cost`` on top of ``spent`` would pass ``budget``."""
    if budget is None:
        return False
    return (spent[0] + cost[0] > budget.epsilon * (1 + _SLACK)
            or spent[1] + cost[1] > budget.delta * (1 + _SLACK) + 1e-300)


def budget_message(spent: tuple, cost: tuple, budget: Budget) -> str:
    if spent[0] >= budget.epsilon * (1 - 1e-6):
        return (f"the session budget (epsilon={budget.epsilon:.6g}) is spent; this query "
                f"(epsilon={cost[0]:.6g}) was not run and nothing was charged. No further "
                "query can be answered in this session.")
    short = []
    if spent[0] + cost[0] > budget.epsilon * (1 + _SLACK):
        short.append("epsilon")
    if spent[1] + cost[1] > budget.delta * (1 + _SLACK) + 1e-300:
        short.append(f"delta (the budget's delta is {budget.delta:.3g}; Budget(delta=...) "
                     "defaults to 1e-6)")
    return (f"not enough {' and '.join(short)} left: "
            f"query would cost (epsilon={cost[0]:.6g}, delta={cost[1]:.3g}) but only "
            f"(epsilon={max(budget.epsilon - spent[0], 0):.6g}, "
            f"delta={max(budget.delta - spent[1], 0):.3g}) of the session budget remains; "
            "nothing was run or spent. Lower the query's epsilon/delta to fit what remains.")


class Accountant:
    """Spending of one session (a reader or a DB-API connection)."""

    def __init__(self, budget: Budget | None = None, ledger=None) -> None:
        self.ledger = ledger
        self.budget = budget if budget is not None else getattr(ledger, "budget", None)
        # Without a ledger the spending lives in the Budget object: one pool for every
        # session given it. Without a budget, this session's own tally.
        self._pool = self.budget if ledger is None and budget is not None else None
        self._spent = (0.0, 0.0)
        self._lock = self._pool._lock if self._pool is not None else threading.Lock()
        self._warned = False

    @property
    def spent(self) -> tuple:
        if self.ledger is not None:
            return tuple(self.ledger.spent())
        return self._pool._spent if self._pool is not None else self._spent

    def check(self, cost: tuple) -> None:
        """Refuse before any data is touched if ``cost`` does not fit."""
        if self.budget is None:
            if not self._warned:
                warnings.warn("dpsql: no budget set; spending is tracked (reader.spent) "
                              "but nothing is enforced", stacklevel=3)
                self._warned = True
            return
        spent = self.spent
        if exceeds(spent, cost, self.budget):
            raise BudgetExceededError(budget_message(spent, cost, self.budget))

    def charge(self, cost: tuple, query: str) -> None:
        """Record ``cost``; raises ``BudgetExceededError`` (and records nothing)
        if it no longer fits, so the caller must then discard the result."""
        if self.ledger is not None:
            self.ledger.charge(cost[0], cost[1], query)
            return
        holder = self._pool if self._pool is not None else self
        with self._lock:
            spent = holder._spent
            if exceeds(spent, cost, self.budget):
                raise BudgetExceededError(budget_message(spent, cost, self.budget))
            holder._spent = (spent[0] + cost[0], spent[1] + cost[1])
