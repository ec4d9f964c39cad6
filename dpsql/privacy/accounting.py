"""The session accountant: checks a query's cost before it runs, charges it
before its result is returned.

Owns: spending. Every cost is a ``Spend`` (``dpsql.privacy.spend``): basic sequential
composition in (epsilon, delta), and zCDP in rho; a ``Budget(rho=...)`` enforces the
second and reports it converted to (epsilon, delta). A Budget object's spending is
its pool (``dpsql.privacy.pools``); with a ledger the spending also lives in a file
shared by processes (``dpsql.privacy.ledger``), so a budget cannot be escaped by
starting a new process.
"""
from __future__ import annotations

import threading

from ..errors import BudgetExceededError, warn
from .composition import Tally, events_of
from .params import Budget
from .pools import pool_of
from .spend import ZERO, Spend, budget_message, exceeds, remaining  # noqa: F401 - its face
from .zcdp import reported


class Accountant:
    """Spending of one session (a reader or a DB-API connection).

    A query draws on every pool the session has, and must fit each: the ``Budget``
    object's (one pool for every reader and connection given that object, in this
    process) and the ledger file's (one pool for every process). It is charged to
    both, or to neither. ``spent`` reports the ledger's total when there is a ledger."""

    def __init__(self, budget: Budget | None = None, ledger=None) -> None:
        self.ledger = ledger
        self.budget = budget if budget is not None else getattr(ledger, "budget", None)
        # The Budget object the caller gave: one object is one pool, whatever readers,
        # connections and ledgers it is given to. Without one, the session's own pool.
        self._budget_pool = budget
        self._pool = pool_of(budget) if budget is not None else _Local()
        self._warned = False

    @property
    def spent(self) -> tuple:
        """(epsilon, delta) spent (for a zCDP budget: its rho converted; for a PLD or RDP
        budget: the releases composed)."""
        if self.ledger is not None:
            return reported(self.spending, self.ledger.budget, self.ledger.tally())
        return reported(self.spending, self.budget, self._pool.tally)

    @property
    def spending(self) -> Spend:
        """The whole spend: (epsilon, delta, rho, delta outside zCDP)."""
        if self.ledger is not None:
            return Spend.of(self.ledger.spending())
        return self._pool.spent

    @property
    def tally(self):
        """The releases' events (dpsql.privacy.composition), the ledger's when there is one."""
        return self.ledger.tally() if self.ledger is not None else self._pool.tally

    def _pools(self) -> list:
        """(spent, budget, tally) of every pool a query must fit."""
        pools = []
        if self._budget_pool is not None:
            pools.append((self._pool.spent, self._budget_pool, self._pool.tally))
        if self.ledger is not None:
            budget = self.ledger.budget
            if budget is not None:
                pools.append((Spend.of(self.ledger.spending()), budget, self.ledger.tally()))
        return pools

    def check(self, cost, events=None) -> None:
        """Refuse before any data is touched if ``cost`` (with its privacy ``events``,
        dpsql.privacy.composition) does not fit."""
        pools = self._pools()
        if not pools:
            if not self._warned:
                warn("dpsql: no budget set; spending is tracked (reader.spent) "
                     "but nothing is enforced")
                self._warned = True
            return
        cost = Spend.of(cost)
        for spent, budget, tally in pools:
            if exceeds(spent, cost, budget, tally, events):
                raise BudgetExceededError(budget_message(spent, cost, budget, tally, events))

    def charge(self, cost, query: str, key: str = "", details: dict | None = None,
               events=None) -> None:
        """Record ``cost`` in every pool; raises ``BudgetExceededError`` (and records
        nothing) if it no longer fits one of them, so the caller must then discard the
        result. ``key`` and ``details`` go into a ledger's record (dpsql.release.report);
        ``events`` are the release's privacy events (default: its sums as one event)."""
        cost = Spend.of(cost)
        events = events_of(cost) if events is None else tuple(events)
        with self._pool.lock:
            spent, pool = self._pool.spent, self._budget_pool
            if pool is not None and exceeds(spent, cost, pool, self._pool.tally, events):
                raise BudgetExceededError(budget_message(spent, cost, pool, self._pool.tally,
                                                         events))
            if self.ledger is not None:   # checks the file's pool under the file's lock
                self.ledger.charge(cost.epsilon, cost.delta, query, rho=cost.rho,
                                   rho_delta=cost.rho_delta, key=key, details=details,
                                   events=events)
            self._pool.spent = spent + cost
            self._pool.tally.add(events)


class _Local:
    """The pool of a session without a Budget object: its own spending."""

    def __init__(self) -> None:
        self.spent = ZERO
        self.tally = Tally()
        self.lock = threading.Lock()
