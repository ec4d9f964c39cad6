"""dpsql serve with the clients analysts use: psql, psycopg 3, SQLAlchemy with pandas.

Each test connects over the unix socket of a real server (tests/server/serving.py) and
checks answers within noise of the truth, costs in the analyst's own ledger, and the
SQLSTATE of every refusal."""
from __future__ import annotations

import json
import os
import shutil
import subprocess

import pandas as pd
import psycopg
import pytest

from tests.paths import DATA
from tests.server.serving import PASSWORDS, Served, write_deployment
from tests.server.serving import spent as spent_of
from tests.servers import missing

TRUTH = pd.read_csv(DATA / "PUMS.csv")


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    server = Served(write_deployment(tmp_path_factory.mktemp("serve")))
    try:
        yield server
    finally:
        server.stop()


def spent(served, analyst: str) -> float:
    return spent_of(served.deployment, analyst)


def psql(served, command: str, user: str = "alice", password: str | None = None):
    if shutil.which("psql") is None:
        missing("psql (PostgreSQL's client) is not installed")
    env = dict(os.environ, PGPASSWORD=PASSWORDS.get(user, "x") if password is None else password)
    return subprocess.run(["psql", f"host={served.socket_dir} port={served.deployment.port} "
                           f"user={user} dbname=dpsql", "-X", "-A", "-t", "-c", command],
                          capture_output=True, text=True, env=env, timeout=60)


def test_psql_answers_within_noise_and_charges_the_analyst(served):
    before = spent(served, "alice")
    done = psql(served, "SELECT COUNT(*) AS n FROM PUMS.PUMS")
    assert done.returncode == 0, done.stderr
    assert abs(int(done.stdout.strip()) - len(TRUTH)) < 60     # scale 2 at epsilon 0.5
    assert spent(served, "alice") == pytest.approx(before + 0.5)


def test_psql_lists_tables_and_columns_from_the_metadata(served):
    tables = psql(served, r"\dt")
    assert tables.returncode == 0, tables.stderr
    assert "PUMS|PUMS|table" in tables.stdout
    columns = psql(served, r'\d "PUMS"."PUMS"')
    assert columns.returncode == 0, columns.stderr
    for name in ("age", "sex", "income"):
        assert name in columns.stdout


def test_set_epsilon_explain_and_show(served):
    with psycopg.connect(served.dsn(), autocommit=True) as con:
        con.execute("SET dpsql.epsilon = 0.25")
        before = spent(served, "alice")
        avg = con.execute("SELECT AVG(age) AS a FROM PUMS.PUMS").fetchone()[0]
        assert abs(avg - TRUTH.age.mean()) < 5
        assert spent(served, "alice") == pytest.approx(before + 0.25)
        plan = "\n".join(r[0] for r in con.execute("EXPLAIN SELECT SUM(income) FROM PUMS.PUMS"))
        assert "epsilon=0.25" in plan and "bounded plan" in plan
        assert spent(served, "alice") == pytest.approx(before + 0.25)      # explain is free
        shown = con.execute("SHOW dpsql.spent").fetchone()[0]
        assert shown.startswith(f"epsilon={spent(served, 'alice'):.6g}")
        assert con.execute("SHOW dpsql.budget").fetchone()[0] == "epsilon=3, delta=1e-05"


def test_prepared_statements_bind_parameters_as_values(served):
    with psycopg.connect(served.dsn(), autocommit=True) as con:
        con.execute("SET dpsql.epsilon = 0.1")
        got = con.execute("SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE age > %s AND sex = %s",
                          (40, "1"), prepare=True).fetchone()[0]
        truth = int(((TRUTH.age > 40) & (TRUTH.sex.astype(str) == "1")).sum())
        assert abs(got - truth) < 250
        # A parameter is a value, never SQL: this is a string compared with sex.
        none = con.execute("SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE sex = %s",
                           ("1' OR '1'='1",)).fetchone()[0]
        assert abs(none) < 250


def test_psycopgs_binary_parameters_are_values(served):
    """Review 28, F5: psycopg sends a Decimal, an int beyond int8, a date and a naive
    datetime in binary with the ordinary %s; they were refused (0A000)."""
    import datetime as dt
    import decimal
    with psycopg.connect(served.dsn(), autocommit=True) as con:
        con.execute("SET dpsql.epsilon = 0.1")
        sql = ("SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE age > %s AND income < %s "
               "AND CAST('2020-01-01' AS DATE) < %s AND CAST('2020-01-01' AS TIMESTAMP) < %s")
        got = con.execute(sql, (decimal.Decimal("40.5"), 10 ** 19, dt.date(2024, 2, 29),
                                dt.datetime(2024, 1, 2, 3, 4, 5))).fetchone()[0]
        assert abs(got - int((TRUTH.age > 40.5).sum())) < 250


def test_refusals_are_free_and_carry_sqlstates(served):
    before = spent(served, "alice")
    with psycopg.connect(served.dsn(), autocommit=True) as con:
        cases = [("SELECT * FROM PUMS.PUMS", "42601"),
                 ("SELECT COUNT(*) FROM nowhere.t", "42P01"),
                 ("SELECT * FROM read_csv('/etc/passwd')", None),
                 ("COPY PUMS.PUMS TO '/tmp/x.csv'", None),
                 ("SET dpsql.epsilon = 5", None),
                 ("SET data_directory = '/'", "42704")]
        for sql, code in cases:
            with pytest.raises(psycopg.Error) as err:
                con.execute(sql)
                if sql.startswith("SET dpsql.epsilon"):
                    con.execute("SELECT COUNT(*) FROM PUMS.PUMS")
            if code is not None:
                assert err.value.sqlstate == code, (sql, err.value)
            con.execute("RESET ALL")
    assert spent(served, "alice") == pytest.approx(before)


def test_a_budget_runs_out_with_its_own_sqlstate(served):
    with psycopg.connect(served.dsn("bob"), autocommit=True) as con:
        con.execute("SELECT COUNT(*) FROM PUMS.PUMS")        # 0.5 of bob's 0.5
        with pytest.raises(psycopg.Error) as err:
            con.execute("SELECT AVG(age) FROM PUMS.PUMS")
        assert err.value.sqlstate == "53400"
        assert "budget" in str(err.value)
    assert spent(served, "bob") == pytest.approx(0.5)


def test_wrong_password_and_unknown_user_are_alike(served):
    errors = []
    for user, password in (("alice", "wrong"), ("mallory", "alice's secret")):
        with pytest.raises(psycopg.OperationalError) as err:
            psycopg.connect(served.dsn(user, password))
        errors.append(str(err.value).split("FATAL:")[-1].replace(user, "USER").strip())
    assert errors[0] == errors[1] == 'password authentication failed for user "USER"'


def test_sqlalchemy_and_pandas_read_sql(served):
    import sqlalchemy                   # in the test extra: missing fails, never skips
    url = sqlalchemy.engine.URL.create(
        "postgresql+psycopg", username="alice", password=PASSWORDS["alice"], database="dpsql",
        query={"host": served.socket_dir, "port": str(served.deployment.port)})
    engine = sqlalchemy.create_engine(url)
    try:
        inspector = sqlalchemy.inspect(engine)
        assert "PUMS" in inspector.get_table_names(schema="PUMS")
        assert "income" in [c["name"] for c in inspector.get_columns("PUMS", schema="PUMS")]
        frame = pd.read_sql("SELECT sex, COUNT(*) AS n FROM PUMS.PUMS GROUP BY sex", engine)
        assert sorted(frame.columns) == ["n", "sex"] and len(frame) == 2
    finally:
        engine.dispose()


def test_every_statement_is_audited(served):
    with psycopg.connect(served.dsn("carol"), autocommit=True) as con:
        con.execute("SELECT COUNT(*) FROM PUMS.PUMS")
    with open(served.deployment.audit_log) as f:
        records = [json.loads(line) for line in f]
    mine = [r for r in records if r["analyst"] == "carol"]
    assert mine and mine[-1]["sql"] == "SELECT COUNT(*) FROM PUMS.PUMS"
    assert mine[-1]["outcome"] == "ok" and mine[-1]["epsilon"] > 0
    assert {"time", "client", "delta", "sqlstate"} <= set(mine[-1])


def test_an_analyst_with_a_pld_budget_sees_the_composed_spend(tmp_path):
    """Issue 37: a deployment file's budget with accountant: pld, through SHOW."""
    import yaml
    path = write_deployment(tmp_path)
    with open(path) as f:
        raw = yaml.safe_load(f)
    raw["analysts"]["bob"]["budget"] = {"epsilon": 0.5, "delta": 1e-6, "accountant": "pld"}
    with open(path, "w") as f:
        yaml.safe_dump(raw, f)
    server = Served(path)
    try:
        with psycopg.connect(server.dsn("bob"), autocommit=True) as con:
            con.execute("SET dpsql.epsilon = 0.02")
            for age in range(30):        # 25 by basic composition
                con.execute(f"SELECT COUNT(*) FROM PUMS.PUMS WHERE age > {age}").fetchone()
            assert con.execute("SHOW dpsql.budget").fetchone()[0] == \
                "epsilon=0.5, delta=1e-06, accountant=pld"
            shown = con.execute("SHOW dpsql.spent").fetchone()[0]
            eps = float(shown.split(",")[0].split("=")[1])
            assert eps <= 0.5 and eps == pytest.approx(spent_of(server.deployment, "bob"), rel=1e-5)
            left = con.execute("SHOW dpsql.remaining").fetchone()[0]
            assert left.endswith(", delta for thresholds=5e-07")
            assert float(left.split(",")[0].split("=")[1]) == pytest.approx(0.5 - eps, rel=1e-4)
    finally:
        server.stop()


def test_a_rho_budget_shows_rho_spent_and_remaining(tmp_path):
    """Issue 33's thirtieth review, F3: a zCDP analyst's SHOW dpsql.remaining gave no
    remaining figure and SHOW dpsql.spent only epsilon. Now both say rho, their unit."""
    server = Served(write_deployment(tmp_path))
    try:
        with psycopg.connect(server.dsn("carol"), autocommit=True) as con:
            con.execute("SET dpsql.rho = 0.01")
            for age in (20, 30, 40):
                con.execute(f"SELECT COUNT(*) FROM PUMS.PUMS WHERE age > {age}").fetchone()
            assert con.execute("SHOW dpsql.budget").fetchone()[0] == "rho=0.5, delta=1e-06"
            spent = con.execute("SHOW dpsql.spent").fetchone()[0]
            assert spent.startswith("rho=0.03, epsilon="), spent
            left = con.execute("SHOW dpsql.remaining").fetchone()[0]
            assert left.startswith("rho=0.47, delta for thresholds="), left
    finally:
        server.stop()
