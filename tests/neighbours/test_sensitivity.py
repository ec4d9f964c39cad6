"""Each statistic's stability map, read off the plan: the numbers docs/privacy.md promises."""
import math

import pandas as pd
import pytest

import dpsql


def _stats(data_dir, sql, max_ids=None, **privacy):
    meta = dpsql.Metadata.load(data_dir / "PUMS_pid.yaml").to_dict()
    if max_ids is not None:
        meta[""]["PUMS"]["PUMS"]["max_ids"] = max_ids
    df = pd.read_csv(data_dir / "PUMS_pid.csv")
    r = dpsql.from_df(df, meta, privacy=dpsql.Privacy(epsilon=1.0, **privacy))
    return sorted((s.l1, s.l2) for s in r._plan(sql).statistics)


@pytest.mark.parametrize("k", [1, 3])
def test_sensitivities_scale_with_max_ids(data_dir, k):
    # SUM alone: k * max(|L|, |U|); income is bounded by [0, 500000]
    assert _stats(data_dir, "SELECT SUM(income) FROM PUMS.PUMS", k) == [(k * 500000,) * 2]
    # with its count: centred, k * (U - L) / 2, and the count k
    assert _stats(data_dir, "SELECT SUM(income), COUNT(income) FROM PUMS.PUMS", k) == \
        [(k, k), (k * 250000, k * 250000)]
    # VAR: count k, centred sum k * h, sum of squares k * max(c, h^2 - c), h = 50, c = 1250
    assert _stats(data_dir, "SELECT VAR(age) FROM PUMS.PUMS", k) == \
        [(k, k), (k * 50, k * 50), (k * 1250, k * 1250)]
    # persons: 1 ungrouped; L1 = k, L2 = sqrt(k) over groups (with delta: keys are thresholded
    # on this very count, so it is the only statistic)
    assert _stats(data_dir, "SELECT COUNT(DISTINCT pid) FROM PUMS.PUMS", k) == [(1, 1)]
    assert _stats(data_dir, "SELECT sex, COUNT(DISTINCT pid) FROM PUMS.PUMS GROUP BY sex", k) \
        == [(k, math.sqrt(k))]


def test_noise_scale_is_sensitivity_over_epsilon_share(data_dir):
    df = pd.read_csv(data_dir / "PUMS_pid.csv")
    r = dpsql.from_df(df, data_dir / "PUMS_pid.yaml", privacy=dpsql.Privacy(epsilon=0.5))
    for s in r._plan("SELECT COUNT(*), SUM(age) FROM PUMS.PUMS").statistics:
        assert s.mechanism.scale == pytest.approx(s.l1 / 0.25, rel=1e-6)
        assert s.mechanism.scale >= s.l1 / 0.25       # rounded up, never down


def test_rows_outside_the_public_values_never_count(pums, data_dir):
    """GROUP BY on a public key list: rows with other values are dropped before aggregation."""
    meta = dpsql.Metadata.load(data_dir / "PUMS.yaml").to_dict()
    meta["PUMS"]["PUMS"]["PUMS"]["educ"]["values"] = ["9", "13", "77"]
    r = dpsql.from_df(pums, meta, privacy=dpsql.Privacy(epsilon=50.0, delta=0.0))
    df = r.execute_df("SELECT educ, COUNT(*) AS n FROM PUMS.PUMS GROUP BY educ")
    assert sorted(df.educ) == ["13", "77", "9"]            # only the listed keys, absent 77 too
    truth = pums.educ.astype(str).value_counts()
    got = dict(zip(df.educ, df.n))
    # COUNT(*) with sensitivity 1 at epsilon 50: |noise| < 1 except with probability ~1e-21
    assert abs(got["9"] - truth["9"]) <= 1 and abs(got["13"] - truth["13"]) <= 1
    assert abs(got["77"]) <= 1
