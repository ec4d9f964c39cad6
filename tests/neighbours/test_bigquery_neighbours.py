"""BigQuery's per-unit clamped SUM (docs/sql.md, "BigQuery's differential-privacy syntax"),
checked on neighbouring data sets.

The pair differs in one professor X of a table school.requests (metadata
tests/data/professors.yaml: max_ids 6, quantity in [0, 100]) who sits far beyond every
bound: 40 requests of quantity 100 for a pen and 40 for a pencil; every other professor
requests one item only. Each query is run many times on both data sets; ``tests/neighbours/harness.py`` fails if an outcome bucket is seen
more often on one side than the query's charge allows (Clopper-Pearson, family-wise false
alarm < 1e-6). A bucket labels each released cell by how far it is above the exact answer
without X: beyond what X may add to it (the per-person value clamped to
``contribution_bounds_per_group``), and beyond halfway to the exact answer with all of X's
rows (plain DuckDB: no truncation, no clamping), where a bound that does not hold shows most.

Power was checked by a hand-made mutation of a copy of dpsql: the derived column that
holds the clamped per-person value computed as the unclamped value (its bounds, and so the
sensitivity, unchanged): the first test fails (X's level-0 outcome 4/200 against 119/200).
A mutation that keeps every group of X (max_groups_contributed counted in the sensitivity
but not enforced on the rows) moves each cell by at most the per-cell bound and shows only
jointly (e^2 against e^1), beyond what 200 runs can tell; tests/neighbours/
test_join_neighbours.py covers the group truncation itself.
"""
from __future__ import annotations

import duckdb
import pandas as pd
import pytest

import dpsql
from tests.neighbours.harness import attack
from tests.neighbours.test_join_neighbours import _l1, shop  # noqa: F401 (the shop pair)
from tests.paths import DATA

EPSILON, DELTA, RUNS = 1.0, 1e-6, 200
X = 99999
ITEMS = ("pen", "pencil")
DP = f"SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = {EPSILON}, delta = {DELTA}{{}}) "
pytestmark = pytest.mark.filterwarnings("ignore:dpsql. no budget set")


@pytest.fixture(scope="module")
def pair():
    # 300 professors with 1 to 6 requests each, all for one item (so that truncation to
    # one group changes nobody but X), quantities within the metadata's [0, 100]
    ids = [p for p in range(1, 301) for _ in range(1 + p % 6)]
    base = pd.DataFrame({"id": ids, "item": [ITEMS[p % 2] for p in ids],
                         "quantity": [(p * 37 + i) % 101 for i, p in enumerate(ids)]})
    extreme = pd.DataFrame({"id": [X] * 80, "item": ["pen"] * 40 + ["pencil"] * 40,
                            "quantity": [100] * 80})
    frames = {"with X": pd.concat([base, extreme], ignore_index=True), "without": base}
    # Privacy(epsilon=1) as the session's: the query's OPTIONS say the same, as it is charged
    readers = {name: dpsql.from_df({"school.requests": f}, DATA / "professors.yaml",
                                   privacy=dpsql.Privacy(epsilon=5.0))
               for name, f in frames.items()}
    return frames, readers


def _exact(frame: pd.DataFrame, sql: str) -> dict:
    con = duckdb.connect()
    con.register("requests", frame)
    return {r[0]: float(r[1]) for r in con.execute(sql).fetchall()}


def _check(pair, sql: str, exact_sql: str, bound: float, l1: float) -> None:
    frames, readers = pair
    plan = readers["without"]._plan(sql)
    assert [s.l1 for s in plan.statistics] == [l1] and plan.cost[0] == EPSILON
    base, full = _exact(frames["without"], exact_sql), _exact(frames["with X"], exact_sql)
    steps = {}
    for item in ITEMS:
        shift = full[item] - base[item]
        assert shift >= 20 * bound, (item, shift, bound)     # X could show if unbounded
        steps[item] = (bound, shift / 2)

    def bucket(df):
        got = dict(zip(df.item, df.iloc[:, 1]))
        return tuple(sum(float(got[i]) - base[i] > s for s in steps[i]) for i in ITEMS)

    a, b = attack(readers, sql, bucket, runs=RUNS, buckets=3 ** len(ITEMS) + 2)
    for side in (a, b):
        assert side.epsilon == pytest.approx(EPSILON), (side.name, side.epsilon)
        assert all(label[0] == "answer" for label in side.counts), dict(side.counts)


FILTER = "WHERE item IN ('pen', 'pencil')"
EXACT_SUM = ("SELECT item, SUM(q) FROM (SELECT id, item, SUM(quantity) AS q FROM requests "
             f"{FILTER} GROUP BY id, item) GROUP BY item")


def test_per_group_clamped_sum_in_one_group(pair):
    # max_groups_contributed = 1: X's per-person sum (6 kept rows: up to 600) counts in one
    # item only, clamped to 50: L1 = 50
    sql = (DP.format(", max_groups_contributed = 1") + "item, SUM(quantity, "
           "contribution_bounds_per_group => (0, 50)) AS s FROM school.requests "
           f"{FILTER} GROUP BY item")
    _check(pair, sql, EXACT_SUM, bound=50, l1=50)


def test_per_group_clamped_sum(pair):
    # without max_groups_contributed a person has up to 6 per-person rows (one per item),
    # each clamped to 50: L1 = 6 x 50
    sql = (DP.format("") + "item, SUM(quantity, contribution_bounds_per_group => (0, 50)) "
           f"AS s FROM school.requests {FILTER} GROUP BY item")
    _check(pair, sql, EXACT_SUM, bound=50, l1=300)


# ------------------------------------------------------------------ through references

def test_per_unit_sum_of_a_table_that_reaches_its_person_through_references(shop):
    """``shop.order_items`` reaches its person only through ``order_id -> shop.orders``: the
    per-unit SUM groups by that person (the customer), so X's 900 items of 500 (truncated
    to order_items' max_ids, 50) add one per-person value, clamped to 1000: L1 = 1000. The
    shop pair of tests/neighbours/test_join_neighbours.py; the bucket is the answer above
    the exact per-customer clamped sum without X (the other customers stay within every
    bound), in steps far beyond X's 1000 and short of the 25,000 that X's kept items give
    unclamped (or clamped per order: about 10 orders of 2,500)."""
    sql = (DP.format("") + "SUM(amount, contribution_bounds_per_group => (0, 1000)) AS s "
           "FROM shop.order_items")
    assert _l1(shop, sql) == pytest.approx([1000], rel=1e-3)
    base = float(shop.exact("without", (
        "SELECT SUM(LEAST(s, 1000)) AS s FROM (SELECT o.customer_id, SUM(i.amount) AS s FROM "
        "shop.order_items i JOIN shop.orders o ON i.order_id = o.order_id GROUP BY 1)")).s[0])

    def bucket(df):
        return sum(float(df.s[0]) - base > step for step in (4000, 12500))

    a, b = attack(shop.readers, sql, bucket, runs=RUNS, buckets=5)
    for side in (a, b):
        assert side.epsilon == pytest.approx(EPSILON), (side.name, side.epsilon)
        assert all(label[0] == "answer" for label in side.counts), dict(side.counts)
