"""Issue 37: budgets composed by dp-accounting (Budget(accountant="pld" | "rdp")).

The counts are measured against dp-accounting's own accountants fed the same events:
PLDAccountant with the plan's discrete Laplace (DiscreteLaplaceDpEvent, its noise
parameter and sensitivity as dpsql samples them), RdpAccountant with its zCDP."""
from __future__ import annotations

import json
import math

import duckdb
import numpy as np
import pytest

import dpsql
from dpsql.privacy import zcdp
from dpsql.privacy.composition import tally_of
from dpsql.privacy.ledger import Ledger
from tests.neighbours.harness import FAMILY_ALPHA, cp_lower, cp_upper
from tests.paths import DATA

# dp-accounting is a dependency of dpsql: a missing one fails here, never skips
from dp_accounting import dp_event  # noqa: E402
from dp_accounting.pld import pld_privacy_accountant as pld_accountant  # noqa: E402
from dp_accounting.rdp import rdp_privacy_accountant as rdp_accountant  # noqa: E402

COUNT = "SELECT COUNT(*) AS n FROM PUMS.PUMS"


def answered(reader) -> int:
    """Fresh COUNT(*) releases until the budget refuses one."""
    n = 0
    while True:
        spent = reader.spent
        try:
            reader.execute_df(COUNT, replay=False)
        except dpsql.BudgetExceededError as err:
            assert "nothing was" in str(err)
            assert reader.spent == spent         # a refusal costs nothing
            return n
        n += 1


def library_count(accountant, event, epsilon=1.0, delta=1e-6) -> int:
    """How many of ``event`` dp-accounting's own accountant composes within the budget."""
    n = 0
    while True:
        accountant.compose(event)
        if accountant.get_epsilon(delta) > epsilon * (1 + 1e-12):
            return n
        n += 1


def count_event(reader) -> dp_event.DiscreteLaplaceDpEvent:
    """The COUNT's noise as dpsql samples it: discrete Laplace P(z) ~ exp(-|z| s / t)."""
    mechanism = reader._plan(COUNT).statistics[0].mechanism
    kind, t, s = mechanism.params
    assert kind == "laplace" and mechanism.grid == 1 and mechanism.sensitivity == 1
    return dp_event.DiscreteLaplaceDpEvent(noise_parameter=s / t, sensitivity=1)


def session(pums, accountant, **kw):
    budget = dpsql.Budget(epsilon=1.0, delta=1e-6, accountant=accountant)
    return dpsql.from_df(pums, DATA / "PUMS.yaml", privacy=dpsql.Privacy(epsilon=0.01),
                         budget=budget, **kw)


def test_pld_answers_as_many_counts_as_dp_accountings_own_count(pums):
    basic = answered(session(pums, None))
    reader = session(pums, "pld")
    ours = answered(reader)
    theirs = library_count(pld_accountant.PLDAccountant(), count_event(reader))
    assert basic == 100
    assert ours == theirs and 540 <= ours <= 580            # about 560 (issue 37)
    eps, delta = reader.spent
    assert eps <= 1.0 and delta == 1e-6
    assert reader.remaining[0] == pytest.approx(1.0 - eps)


def test_rdp_answers_as_many_counts_as_dp_accountings_own_count(pums):
    reader = session(pums, "rdp")
    ours = answered(reader)
    mechanism = reader._plan(COUNT).statistics[0].mechanism
    event = dp_event.ZCDpEvent(rho=mechanism.epsilon ** 2 / 2)   # pure epsilon as zCDP
    assert ours == library_count(rdp_accountant.RdpAccountant(), event) > 100


def test_zcdp_count_for_comparison(pums):
    rho = zcdp.rho_for(1.0, 1e-6)[0]       # the rho budget that reads as epsilon 1 at 1e-6
    reader = dpsql.from_df(pums, DATA / "PUMS.yaml", privacy=dpsql.Privacy(epsilon=0.01),
                           budget=dpsql.Budget(rho=rho, delta=1e-6))
    assert answered(reader) == math.floor(rho / (0.01 ** 2 / 2) * (1 + 1e-9))


def test_refused_before_the_data_is_touched(pums):
    con = duckdb.connect()
    con.execute("CREATE SCHEMA PUMS")
    con.register("df", pums)
    con.execute("CREATE TABLE PUMS.PUMS AS SELECT * FROM df")
    budget = dpsql.Budget(epsilon=0.5, delta=1e-6, accountant="pld")
    r = dpsql.from_connection(con, DATA / "PUMS.yaml", privacy=dpsql.Privacy(epsilon=0.3),
                              budget=budget)
    r.execute_df(COUNT)
    spent = r.spent
    r.get_privacy_cost(COUNT + " WHERE age > 40")
    con.execute("DROP TABLE PUMS.PUMS")       # any read would now fail
    with pytest.raises(dpsql.BudgetExceededError, match="PLD accountant.*nothing was run"):
        r.execute_df(COUNT + " WHERE age > 40")
    assert r.spent == spent and budget.spent == spent


def test_replays_are_free_after_the_budget_is_spent(pums):
    reader = dpsql.from_df(pums, DATA / "PUMS.yaml", privacy=dpsql.Privacy(epsilon=0.01),
                           budget=dpsql.Budget(epsilon=0.1, delta=1e-6, accountant="pld"))
    first = reader.execute_df(COUNT + " WHERE age > 30")
    answered(reader)
    spent = reader.spent
    assert reader.execute_df(COUNT + " WHERE age > 30").equals(first)
    assert reader.spent == spent


def test_a_ledger_keeps_the_accountant_and_its_events(pums, tmp_path):
    path = tmp_path / "pld.jsonl"
    budget = dpsql.Budget(epsilon=1.0, delta=1e-6, accountant="pld")
    r = dpsql.from_df(pums, DATA / "PUMS.yaml", privacy=dpsql.Privacy(epsilon=0.05),
                      budget=budget, ledger=str(path))
    for age in range(22):            # 20 under basic composition; PLD fits 26
        r.execute_df(f"{COUNT} WHERE age > {age}")
    header = json.loads(path.read_text().splitlines()[0])
    assert header["budget"] == {"epsilon": 1.0, "delta": 1e-6, "accountant": "pld"}
    again = Ledger(str(path))
    assert again.budget == budget and again.spent() == r.spent
    assert again.tally().events == [("dlap", *r._plan(COUNT).statistics[0].mechanism.params[1:], 1)] * 22
    # a new process: the same spend, and the same refusal
    r2 = dpsql.from_df(pums, DATA / "PUMS.yaml", privacy=dpsql.Privacy(epsilon=0.05),
                       ledger=str(path))
    assert r2.spent == r.spent and r2.accountant.budget.accountant == "pld"
    with pytest.raises(dpsql.LedgerError, match="accountant=pld"):
        Ledger(str(path), dpsql.Budget(epsilon=1.0, delta=1e-6))
    refused = 0
    for age in range(22, 60):
        try:
            r2.execute_df(f"{COUNT} WHERE age > {age}")
        except dpsql.BudgetExceededError:
            refused += 1
    assert refused and r2.spent[0] <= 1.0 and len(Ledger(str(path)).records()) == 60 - refused == 26


def test_an_old_ledger_loads_as_before_and_its_records_count_as_their_sums(tmp_path):
    path = tmp_path / "old.jsonl"
    path.write_text(
        json.dumps({"dpsql_ledger": 1, "created": "2025-01-01T00:00:00+00:00",
                    "budget": {"epsilon": 3.0, "delta": 1e-06}}) + "\n"
        + json.dumps({"kind": "release", "time": "2025-01-01T00:00:01+00:00",
                      "query": "SELECT COUNT(*) FROM t", "epsilon": 1.0, "delta": 0.0}) + "\n")
    old = Ledger(str(path))
    assert old.budget == dpsql.Budget(epsilon=3.0, delta=1e-6)
    assert old.budget.accountant == "basic" and old.spent() == (1.0, 0.0)
    assert old.records()[0].events is None
    # a record without events in a PLD ledger (an older dpsql wrote it) counts as its sums
    pld = tmp_path / "pld.jsonl"
    Ledger(str(pld), dpsql.Budget(epsilon=3.0, delta=1e-6, accountant="pld"))
    with open(pld, "a") as f:
        f.write(json.dumps({"kind": "release", "time": "2025-01-01T00:00:01+00:00",
                            "query": "q", "epsilon": 1.0, "delta": 0.0}) + "\n")
    assert Ledger(str(pld)).spent()[0] == pytest.approx(1.0, abs=1e-3)


def gaussian_sessions(pums, mechanism: str, queries: int) -> tuple:
    """({accountant: epsilon spent}, the last reader): COUNTs with Gaussian noise at
    epsilon 0.5, delta 1e-8 each, under a budget of epsilon 10, delta 1e-5."""
    privacy = dpsql.Privacy(epsilon=0.5, delta=1e-8)
    privacy.mechanisms.map["count"] = mechanism
    spent = {}
    for accountant in ("basic", "pld", "rdp"):
        budget = dpsql.Budget(epsilon=10.0, delta=1e-5, accountant=accountant)
        r = dpsql.from_df(pums, DATA / "PUMS.yaml", privacy=privacy, budget=budget)
        for age in range(queries):
            r.execute_df(f"{COUNT} WHERE age > {age}")
        spent[accountant] = r.spent[0]
    return spent, r


def test_gaussian_queries_compose_as_zcdp_under_rdp_and_as_pairs_under_pld(pums):
    """The gaussian mechanism's fine grid on a count: sigma beyond 2^11 grid units."""
    costs, r = gaussian_sessions(pums, "gaussian", 8)
    (event,) = r._plan(COUNT).events
    assert event[0] == "dp" and event[2] == pytest.approx(1e-8) and event[3] > 0
    assert costs["pld"] < costs["basic"] and costs["rdp"] < costs["basic"]


def test_budget_arguments_are_checked():
    for bad, message in [(dict(epsilon=1.0, accountant="zcdp"), "rho budget"),
                         (dict(rho=0.1, accountant="pld"), "rho budget"),
                         (dict(epsilon=1.0, accountant="moments"), "one of basic"),
                         (dict(epsilon=1.0, delta=0.0, accountant="pld"), "delta > 0")]:
        with pytest.raises(dpsql.ProgrammingError, match=message):
            dpsql.Budget(**bad)
    assert dpsql.Budget(epsilon=1.0) == dpsql.Budget(epsilon=1.0, accountant="basic")
    assert dpsql.Budget(rho=0.1).accountant == "zcdp"
    assert repr(dpsql.Budget(epsilon=1.0, accountant="PLD")) == \
        "Budget(epsilon=1.0, delta=1e-06, accountant='pld')"


def _tail_counts(samples: np.ndarray, truth: int, m: int) -> tuple:
    """Per run, how many of its m releases are at least ``truth``; counts of each value."""
    high = (samples >= truth).reshape(-1, m).sum(axis=1)
    return np.bincount(high, minlength=m + 1)


def test_a_composed_release_on_neighbouring_data_sets_stays_within_the_pld_epsilon(pums):
    """m counts released by the plan's own mechanism (dpsql's exact sampler) on a data set
    of n rows and on its neighbour of n - 1. With sensitivity 1 the privacy loss of a
    discrete Laplace release is +epsilon0 when it is >= n and -epsilon0 otherwise, so the
    number H of releases >= n is a sufficient statistic and the sets {H >= k}, {H <= k}
    are the worst cases. Each is checked (Clopper-Pearson, family alpha 1e-6) against the
    session's (epsilon, delta) under PLD; a claim of 60% of that epsilon fails, so the
    test can tell."""
    m, runs, delta, n = 16, 200_000, 1e-2, 1000
    reader = dpsql.from_df(pums, DATA / "PUMS.yaml", privacy=dpsql.Privacy(epsilon=0.3))
    plan = reader._plan(COUNT)
    mechanism = plan.statistics[0].mechanism
    epsilon = tally_of(plan.events * m).epsilon("pld", delta)
    assert epsilon < m * 0.3 * 0.65           # PLD: well below basic composition
    one = _tail_counts(mechanism.release(np.full(runs * m, n)), n, m)
    two = _tail_counts(mechanism.release(np.full(runs * m, n - 1)), n, m)
    alpha = FAMILY_ALPHA / (4 * 2 * (m + 1))

    def violated(eps: float) -> bool:
        for k in range(m + 1):
            for a, b in ((one[k:].sum(), two[k:].sum()), (two[:k + 1].sum(), one[:k + 1].sum())):
                if cp_lower(int(a), runs, alpha) > math.exp(eps) * cp_upper(int(b), runs, alpha) \
                        + delta:
                    return True
        return False

    assert not violated(epsilon)
    assert violated(0.6 * epsilon)


def test_the_report_shows_the_spend_under_the_accountant(pums, tmp_path):
    import re
    budget = dpsql.Budget(epsilon=1.0, delta=1e-6, accountant="pld")
    r = dpsql.from_df(pums, DATA / "PUMS.yaml", privacy=dpsql.Privacy(epsilon=0.05),
                      budget=budget, ledger=str(tmp_path / "l.jsonl"))
    for age in range(24):
        r.execute_df(f"{COUNT} WHERE age > {age}")
    r.execute_df(f"{COUNT} WHERE age > 0")                   # a replay: free
    summary = r.report(format="markdown").splitlines()[2]
    assert summary.startswith(f"Spent: epsilon {r.spent[0]:.6g}, delta 1e-06 (composed by "
                              "the PLD accountant). Budget: epsilon 1, delta 1e-06. Left: "
                              f"epsilon {1 - r.spent[0]:.6g}")
    page = r.report(format="html")
    totals = [float(t) for t in re.findall(r"total ([0-9.e-]+)", page)]
    assert len(totals) == 25 and totals[-1] == totals[-2] == pytest.approx(r.spent[0], rel=1e-5)
    assert all(a <= b for a, b in zip(totals, totals[1:])) and totals[-1] <= 1.0
    assert json.loads(r.report(format="json"))["accountant"] == "pld"
    assert "composed by the PLD accountant" in repr(r)


@pytest.mark.filterwarnings("ignore:dpsql. the noise of COUNT")
def test_never_fewer_answers_than_basic_composition(pums):
    """Both bounds hold, so the smaller epsilon is used: RDP reads one query at epsilon 0.5
    as more than 1 at delta 1e-6 (epsilon^2/2-zCDP converted), and the PLD's steps of 1e-4
    overstate queries far below that."""
    rdp = dpsql.from_df(pums, DATA / "PUMS.yaml", privacy=dpsql.Privacy(epsilon=0.5),
                        budget=dpsql.Budget(epsilon=1.0, delta=1e-6, accountant="rdp"))
    alone = tally_of(rdp._plan(COUNT).events)       # the library's reading of one query:
    assert alone._epsilon("rdp", 1e-6, ()) > 1.0    # over budget
    assert answered(rdp) == 2 and rdp.spent[0] == pytest.approx(1.0, rel=1e-6)
    pld = dpsql.from_df(pums, DATA / "PUMS.yaml", privacy=dpsql.Privacy(epsilon=3e-5),
                        budget=dpsql.Budget(epsilon=0.003, delta=1e-6, accountant="pld"))
    assert tally_of(pld._plan(COUNT).events * 100)._epsilon("pld", 1e-6, ()) > 0.003
    assert answered(pld) == 100


def test_discrete_gaussian_counts_compose_as_the_librarys_discrete_gaussian(pums):
    """One person moves one entry: the library's own discrete Gaussian PLD (variance P/Q
    as dpsql samples it, integer sensitivity), and its exact rho under RDP."""
    from dp_accounting.pld import privacy_loss_distribution as pld
    spent, r = gaussian_sessions(pums, "discrete_gaussian", 6)
    (event,) = r._plan(COUNT).events
    kind, p, q, c, _, _ = event
    assert kind == "dgauss" and c == 1
    mechanism = r._plan(COUNT).statistics[0].mechanism
    assert mechanism.params == ("gaussian", p, q) and mechanism.grid == 1
    one = pld.from_discrete_gaussian_mechanism(sigma=math.sqrt(p / q), sensitivity=1,
                                               value_discretization_interval=1e-4)
    theirs = pld.identity(value_discretization_interval=1e-4)
    for _ in range(6):
        theirs = theirs.compose(one)
    assert spent["pld"] == pytest.approx(theirs.get_epsilon_for_delta(1e-5), rel=1e-9)
    rdp = rdp_accountant.RdpAccountant()
    rdp.compose(dp_event.ZCDpEvent(rho=q / (2 * p)), 6)
    assert spent["rdp"] == pytest.approx(rdp.get_epsilon(1e-5), rel=1e-9)
    assert spent["pld"] < spent["rdp"] < spent["basic"] == pytest.approx(3.0)
