"""The session accountant: checks a query's cost before it runs, charges it
before its result is returned.

Owns: spending. Every cost is a 4-vector (see ``ZERO``): basic sequential
composition in (epsilon, delta), and zCDP in rho; a ``Budget(rho=...)`` enforces
the second and reports it converted to (epsilon, delta). With a ledger the spending lives in a file shared by
processes (see ``dpsql.privacy.ledger``); the accountant then delegates to it, so a
budget cannot be escaped by starting a new process.
"""
from __future__ import annotations

import threading
import warnings


from .zcdp import reported  # noqa: F401 - part of the accountant's face
from ..errors import BudgetExceededError
from .params import Budget

_SLACK = 1e-12  # float sums of equal shares must not refuse the last share

ZERO = (0.0, 0.0, 0.0, 0.0)
"""A spend: (epsilon, delta) by basic composition, and (rho, delta outside zCDP).

Every query's cost is kept both ways and sessions add both up; the budget's kind
decides which pair is enforced and how spending is reported. A pure-epsilon
statistic is epsilon^2/2-zCDP; thresholds' delta is not zCDP and is kept apart."""


def vector(cost) -> tuple:
    """A cost as a 4-vector; an (epsilon, delta) pair is delta-approximately
    epsilon^2/2-zCDP (Bun & Steinke 2016), so that is its rho."""
    cost = tuple(float(c) for c in cost)
    if len(cost) == 2:
        return (cost[0], cost[1], cost[0] ** 2 / 2, cost[1])
    return cost


def add(spent: tuple, cost: tuple) -> tuple:
    return tuple(a + b for a, b in zip(spent, cost))


def exceeds(spent: tuple, cost: tuple, budget: Budget | None) -> bool:
    """True if spending ``cost`` on top of ``spent`` would pass ``budget``."""
    if budget is None:
        return False
    if budget.zcdp:
        # Thresholds may use half the session's delta; the rest converts rho to epsilon.
        return (spent[2] + cost[2] > budget.rho * (1 + _SLACK)
                or spent[3] + cost[3] > budget.delta / 2 * (1 + _SLACK) + 1e-300)
    return (spent[0] + cost[0] > budget.epsilon * (1 + _SLACK)
            or spent[1] + cost[1] > budget.delta * (1 + _SLACK) + 1e-300)


def budget_message(spent: tuple, cost: tuple, budget: Budget) -> str:
    if budget.zcdp:
        short = []
        if spent[2] + cost[2] > budget.rho * (1 + _SLACK):
            short.append(f"rho (the query needs rho={cost[2]:.6g}; "
                         f"{max(budget.rho - spent[2], 0):.6g} of rho={budget.rho:.6g} remains)")
        if spent[3] + cost[3] > budget.delta / 2 * (1 + _SLACK) + 1e-300:
            short.append(f"delta for thresholds (the query needs {cost[3]:.3g}; thresholds may "
                         f"use half the session's delta, {budget.delta / 2:.3g}, and "
                         f"{spent[3]:.3g} is spent)")
        return (f"not enough {' and '.join(short)} left in the zCDP session budget; nothing "
                "was run or spent. Lower the query's privacy to fit what remains.")
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


def remaining(spent: tuple, budget) -> tuple | None:
    """(epsilon, delta) left, or for a zCDP budget (rho, delta for thresholds); never
    negative; None without a budget."""
    if budget is None:
        return None
    if budget.zcdp:
        return (max(budget.rho - spent[2], 0.0), max(budget.delta / 2 - spent[3], 0.0))
    return (max(budget.epsilon - spent[0], 0.0), max(budget.delta - spent[1], 0.0))


class Accountant:
    """Spending of one session (a reader or a DB-API connection).

    A query draws on every pool the session has, and must fit each: the ``Budget``
    object's (one pool for every reader and connection given that object, in this
    process) and the ledger file's (one pool for every process). It is charged to
    both, or to neither. ``spent`` reports the ledger's total when there is a ledger."""

    def __init__(self, budget: Budget | None = None, ledger=None) -> None:
        self.ledger = ledger
        self.budget = budget if budget is not None else getattr(ledger, "budget", None)
        # The Budget object the caller gave: its spending lives in the object itself, so
        # one object is one pool whatever readers, connections and ledgers it is given to.
        self._pool = budget
        self._spent = ZERO
        self._lock = self._pool._lock if self._pool is not None else threading.Lock()
        self._warned = False

    @property
    def spent(self) -> tuple:
        """(epsilon, delta) spent (for a zCDP budget: its rho converted)."""
        if self.ledger is not None:
            return reported(self.spending, self.ledger.budget)
        return reported(self.spending, self.budget)

    @property
    def spending(self) -> tuple:
        """The whole spend: (epsilon, delta, rho, delta outside zCDP)."""
        if self.ledger is not None:
            return tuple(self.ledger.spending())
        return self._pool._spent if self._pool is not None else self._spent

    def _pools(self) -> list:
        """(spent, budget) of every pool a query must fit."""
        pools = []
        if self._pool is not None:
            pools.append((self._pool._spent, self._pool))
        if self.ledger is not None:
            budget = self.ledger.budget
            if budget is not None:
                pools.append((tuple(self.ledger.spending()), budget))
        return pools

    def check(self, cost: tuple) -> None:
        """Refuse before any data is touched if ``cost`` does not fit."""
        pools = self._pools()
        if not pools:
            if not self._warned:
                warnings.warn("dpsql: no budget set; spending is tracked (reader.spent) "
                              "but nothing is enforced", stacklevel=3)
                self._warned = True
            return
        cost = vector(cost)
        for spent, budget in pools:
            if exceeds(spent, cost, budget):
                raise BudgetExceededError(budget_message(spent, cost, budget))

    def charge(self, cost: tuple, query: str, key: str = "", details: dict | None = None) -> None:
        """Record ``cost`` in every pool; raises ``BudgetExceededError`` (and records
        nothing) if it no longer fits one of them, so the caller must then discard the
        result. ``key`` and ``details`` go into a ledger's record (dpsql.release.report)."""
        cost = vector(cost)
        with self._lock:
            holder = self._pool if self._pool is not None else self
            spent = holder._spent
            if self._pool is not None and exceeds(spent, cost, self._pool):
                raise BudgetExceededError(budget_message(spent, cost, self._pool))
            if self.ledger is not None:   # checks the file's pool under the file's lock
                self.ledger.charge(cost[0], cost[1], query, rho=cost[2], rho_delta=cost[3],
                                   key=key, details=details)
            holder._spent = add(spent, cost)
