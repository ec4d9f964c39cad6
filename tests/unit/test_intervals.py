"""Confidence intervals (issue 11): coverage of the exact answer of the bounded plan.

2,000 releases of each query at several epsilons, Laplace and Gaussian: every interval kind
(COUNT, SUM, AVG, VARIANCE, STDDEV, an expression over aggregates, grouped and ungrouped)
covers the exact answer at least 1 - alpha of the time, within a binomial tolerance far in the
tail (p < 1e-7). The exact answers come from pandas on the clamped data, not from dpsql. The
releases are drawn in one batch: the plan's exact statistics are repeated 2,000 times, as if
2,000 groups, and go through the release's own noise and post-processing, intervals included.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

import dpsql
from dpsql.release.noise import add_noise

from tests.paths import DATA, ROOT

RUNS = 2000
ALPHA = 0.05
pytestmark = pytest.mark.filterwarnings("ignore:dpsql. no budget set")


def _exact(frame: pd.DataFrame) -> dict:
    """The bounded plan's exact answers (PUMS row privacy: clamping only)."""
    age, income = frame.age.clip(0, 100), frame.income.clip(0, 500000)
    return {"n": len(frame), "s": income.sum(), "a": income.mean(), "v": age.var(ddof=1),
            "sd": age.std(ddof=1), "r": age.sum() / len(frame)}


SQL = ("SELECT {keys}COUNT(*) AS n, SUM(income) AS s, AVG(income) AS a, VARIANCE(age) AS v, "
       "STDDEV(age) AS sd, SUM(age) / COUNT(*) AS r FROM PUMS.PUMS{group}")


def _batch(reader, sql: str, runs: int) -> pd.DataFrame:
    """``runs`` independent releases of ``sql`` with their intervals, in one frame."""
    plan = reader._plan(sql)
    exact = reader.engine.run(reader.engine.compile(plan))
    tiled = {k: np.ma.concatenate([np.ma.asarray(v)] * runs) if len(v) else v
             for k, v in exact.items()}
    noisy = add_noise(plan, tiled)
    return reader._with_intervals(plan, noisy, ALPHA)


def _floor(p: float) -> int:
    """Fewest covers a correct interval shows in RUNS, except with probability < 1e-7."""
    return int(sps.binom.ppf(1e-7, RUNS, p))


@pytest.mark.parametrize("gaussian", [False, True], ids=["laplace", "gaussian"])
@pytest.mark.parametrize("epsilon", [0.1, 1.0, 4.0])
def test_every_interval_kind_covers_the_exact_answer(pums, epsilon, gaussian):
    privacy = dpsql.Privacy(epsilon=epsilon, delta=1e-6)
    if gaussian:
        for stat in (dpsql.Stat.count, dpsql.Stat.sum_int, dpsql.Stat.sum_large_int,
                     dpsql.Stat.sum_float):
            privacy.mechanisms.map[stat] = dpsql.Mechanism.gaussian
    reader = dpsql.from_df(pums, DATA / "PUMS.yaml", privacy=privacy)
    out = _batch(reader, SQL.format(keys="", group=""), RUNS)
    assert len(out) == RUNS
    truth = _exact(pums)
    for name, value in truth.items():
        lo, hi = out[f"{name}_lo"].to_numpy(float), out[f"{name}_hi"].to_numpy(float)
        covers = int(((lo <= value) & (value <= hi)).sum())
        assert covers >= _floor(1 - ALPHA), (name, covers, value, lo[:3], hi[:3])
        # Infinite only where a divisor's interval reaches 0 (rare even at epsilon 0.1).
        assert (np.isfinite(lo) & np.isfinite(hi)).mean() > (0.9 if epsilon < 1 else 0.99), name
        # The release lies inside its interval.
        released = out[name].to_numpy(float)
        assert (lo <= released + 1e-9).all(), name
        assert (released <= hi + 1e-9).all(), name
    # The count's interval is exact, not merely wide: it misses about alpha of the time.
    lo, hi = out.n_lo.to_numpy(float), out.n_hi.to_numpy(float)
    misses = int(((lo > truth["n"]) | (truth["n"] > hi)).sum())
    assert misses >= int(sps.binom.ppf(1e-7, RUNS, ALPHA / 3)), misses


def test_grouped_intervals_cover_each_group(pums):
    reader = dpsql.from_df(pums, DATA / "PUMS.yaml", privacy=dpsql.Privacy(epsilon=1.0, delta=1e-6))
    out = _batch(reader, SQL.format(keys="sex, ", group=" GROUP BY sex"), RUNS // 2)
    for sex, frame in pums.groupby("sex"):
        rows = out[out.sex == str(sex)]
        assert len(rows) >= RUNS // 2 - 5       # groups of ~500 rows clear the threshold
        for name, value in _exact(frame).items():
            covers = int(((rows[f"{name}_lo"] <= value) & (value <= rows[f"{name}_hi"])).sum())
            assert covers >= int(sps.binom.ppf(1e-7, len(rows), 1 - ALPHA)), (sex, name, covers)


def test_intervals_at_a_low_level_do_miss(pums):
    # At alpha = 0.5 a count's interval must miss often: a test that intervals are not
    # simply infinite (a broken propagation would still pass the coverage tests).
    # (epsilon 0.05: scale 20, so the discrete noise's steps barely move the coverage)
    reader = dpsql.from_df(pums, DATA / "PUMS.yaml", privacy=dpsql.Privacy(epsilon=0.05))
    plan = reader._plan("SELECT COUNT(*) AS n FROM PUMS.PUMS")
    exact = reader.engine.run(reader.engine.compile(plan))
    noisy = add_noise(plan, {k: np.ma.concatenate([np.ma.asarray(v)] * RUNS) for k, v in exact.items()})
    out = reader._with_intervals(plan, noisy, 0.5)
    covers = int(((out.n_lo <= 1000) & (1000 <= out.n_hi)).sum())
    assert _floor(0.5) <= covers <= int(sps.binom.isf(1e-7, RUNS, 0.55))


def test_end_to_end_api_cli_replay_and_explain(pums, tmp_path):
    budget = dpsql.Budget(epsilon=10.0)
    reader = dpsql.from_df(pums, DATA / "PUMS.yaml", privacy=dpsql.Privacy(epsilon=1.0, delta=1e-6),
                           budget=budget)
    sql = "SELECT sex, COUNT(*) AS n, AVG(age) AS a, MEDIAN(age) AS m FROM PUMS.PUMS GROUP BY sex"
    out = reader.execute_with_accuracy_df(sql, alpha=0.1)
    assert list(out.columns) == ["sex", "n", "n_lo", "n_hi", "a", "a_lo", "a_hi", "m", "m_lo", "m_hi"]
    assert (out.m_lo == 0).all() and (out.m_hi == 100).all()      # a quantile: its bounds
    spent = reader.spent
    plain = reader.execute_df(sql)                  # the same release: free, same values
    assert reader.spent == spent and plain.equals(out[["sex", "n", "a", "m"]])
    again = reader.execute_with_accuracy_df(sql, alpha=0.1)
    assert again.equals(out) and reader.spent == spent
    wider = reader.execute_with_accuracy_df(sql, alpha=0.01)
    assert (wider.n_hi - wider.n_lo > out.n_hi - out.n_lo).all() and reader.spent == spent
    text = reader.explain(sql)
    assert "accuracy of each noisy output" in text and "  a: 95% interval by interval arithmetic" in text
    with pytest.raises(dpsql.ProgrammingError, match="alpha"):
        reader.execute_with_accuracy_df(sql, alpha=1.5)
    # Outputs without noise (group keys) get no interval; a public-keys-only query none.
    assert "sex_lo" not in out.columns


def test_cli_accuracy_adds_interval_columns_and_validates_the_level():
    import json
    import os
    import subprocess
    import sys
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    base = [sys.executable, "-m", "dpsql", "query", "--metadata", str(DATA / "PUMS.yaml"),
            "--table", f"PUMS.PUMS={DATA / 'PUMS.csv'}", "--epsilon", "1", "--format", "json"]
    sql = "SELECT sex, COUNT(*) AS n, AVG(age) AS a FROM PUMS.PUMS GROUP BY sex"
    proc = subprocess.run(base + ["--accuracy", "0.9", sql], capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout)
    assert list(rows[0]) == ["sex", "n", "n_lo", "n_hi", "a", "a_lo", "a_hi"]
    assert all(r["n_lo"] <= r["n"] <= r["n_hi"] and r["a_lo"] <= r["a"] <= r["a_hi"] for r in rows)
    bad = subprocess.run(base + ["--accuracy", "1", sql], capture_output=True, text=True, env=env)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr and "--accuracy" in bad.stderr


def test_integer_outputs_have_integer_interval_ends(pums, data_dir):
    r = dpsql.from_df(pums, data_dir / "PUMS.yaml", privacy=dpsql.Privacy(epsilon=1.0))
    df = r.execute_with_accuracy_df("SELECT COUNT(*) AS n, SUM(age) AS s, AVG(age) AS a "
                                    "FROM PUMS.PUMS")
    for name in ("n", "s"):
        assert df[name].dtype.kind == "i"
        assert df[f"{name}_lo"].dtype.kind == "i" and df[f"{name}_hi"].dtype.kind == "i"
        assert df[f"{name}_lo"][0] <= df[name][0] <= df[f"{name}_hi"][0]
    assert df["a_lo"].dtype == np.float64


def test_interval_sql_grows_with_the_expression_not_exponentially(pums, data_dir):
    """Each bound is a column computed once (nested SELECTs by depth): VARIANCE and STDDEV
    intervals once rendered 4^depth copies of their products (1-3 s per query)."""
    from dpsql.engines.postprocess import render
    from dpsql.release.intervals import with_intervals
    r = dpsql.from_df(pums, data_dir / "PUMS.yaml", privacy=dpsql.Privacy(epsilon=1.0))
    plan = r._plan("SELECT VARIANCE(age) AS v, STDDEV(income) AS s FROM PUMS.PUMS")
    post, _ = with_intervals(plan, 0.05)
    assert len(render(post)) < 30_000


def test_unbounded_interval_ends_of_integer_outputs_stay_infinite(data_dir):
    """Found by the property tests: ABS of a count has no finite interval here; its ends
    must stay infinite (a cast to int64 made them -2^63, missing the release)."""
    meta = {"": {"S": {"T": {"row_privacy": True, "x": {"type": "int", "lower": 0, "upper": 0}}}}}
    r = dpsql.from_df({"S.T": pd.DataFrame({"x": pd.Series([], dtype="int64")})}, meta,
                      privacy=dpsql.Privacy(epsilon=1.0))
    df = r.execute_with_accuracy_df("SELECT COUNT(*) + COUNT(*) + ABS(COUNT(*)) AS v FROM S.T")
    assert df["v_lo"][0] <= df["v"][0] <= df["v_hi"][0]
