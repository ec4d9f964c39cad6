"""The deployment file: what it refuses, and the budgets it sets up (renewal periods)."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest
import yaml

import dpsql
from dpsql.server import accounts as accounts_module
from dpsql.server.accounts import Accounts
from dpsql.server.config import ConfigError, load
from tests.server.serving import write_deployment


def _edit(path: str, change) -> str:
    with open(path) as f:
        raw = yaml.safe_load(f)
    change(raw)
    with open(path, "w") as f:
        yaml.safe_dump(raw, f)
    return path


@pytest.mark.parametrize("change,message", [
    (lambda r: r.update(tsl="off"), "unknown key(s) tsl"),
    (lambda r: r.update(listen={"host": "127.0.0.1", "port": 5433}), "TLS can be turned off only"),
    (lambda r: r["analysts"]["alice"].update(password="alice's secret"), "store a verifier"),
    (lambda r: r["analysts"]["alice"].update(budget={"epsilon": -1}), "budget"),
    (lambda r: r["analysts"]["alice"].update(per_query={"epsilon": 0}), "positive number"),
    (lambda r: r["analysts"]["alice"].update(renewal="monthly"), "renewal is a period"),
    (lambda r: r.update(analysts={}), "at least one analyst"),
    (lambda r: r.update(tables={"PUMS.PUMS": "missing.csv"}), "file not found"),
    (lambda r: r.update(limits={"workers": 0}), "positive number"),
    (lambda r: r["analysts"].update({"../x": r["analysts"]["alice"]}), "letters, digits"),
])
def test_mistakes_are_refused_with_the_key_at_fault(tmp_path, change, message):
    path = _edit(write_deployment(tmp_path), change)
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        load(path)


def test_check_exits_3_on_a_bad_file_and_creates_nothing(tmp_path):
    path = _edit(write_deployment(tmp_path), lambda r: r.update(tsl="off"))
    done = subprocess.run([sys.executable, "-m", "dpsql", "serve", "--config", path, "--check"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 3 and "unknown key(s) tsl" in done.stderr
    assert "Traceback" not in done.stderr
    good = write_deployment(tmp_path / "good")
    done = subprocess.run([sys.executable, "-m", "dpsql", "serve", "--config", good, "--check"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and "analysts: alice, bob, carol" in done.stdout
    assert not os.path.exists(tmp_path / "good" / "ledgers")


def test_a_budget_changed_in_the_file_is_refused_by_the_ledger(tmp_path):
    path = write_deployment(tmp_path)
    account = Accounts(load(path)).by_name["bob"]
    with account.lock:
        account.reader()                              # creates bob.jsonl with epsilon 0.5
    _edit(path, lambda r: r["analysts"]["bob"].update(budget={"epsilon": 50}))
    account = Accounts(load(path)).by_name["bob"]
    with pytest.raises(dpsql.Error, match="can never be changed"):
        with account.lock:
            account.reader()


def test_a_renewal_period_starts_a_fresh_pool(tmp_path, monkeypatch):
    account = Accounts(load(write_deployment(tmp_path))).by_name["carol"]    # rho 0.5, 1d
    day = 86400
    monkeypatch.setattr(accounts_module.time, "time", lambda: 100 * day + 10)
    with account.lock:
        reader = account.reader()
        reader.execute_df("SELECT COUNT(*) FROM PUMS.PUMS", privacy=dpsql.Privacy(rho=0.5))
        with pytest.raises(dpsql.BudgetExceededError):
            reader.execute_df("SELECT AVG(age) FROM PUMS.PUMS", privacy=dpsql.Privacy(rho=0.1))
    monkeypatch.setattr(accounts_module.time, "time", lambda: 101 * day + 10)
    with account.lock:
        fresh = account.reader()
        assert fresh is not reader and fresh.spent_rho == 0
        fresh.execute_df("SELECT AVG(age) FROM PUMS.PUMS", privacy=dpsql.Privacy(rho=0.1))
    names = sorted(os.listdir(account.deployment.ledger_dir))
    assert names == ["carol.19700411T000000Z.jsonl", "carol.19700412T000000Z.jsonl"]


def test_an_analysts_budget_may_name_its_accountant(tmp_path):
    """Issue 37: budget: {epsilon: 1, delta: 1e-6, accountant: pld} in the deployment file."""
    path = _edit(write_deployment(tmp_path), lambda r: r["analysts"]["bob"].update(
        budget={"epsilon": 0.5, "delta": 1e-6, "accountant": "pld"}))
    account = Accounts(load(path)).by_name["bob"]
    assert account.analyst.budget.accountant == "pld"
    with account.lock:
        reader = account.reader()
        for age in range(30):        # 25 at epsilon 0.02 by basic composition; PLD fits 41
            reader.execute_df(f"SELECT COUNT(*) FROM PUMS.PUMS WHERE age > {age}",
                              privacy=dpsql.Privacy(epsilon=0.02))
        assert reader.spent[0] <= 0.5 and reader.accountant.ledger.budget.accountant == "pld"
    bad = _edit(path, lambda r: r["analysts"]["bob"].update(
        budget={"epsilon": 0.5, "accountant": "moments"}))
    with pytest.raises(ConfigError, match="bob: budget: .*accountant must be one of"):
        load(bad)
