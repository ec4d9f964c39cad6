"""Quantiles, MEDIAN, MIN, MAX (issue 13): answers, exact sampling, refusals, bounds.

Answers are checked at a large epsilon against DuckDB's exact quantiles of the same
bounded rows (a band of order statistics around p, widened by one cell); the sampler
by a chi-square test against the exact permute-and-flip probabilities (estimate_bounds:
tests/system/test_bounds_estimate.py).
"""
from __future__ import annotations

import math
from fractions import Fraction

import duckdb
import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

import dpsql
from dpsql.mechanisms.quantile import Grid, PermuteAndFlip, permute_and_flip, score_gaps

from tests.paths import DATA

pytestmark = pytest.mark.filterwarnings("ignore:dpsql. no budget set")


@pytest.fixture(scope="module", params=["PUMS", "PUMS_pid"])
def setup(request):
    frame = pd.read_csv(DATA / f"{request.param}.csv")
    reader = dpsql.from_df(frame, DATA / f"{request.param}.yaml",
                           privacy=dpsql.Privacy(epsilon=20000.0, delta=1e-6))
    con = duckdb.connect()
    con.register("t", frame)
    return reader, con


def _band(con, column: str, p: float, key: str | None, clamp=(0, 500000)):
    """Per group: (QUANTILE_DISC at p - 0.05, at p + 0.05) of the clamped values."""
    value = f"LEAST(GREATEST({column}, {clamp[0]}), {clamp[1]})"
    lo, hi = max(p - 0.05, 0.0), min(p + 0.05, 1.0)
    group = f"{key}::VARCHAR" if key else "'all'"
    rows = con.execute(f"SELECT {group}, QUANTILE_DISC({value}, {lo}), QUANTILE_DISC({value}, {hi}) "
                       f"FROM t GROUP BY 1").fetchall()
    return {k: (a, b) for k, a, b in rows}


FUNCTIONS = [  # (SQL, column, p, width of one cell)
    ("MEDIAN(income)", "income", 0.5, 500000 / 2 ** 16),
    ("QUANTILE_CONT(income, 0.9)", "income", 0.9, 500000 / 2 ** 16),
    ("QUANTILE_DISC(age, 0.25)", "age", 0.25, 0),
    ("PERCENTILE_CONT(0.75) WITHIN GROUP (ORDER BY income)", "income", 0.75, 500000 / 2 ** 16),
    ("PERCENTILE_DISC(0.75) WITHIN GROUP (ORDER BY age DESC)", "age", 0.25, 0),
    ("APPROX_QUANTILE(age, 0.5)", "age", 0.5, 0),
    ("MIN(income)", "income", 0.01, 500000 / 2 ** 16),
    ("MAX(age)", "age", 0.99, 0),
]


@pytest.mark.parametrize("sql,column,p,width", FUNCTIONS, ids=[f[0] for f in FUNCTIONS])
@pytest.mark.parametrize("grouped", [False, True], ids=["ungrouped", "by sex"])
def test_each_function_matches_duckdb_at_large_epsilon(setup, sql, column, p, width, grouped):
    reader, con = setup
    clamp = (0, 100) if column == "age" else (0, 500000)
    key = "sex" if grouped else None
    q = f"SELECT {key + ', ' if key else ''}{sql} AS v FROM PUMS.PUMS{' GROUP BY sex' if key else ''}"
    out = reader.execute_df(q, replay=False)
    band = _band(con, column, p, key, clamp)
    assert len(out) == len(band)
    for _, row in out.iterrows():
        lo, hi = band[str(row[key]) if key else "all"]
        assert lo - width <= row.v <= hi + width, (q, row.v, lo, hi)
    integer = "DISC" in sql or "MIN" in sql or "MAX" in sql
    assert out.v.dtype == (np.int64 if integer and column in ("age", "income") else np.float64)


def test_a_list_of_quantiles_is_one_statistic_per_p(setup):
    reader, con = setup
    out = reader.execute_df("SELECT sex, QUANTILE_CONT(age, [0.25, 0.5, 0.75]) AS q, COUNT(*) AS n "
                            "FROM PUMS.PUMS GROUP BY sex")
    plan = reader._plan("SELECT sex, QUANTILE_CONT(age, [0.25, 0.5, 0.75]) AS q, COUNT(*) AS n "
                        "FROM PUMS.PUMS GROUP BY sex")
    assert sum(s.stat.value == "quantile" for s in plan.statistics) == 3
    for p, i in ((0.25, 0), (0.5, 1), (0.75, 2)):
        band = _band(con, "age", p, "sex", (0, 100))
        for _, row in out.iterrows():
            lo, hi = band[row.sex]
            assert lo <= row.q[i] <= hi


def test_where_having_order_and_expressions_over_quantiles(setup):
    reader, _ = setup
    out = reader.execute_df(
        "SELECT educ, MEDIAN(income) / 1000 AS k, MAX(age) - MIN(age) AS span, AVG(age) AS a "
        "FROM PUMS.PUMS WHERE age >= 18 GROUP BY educ HAVING MEDIAN(income) > 10000 "
        "ORDER BY k DESC")
    assert list(out.columns) == ["educ", "k", "span", "a"]
    assert (out.k > 10).all() and list(out.k) == sorted(out.k, reverse=True)
    expr = reader.execute_df("SELECT MEDIAN(income / 1000) AS m, "
                             "MEDIAN(income) FILTER (WHERE sex = '1') AS f FROM PUMS.PUMS")
    assert 0 <= expr.m[0] <= 500 and 0 <= expr.f[0] <= 500000


def test_public_keys_release_a_quantile_for_empty_groups():
    frame = pd.read_csv(DATA / "PUMS.csv")
    reader = dpsql.from_df(frame, DATA / "PUMS.yaml", privacy=dpsql.Privacy(epsilon=1.0))
    out = reader.execute_df("SELECT age > 200 AS old, MEDIAN(age) AS m FROM PUMS.PUMS GROUP BY old")
    assert list(out.old) == [False, True]
    assert 0 <= out.m[1] <= 100            # no rows: uniform over the grid, still released


def test_grid_size_is_a_session_setting(pums):
    privacy = dpsql.Privacy(epsilon=1.0, mechanisms=dpsql.Mechanisms(quantile_cells=1024))
    reader = dpsql.from_df(pums, DATA / "PUMS.yaml", privacy=privacy)
    text = reader.explain("SELECT MEDIAN(income) AS m, MEDIAN(age) AS a FROM PUMS.PUMS")
    assert "permute-and-flip over 1,024 cells of width 488.281" in text
    assert "the 101 integers 0..100" in text and "95%: rank within" in text
    with pytest.raises(dpsql.ProgrammingError):
        dpsql.Mechanisms(quantile_cells=3)


@pytest.mark.parametrize("sql", [
    "SELECT MEDIAN(sex) FROM PUMS.PUMS",
    "SELECT QUANTILE_CONT(income, 1.5) FROM PUMS.PUMS",
    "SELECT QUANTILE_CONT(income, age) FROM PUMS.PUMS",
    "SELECT PERCENTILE_CONT(0.5) WITHIN GROUP (ORDER BY income, age) FROM PUMS.PUMS",
    "SELECT QUANTILE_CONT(income, []) FROM PUMS.PUMS",
    "SELECT MEDIAN(STRPOS(sex, '1')) FROM PUMS.PUMS",       # unbounded (LENGTH has bounds)
    "SELECT MEDIAN(MEDIAN(income)) FROM PUMS.PUMS",
])
def test_refusals_cost_nothing(pums, sql):
    reader = dpsql.from_df(pums, DATA / "PUMS.yaml", budget=dpsql.Budget(epsilon=1.0))
    with pytest.raises(dpsql.QueryError):
        reader.execute_df(sql)
    assert reader.spent == (0.0, 0.0)


def test_unbounded_column_is_refused_with_what_to_do():
    frame = pd.DataFrame({"x": [1.0, 2.0]})
    meta = {"": {"s": {"t": {"row_privacy": True, "x": {"type": "float"}}}}}
    reader = dpsql.from_df(frame, meta)
    with pytest.raises(dpsql.QueryError, match="estimate them privately"):
        reader.execute_df("SELECT MEDIAN(x) FROM s.t")
    assert reader.spent == (0.0, 0.0)


# ----------------------------------------------------------------------------
# The exact sampler against the exact permute-and-flip distribution


def pf_probabilities(gaps: np.ndarray, rate: float) -> np.ndarray:
    """Exact PF output probabilities: P(i) = q_i * E[1 / (1 + heads among the others)]
    = q_i * integral_0^1 prod_{j != i} (1 - q_j + q_j t) dt (Gauss-Legendre, exact for
    this polynomial of degree < 2 * nodes)."""
    q = np.exp(-gaps * rate)
    t, w = np.polynomial.legendre.leggauss(max(8, gaps.size))
    t, w = (t + 1) / 2, w / 2
    terms = 1 - q[:, None] + q[:, None] * t[None, :]
    logs = np.log(terms)
    others = logs.sum(axis=0)[None, :] - logs
    return q * (np.exp(others) @ w)


def test_sampler_matches_exact_permute_and_flip_probabilities():
    hist = np.array([[3, 0, 0, 5, 1, 0, 2, 4]])
    gaps = score_gaps(hist, 1, 2)[0]
    a, m = 3, 7                                        # gamma = gap * 3 / 7
    expected = pf_probabilities(gaps.astype(float), a / m)
    assert expected.sum() == pytest.approx(1.0, abs=1e-12)
    draws = 200_000
    chosen = permute_and_flip(np.tile(gaps, (draws, 1)), a, m)
    counts = np.bincount(chosen, minlength=gaps.size)
    keep = expected * draws >= 5
    _, pvalue = sps.chisquare(counts[keep], expected[keep] * draws * counts[keep].sum()
                              / (expected[keep] * draws).sum())
    assert pvalue > 1e-7, (counts, expected * draws)
    assert counts[~keep].sum() <= max(20, 3 * (expected[~keep] * draws).sum())


def test_score_and_calibration():
    # p = 1/2 on 4 values in cells 0, 1, 1, 3: |L - G| per cell is 3, 0, 2, 3
    gaps = score_gaps(np.array([[1, 2, 0, 1]]), 1, 2)[0]
    assert list(gaps) == [3, 0, 2, 3]
    m = PermuteAndFlip.calibrate(Grid.for_bounds(0, 100, True, 2 ** 16), Fraction(1, 2), 1, 1.0,
                                 "cont", False)
    assert m.epsilon <= 1.0 and m.epsilon == pytest.approx(1.0, rel=1e-6)
    assert m.scale == pytest.approx(1.0, rel=1e-6)     # 2 * 1/2 / 1 rank
    assert m.delta == 0 and m.rho is None
    assert math.isclose(m.accuracy(0.05), m.scale * math.log(101 / 0.05))


@pytest.mark.parametrize("grouped", [False, True])
def test_row_counts_read_with_the_histogram_count_rows_whose_value_is_null(grouped):
    # COUNT(*) next to a median is read in the histogram's scan (one pass): its count must
    # still include the rows whose value is NULL (the NULL cell), group by group.
    frame = pd.DataFrame({"g": ["a"] * 300 + ["b"] * 200,
                          "x": [float(i % 50) if i % 3 else None for i in range(500)]})
    meta = {"": {"s": {"t": {"row_privacy": True, "g": {"type": "string", "values": ["a", "b"]},
                             "x": {"type": "float", "lower": 0, "upper": 100}}}}}
    reader = dpsql.from_df(frame, meta, privacy=dpsql.Privacy(epsilon=1e6, delta=1e-6))
    keys = "g, " if grouped else ""
    sql = f"SELECT {keys}COUNT(*) AS n, MEDIAN(x) AS m FROM s.t" + (" GROUP BY g" if grouped else "")
    assert 'SUM("_n")' in reader.explain(sql)          # the count read in the one scan
    out = reader.execute_df(sql)
    expected = [300, 200] if grouped else [500]
    assert out.n.tolist() == expected
    assert all(20 <= m <= 30 for m in out.m)
