"""Planning time is bounded whatever the SQL (issue 34): a plan of a large query is built
in well under a second, so that a regression (a tree walked, copied or rendered once per
node, a quadratic builder) fails here.

The three shapes of the issue, planned without reading data (``get_privacy_cost``: parse,
validate, plan, render, dry run on NULLs), each timed in CPU seconds of this process
(wall time on a shared machine says more about the load; CPU time still grows under heavy
load, hence bounds a few times above the figures). Before the fix they took 1.9-2.6 s (a
chain of four self-joins on the person), 1.6-2.6 s (a CROSS JOIN of 1,000 VALUES rows) and
6.4-8.1 s (an IN list of 15,000 values) of CPU; docs/performance.md has the figures and
tests/benchmarks/bench_plan.py measures them.
"""
from __future__ import annotations

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


SHAPES = {
    "self-joins": ("SELECT COUNT(*) AS n FROM PUMS.PUMS a JOIN PUMS.PUMS b ON a.pid = b.pid "
                   "JOIN PUMS.PUMS c ON a.pid = c.pid JOIN PUMS.PUMS d ON a.pid = d.pid", 1.0),
    "self-join chain": (_chain(4), 1.0),
    "values": ("SELECT v.x, COUNT(*) AS n FROM PUMS.PUMS CROSS JOIN (VALUES "
               + ", ".join(f"({i})" for i in range(1000)) + ") AS v(x) WHERE age > v.x "
               "GROUP BY v.x", 1.2),
}
IN_LIST = ("SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE income IN ("
           + ", ".join(str(i) for i in range(15000)) + ")")


@pytest.fixture(scope="module")
def reader():
    meta, tables = DATA_SETS["pums"]
    opened = dpsql.from_df(dict(tables), meta, privacy=dpsql.Privacy())
    opened.get_privacy_cost("SELECT COUNT(*) AS n FROM PUMS.PUMS")     # first-use costs
    return opened


def _planned_within(reader, what: str, sql: str, bound: float) -> None:
    started = time.thread_time()            # the planning thread's CPU, not DuckDB's threads
    reader.get_privacy_cost(sql)
    took = time.thread_time() - started
    assert took < bound, f"{what}: planned in {took:.2f} s of CPU, more than {bound} s"


@pytest.mark.parametrize("shape", list(SHAPES))
def test_a_large_query_is_planned_within_its_bound(reader, shape):
    _planned_within(reader, shape, *SHAPES[shape])


def test_an_in_list_of_15000_values_is_planned_within_four_and_a_half_seconds(reader):
    """(slow: over a second of CPU; sqlglot alone takes 0.3 s to parse the list here.)
    1.83 s of CPU on a quiet machine (2026-11-28), 3.04 s in a loaded CI run, where the
    bound was 3 s; 4.5 s still fails the regression this guards against (6.4-8.1 s)."""
    _planned_within(reader, "IN list", IN_LIST, 4.5)
