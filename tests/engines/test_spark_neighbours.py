"""On Spark, neighbouring data sets: truncation, group truncation, a private join, the
threshold and a quantile cost no more privacy than charged.

Two sets of DataFrames hold the same tables, one without person X (and all of X's rows).
X sits far beyond every bound, so a bound the Spark plan failed to enforce would show in
the outcome buckets; ``tests/neighbours/harness.py`` compares their frequencies with
Clopper-Pearson bounds (family-wise false alarm < 1e-6).
"""
from __future__ import annotations

import pandas as pd
import pytest

import dpsql
from tests.neighbours.harness import attack, runs_needed

EPSILON, DELTA = 1.0, 1e-6
RUNS = 60          # >= runs_needed(EPSILON, DELTA, 4) = 53: enough to fail; Spark runs are slow
X = 9999
pytestmark = pytest.mark.filterwarnings("ignore:dpsql. no budget set")

META = {"": {"s": {
    "t": {"max_ids": 2, "pid": {"type": "int", "private_id": True},
          "g": {"type": "string", "values": list("abcdefghij")},
          "k": {"type": "string"},
          "x": {"type": "int", "lower": 0, "upper": 100}},
    "p": {"max_ids": 1, "pid": {"type": "int", "private_id": True},
          "sex": {"type": "string", "values": ["f", "m"]}},
    "v": {"max_ids": 3, "pid": {"type": "int", "private_id": True},
          "cost": {"type": "int", "lower": 0, "upper": 1000}},
    "gt": {"max_ids": 20, "max_groups": 2, "max_rows_per_group": 3,
           "pid": {"type": "int", "private_id": True},
           "g": {"type": "string", "values": list("abcdefghij")}},
}}}


def _tables(with_x: bool) -> dict:
    persons = list(range(1, 301))
    t = pd.DataFrame({"pid": persons, "g": [("abcdefghij")[i % 10] for i in persons],
                      "k": ["common"] * len(persons), "x": [i % 51 for i in persons]})
    p = pd.DataFrame({"pid": persons, "sex": ["f" if i % 2 else "m" for i in persons]})
    v = pd.DataFrame({"pid": persons, "cost": [10] * len(persons)})
    gt = pd.DataFrame({"pid": persons, "g": [("abcdefghij")[i % 10] for i in persons]})
    if with_x:
        t = pd.concat([t, pd.DataFrame({"pid": [X] * 50, "g": ["a"] * 50,
                                        "k": ["only-x"] * 50, "x": [100] * 50})])
        p = pd.concat([p, pd.DataFrame({"pid": [X], "sex": ["f"]})])
        v = pd.concat([v, pd.DataFrame({"pid": [X] * 40, "cost": [1000] * 40})])
        gt = pd.concat([gt, pd.DataFrame({"pid": [X] * 200, "g": list("abcdefghij") * 20})])
    return {"s.t": t, "s.p": p, "s.v": v, "s.gt": gt}


SCHEMAS = {"s.t": "pid bigint, g string, k string, x bigint", "s.p": "pid bigint, sex string",
           "s.v": "pid bigint, cost bigint", "s.gt": "pid bigint, g string"}


@pytest.fixture(scope="module")
def readers(spark):
    out = {}
    for name, with_x in (("with X", True), ("without", False)):
        frames = {table: spark.createDataFrame(list(frame.itertuples(index=False, name=None)),
                                               SCHEMAS[table]).cache()
                  for table, frame in _tables(with_x).items()}
        out[name] = dpsql.from_connection(spark, META, tables=frames, privacy=dpsql.Privacy(
            epsilon=EPSILON, delta=DELTA))
    return out


def _exact_without(readers, sql: str) -> pd.DataFrame:
    return readers["without"].execute_df(sql, privacy=dpsql.Privacy(epsilon=1e5, delta=DELTA))


def test_enough_runs_to_fail():
    assert RUNS >= runs_needed(EPSILON, DELTA, 4)


def test_truncation_to_max_ids(readers):
    sql = "SELECT COUNT(*) AS n FROM s.t"
    base = _exact_without(readers, sql).n[0]
    attack(readers, sql, lambda df: bool(df.n[0] > base + 12), runs=RUNS, buckets=2)


def test_group_truncation_to_max_groups_and_rows(readers):
    # X has 20 rows in each of 10 groups; at most 2 groups and 3 rows in each are kept.
    sql = "SELECT g, COUNT(*) AS n FROM s.gt GROUP BY g"
    base = _exact_without(readers, sql).set_index("g").n
    attack(readers, sql, lambda df: min(int(sum(df.set_index("g").n - base > 15)), 3), runs=RUNS,
           buckets=4)


def test_private_join_on_the_person(readers):
    sql = "SELECT COUNT(*) AS n, SUM(v.cost) AS s FROM s.p JOIN s.v ON p.pid = v.pid"
    base = _exact_without(readers, sql)
    attack(readers, sql, lambda df: (bool(df.n[0] > base.n[0] + 15),
                                     bool(df.s[0] > base.s[0] + 15000)), runs=RUNS, buckets=4)


def test_a_key_of_one_person_is_thresholded(readers):
    sql = "SELECT k, COUNT(*) AS n FROM s.t GROUP BY k"
    _, b = attack(readers, sql, lambda df: "only-x" in set(df.k), runs=RUNS, buckets=2)
    assert b.counts[("answer", False)] == RUNS          # the key is never released without X


def test_quantile_of_one_persons_extreme(readers):
    sql = "SELECT MAX(x) AS hi FROM s.t"
    attack(readers, sql, lambda df: bool(df.hi[0] >= 75), runs=RUNS, buckets=2)
