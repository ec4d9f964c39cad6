"""The twelfth review of issue 33: an analyst's first statement after a restart read their
whole ledger, outside the statement's deadline (a 1.4 GB ledger: 15-16 s against a 5 s
timeout, while the other analysts waited). The server now reads every analyst's ledger
when it starts, before it listens; a statement reads only what was appended since."""
import json
import os

import psycopg

import dpsql
from dpsql.privacy.ledger import Ledger
from dpsql.server.config import load
from tests.server.serving import Served, write_deployment


def _read_bytes() -> int:
    with open("/proc/self/io") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("rchar:"))


def test_a_large_ledger_is_read_when_the_server_starts_not_in_a_statement(tmp_path):
    path = write_deployment(tmp_path)
    ledger_dir = load(path).ledger_dir
    os.makedirs(ledger_dir, exist_ok=True)
    alice = os.path.join(ledger_dir, "alice.jsonl")
    Ledger(alice, dpsql.Budget(epsilon=3.0, delta=1e-5))
    line = json.dumps({"kind": "release", "time": "2026-11-28T00:00:00+00:00",
                       "query": "SELECT COUNT(*) AS n FROM PUMS.PUMS -- " + "x" * 10_000,
                       "epsilon": 0.0, "delta": 0.0, "rho": 0.0, "rho_delta": 0.0,
                       "replay": True}) + "\n"
    with open(alice, "a") as f:
        f.write(line * 3_000)                                   # 30 MB
    size = os.path.getsize(alice)
    served = Served(path)
    try:
        before = _read_bytes()
        with psycopg.connect(served.dsn(), autocommit=True) as con:
            assert con.execute("SHOW dpsql.spent").fetchone()[0].startswith("epsilon=0")
            con.execute("SELECT COUNT(*) AS n FROM PUMS.PUMS").fetchall()
        read = _read_bytes() - before
    finally:
        served.stop()
    assert size > 30_000_000
    assert read < size / 10, read          # the first statements read the file's tail only
