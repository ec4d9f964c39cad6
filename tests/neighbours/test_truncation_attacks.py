"""The hostile-analyst attacks on per-person truncation (issue 25), kept as tests.

A target person (pid 1) with many rows in two private tables; each query runs at epsilon 1e5
(noise below 0.01) on the data with and without the target, and the target must move the
count by at most the rows per person that ``explain`` states, however the joins, LEFT joins,
UNION ALL sides, per-person subqueries and filters combine them. The last test keeps a
person with k - 1, k, k + 1 and 2k + 1 identical rows at min(n, k).
"""
import re

import numpy as np
import pandas as pd
import pytest

import dpsql

K_T, K_U = 2, 3


def meta(k_t=K_T):
    table = {"pid": {"type": "int", "private_id": True},
             "x": {"type": "float", "lower": 0, "upper": 100},
             "y": {"type": "int", "lower": 0, "upper": 10}, "g": {"type": "string"}}
    # l: public, y unique (a lookup); r: public, y repeated three times.
    public = {"public": True, "y": {"type": "int"}, "name": {"type": "string"}}
    return {"": {"s": {"t": {"max_ids": k_t, **table}, "u": {"max_ids": K_U, **table},
                       "l": dict(public), "r": dict(public)}}}


def person(pid, n, same=False):
    x = [50.0] * n if same else list(np.linspace(0, 100, n))
    return pd.DataFrame({"pid": [pid] * n, "x": x, "y": [1] * n, "g": ["a"] * n})


def frames(with_target: bool, n=10):
    # The others stay within both bounds, so only the target is ever sampled: the
    # difference between the data sets is the target's contribution alone.
    others = [person(p, 1 + p % 2) for p in range(2, 40)]
    target = [person(1, n)] if with_target else []
    return {"s.t": pd.concat(target + others, ignore_index=True),
            "s.u": pd.concat(target + others[::2], ignore_index=True),
            "s.l": pd.DataFrame({"y": [1, 2], "name": ["one", "two"]}),
            "s.r": pd.DataFrame({"y": [1, 1, 1], "name": ["a", "b", "c"]})}


def count(data, sql, m=None):
    reader = dpsql.from_df(data, m or meta(), privacy=dpsql.Privacy(epsilon=1e5))
    return float(reader.execute_df(sql, replay=False).iloc[0, -1]), reader.explain(sql)


ATTACKS = [
    "SELECT COUNT(*) AS n FROM s.t a JOIN s.u b ON a.pid = b.pid",
    "SELECT COUNT(*) AS n FROM s.t a JOIN s.t b ON a.pid = b.pid JOIN s.t c ON b.pid = c.pid",
    "SELECT COUNT(*) AS n FROM s.t a LEFT JOIN s.u b ON a.pid = b.pid AND b.x > 50",
    "SELECT COUNT(*) AS n FROM s.t a JOIN s.u b ON a.pid = b.pid AND a.x < b.x",
    "SELECT COUNT(*) AS n FROM s.t a JOIN (SELECT pid, x FROM s.u UNION ALL "
    "SELECT pid, x FROM s.t) b ON a.pid = b.pid",
    "SELECT COUNT(*) AS n FROM (SELECT a.pid FROM s.t a JOIN s.u b ON a.pid = b.pid "
    "UNION ALL SELECT pid FROM s.t) z",
    "SELECT COUNT(*) AS n FROM (SELECT pid, g, COUNT(*) c FROM s.u GROUP BY pid, g) p "
    "JOIN s.t a ON a.pid = p.pid",
    "SELECT COUNT(*) AS n FROM (SELECT a.pid, a.x, COUNT(*) c FROM s.t a JOIN s.u b "
    "ON a.pid = b.pid GROUP BY a.pid, a.x) p",
    "WITH j AS (SELECT a.pid, a.x FROM s.t a JOIN s.u b ON a.pid = b.pid) "
    "SELECT COUNT(*) AS n FROM j j1 JOIN j j2 ON j1.pid = j2.pid",
    "SELECT COUNT(*) AS n FROM s.t a, s.u b, s.t c WHERE a.pid = b.pid AND b.pid = c.pid",
    # A person join, then a public lookup: unique keys keep the bound, repeated ones
    # (three rows of s.r per key) must truncate the joined rows again.
    "SELECT COUNT(*) AS n FROM s.t a JOIN s.u b ON a.pid = b.pid JOIN s.l l ON a.y = l.y",
    "SELECT COUNT(*) AS n FROM s.t a JOIN s.u b ON a.pid = b.pid JOIN s.r r ON a.y = r.y",
    "SELECT COUNT(*) AS n FROM s.t a JOIN (SELECT * FROM s.u WHERE pid IN "
    "(SELECT pid FROM s.t GROUP BY pid HAVING SUM(x) > 10)) b ON a.pid = b.pid",
]


def stated_bound(explain: str) -> int:
    found = re.search(r"each person adds at most (\d+) row", explain)
    assert found, explain
    return int(found.group(1))


@pytest.mark.parametrize("sql", ATTACKS)
def test_a_heavy_target_moves_a_join_count_by_at_most_the_stated_bound(sql):
    with_target, text = count(frames(True), sql)
    without, _ = count(frames(False), sql)
    assert with_target - without <= stated_bound(text) + 0.05


def test_a_per_person_count_over_a_person_join_is_at_most_the_product_of_the_bounds():
    """The join is not truncated again: its per-person count is still at most k_t x k_u."""
    sql = ("SELECT SUM(n) AS s FROM (SELECT a.pid, COUNT(*) n FROM s.t a JOIN s.u b "
           "ON a.pid = b.pid GROUP BY a.pid)")
    with_target, _ = count(frames(True), sql)
    without, _ = count(frames(False), sql)
    assert abs(with_target - without - K_T * K_U) < 0.05


@pytest.mark.parametrize("k", [1, 2, 3])
def test_identical_rows_at_and_around_the_bound_keep_min_n_k(k):
    for n in {max(k - 1, 1), k, k + 1, 2 * k + 1}:
        data = frames(False)
        data["s.t"] = pd.concat([data["s.t"], person(1, n, same=True)], ignore_index=True)
        for sql, expected in (("SELECT COUNT(*) AS n FROM s.t", min(n, k)),
                              ("SELECT COUNT(*) AS n FROM s.t a JOIN s.t b ON a.pid = b.pid",
                               min(n, k) ** 2)):
            got, _ = count(data, sql, meta(k))
            plain, _ = count(frames(False), sql, meta(k))
            assert abs(got - plain - expected) < 0.05, (k, n, sql)
