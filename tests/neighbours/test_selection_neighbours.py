"""Private top-k selection on neighbouring data sets: no more privacy loss than charged.

Two keys tied in the data set without the person; the person adds rows to one of them,
so the winner's frequency moves as much as the mechanism allows (``ORDER BY COUNT(*)
DESC LIMIT k`` over public keys: ``dpsql.mechanisms.selection``). The harness compares
the winners' frequencies with Clopper-Pearson bounds at p < 1e-6 (fresh releases)."""
from __future__ import annotations

import pandas as pd
import pytest

import dpsql
from tests.neighbours.harness import attack, neighbour_readers

EPSILON = 1.0
RUNS = 400
KEYS = ["a", "b", "c", "d"]
pytestmark = pytest.mark.filterwarnings("ignore:dpsql. no budget set")
META_ROWS = {"": {"s": {"t": {"row_privacy": True, "g": {"type": "string", "values": KEYS}}}}}
META_IDS = {"": {"s": {"t": {"max_ids": 2, "pid": {"type": "int", "private_id": True},
                             "g": {"type": "string", "values": KEYS}}}}}
BASE = ["a"] * 6 + ["b"] * 6 + ["c"] * 3          # d: no rows (a public key all the same)


def _readers(meta, base: pd.DataFrame, extra: pd.DataFrame) -> dict:
    return neighbour_readers(meta, base, extra, EPSILON)


def test_top1_row_privacy():
    readers = _readers(META_ROWS, pd.DataFrame({"g": BASE}), pd.DataFrame({"g": ["b"]}))
    sql = "SELECT g FROM s.t GROUP BY g ORDER BY COUNT(*) DESC LIMIT 1"
    a, _ = attack(readers, sql, lambda df: tuple(df.g), runs=RUNS, buckets=len(KEYS))
    assert a.epsilon == pytest.approx(EPSILON)
    plan = readers["without"]._plan(sql)
    assert plan.statistics[0].mechanism.k == 1 and plan.statistics[0].mechanism.rows == 1


def test_top2_user_level_two_rows_per_person():
    base = pd.DataFrame({"pid": range(len(BASE)), "g": BASE})
    person = pd.DataFrame({"pid": [99] * 5, "g": ["b"] * 5})      # truncated to 2 rows
    readers = _readers(META_IDS, base, person)
    sql = "SELECT g FROM s.t GROUP BY g ORDER BY COUNT(*) DESC LIMIT 2"
    a, _ = attack(readers, sql, lambda df: tuple(df.g), runs=RUNS, buckets=len(KEYS) * 3)
    assert a.epsilon == pytest.approx(EPSILON)
    mech = readers["without"]._plan(sql).statistics[0].mechanism
    assert (mech.k, mech.rows) == (2, 2)       # Delta = max_ids = 2 rows per key


def test_selection_releases_winners_only_and_costs_by_k():
    frame = pd.DataFrame({"g": ["a"] * 400 + ["b"] * 300 + ["c"] * 200})
    reader = dpsql.from_df(frame, META_ROWS, privacy=dpsql.Privacy(epsilon=EPSILON, delta=1e-6))
    out = reader.execute_df("SELECT g FROM s.t GROUP BY g ORDER BY COUNT(*) DESC LIMIT 2",
                            replay=False)
    assert list(out.columns) == ["g"] and list(out.g) == ["a", "b"]
    # Not the shape (a count is shown): an ordinary noisy histogram.
    plan = reader._plan("SELECT g, COUNT(*) AS n FROM s.t GROUP BY g ORDER BY n DESC LIMIT 2")
    assert plan.statistics[0].mechanism.name != "top_k_permute_and_flip"
    # More keys cost the same; a larger k means less epsilon per round.
    many = {"": {"s": {"t": {"row_privacy": True, "g": {
        "type": "string", "values": [f"k{i}" for i in range(500)]}}}}}
    wide = dpsql.from_df(frame, many, privacy=dpsql.Privacy(epsilon=EPSILON, delta=1e-6))
    sql = "SELECT g FROM s.t GROUP BY g ORDER BY COUNT(*) DESC LIMIT {}"
    one, ten = (wide._plan(sql.format(k)).statistics[0].mechanism for k in (1, 10))
    assert one.epsilon == pytest.approx(EPSILON) and ten.epsilon == pytest.approx(EPSILON)
    assert ten.scale == pytest.approx(10 * one.scale)
    # A LIMIT past the public key set spends no round on nothing: k is at most the keys.
    three, huge = (reader._plan(sql.format(k)).statistics[0].mechanism for k in (4, 10 ** 6))
    assert huge.scale == pytest.approx(three.scale)


def test_mode_is_a_top1_selection_and_misuse_is_refused_free():
    frame = pd.DataFrame({"g": ["a"] * 40 + ["b"] * 300 + ["c"] * 200})
    reader = dpsql.from_df(frame, META_ROWS, privacy=dpsql.Privacy(epsilon=EPSILON, delta=1e-6))
    out = reader.execute_df("SELECT MODE(g) AS m FROM s.t WHERE g <> 'c'", replay=False)
    assert out.to_dict("list") == {"m": ["b"]}
    mech = reader._plan("SELECT MODE(g) FROM s.t").statistics[0].mechanism
    assert (mech.name, mech.k, mech.epsilon) == ("top_k_permute_and_flip", 1, pytest.approx(1.0))
    before = reader.spent
    for sql in ("SELECT MODE(g), COUNT(*) FROM s.t", "SELECT g, MODE(g) FROM s.t GROUP BY g",
                "SELECT MODE(g) FROM s.t LIMIT 2"):
        with pytest.raises(dpsql.QueryError, match="MODE"):
            reader.execute_df(sql)
    assert reader.spent == before


def test_per_key_bound_from_max_rows_per_group_and_explain(shop_reader):
    reader = shop_reader(privacy=dpsql.Privacy(epsilon=2.0))
    sql = "SELECT channel FROM shop.orders GROUP BY channel ORDER BY COUNT(*) DESC LIMIT 2"
    mech = reader._plan(sql).statistics[0].mechanism
    # max_ids 20 rows, but max_rows_per_group 10 in one key: Delta = 10 rows, 1.0 per round
    assert (mech.k, mech.rows, mech.epsilon) == (2, 10, pytest.approx(2.0))
    assert mech.scale == pytest.approx(10.0)
    text = reader.explain(sql)
    assert "top-2 selection by 2 rounds of permute-and-flip" in text
    assert "only the winners of the private selection are released" in text
    assert len(reader.execute_df(sql, replay=False)) == 2
