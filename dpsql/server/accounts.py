"""Per-analyst accounting behind the server: one pool per analyst, one ledger file each.

Owns: the analyst's session object (a ``Reader`` over the owner's data with the
analyst's budget and ledger), its renewal periods, and the audit log. All of an
analyst's connections share one account; its lock serialises their queries, so
the budget check, the run and the charge of one query never interleave with
another's (the ledger's file lock also holds across server processes). The ledger
is the owner's directory with one file per analyst (``alice.jsonl``, or with a
renewal period ``alice.20261126T000000Z.jsonl``): a charge is written and fsync'd
before the result is sent, so a restart loses nothing and re-reads the spending.
"""
from __future__ import annotations

import fcntl
import hashlib
import json
import os
import threading
import time
from datetime import datetime, timezone

from .. import errors
from ..api.session import open_session
from ..engines import registry
from ..metadata.model import Metadata
from ..privacy.ledger import Ledger
from ..privacy.params import Budget
from .config import Analyst, Deployment


AUDIT_SQL_CHARS = 4096
"""The audit log keeps this many characters of a statement (and of a detail); a longer
statement also gets its length (``sql_chars``) and SHA-256 (``sql_sha256``, of its
UTF-8), so that one record stays a few KB whatever an analyst sends."""


class Account:
    """One analyst's pool: the reader of the current period and the lock around it."""

    def __init__(self, deployment: Deployment, metadata: Metadata, analyst: Analyst,
                 shared=None) -> None:
        self.deployment, self.metadata, self.analyst = deployment, metadata, analyst
        self.shared = shared         # the server's Spark binding, shared by every analyst
        self.lock = threading.Lock()
        self.turn = None             # the event loop's asyncio.Semaphore: statements at once
        self._reader = None
        self._period = None
        self._ledger = None          # (path, Ledger): read once, then only what is appended
        self.running = None          # the engine connection of the query in progress

    def ledger_path(self, now: float | None = None) -> tuple:
        """(period start or None, this period's ledger file)."""
        name = self.analyst.name
        period = self.analyst.renewal_s
        if period is None:
            return None, os.path.join(self.deployment.ledger_dir, f"{name}.jsonl")
        start = int((time.time() if now is None else now) // period * period)
        stamp = datetime.fromtimestamp(start, timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        return start, os.path.join(self.deployment.ledger_dir, f"{name}.{stamp}.jsonl")

    def reader(self):
        """The reader of the current period (a new pool when a renewal period starts).
        Call with ``lock`` held."""
        start, path = self.ledger_path()
        if self._reader is None or start != self._period:
            self.close()
            os.makedirs(self.deployment.ledger_dir, exist_ok=True)
            budget = Budget(**_budget_args(self.analyst.budget))
            tables = self.deployment.tables
            # The ledger is the analyst's one pool (budget=None: no second, in-memory pool,
            # which a reopened session started afresh: the thirty-first review, F3).
            reader, owned = open_session(
                self.metadata, tables=dict(tables) if tables and not self.shared else None,
                database=self.deployment.database, privacy=self.deployment.privacy,
                budget=None, ledger=self.ledger(path, budget), shared=self.shared)
            self._reader, self._owned, self._period = reader, owned, start
        return self._reader

    def ledger(self, path: str, budget: Budget) -> Ledger:
        """The ledger at ``path``, opened once: a reopened session (a new period aside)
        reads only what was appended since. The server opens every analyst's ledger when
        it starts (``Accounts.preload``), so that a large ledger is read then, not in an
        analyst's statement (twelfth review: a 1.4 GB ledger took 15 s, past the 5 s
        timeout, and slowed the other analysts)."""
        if self._ledger is None or self._ledger[0] != path:
            self._ledger = (path, Ledger(path, budget))
        return self._ledger[1]

    def preload(self) -> None:
        """Open this period's ledger now; a ledger that cannot be opened is reported to the
        analyst (58000) and the owner (the audit log) at their first statement instead."""
        _, path = self.ledger_path()
        try:
            os.makedirs(self.deployment.ledger_dir, exist_ok=True)
            self.ledger(path, Budget(**_budget_args(self.analyst.budget)))
        except (errors.Error, OSError):
            pass

    def close(self) -> None:
        owned = getattr(self, "_owned", None)
        if owned is not None:
            owned.close()
        self._reader, self._owned = None, None


def _budget_args(budget: Budget) -> dict:
    if budget.zcdp:
        return {"rho": budget.rho, "delta": budget.delta}
    return {"epsilon": budget.epsilon, "delta": budget.delta, "accountant": budget.accountant}


class Accounts:
    """Every analyst's account, and the audit log they all write."""

    def __init__(self, deployment: Deployment) -> None:
        self.deployment = deployment
        self.metadata = Metadata.load(deployment.metadata)
        self.shared = open_shared(deployment, self.metadata)   # Spark: started now, once
        self.by_name = {name: Account(deployment, self.metadata, analyst, self.shared)
                        for name, analyst in deployment.analysts.items()}
        self._audit_lock = threading.Lock()

    def preload(self) -> None:
        """Read every analyst's ledger (at the server's start, before it listens)."""
        for account in self.by_name.values():
            account.preload()

    def audit(self, analyst: str, client: str, sql: str, cost, outcome: str,
              sqlstate: str = "00000", detail: str | None = None) -> None:
        """Append one statement to the audit log (one JSON object per line). One append
        of the whole line survives a killed server; it is not fsync'd (the ledger, which
        is, holds every charge). ``detail`` is what the analyst was not told."""
        record = {"time": datetime.now(timezone.utc).isoformat(timespec="microseconds"),
                  "analyst": analyst, "client": client, "sql": sql[:AUDIT_SQL_CHARS],
                  "epsilon": None if cost is None else cost[0],
                  "delta": None if cost is None else cost[1],
                  "outcome": outcome, "sqlstate": sqlstate}
        account = self.by_name.get(analyst)
        if cost is not None and account is not None and account.analyst.budget.zcdp:
            record["rho"] = cost[2]     # what a rho budget was charged (review 33, F3)
        if len(sql) > AUDIT_SQL_CHARS:  # a long statement: its start, length and hash
            record["sql_chars"] = len(sql)
            record["sql_sha256"] = hashlib.sha256(sql.encode("utf-8", "surrogatepass")).hexdigest()
        if detail is not None:         # what the analyst was not told (paths, budgets)
            record["detail"] = detail[:AUDIT_SQL_CHARS]
        line = (json.dumps(record, ensure_ascii=False) + "\n").encode()
        with self._audit_lock:
            fd = os.open(self.deployment.audit_log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                os.write(fd, line)
            finally:
                os.close(fd)

    def close(self) -> None:
        for account in self.by_name.values():
            with account.lock:
                account.close()
        if self.shared is not None:      # the server's SparkSession stops with it
            self.shared.close()


def open_shared(deployment: Deployment, metadata: Metadata):
    """The data bound once for every analyst (a ``spark:`` deployment), or None: each
    analyst's reader has its own engine over the same session and views."""
    if deployment.spark is None:
        return None
    return registry.shared_spark(deployment.spark.master, deployment.spark.conf, metadata,
                                 deployment.tables)
