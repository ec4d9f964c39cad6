"""Quantiles on neighbouring data sets: no more privacy loss than charged.

Tiny tables, so that one person moves the median by a whole rank and the outcome
buckets see it; ``tests/neighbours/harness.py`` compares the bucket frequencies with
Clopper-Pearson bounds (fresh releases, ``replay=False``)."""
from __future__ import annotations

import pandas as pd
import pytest

from tests.neighbours.harness import attack, neighbour_readers

EPSILON = 1.0
RUNS = 300
pytestmark = pytest.mark.filterwarnings("ignore:dpsql. no budget set")
META_ROWS = {"": {"s": {"t": {"row_privacy": True, "g": {"type": "string", "values": ["a", "b"]},
                              "x": {"type": "int", "lower": 0, "upper": 100}}}}}
META_IDS = {"": {"s": {"t": {"max_ids": 2, "pid": {"type": "int", "private_id": True},
                             "g": {"type": "string", "values": ["a", "b"]},
                             "x": {"type": "int", "lower": 0, "upper": 100}}}}}
BASE = list(range(0, 101, 2))      # 51 rows, median 50: one row more moves it a whole value
BUCKETS = 3


def _bucket(value) -> str:
    return "below" if value < 50 else "at" if value == 50 else "above"


def _readers(meta, extra: pd.DataFrame, base: pd.DataFrame) -> dict:
    return neighbour_readers(meta, base, extra, EPSILON)


def test_ungrouped_median_row_privacy():
    base = pd.DataFrame({"g": ["a"] * len(BASE), "x": BASE})
    readers = _readers(META_ROWS, pd.DataFrame({"g": ["a"], "x": [100]}), base)
    a, b = attack(readers, "SELECT MEDIAN(x) AS m FROM s.t", lambda df: _bucket(df.m[0]), runs=RUNS,
                  buckets=BUCKETS)
    assert a.epsilon == pytest.approx(EPSILON)


def test_grouped_median_and_max_row_privacy():
    base = pd.DataFrame({"g": ["a"] * len(BASE) + ["b"] * len(BASE), "x": BASE + BASE})
    readers = _readers(META_ROWS, pd.DataFrame({"g": ["b"], "x": [0]}), base)
    sql = "SELECT g, MEDIAN(x) AS m, MAX(x) AS hi FROM s.t GROUP BY g"
    a, _ = attack(readers, sql, lambda df: (_bucket(df.m[1]), df.hi[1] >= 98), runs=RUNS,
                  buckets=2 * BUCKETS)
    assert a.epsilon == pytest.approx(EPSILON)


def test_user_level_median_two_rows_per_person():
    base = pd.DataFrame({"pid": range(len(BASE)), "g": ["a"] * len(BASE), "x": BASE})
    person = pd.DataFrame({"pid": [99] * 5, "g": ["a"] * 5, "x": [100] * 5})   # 2 kept
    readers = _readers(META_IDS, person, base)
    sql = "SELECT g, QUANTILE_CONT(x, 0.5) AS m FROM s.t GROUP BY g"
    a, _ = attack(readers, sql, lambda df: _bucket(df.m[0]), runs=RUNS,
                  buckets=BUCKETS)
    assert a.epsilon == pytest.approx(EPSILON)
    plan = readers["without"]._plan(sql)
    assert plan.statistics[0].mechanism.rows == 2       # k = max_ids = 2 rows per person
