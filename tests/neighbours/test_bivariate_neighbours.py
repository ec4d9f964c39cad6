"""CORR, COVAR_POP, COVAR_SAMP, REGR_SLOPE, REGR_INTERCEPT: sensitivities read off the plan,
and no more privacy loss than charged on neighbouring data sets (``dpsql.plan.bivariate``;
the harness's Clopper-Pearson bounds at p < 1e-6, fresh releases)."""
from __future__ import annotations

import duckdb
import pandas as pd
import pytest

import dpsql
from tests.neighbours.harness import attack, neighbour_readers

EPSILON = 1.0
pytestmark = pytest.mark.filterwarnings("ignore:dpsql. no budget set")
META = {"": {"s": {"t": {"row_privacy": True,
                         "x": {"type": "int", "lower": 0, "upper": 10, "nullable": False},
                         "y": {"type": "int", "lower": 0, "upper": 10, "nullable": False}}}}}
FUNCTIONS = ["CORR(x, y)", "COVAR_POP(x, y)", "COVAR_SAMP(x, y)", "REGR_SLOPE(y, x)",
             "REGR_INTERCEPT(y, x)"]


def test_pair_sensitivities_scale_with_max_ids(data_dir):
    for k in (1, 3):
        meta = dpsql.Metadata.load(data_dir / "PUMS_pid.yaml").to_dict()
        meta[""]["PUMS"]["PUMS"]["max_ids"] = k
        reader = dpsql.from_df(pd.read_csv(data_dir / "PUMS_pid.csv"), meta,
                               privacy=dpsql.Privacy(epsilon=1.0))
        l1 = sorted(s.l1 for s in reader._plan(
            "SELECT CORR(age, income) FROM PUMS.PUMS").statistics)
        # n: k; S_age: 50k; S_age^2: 1250k; S_income: 250000k; S_age*income: 50 * 250000 k;
        # S_income^2: 250000^2 / 2 k
        assert l1 == [k, 50 * k, 1250 * k, 250000 * k, 12_500_000 * k, 31_250_000_000 * k]
        covar = reader._plan("SELECT COVAR_POP(age, income) FROM PUMS.PUMS").statistics
        assert len(covar) == 4 and sum(s.mechanism.epsilon for s in covar) == pytest.approx(1)
        slope = reader._plan("SELECT REGR_SLOPE(income, age) FROM PUMS.PUMS").statistics
        assert sorted(s.l1 for s in slope) == [k, 50 * k, 1250 * k, 250000 * k, 12_500_000 * k]


def test_all_five_close_to_duckdb_at_large_epsilon():
    rows = pd.DataFrame({"x": [i % 11 for i in range(2000)],
                         "y": [(3 * i) % 7 + i % 11 // 2 for i in range(2000)]})
    reader = dpsql.from_df(rows, META, privacy=dpsql.Privacy(epsilon=1e4))
    for f in FUNCTIONS:
        exact = duckdb.sql(f"SELECT {f} FROM rows").fetchall()[0][0]
        got = reader.execute_df(f"SELECT {f} AS v FROM s.t", replay=False).v[0]
        assert got == pytest.approx(exact, rel=0.02, abs=0.02), f


def test_one_person_moves_covariance_and_correlation_within_epsilon():
    base = pd.DataFrame({"x": [4, 5, 6] * 7, "y": [6, 5, 4] * 7})     # 21 rows, CORR = -1
    readers = neighbour_readers(META, base, pd.DataFrame({"x": [10], "y": [10]}), EPSILON)
    sql = "SELECT COVAR_POP(x, y) AS c, CORR(x, y) AS r FROM s.t"
    a, _ = attack(readers, sql, lambda df: (int(df.c[0] > 0), int(df.r[0] > 0)), runs=400,
                  buckets=4)
    assert a.epsilon == pytest.approx(EPSILON)


def test_pairs_skip_nulls_and_expressions_are_refused():
    meta = {"": {"s": {"t": {"row_privacy": True,
                             "x": {"type": "float", "lower": 0, "upper": 10},
                             "y": {"type": "float", "lower": 0, "upper": 10}}}}}
    rows = pd.DataFrame({"x": [1.0, 2.0, 3.0, None, 4.0] * 400,
                         "y": [2.0, 4.0, None, 9.0, 8.5] * 400})
    reader = dpsql.from_df(rows, meta, privacy=dpsql.Privacy(epsilon=1e4))
    for f in ("COVAR_SAMP(x, y)", "REGR_SLOPE(y, x)", "REGR_INTERCEPT(y, x)"):
        exact = duckdb.sql(f"SELECT {f} FROM rows").fetchall()[0][0]
        got = reader.execute_df(f"SELECT {f} AS v FROM s.t", replay=False).v[0]
        assert got == pytest.approx(exact, rel=0.02, abs=0.05), f
    before = reader.spent
    with pytest.raises(dpsql.QueryError, match="two columns"):
        reader.execute_df("SELECT CORR(x, y * 2) FROM s.t")
    assert reader.spent == before
