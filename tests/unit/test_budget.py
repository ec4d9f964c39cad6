"""Per-query privacy, its split, and the session budget."""
import math
import warnings

import numpy as np
import pandas as pd
import pytest

import dpsql


def close_below(value, target):
    """Scales are rounded up to exact rationals, so a cost may be a hair under its target."""
    return target * (1 - 1e-6) <= value <= target


def test_cost_is_known_before_running_and_free(pums, data_dir):
    r = dpsql.from_df(pums, data_dir / "PUMS.yaml", privacy=dpsql.Privacy(epsilon=0.7),
                      budget=dpsql.Budget(1.0))
    cost = r.get_privacy_cost("SELECT sex, COUNT(*), AVG(age) FROM PUMS.PUMS GROUP BY sex")
    assert close_below(cost[0], 0.7) and 0 < cost[1] <= dpsql.DEFAULT_DELTA
    assert r.spent == (0.0, 0.0)
    text = r.explain("SELECT sex, COUNT(*), AVG(age) FROM PUMS.PUMS GROUP BY sex")
    assert "sensitivity" in text and "scale" in text and "threshold" in text and "% of the query" in text
    assert r.spent == (0.0, 0.0)


def test_laplace_only_query_spends_no_delta(pums, data_dir):
    r = dpsql.from_df(pums, data_dir / "PUMS.yaml", privacy=dpsql.Privacy(epsilon=0.5))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r.execute_df("SELECT COUNT(*) AS n, AVG(age) AS a FROM PUMS.PUMS")
    assert close_below(r.spent[0], 0.5) and r.spent[1] == 0.0


def test_over_budget_refused_before_running(pums, data_dir):
    r = dpsql.from_df(pums, data_dir / "PUMS.yaml", privacy=dpsql.Privacy(epsilon=1.0),
                      budget=dpsql.Budget(2.5))
    r.execute_df("SELECT COUNT(*) AS n FROM PUMS.PUMS")
    r.execute_df("SELECT COUNT(*) AS n FROM PUMS.PUMS", replay=False)
    with pytest.raises(dpsql.BudgetExceededError, match="nothing was run or spent"):
        r.execute_df("SELECT COUNT(*) AS n FROM PUMS.PUMS", replay=False)
    assert close_below(r.spent[0], 2.0)
    r.privacy = dpsql.Privacy(epsilon=0.5)
    r.execute_df("SELECT COUNT(*) AS n FROM PUMS.PUMS")     # exactly what remains
    assert close_below(r.spent[0], 2.5)


def test_over_budget_does_not_touch_data(data_dir):
    """The budget check comes first: a query that would fail on the data is refused for budget."""
    con = __import__("duckdb").connect()
    con.execute("CREATE SCHEMA PUMS")
    con.read_csv(str(data_dir / "PUMS.csv")).to_table("PUMS.PUMS")
    r = dpsql.from_connection(con, data_dir / "PUMS.yaml", privacy=dpsql.Privacy(epsilon=1.0),
                              budget=dpsql.Budget(0.5))
    r.get_privacy_cost("SELECT COUNT(*) AS n FROM PUMS.PUMS")     # planned (schema only)
    con.execute("DROP TABLE PUMS.PUMS")       # any read would now fail
    with pytest.raises(dpsql.BudgetExceededError):
        r.execute_df("SELECT COUNT(*) AS n FROM PUMS.PUMS")


def test_no_budget_warns_once(pums, data_dir):
    r = dpsql.from_df(pums, data_dir / "PUMS.yaml", privacy=dpsql.Privacy(epsilon=1.0))
    with pytest.warns(UserWarning, match="nothing is enforced"):
        r.execute_df("SELECT COUNT(*) AS n FROM PUMS.PUMS")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r.execute_df("SELECT COUNT(*) AS n FROM PUMS.PUMS", replay=False)
    assert close_below(r.spent[0], 2.0)


def test_split_equal_shares_on_request_and_sums_to_query_epsilon(pums, data_dir):
    r = dpsql.from_df(pums, data_dir / "PUMS.yaml",
                      privacy=dpsql.Privacy(epsilon=0.9, split="equal"))
    plan = r._plan("SELECT COUNT(*), SUM(age), AVG(income) FROM PUMS.PUMS")
    shares = [s.mechanism.epsilon for s in plan.statistics]
    assert len(shares) == 4 and all(close_below(x, 0.9 / 4) for x in shares)
    # charged exactly what was asked; the calibrated parts add up to no more
    assert plan.cost[0] == 0.9 and sum(shares) <= 0.9 and math.isclose(sum(shares), 0.9, rel_tol=1e-6)


def test_default_split_gives_aggregates_parts_by_their_statistics_spent_to_minimise_error(
        pums, data_dir):
    r = dpsql.from_df(pums, data_dir / "PUMS.yaml", privacy=dpsql.Privacy(epsilon=0.8))
    plan = r._plan("SELECT COUNT(*), SUM(age), AVG(income) FROM PUMS.PUMS")
    eps = {s.label: s.mechanism.epsilon for s in plan.statistics}
    # Four statistics: COUNT and SUM read one each (a quarter), AVG two (a half).
    assert close_below(eps["COUNT(*)"], 0.2) and close_below(eps['SUM("age")'], 0.2)
    # AVG: its half over its count and centred sum in the ratio (1/8 * 1)^(1/3) :
    # (1/w^2 * (w/2)^2)^(1/3) = (1/8)^(1/3) : (1/4)^(1/3) (docs/privacy.md)
    count, total = eps['COUNT("income")'], eps["SUM(income - 250000)"]
    assert math.isclose(count + total, 0.4, rel_tol=1e-6)
    assert math.isclose(count / total, 0.5 ** (1 / 3), rel_tol=1e-6)
    assert plan.cost[0] == 0.8 and sum(eps.values()) <= 0.8
    assert math.isclose(sum(eps.values()), 0.8, rel_tol=1e-6)


def test_mechanism_choice_smartnoise_style(pums, data_dir):
    privacy = dpsql.Privacy(epsilon=1.0, delta=1e-6)
    privacy.mechanisms.map[dpsql.Stat.count] = dpsql.Mechanism.gaussian
    r = dpsql.from_df(pums, data_dir / "PUMS.yaml", privacy=privacy)
    plan = r._plan("SELECT COUNT(*) AS n FROM PUMS.PUMS")
    assert plan.statistics[0].mechanism.mechanism == dpsql.Mechanism.gaussian
    assert 0 < plan.cost[1] <= 1e-6


def test_noise_has_the_documented_scale(data_dir):
    """One query over 101 public keys gives 101 independent draws; repeat to get 2,020."""
    df = pd.DataFrame({"age": np.arange(101).repeat(3)})
    meta = {"": {"S": {"T": {"row_privacy": True,
                             "age": {"type": "int", "lower": 0, "upper": 100,
                                     "values": list(range(101))}}}}}
    eps = 0.5
    r = dpsql.from_df(df, meta, privacy=dpsql.Privacy(epsilon=eps, delta=0.0))
    draws = np.concatenate([r.execute_df("SELECT age, COUNT(*) AS n FROM S.T GROUP BY age", replay=False).n - 3
                            for _ in range(20)])
    assert len(draws) == 2020
    p = math.exp(-eps)             # discrete Laplace, scale 1/eps
    variance = 2 * p / (1 - p) ** 2
    # sample variance of 2,020 draws: relative sd ~ sqrt((kurtosis - 1)/n) ~ 0.05; 7 sd bound
    assert abs(draws.var() / variance - 1) < 0.35
    assert abs(draws.mean()) < 7 * math.sqrt(variance / len(draws))


def test_an_epsilon_too_small_to_answer_anything_is_refused_and_a_tiny_remainder_is_spent():
    with pytest.raises(dpsql.Error, match="below dpsql's smallest per-query epsilon"):
        dpsql.Privacy(epsilon=5e-9)
    with pytest.raises(dpsql.Error, match="smallest per-query rho"):
        dpsql.Privacy(rho=1e-14)
    from dpsql.privacy.spend import Spend, budget_message, remaining
    budget = dpsql.Budget(epsilon=1.0)
    spent = Spend(1.0 - 5e-9, 0.0)
    assert remaining(spent, budget)[0] == 0.0
    message = budget_message(spent, Spend(1e-6, 0.0), budget)
    assert "is spent" in message and "smallest epsilon a query can use" in message
    assert remaining(Spend(0.5, 0.0), budget)[0] == 0.5


def test_a_count_drowned_in_noise_warns_at_the_callers_line(pums, data_dir):
    r = dpsql.from_df(pums, data_dir / "PUMS.yaml", budget=dpsql.Budget(epsilon=2))
    with pytest.warns(UserWarning, match=r"wider than the table's 1,000 rows") as caught:
        r.execute_df("SELECT COUNT(*) AS n FROM PUMS.PUMS", privacy=dpsql.Privacy(epsilon=0.001))
    assert caught[0].filename == __file__
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r.execute_df("SELECT COUNT(*) AS n FROM PUMS.PUMS", privacy=dpsql.Privacy(epsilon=0.5))
