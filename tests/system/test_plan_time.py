"""Planning time is bounded whatever the SQL (issue 34): a plan of a large query is built
in well under a second, so that a regression (a tree walked, copied or rendered once per
node, a quadratic builder) fails here.

The shapes of the issue, planned without reading data (``get_privacy_cost``: parse,
validate, plan, render, dry run on NULLs), each timed in CPU seconds of the planning thread
(wall time on a shared machine says more about the load; CPU time still grows under heavy
load, hence bounds five to six times the quiet figures, grown by the load measured just
before: at three times, the four self-joins took 0.14 s against 0.13 s in a parallel run
of the quick subset, while the load measured grew the bound by 1.3 only).
Before the first fix they took 1.9-2.6 s (a chain of four self-joins on the person),
1.6-2.6 s (a CROSS JOIN of 1,000 VALUES rows) and 6.4-8.1 s (an IN list of 15,000 values) of
CPU; after the second (2026-11-28) 0.024-0.028 s (four self-joins), 0.13-0.15 s (the
chain), 0.20-0.24 s (VALUES) and 0.04 s (the IN list, one typed unit:
dpsql.frontend.literal_lists, an array constant for DuckDB); after the third (2026-11-28)
about 0.10 s (the chain: its joins' SQL taken without copies, one walk of the lowered plan)
and 0.02 s (VALUES: its rows, key filter and key grid each one list node, one array
constant each for DuckDB), bounded at five times that.
docs/performance.md has the figures and tests/benchmarks/bench_plan.py measures them.
"""
from __future__ import annotations

import gc
import time

import pytest

import dpsql
from tests.paths import DATA_SETS

pytestmark = pytest.mark.filterwarnings("ignore:dpsql. no budget set")


def _chain(levels: int) -> str:
    ctes = ["c0 AS (SELECT pid, age FROM PUMS.PUMS)"]
    for i in range(1, levels + 1):
        ctes.append(f"c{i} AS (SELECT a.pid, a.age FROM c{i - 1} a JOIN c{i - 1} b "
                    "ON a.pid = b.pid)")
    return "WITH " + ", ".join(ctes) + f" SELECT COUNT(*) AS n FROM c{levels}"


IN_LIST = ("SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE income IN ("
           + ", ".join(str(i) for i in range(15000)) + ")")
SHAPES = {
    "self-joins": ("SELECT COUNT(*) AS n FROM PUMS.PUMS a JOIN PUMS.PUMS b ON a.pid = b.pid "
                   "JOIN PUMS.PUMS c ON a.pid = c.pid JOIN PUMS.PUMS d ON a.pid = d.pid", 0.15),
    "self-join chain": (_chain(4), 0.5),
    "values": ("SELECT v.x, COUNT(*) AS n FROM PUMS.PUMS CROSS JOIN (VALUES "
               + ", ".join(f"({i})" for i in range(1000)) + ") AS v(x) WHERE age > v.x "
               "GROUP BY v.x", 0.2),
    "IN list": (IN_LIST, 0.4),        # ten times: its 0.04 s is mostly fixed costs load slows most
}


@pytest.fixture(scope="module")
def reader():
    meta, tables = DATA_SETS["pums"]
    opened = dpsql.from_df(dict(tables), meta, privacy=dpsql.Privacy())
    opened.get_privacy_cost("SELECT COUNT(*) AS n FROM PUMS.PUMS")     # first-use costs
    return opened


QUIET_PARSE_S = 0.20
"""CPU seconds sqlglot takes to parse IN_LIST on this machine when quiet, in a process that
has opened a reader (2026-11-28: 0.196-0.206 s at load 1; 0.40-0.45 s was measured with
other jobs running)."""


def _parse_time() -> float:
    """CPU seconds of this thread to parse IN_LIST with sqlglot: the best of two. Under
    load the CPU time of the same work grows (a virtual machine's stolen time and shared
    caches): 2-3.6x for this parse under four busy loops on two cores."""
    import sqlglot
    best = float("inf")
    for _ in range(2):
        started = time.thread_time()
        sqlglot.parse_one(IN_LIST, read="duckdb")
        best = min(best, time.thread_time() - started)
    return best


def _planned_within(reader, what: str, sql: str, bound: float) -> None:
    """``bound`` is in CPU seconds of a quiet machine; under load, CPU time itself grows
    (two CI runs: 1.6-2x for the same plan), so the bound grows by the slowdown of a
    comparable parse measured in the same thread just before, never shrinks."""
    allowed = bound * max(1.0, _parse_time() / QUIET_PARSE_S)
    # Not timed: the collector's pass over the whole process (dpsql.api.collector runs one
    # after a plan when the last was more than a second before), which in a worker of the
    # quick subset walks every earlier test's objects (0.2 s against bounds of 0.1-0.15 s).
    gc.collect()
    enabled = gc.isenabled()
    gc.disable()
    try:
        started = time.thread_time()        # the planning thread's CPU, not DuckDB's threads
        reader.get_privacy_cost(sql)
        took = time.thread_time() - started
    finally:
        if enabled:
            gc.enable()
    assert took < allowed, f"{what}: planned in {took:.2f} s of CPU, more than {allowed:.2f} s"


@pytest.mark.parametrize("shape", list(SHAPES))
def test_a_large_query_is_planned_within_its_bound(reader, shape):
    _planned_within(reader, shape, *SHAPES[shape])
