"""The accountant's pools: what has been spent from each ``Budget`` object.

Owns: the running spend of every Budget object in this process, kept beside the
object (never inside it): every reader and DB-API connection given the same object
draws on one pool, whatever ledgers they also have. A pool lives as long as its
Budget object. Across processes the pool is a ledger file (``dpsql.privacy.ledger``).
"""
from __future__ import annotations

import threading
import weakref

from .composition import Tally
from .spend import ZERO, Spend

_POOLS: dict = {}
_GUARD = threading.Lock()


class Pool:
    """One Budget object's spending; ``lock`` serialises its check-and-charge."""

    def __init__(self) -> None:
        self.spent: Spend = ZERO
        self.tally = Tally()        # the releases' events (PLD and RDP budgets compose them)
        self.lock = threading.Lock()


def pool_of(budget) -> Pool:
    """The pool of ``budget`` (by identity: equal budgets are separate pools)."""
    key = id(budget)
    with _GUARD:
        pool = _POOLS.get(key)
        if pool is None:
            pool = _POOLS[key] = Pool()
            weakref.finalize(budget, _POOLS.pop, key, None)
        return pool
