"""Issue 11: zCDP sessions (Budget(rho=...), Privacy(rho=...)) and composition in rho."""
from __future__ import annotations

import json
import math

import pytest

import dpsql
from dpsql.privacy import zcdp
from dpsql.privacy.ledger import Ledger

from tests.paths import DATA

SQL = "SELECT COUNT(*) AS n, SUM(age) AS s FROM PUMS.PUMS"


def gaussian(**kw) -> dpsql.Privacy:
    p = dpsql.Privacy(**kw)
    for stat in ("count", "sum_int", "sum_large_int", "sum_float", "threshold"):
        p.mechanisms.map[stat] = "gaussian"
    return p


def test_the_books_example_rho_0004_at_delta_1e8_is_epsilon_0466(pums):
    budget = dpsql.Budget(rho=0.004, delta=1e-8)
    r = dpsql.from_df(pums, DATA / "PUMS.yaml", privacy=gaussian(rho=0.002), budget=budget)
    r.execute_df("SELECT COUNT(*) AS n FROM PUMS.PUMS")
    r.execute_df("SELECT SUM(age) AS s FROM PUMS.PUMS")
    assert r.spent_rho == pytest.approx(0.004, rel=1e-6) and r.spent_rho <= 0.004
    eps, delta = r.spent
    assert eps == pytest.approx(0.466, abs=5e-4) and delta == 1e-8
    assert budget.spent == r.spent
    # Nothing left: the next query is refused and costs nothing.
    with pytest.raises(dpsql.BudgetExceededError, match="rho"):
        r.execute_df("SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE age > 3")
    assert r.spent_rho == pytest.approx(0.004, rel=1e-6)


def test_pure_epsilon_statistics_cost_epsilon_squared_over_two_in_a_rho_session(pums):
    r = dpsql.from_df(pums, DATA / "PUMS.yaml", privacy=dpsql.Privacy(epsilon=0.5),
                      budget=dpsql.Budget(rho=1.0))
    r.execute_df(SQL)
    plan = r._plan(SQL)
    expected = sum(s.mechanism.epsilon ** 2 / 2 for s in plan.statistics)
    assert r.spent_rho == pytest.approx(expected) and expected < 0.5 ** 2 / 2
    # ... far less than the 0.5 an epsilon session would charge at once
    eps, _ = r.spent
    assert eps == pytest.approx(zcdp.epsilon_for(expected, 1e-6))


def test_a_rho_query_splits_rho_and_charges_it(pums):
    r = dpsql.from_df(pums, DATA / "PUMS.yaml", privacy=gaussian(rho=0.05))
    plan = r._plan(SQL)
    rhos = [s.mechanism.rho for s in plan.statistics]
    assert sum(rhos) <= 0.05 and sum(rhos) == pytest.approx(0.05, rel=1e-4)
    assert plan.spend[2] == pytest.approx(sum(rhos))
    # Its (epsilon, delta) view is one conversion of the query's rho.
    assert plan.cost[0] == pytest.approx(zcdp.epsilon_for(sum(rhos), 1e-10))
    r.execute_df(SQL)
    assert r.spent_rho == pytest.approx(sum(rhos))


def test_gaussian_statistics_of_one_query_compose_in_rho(pums):
    """Three Gaussian statistics at (1, 1e-6): one conversion of their joint rho, so
    each is less noisy than three separate (1/3, 1e-6/3) conversions would allow."""
    r = dpsql.from_df(pums, DATA / "PUMS.yaml", privacy=gaussian(epsilon=1.0, delta=1e-6,
                                                                  split="equal"))
    plan = r._plan("SELECT COUNT(*) AS n, SUM(age) AS s, SUM(income) AS i FROM PUMS.PUMS")
    assert plan.cost[0] <= 1.0 and plan.cost[0] == pytest.approx(1.0, rel=1e-3)
    joint = zcdp.rho_for(1.0, 1e-6)[0] / 3
    separate = zcdp.rho_for(1 / 3, 1e-6 / 3)[0]
    assert joint > 1.5 * separate
    for s in plan.statistics:
        assert s.mechanism.rho == pytest.approx(joint, rel=1e-3)


def test_a_ledger_records_rho_and_keeps_a_rho_budget(pums, tmp_path):
    path = tmp_path / "session.ledger"
    budget = dpsql.Budget(rho=0.01, delta=1e-7)
    r = dpsql.from_df(pums, DATA / "PUMS.yaml", privacy=gaussian(rho=0.004), ledger=path,
                      budget=budget)
    r.execute_df("SELECT COUNT(*) AS n FROM PUMS.PUMS")
    records = [json.loads(line) for line in path.read_text().splitlines()]
    assert records[0]["budget"] == {"rho": 0.01, "delta": 1e-7}
    charges = [rec for rec in records if rec.get("kind") == "release"]
    assert charges[-1]["rho"] == pytest.approx(0.004, rel=1e-4)
    # Another process (reader) on the same ledger sees the same spending.
    other = dpsql.from_df(pums, DATA / "PUMS.yaml", privacy=gaussian(rho=0.004), ledger=path)
    assert other.spent_rho == pytest.approx(r.spent_rho)
    other.execute_df("SELECT SUM(age) AS s FROM PUMS.PUMS")
    with pytest.raises(dpsql.BudgetExceededError):
        r.execute_df("SELECT SUM(income) AS s FROM PUMS.PUMS")
    assert Ledger(path).spending()[2] == pytest.approx(0.008, rel=1e-3)
    with pytest.raises(dpsql.LedgerError):
        Ledger(path, dpsql.Budget(rho=0.02, delta=1e-7))
    with pytest.raises(dpsql.LedgerError):
        Ledger(path, dpsql.Budget(epsilon=0.01, delta=1e-7))


def test_thresholds_spend_delta_outside_zcdp(pums):
    budget = dpsql.Budget(rho=1.0, delta=1e-6)
    r = dpsql.from_df(pums, DATA / "PUMS.yaml", privacy=dpsql.Privacy(rho=0.01, delta=1e-7),
                      budget=budget)
    r.execute_df("SELECT educ, COUNT(*) AS n FROM PUMS.PUMS GROUP BY educ")
    spending = r.accountant.spending
    assert spending[3] == pytest.approx(0.5e-7)        # half the query's delta: threshold
    eps, delta = r.spent
    assert delta == 1e-6 and eps == pytest.approx(zcdp.epsilon_for(spending[2], 1e-6 - 0.5e-7))
    # Thresholds may use half the session's delta, then they are refused, free.
    big = dpsql.Privacy(rho=0.01, delta=0.95e-6)
    with pytest.raises(dpsql.BudgetExceededError, match="delta for thresholds"):
        r.execute_df("SELECT race, COUNT(*) AS n FROM PUMS.PUMS GROUP BY race", privacy=big)
    assert r.accountant.spending == spending


def test_budget_and_privacy_take_epsilon_or_rho_not_both():
    with pytest.raises(dpsql.ProgrammingError):
        dpsql.Budget(epsilon=1.0, rho=0.5)
    with pytest.raises(dpsql.ProgrammingError):
        dpsql.Budget()
    with pytest.raises(dpsql.ProgrammingError):
        dpsql.Privacy(epsilon=1.0, rho=0.5)
    with pytest.raises(dpsql.ProgrammingError):
        dpsql.Budget(rho=-1.0)
    with pytest.raises(dpsql.ProgrammingError):
        dpsql.Privacy(split="largest")
    assert dpsql.Privacy().epsilon == 1.0 and dpsql.Privacy(rho=0.1).epsilon is None
    assert math.isclose(dpsql.Budget(3.0).epsilon, 3.0)


def test_cli_rho_query_and_rho_budget(tmp_path):
    from dpsql.cli.command import main
    ledger = tmp_path / "l.ledger"
    args = ["query", "--metadata", str(DATA / "PUMS.yaml"), "--table",
            f"PUMS.PUMS={DATA / 'PUMS.csv'}", "--rho", "0.01", "--ledger", str(ledger),
            "--budget", "rho=0.02,1e-8", "SELECT COUNT(*) AS n FROM PUMS.PUMS"]
    assert main(args) == 0
    assert main(args[:-1] + ["SELECT SUM(age) AS s FROM PUMS.PUMS"]) == 0
    assert main(args[:-1] + ["SELECT SUM(income) AS s FROM PUMS.PUMS"]) != 0   # refused
    spending = Ledger(ledger).spending()
    assert spending[2] == pytest.approx(0.02, rel=1e-3) and spending[2] <= 0.02
