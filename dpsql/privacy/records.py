"""One release, as the session log, the ledger and the release table all keep it.

Owns: the ``ReleaseRecord`` type. A session without a ledger logs one per answer
(replays included, at no cost); a ledger stores the same in its file (a replay as a
release record costing 0, ``Ledger.replayed``); the report (``dpsql.release.report``)
renders either list, and the two list the same rows.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from .composition import read_events
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


def release_of(record: dict, full: bool, known: dict | None = None) -> ReleaseRecord:
    """A ledger's release record as a ``ReleaseRecord``; without its query and details
    unless ``full`` (what a ledger keeps in memory). ``known`` (key -> release, filled in
    file order) completes an abridged replay record with the query and details of the
    release it replays. Raises ValueError (or KeyError, TypeError) on a malformed record."""
    eps, delta = float(record["epsilon"]), float(record["delta"])
    # Records written before zCDP accounting: (eps, delta)-DP is
    # delta-approximately eps^2/2-zCDP.
    rho = float(record.get("rho", eps * eps / 2))
    rho_delta = float(record.get("rho_delta", delta if "rho" not in record else 0.0))
    cost = Spend(eps, delta, rho, rho_delta)
    if not all(math.isfinite(c) and c >= 0 for c in cost):
        raise ValueError("negative or non-finite cost")
    details = record.get("details")
    if details is not None and not isinstance(details, dict):
        raise ValueError("details is not an object")
    query = str(record["query"])
    events = read_events(record["events"]) if "events" in record else None
    out = ReleaseRecord(str(record["time"]), query if full else "", *cost,
                        key=str(record.get("key", "")), details=details if full else None,
                        replay=record.get("replay") is True, events=events)
    if known is not None and out.key:
        if record.get("abridged") is True and out.key in known:
            return replace(out, query=known[out.key].query, details=known[out.key].details)
        if not out.replay:
            known[out.key] = out
    return out
