"""Unknown group keys: a key held by one person appears with probability at most delta."""
import math

import numpy as np
import pandas as pd
import pytest

import dpsql


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
