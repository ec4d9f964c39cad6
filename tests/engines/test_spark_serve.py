"""dpsql serve over Spark (``spark:`` in the deployment): analysts reach Spark through the wire.

The server runs in this process (``Served``) and joins the test session's Spark (one JVM
for every Spark test, ``tests/engines/conftest.py``): a server that finds a SparkContext
running uses it and leaves it running when it stops, as it would in a notebook. A server
in a subprocess would start a second JVM (10-20 s here) for the same checks.
"""
from __future__ import annotations

import os
import shutil
import threading
import time

import pandas as pd
import psycopg
import pytest
import yaml

from tests.paths import DATA
from tests.server.serving import Served, spent, write_deployment

SLOW_VIEW = "dpsql_serve_slow"
"""A view of the test session's Spark catalog, 10^11 rows of 0..9: a COUNT over it runs for
minutes, so that only a timeout or a cancel ends it."""


def _metadata(where) -> str:
    """PUMS.yaml with the slow view as PUMS.dpsql_serve_slow (read from the Spark catalog)."""
    with open(DATA / "PUMS.yaml") as f:
        meta = yaml.safe_load(f)
    meta["PUMS"]["PUMS"][SLOW_VIEW] = {"row_privacy": True,
                                       "n": {"type": "int", "lower": 0, "upper": 10}}
    path = os.path.join(where, "meta.yaml")
    with open(path, "w") as f:
        yaml.safe_dump(meta, f)
    return path


def _deployment(where, **limits) -> str:
    """A spark: deployment over PUMS (a Parquet file next to it) and the slow view."""
    os.makedirs(where, exist_ok=True)
    pd.read_csv(DATA / "PUMS.csv").to_parquet(os.path.join(where, "pums.parquet"), index=False)
    return write_deployment(where, metadata=_metadata(where),
                            tables={"PUMS.PUMS": "pums.parquet"},
                            spark={"master": "local[2]",
                                   "conf": {"spark.sql.shuffle.partitions": 2}},
                            limits={"statement_timeout_s": 30, "workers": 4, **limits})


@pytest.fixture(scope="module")
def slow_view(spark):
    spark.range(0, 10 ** 11).selectExpr("id % 10 AS n").createOrReplaceTempView(SLOW_VIEW)
    yield SLOW_VIEW
    spark.catalog.dropTempView(SLOW_VIEW)


@pytest.fixture(scope="module")
def served(spark, slow_view, tmp_path_factory):
    server = Served(_deployment(tmp_path_factory.mktemp("spark-serve")))
    yield server
    server.stop()


def _code(con, sql: str) -> tuple:
    try:
        con.execute(sql)
    except psycopg.Error as err:
        return err.sqlstate, str(err)
    return "00000", ""


def _idle(spark, within: float = 10.0) -> bool:
    """No Spark job runs (within ``within`` seconds): the stopped statement's jobs ended."""
    end = time.monotonic() + within
    while time.monotonic() < end:
        if not spark.sparkContext.statusTracker().getActiveJobsIds():
            return True
        time.sleep(0.1)
    return False


def test_analysts_share_one_spark_binding_and_get_noisy_charged_answers(served, spark):
    accounts = served.server.accounts
    assert accounts.shared.spark is spark          # the test session's, joined at start-up
    answers = {}

    def ask(user):
        with psycopg.connect(served.dsn(user), autocommit=True) as con:
            con.execute("SET dpsql.epsilon = 0.05")
            answers[user] = [con.execute(f"SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE age > {-i}")
                             .fetchone()[0] for i in range(1, 4)]
    before = {u: spent(served.deployment, u) for u in ("alice", "bob")}
    threads = [threading.Thread(target=ask, args=(u,)) for u in ("alice", "bob")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    for user in ("alice", "bob"):
        assert all(abs(n - 1000) < 300 for n in answers[user]), answers
        assert any(n != 1000 for n in answers[user]), answers             # noisy
        assert spent(served.deployment, user) == pytest.approx(before[user] + 0.15)
    engines = [accounts.by_name[u]._reader.engine for u in ("alice", "bob")]
    assert engines[0] is not engines[1]                 # a reader (and job groups) each,
    assert engines[0].physical is engines[1].physical   # over the same registered views
    assert engines[0].session is engines[1].session


def test_a_timeout_and_a_cancel_stop_the_spark_jobs_and_the_server_answers_on(served, spark,
                                                                              caplog):
    limits = served.deployment.limits          # the owner's limits, read at each statement
    with psycopg.connect(served.dsn("alice"), autocommit=True) as con:
        assert con.execute("SELECT COUNT(*) AS n FROM PUMS.PUMS").fetchone()[0] > 500
        limits["statement_timeout_s"] = 4.0
        try:
            start = time.monotonic()
            state, text = _code(con, f"SELECT COUNT(*) AS n FROM PUMS.{SLOW_VIEW}")
        finally:
            limits["statement_timeout_s"] = 30.0
        assert state == "57014" and "statement timeout" in text, text
        assert time.monotonic() - start < 15 and _idle(spark)
        assert con.execute("SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE age > 0").fetchone()[0] > 500
    with psycopg.connect(served.dsn("carol"), autocommit=True) as con, \
            psycopg.connect(served.dsn("bob"), autocommit=True) as other:
        other.execute("SET dpsql.epsilon = 0.05")
        threading.Timer(1.5, con.cancel_safe).start()
        done = {}
        # bob's statement runs meanwhile, in a job group of its own, and is not cancelled
        helper = threading.Thread(target=lambda: done.update(n=other.execute(
            "SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE sex = '1'").fetchone()[0]))
        helper.start()
        start = time.monotonic()
        state, text = _code(con, f"SELECT SUM(n) AS s FROM PUMS.{SLOW_VIEW}")
        assert state == "57014" and "user request" in text, text
        assert time.monotonic() - start < 10
        helper.join(60)
        assert done.get("n", 0) > 200 and _idle(spark)
        assert _code(con, "SELECT COUNT(*) AS n FROM PUMS.PUMS")[0] == "00000"
    assert "please report it" not in caplog.text      # a stop is not an engine failure


def test_a_refused_or_failed_query_names_no_path_host_or_spark_internals(spark, slow_view,
                                                                          tmp_path, caplog):
    path = _deployment(tmp_path)
    served = Served(path)
    try:
        with psycopg.connect(served.dsn("alice"), autocommit=True) as con:
            said = [_code(con, sql)[1] for sql in (
                "SELECT COUNT(*) AS n FROM PUMS.nope",
                "SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE nope > 1",
                "SELECT COUNT(*) AS n FROM global_temp.anything",
                "SELECT income FROM PUMS.PUMS")]
            said.append("\n".join(r[0] for r in con.execute(
                "EXPLAIN SELECT COUNT(*) AS n FROM PUMS.PUMS").fetchall()))
            os.remove(tmp_path / "pums.parquet")       # the data gone while serving
            state, text = _code(con, "SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE age > 3")
            assert state != "00000"
            said.append(text)
        for text in said:
            assert text
            for secret in (str(tmp_path), "parquet", "global_temp.dpsql", "file:", "Spark",
                           "Exception", os.uname().nodename):
                assert secret not in text, (secret, text)
        assert "withheld" in said[-1]
        assert "please report it" in caplog.text      # a real failure is logged
    finally:
        served.stop()
    assert spark.range(3).count() == 3          # the test session's Spark keeps running
