"""On DuckDB: a heavy query's work runs on a person's max_ids kept rows, not on every row they
store (issue 33's twenty-first review, F1). The tables and checks are the engines' ones
(``tests/engines/neighbour_checks.py``: X stores 500 rows where max_ids is 3); PostgreSQL and
Spark run them in their own modules."""
from __future__ import annotations

import time

import pytest

import dpsql
from tests.engines.neighbour_checks import (  # noqa: F401 - collected here, on DuckDB
    DELTA,
    EPSILON,
    META,
    tables,
    test_a_heavy_query_reads_at_most_max_ids_rows_of_a_person,
    test_work_on_a_persons_stored_rows_is_cut_first)
from tests.neighbours.harness import runs_needed

pytestmark = pytest.mark.filterwarnings("ignore:dpsql. no budget set")


@pytest.fixture(scope="module")
def runs():
    return runs_needed(EPSILON, DELTA, 8)


@pytest.fixture(scope="module")
def readers():
    privacy = dpsql.Privacy(epsilon=EPSILON, delta=DELTA)
    return {name: dpsql.from_df(tables(with_x), META, privacy=privacy)
            for name, with_x in (("with X", True), ("without", False))}


def test_a_cheap_query_filters_before_the_cut(readers):
    """A cheap WHERE still chooses among all of a person's rows (filter, then cut): X's 3
    rows of 'c' among 500 are all kept, as before, and explain has no note (cut first, 3
    random rows of 500 would rarely be those 3)."""
    sql = "SELECT COUNT(*) AS n FROM s.r WHERE s = 'c'"
    large = dpsql.Privacy(epsilon=1e5, delta=DELTA)
    assert readers["with X"].execute_df(sql, privacy=large).n[0] == pytest.approx(3, abs=0.5)
    assert "cut to max_ids" not in readers["with X"].explain(sql)


def test_rows_of_a_person_compared_with_each_other_are_cut_first(readers):
    """A correlated EXISTS tests a person's rows against each other (pairs of stored rows:
    500 x 500 for X), however cheap its condition: it reads them cut first."""
    sql = ("SELECT COUNT(*) AS n FROM s.r a WHERE EXISTS (SELECT 1 FROM s.r b "
           "WHERE b.pid = a.pid AND b.x > a.x - 1)")
    assert "cut to max_ids" in readers["with X"].explain(sql)
    large = dpsql.Privacy(epsilon=1e5, delta=DELTA)
    counts = [r.execute_df(sql, privacy=large).n[0] for r in readers.values()]
    assert abs(counts[0] - counts[1] - 3) < 1, counts


def test_a_table_is_cut_once_for_all_its_reads(retail_reader, plain):
    """Each private table is cut once, in a CTE every read uses: cut inline in a correlated
    EXISTS, DuckDB cut lineitems again for each outer row (over 600 s for this query; no
    retail customer has more rows than max_ids, so the answer is the exact one)."""
    sql = ("SELECT COUNT(*) AS n FROM retail.lineitems l1 JOIN retail.orders o ON l1.order_id = "
           "o.order_id WHERE EXISTS (SELECT 1 FROM retail.lineitems l2 WHERE l2.order_id = "
           "l1.order_id AND l2.part_id <> l1.part_id)")
    reader = retail_reader(privacy=dpsql.Privacy(epsilon=1e6, delta=DELTA))
    assert "cut to max_ids" in reader.explain(sql)
    start = time.perf_counter()
    n = reader.execute_df(sql).n[0]
    assert time.perf_counter() - start < 120
    assert round(n) == plain.sql(sql).fetchall()[0][0]
