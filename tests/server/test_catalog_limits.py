"""A free catalog statement cannot take the server's memory or time (issue 33, item 3).

Eight nested ``replace()`` calls built a 10^9-character string (the server grew from 213 MB
to 2.4 GB and ran 8 s against a 3 s timeout; nine levels peaked at 13.6 GB), and a free
``ORDER BY`` over ``generate_series(1, 3e8)`` spilled 3 GB to ``<working directory>/.tmp``.
Each attack here runs in a fresh process (its peak RSS is that process's own), with the
server's 3 s interrupt, and must end within the timeout, grow the process by less than
100 MB and write no file; then the two reported ones are replayed through the wire against
``dpsql serve``, whose peak RSS is read from /proc.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import psycopg
import pytest

from tests.paths import DATA
from tests.server.serving import Process, write_deployment

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT_S = 3.0
MAX_GROWTH_MB = 100


def nested_replace(levels: int) -> str:
    text = "'aaaaaaaaaa'"
    for _ in range(levels):
        text = f"replace({text}, 'a', 'aaaaaaaaaa')"
    return f"select length({text})"


def chain(kind: str, depth: int, width: int = 900) -> str:
    """``depth`` functions over a ``width``-byte value, on a million rows."""
    text = f"('{'a' * width}' || a::text)"
    for _ in range(depth):
        text = f"({text} || 'b')" if kind == "pipe" else f"lower({text})"
    return (f"select max(length(x)) from (select {text} as x from generate_series(1, 1000) a, "
            "generate_series(1, 1000) b) s")


def columns(n: int, value: str) -> str:
    return ("select " + ", ".join(f"{value} as c{i}" for i in range(n)) +
            " from generate_series(1, 1000) a, generate_series(1, 1000) b")


KB = "'" + "a" * 1000 + "'"
ATTACKS = {
    "eight nested replace": (nested_replace(8), "54000"),
    "nine nested replace": (nested_replace(9), "54000"),
    "order by a huge series": ("select g from generate_series(1, 300000000) g order by g desc",
                               "54000"),
    "order by a huge table series": ("select g from generate_series(1, 300000000) t(g) "
                                     "order by g", "54000"),
    "a series in the select list": ("select generate_series(1, 300000000)", "54000"),
    "a cross join sorted": ("select count(*) from (select a from generate_series(1, 1000) a, "
                            "generate_series(1, 1000) b, generate_series(1, 1000) c "
                            "order by 1) s", "53200"),
    "CTEs doubling a string": (
        "with a0 as (select " + KB + " as s), a1 as (select s || s || s || s as s from a0), "
        "a2 as (select s || s || s || s as s from a1) select length(s) from a2", "54000"),
    "an array of copies": ("select array_length(array[" + ", ".join([KB] * 300) + "], 1)",
                           "54000"),
    "concat through CTEs": (
        "with a0 as (select 'ab' as s), " + ", ".join(
            f"a{i} as (select concat(s, s, s, s, s, s, s, s) as s from a{i - 1})"
            for i in range(1, 7)) + " select length(s) from a6", "54000"),
    "concat_ws with a wide separator": (
        f"select length(concat_ws({KB}, relname, relname, relname, relname, relname)) "
        "from pg_class", "54000"),
    "string_agg of a million rows": (
        f"select length(string_agg({KB}, ',')) from generate_series(1, 1000) a, "
        "generate_series(1, 1000) b", "53200"),
    "array_agg of a million rows": (
        "select length(array_agg(a)::text) from generate_series(1, 1000) a, "
        "generate_series(1, 1000) b", "54000"),
    "an array subquery of a million rows": (
        f"select array_length(array(select {KB} from generate_series(1, 1000) a, "
        "generate_series(1, 1000) b), 1)", "53200"),
    "four hundred wide columns": (columns(400, KB), "54000"),
    "a result over its bytes": (columns(15, KB), "54000"),
    "many builders": (chain("pipe", 40), "54000"),
    "the most builders, row after row": (chain("pipe", 19), "57014"),
    "lower after lower, row after row": (chain("lower", 38), "57014"),
}

RUNNER = r"""
import json, sys, threading, time
from dpsql.metadata.model import Metadata
from dpsql.server.catalog import Catalog

def peak_mb():
    with open("/proc/self/status") as f:
        return next(int(l.split()[1]) for l in f if l.startswith("VmHWM")) / 1024

sql = sys.stdin.read()
catalog = Catalog(Metadata.load(sys.argv[1]))
catalog.run("select version()")
before, cursors = peak_mb(), []
timer = threading.Timer(float(sys.argv[2]), lambda: [c.interrupt() for c in cursors])
timer.start()
start = time.monotonic()
try:
    catalog.run(sql, cursors=cursors)
    code = "00000"
except Exception as error:
    code = getattr(error, "sqlstate", type(error).__name__)
    message = str(error)
timer.cancel()
print(json.dumps({"code": code, "seconds": time.monotonic() - start,
                  "growth_mb": peak_mb() - before, "message": locals().get("message", "")}))
"""


def run_alone(sql: str, where) -> dict:
    """The attack in a fresh process whose working directory is ``where``."""
    done = subprocess.run([sys.executable, "-c", RUNNER, str(DATA / "PUMS.yaml"),
                           str(TIMEOUT_S)], input=sql, capture_output=True, text=True, cwd=where,
                          timeout=120, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("name", list(ATTACKS))
def test_an_attack_stays_within_time_memory_and_disk(name, tmp_path):
    sql, code = ATTACKS[name]
    got = run_alone(sql, tmp_path)
    assert got["code"] == code, got
    assert got["seconds"] < TIMEOUT_S + 1.0, got
    assert got["growth_mb"] < MAX_GROWTH_MB, got
    assert "uckdb" not in got["message"] and "/" not in got["message"], got
    assert list(tmp_path.iterdir()) == [], "the catalog wrote to its working directory"


# ---------------------------------------------------------------- through the wire


def peak_rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmHWM")) / 1024


@pytest.fixture
def server(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)                 # where DuckDB would have spilled (.tmp)
    path = write_deployment(tmp_path / "deployment",
                            limits={"statement_timeout_s": TIMEOUT_S, "workers": 2})
    served = Process(path)
    yield served
    served.stop()


def test_the_reported_attacks_through_the_wire(server, tmp_path):
    with psycopg.connect(server.dsn("alice"), autocommit=True) as con:
        con.execute("select version()").fetchall()
        con.execute("select * from information_schema.columns").fetchall()
        before = peak_rss_mb(server.proc.pid)
        for sql in (nested_replace(8), nested_replace(9),
                    "select g from generate_series(1, 300000000) g order by g desc",
                    chain("pipe", 15)):
            start = time.monotonic()
            with pytest.raises(psycopg.Error) as info:
                con.execute(sql).fetchall()
            assert info.value.sqlstate in ("54000", "57014"), info.value
            assert time.monotonic() - start < TIMEOUT_S + 1.0
        growth = peak_rss_mb(server.proc.pid) - before
        assert growth < MAX_GROWTH_MB, f"the server grew by {growth:.0f} MB"
        assert con.execute("select count(*) from pg_class").fetchone() == (1,)
    assert not (tmp_path / ".tmp").exists()
