"""Unknown group keys: a key held by one person appears with probability at most delta."""
import math

import numpy as np
import pandas as pd
import pytest

import dpsql
from tests.neighbours.harness import attack, cp_lower


def _data(rare_rows: int) -> pd.DataFrame:
    common = pd.DataFrame({"pid": np.arange(1, 401), "key": "common"})
    rare = pd.DataFrame({"pid": [1000] * rare_rows, "key": [f"rare{i}" for i in range(rare_rows)]})
    return pd.concat([common, rare], ignore_index=True)


def _meta(max_ids: int) -> dict:
    return {"": {"S": {"T": {"max_ids": max_ids, "pid": {"type": "int", "private_id": True},
                             "key": {"type": "string"}}}}}


def _release_rate(max_ids: int, delta: float, runs: int) -> tuple:
    r = dpsql.from_df(_data(max_ids), _meta(max_ids),
                      privacy=dpsql.Privacy(epsilon=1.0, delta=delta))   # no budget: many runs
    rare = common = 0
    for _ in range(runs):
        keys = set(r.execute_df("SELECT key, COUNT(*) AS n FROM S.T GROUP BY key", replay=False).key)
        rare += any(k.startswith("rare") for k in keys)
        common += "common" in keys
    return rare, common, r


@pytest.mark.parametrize("max_ids", [1, 3])
def test_rare_keys_bounded_by_delta(max_ids):
    """With delta = 0.2 the person's keys (one per row) appear together at most 20% of runs."""
    runs, delta = 400, 0.2
    rare, common, _ = _release_rate(max_ids, delta, runs)
    # binomial(400, 0.2) exceeds 80 + 5.2 sd = 121.6 with probability < 1e-6
    assert rare <= runs * delta + 5.2 * math.sqrt(runs * delta * (1 - delta))
    assert common == runs            # 400 persons are far above tau


def test_rare_key_never_appears_at_default_delta():
    rare, common, r = _release_rate(1, dpsql.DEFAULT_DELTA, 200)
    assert rare == 0 and common == 200
    plan = r._plan("SELECT key, COUNT(*) AS n FROM S.T GROUP BY key")
    assert plan.threshold is plan.statistics[0]        # the released COUNT(*) is reused
    assert len(plan.statistics) == 1 and plan.tau > 1


def test_tau_matches_the_formula():
    """tau: smallest t with k * P(1 + Z >= t - (k - 1)) <= delta, Z discrete Laplace."""
    for max_ids in (1, 4):
        r = dpsql.from_df(_data(max_ids), _meta(max_ids),
                          privacy=dpsql.Privacy(epsilon=1.0, delta=1e-6))
        plan = r._plan("SELECT key, COUNT(*) AS n FROM S.T GROUP BY key")
        m = plan.threshold.mechanism
        p = math.exp(-1 / m.scale)

        def tail(t):         # P(Z >= t) for t >= 1
            return p ** t / (1 + p)
        shift = plan.tau - (max_ids - 1)
        assert max_ids * tail(math.ceil(shift) - 1) <= 1e-6 * (1 + 1e-9)
        assert max_ids * tail(math.ceil(shift) - 2) > 1e-6


def test_a_key_only_used_by_having_is_still_thresholded():
    r = dpsql.from_df(_data(1), _meta(1), privacy=dpsql.Privacy(epsilon=1.0))
    plan = r._plan("SELECT key FROM S.T GROUP BY key")
    assert plan.threshold is not None and plan.statistics[0].stat == dpsql.Stat.threshold


# -- the count of distinct persons as the threshold ------------------------------------
#
# Two plans that threshold on persons (dpsql/plan/threshold.py): max_groups 4 and
# max_rows_per_group 5 with the default (Laplace) noise, whose person count has L1 = 4
# against the row count's 20; and max_ids 4 with Gaussian noise (L2 = 2 against 4).
# A person reaches at most L0 = 4 groups in both.
#
# Power, checked by hand-made mutations of a copy of dpsql: tau computed for one group
# instead of L0 fails both delta tests; a threshold on the exact person count (no
# noise) fails both epsilon tests. A person count charged a sensitivity of 1 instead
# of L0 passes the epsilon tests (the harness cannot see e^(4 eps_t) in 300 runs) and is
# caught by the sensitivity assertion in _person_reader.

PERSON_PLANS = {
    "max_groups": ({"max_ids": 20, "max_groups": 4, "max_rows_per_group": 5}, False),
    "gaussian": ({"max_ids": 4}, True),
}
GROUPED = "SELECT key, COUNT(*) AS n FROM S.T GROUP BY key"
X = 1_000_000            # the person who differs


def _person_meta(options: dict) -> dict:
    return {"": {"S": {"T": {**options, "pid": {"type": "int", "private_id": True},
                             "key": {"type": "string"}}}}}


def _person_reader(frame, plan: str, epsilon: float, delta: float):
    options, gaussian = PERSON_PLANS[plan]
    privacy = dpsql.Privacy(epsilon=epsilon, delta=delta)
    if gaussian:
        privacy.mechanisms.map[dpsql.Stat.count] = dpsql.Mechanism.gaussian
        privacy.mechanisms.map[dpsql.Stat.threshold] = dpsql.Mechanism.gaussian
    reader = dpsql.from_df(frame, _person_meta(options), privacy=privacy)
    plan_ = reader._plan(GROUPED)
    assert plan_.threshold.persons and plan_.threshold.stat == dpsql.Stat.threshold
    assert plan_.threshold_choice.groups == 4
    # 1 per group, in at most 4 groups (a sensitivity of 1 would pass the tests below)
    assert (plan_.threshold.l1, plan_.threshold.l2) == (4, 2)
    return reader, plan_


def _rows(pid, key, n=1) -> pd.DataFrame:
    return pd.DataFrame({"pid": [pid] * n, "key": [key] * n})


def _x_rows(plan: str, keys: list) -> pd.DataFrame:
    """X's rows in ``keys`` (at most L0 = 4 of them): as many as one key may count (5
    under max_rows_per_group; 50, truncated to 5, in the first) or, under max_ids 4,
    one in each, so that truncation keeps X in every one of them."""
    if plan == "max_groups":
        return pd.concat([_rows(X, keys[0], 50)] + [_rows(X, k, 5) for k in keys[1:]])
    return pd.concat([_rows(X, k) for k in keys])


@pytest.mark.parametrize("plan", sorted(PERSON_PLANS))
def test_person_threshold_new_keys_bounded_by_delta(plan):
    """X alone holds 4 keys (the most a person reaches), 50 rows in one of them: with
    delta = 0.2 any of them appears in at most delta_t of the runs (Clopper-Pearson,
    p < 1e-6). A tau that forgot L0 shows about 1 - (1 - delta_t)^4; a row count
    thresholded at the person count's tau shows the key of 5 rows almost always."""
    runs = 400
    common = pd.DataFrame({"pid": np.arange(1, 401), "key": "common"})
    frame = pd.concat([common, _x_rows(plan, [f"new{i}" for i in range(4)])], ignore_index=True)
    reader, p = _person_reader(frame, plan, 1.0, 0.2)
    new = common_seen = 0
    for _ in range(runs):
        keys = set(reader.execute_df(GROUPED, replay=False).key)
        new += any(k.startswith("new") for k in keys)
        common_seen += "common" in keys
    assert cp_lower(new, runs, 1e-6) <= p.threshold_delta, (new, runs, p.threshold_delta)
    assert common_seen == runs                 # 400 persons, far above tau


def _near_bucket(p, base: int, per_key: int):
    """(near0: withheld / released low / high, how many of near1..near3, new key seen)."""
    def label(df):
        got = dict(zip(df.key, df.n))
        near0 = "-" if "near0" not in got else ("high" if got["near0"] >= base + per_key / 2
                                                 else "low")
        return (near0, sum(f"near{i}" in got for i in range(1, 4)), "new0" in got)
    return label


@pytest.mark.parametrize("plan", sorted(PERSON_PLANS))
def test_person_threshold_neighbours_within_epsilon(plan):
    """Keys one person short of tau: X adds themselves (and as many rows as a key may
    count) to three of them and creates a fourth key with 50 rows; which keys appear, and
    the released count of one, must be within the query's (epsilon, delta)."""
    _, p = _person_reader(_rows(1, "a"), plan, 1.0, 1e-6)
    persons = math.ceil(p.tau) - 1                 # released about half the time
    near = [pd.DataFrame({"pid": np.arange(1, persons + 1) + 10_000 * i, "key": f"near{i}"})
            for i in range(4)]
    without = pd.concat([pd.DataFrame({"pid": np.arange(1, 301) + 100_000, "key": "common"}),
                         *near], ignore_index=True)
    x = _x_rows(plan, ["new0", "near0", "near1", "near2"])
    with_x = pd.concat([without, x], ignore_index=True)
    readers = {"with X": _person_reader(with_x, plan, 1.0, 1e-6)[0],
               "without": _person_reader(without, plan, 1.0, 1e-6)[0]}
    per_key = 5 if plan == "max_groups" else 1
    attack(readers, GROUPED, _near_bucket(p, persons, per_key), runs=300, buckets=24)
