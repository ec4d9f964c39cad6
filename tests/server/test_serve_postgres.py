"""dpsql serve over data that lives in PostgreSQL (``database: postgresql://...``): the same
answers through the wire, each analyst on their own read-only connection."""
from __future__ import annotations

import os
import shutil

import pandas as pd
import psycopg
import pytest

from dpsql.server.config import ConfigError, load
from tests.paths import DATA
from tests.server.serving import Served, write_deployment
from tests.servers import PostgresServer, load_csv


@pytest.fixture(scope="module")
def pg():
    server = PostgresServer()
    try:
        with server.connect(autocommit=True) as con:
            load_csv(con, DATA / "PUMS.yaml", {"PUMS.PUMS": DATA / "PUMS.csv"})
        yield server
    finally:
        server.stop()


def test_a_postgresql_database_is_served(pg, tmp_path):
    shutil.copy(DATA / "PUMS.yaml", tmp_path / "PUMS.yaml")
    served = Served(write_deployment(tmp_path, tables=None, database=pg.url()))
    try:
        with psycopg.connect(served.dsn(), autocommit=True) as con:
            n = con.execute("SELECT COUNT(*) AS n FROM PUMS.PUMS").fetchone()[0]
            assert abs(n - len(pd.read_csv(DATA / "PUMS.csv"))) < 60
            plan = "\n".join(r[0] for r in con.execute("EXPLAIN SELECT AVG(age) FROM PUMS.PUMS"))
            assert "bounded plan" in plan
            # Review 46, F1: a refusal neither names the engine behind the server nor tells
            # the analyst to choose another one.
            for sql in ("SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE CAST(educ AS DATE) > "
                        "DATE '2000-01-01'",
                        "SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE SUBSTR(educ, income) = 'x'"):
                with pytest.raises(psycopg.Error) as refused:
                    con.execute(sql)
                text = str(refused.value)
                assert "not supported on this server" in text, text
                assert not any(name in text for name in ("PostgreSQL", "DuckDB", "engine")), text
    finally:
        served.stop()


def test_a_password_in_the_url_is_refused(tmp_path):
    path = write_deployment(tmp_path, tables=None,
                            database="postgresql://owner:secret@db.example.org/data")
    with pytest.raises(ConfigError, match="keep the password out of the file") as err:
        load(path)
    assert "secret" not in str(err.value)
    assert os.path.exists(path)


HOSTILE = [
    # issue 33, finding 11: `//` on a float rendered as an unguarded FLOOR(x / c), which
    # PostgreSQL raises on when the quotient overflows: an error only with the target.
    "SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE "
    "(CASE WHEN age = 37 AND income > 400000 THEN income ELSE 0 END) // 1e-306 > 0",
    "SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE "
    "income % (CASE WHEN age = 37 AND income > 400000 THEN 0 ELSE 7 END) >= 0",
    "SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE ROUND(CAST((CASE WHEN age = 37 AND "
    "income > 400000 THEN 1.7e308 ELSE 0 END) AS DOUBLE), 30) > 0",
    "SELECT (CASE WHEN age = 37 AND income > 400000 THEN income ELSE 1 END) // 1e-306 "
    "AS k, COUNT(*) AS n FROM PUMS.PUMS GROUP BY k",
]


def test_hostile_queries_behave_the_same_with_and_without_one_person(pg, tmp_path):
    """Issue 33, findings 11 and 13 replayed through the wire: on neighbouring PostgreSQL
    databases (the one row with age 37 and income 420,500 removed), every hostile query
    has the same outcome and SQLSTATE and the same charge; answers may differ by noise."""
    from tests.servers import create_database, load_frame
    frame = pd.read_csv(DATA / "PUMS.csv")
    target = (frame.age == 37) & (frame.income == 420500)
    assert target.sum() == 1
    outcomes = {}
    for name, rows in (("with_target", frame), ("without_target", frame[~target])):
        con = create_database(pg, name)
        load_frame(con, DATA / "PUMS.yaml", "PUMS.PUMS", rows)
        con.close()
        where = tmp_path / name
        served = Served(write_deployment(where, tables=None, database=pg.url(name),
                                         privacy={"epsilon": 0.01, "delta": 1e-6}))
        try:
            with psycopg.connect(served.dsn("alice"), autocommit=True) as con:
                seen = []
                for sql in HOSTILE:
                    try:
                        con.execute(sql).fetchall()
                        seen.append("00000")
                    except psycopg.Error as err:
                        seen.append((err.sqlstate, str(err).split(";")[0]))
                seen.append(con.execute("SHOW dpsql.spent").fetchone()[0])
            outcomes[name] = seen
        finally:
            served.stop()
    assert outcomes["with_target"] == outcomes["without_target"]


def test_a_session_whose_database_connection_died_is_opened_again(pg, tmp_path):
    """Issue 33's thirty-third review, F5: after PostgreSQL restarted (an out-of-memory kill),
    an analyst's session kept its dead connection for good: every statement, even an
    EXPLAIN, answered 42601 with libpq's own text. Now the statement that finds the
    connection gone answers 58000 (the detail in the audit log) and the next one opens a
    new session."""
    import json
    shutil.copy(DATA / "PUMS.yaml", tmp_path / "PUMS.yaml")
    served = Served(write_deployment(tmp_path, tables=None, database=pg.url()))
    sql = "EXPLAIN SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE age > {k}"
    try:
        with psycopg.connect(served.dsn("bob"), autocommit=True) as con:
            con.execute(sql.format(k=1)).fetchall()
            with pg.connect(autocommit=True) as owner:      # the server ends bob's backend
                ended = owner.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    "WHERE pid <> pg_backend_pid() AND backend_type = 'client backend' "
                    "AND application_name NOT LIKE 'psql%'").fetchall()
                assert ended and all(row[0] for row in ended)
            with pytest.raises(psycopg.Error) as err:
                con.execute(sql.format(k=2)).fetchall()
            assert err.value.sqlstate == "58000", (err.value.sqlstate, str(err.value))
            assert "libpq" not in str(err.value) and "connection" not in str(err.value)
            assert "bounded plan" in "\n".join(r[0] for r in con.execute(sql.format(k=3)))
            n = con.execute("SELECT COUNT(*) AS n FROM PUMS.PUMS").fetchone()[0]
            assert abs(n - len(pd.read_csv(DATA / "PUMS.csv"))) < 100
    finally:
        served.stop()
    with open(served.deployment.audit_log) as f:
        records = [json.loads(line) for line in f]
    lost = [r for r in records if r["sqlstate"] == "58000"]
    assert lost and "lost" in lost[-1]["detail"]
