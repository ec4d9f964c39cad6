"""An outer SELECT over one aggregating subquery or CTE (dpsql/plan/outer.py): the inner
query is the release, and its own HAVING, ORDER BY and LIMIT/OFFSET apply first, bound to
its own SELECT list; the outer WHERE, ORDER BY and LIMIT/OFFSET then apply to the groups it
kept, in post-processing, as SQL says.

Answers at epsilon = 1e5 on the clinic data (tests/data/clinic.yaml: every person within
max_ids, costs clamped to the metadata's [0, 1000] in the queries themselves) are compared
with plain DuckDB, row for row and in order.
"""
from __future__ import annotations

import duckdb
import pytest

import dpsql
from tests.paths import DATA

pytestmark = pytest.mark.filterwarnings("ignore:dpsql. no budget set", "ignore:dpsql. epsilon=")

INNER = ("SELECT department, COUNT(*) AS n, SUM(LEAST(GREATEST(cost, 0), 1000)) AS c "
         "FROM clinic.visits GROUP BY department")


@pytest.fixture(scope="module")
def clinic():
    reader = dpsql.from_df({"clinic.visits": DATA / "visits.csv"}, DATA / "clinic.yaml",
                           privacy=dpsql.Privacy(epsilon=1e5, delta=1e-6))
    con = duckdb.connect()
    con.execute("CREATE SCHEMA clinic")
    con.execute(f"CREATE TABLE clinic.visits AS SELECT * FROM read_csv_auto('{DATA / 'visits.csv'}')")
    yield reader, con
    con.close()


def _same(reader, con, sql: str) -> None:
    got, want = reader.execute_df(sql), con.sql(sql).df()
    assert list(got.columns) == list(want.columns), (got, want)
    assert len(got) == len(want), (sql, got, want)
    for col in want.columns:
        for a, b in zip(got[col], want[col]):
            if isinstance(b, str):
                assert a == b, (sql, got, want)
            else:
                assert float(a) == pytest.approx(float(b), rel=1e-3, abs=0.5), (sql, got, want)


ORDERED = [
    # issue 33: the inner ORDER BY ... LIMIT keeps the largest group; the outer ORDER BY
    # orders what it kept (it used to replace the inner LIMIT, keeping the smallest group)
    f"SELECT department, n FROM ({INNER} ORDER BY n DESC LIMIT 1) s ORDER BY n",
    # the outer LIMIT and OFFSET apply to the inner LIMIT's groups
    f"SELECT department, n FROM ({INNER} ORDER BY n DESC LIMIT 3) s ORDER BY n LIMIT 1",
    f"SELECT department, n FROM ({INNER} ORDER BY n DESC LIMIT 3 OFFSET 1) s ORDER BY "
    "department DESC",
    f"SELECT department, n FROM ({INNER} ORDER BY n DESC LIMIT 2) s ORDER BY n OFFSET 1",
    # the outer WHERE filters the groups the inner LIMIT kept (not all groups, then LIMIT)
    f"SELECT department, n FROM ({INNER} ORDER BY n DESC LIMIT 2) s WHERE n < 2000 ORDER BY n",
    f"SELECT department, c FROM ({INNER} HAVING n > 1200 ORDER BY c DESC LIMIT 2) s "
    "WHERE c < 300000 ORDER BY c",
    # the inner ORDER BY binds to the inner SELECT list: a position, and an alias the outer
    # query does not select
    f"SELECT n, department FROM ({INNER} ORDER BY 1 LIMIT 2) s ORDER BY n",
    f"SELECT department FROM ({INNER} ORDER BY n DESC LIMIT 2) s ORDER BY department",
    # the inner HAVING too: an alias the outer query renames
    f"SELECT department AS d, n AS visits FROM ({INNER} HAVING n > 1200) s ORDER BY d",
    # a CTE, with a column list and an outer expression
    f"WITH t (dep, cnt) AS ({INNER} ORDER BY c LIMIT 2) SELECT dep, cnt * 2 AS twice "
    "FROM t WHERE cnt > 1200 ORDER BY twice DESC",
]


@pytest.mark.parametrize("sql", ORDERED)
def test_the_inner_order_and_limit_apply_before_the_outer_clauses(clinic, sql):
    _same(*clinic, sql)


def test_the_outer_query_costs_what_its_release_reads(clinic):
    reader, _ = clinic
    # only the aggregates the outer query or the inner HAVING/ORDER BY read are released
    assert reader.get_privacy_cost(f"SELECT department FROM ({INNER} ORDER BY n DESC LIMIT 2) s "
                                   "ORDER BY department") == reader.get_privacy_cost(
        "SELECT department, COUNT(*) AS n FROM clinic.visits GROUP BY department")
    text = reader.explain(f"SELECT department, n FROM ({INNER} ORDER BY n DESC LIMIT 1) s "
                          "ORDER BY n")
    post = text.split("post-processing (on noisy values only):\n")[1]
    assert post.index("LIMIT 1") < post.rindex("ORDER BY")     # the cut, then the outer order

