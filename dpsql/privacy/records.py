"""One release, as the session log, the ledger and the release table all keep it.

Owns: the ``ReleaseRecord`` type. A session without a ledger logs one per answer
(replays included, at no cost); a ledger stores the same in its file (a replay as a
release record costing 0, ``Ledger.replayed``); the report (``dpsql.release.report``)
renders either list, and the two list the same rows.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .spend import Spend


@dataclass(frozen=True)
class ReleaseRecord:
    """One release: what was asked, when, what it cost, and what the release table shows."""

    time: str
    query: str
    epsilon: float
    delta: float
    rho: float = 0.0          # zCDP cost (a pure-epsilon statistic counts epsilon^2 / 2)
    rho_delta: float = 0.0    # delta outside zCDP (thresholds)
    key: str = ""             # dpsql.release.report.fingerprint: what a replay must match
    details: dict | None = field(default=None, compare=False)   # dpsql.release.report.details
    replay: bool = False      # a stored release shown again (costs nothing)
    events: tuple | None = field(default=None, compare=False)
    """Its privacy events (dpsql.privacy.composition); None in records written before them."""

    @classmethod
    def of(cls, time: str, query: str, cost: Spend, **extra) -> "ReleaseRecord":
        cost = Spend.of(cost)
        return cls(time, query, cost.epsilon, cost.delta, cost.rho, cost.rho_delta, **extra)

    @property
    def cost(self) -> Spend:
        return Spend(self.epsilon, self.delta, self.rho, self.rho_delta)
