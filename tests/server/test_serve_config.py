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


def _spark(r, spark, tables=None):
    r.pop("tables")
    r["spark"] = spark
    if tables is not None:
        r["tables"] = tables


@pytest.mark.parametrize("change,message", [
    (lambda r: r.update(spark={"master": "local[2]"}), "spark: and database: are two"),
    (lambda r: _spark(r, "local[2]"), "spark: takes master"),
    (lambda r: _spark(r, {"masters": "local[2]"}), "spark: takes master"),
    (lambda r: _spark(r, {"master": "localhost:7077"}), "master: not a Spark master URL"),
    (lambda r: _spark(r, {"master": 2}), "master: not a Spark master URL"),
    (lambda r: _spark(r, {"conf": ["spark.executor.memory=4g"]}), "conf: is a mapping"),
    (lambda r: _spark(r, {"conf": {"executor.memory": "4g"}}),
     "conf: executor.memory: a Spark property starts with spark."),
    (lambda r: _spark(r, {"conf": {"spark.sql.ansi.enabled": True}}),
     "conf: spark.sql.ansi.enabled: dpsql sets this property itself"),
    (lambda r: _spark(r, {"conf": {"spark.jars": None}}), "conf: spark.jars: give one value"),
    (lambda r: _spark(r, {}, {"PUMS.PUMS": "PUMS.csv"}), "tables: PUMS.PUMS: Spark reads Parquet"),
    (lambda r: _spark(r, {}, {"PUMS.PUMS": "gone.parquet"}), "tables: PUMS.PUMS: not found"),
    (lambda r: _spark(r, {}, ["PUMS.parquet"]), "tables: maps schema.table to Parquet data"),
])
def test_a_bad_spark_section_names_the_key_and_what_to_write(tmp_path, change, message):
    """spark: is the third data source (docs/deployment.md): with database: both are refused,
    and each mistake names its key; none of these starts Spark."""
    path = write_deployment(tmp_path)
    if message.startswith("spark: and database"):
        path = _edit(path, lambda r: (r.pop("tables"), r.update(database="PUMS.csv")))
    path = _edit(path, change)
    with pytest.raises(ConfigError) as err:
        load(path)
    assert message in str(err.value), str(err.value)


def test_a_spark_section_is_read_with_its_defaults(tmp_path):
    os.makedirs(tmp_path / "pums.parquet")          # a Parquet directory, as Spark writes them
    path = _edit(write_deployment(tmp_path), lambda r: _spark(
        r, {"conf": {"spark.executor.memory": "4g", "spark.ui.enabled": True}},
        {"PUMS.PUMS": "pums.parquet", "PUMS.other": "s3a://bucket/other"}))
    deployment = load(path)
    assert deployment.spark.master == "local[*]" and deployment.database is None
    assert deployment.spark.conf == {"spark.executor.memory": "4g", "spark.ui.enabled": "true"}
    assert deployment.tables == {"PUMS.PUMS": str(tmp_path / "pums.parquet"),
                                 "PUMS.other": "s3a://bucket/other"}
    only = _edit(path, lambda r: (r.pop("tables"), r.update(spark={"master": "spark://h:7077"})))
    assert load(only).tables is None and load(only).spark.master == "spark://h:7077"
