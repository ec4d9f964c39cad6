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
    finally:
        served.stop()


def test_a_password_in_the_url_is_refused(tmp_path):
    path = write_deployment(tmp_path, tables=None,
                            database="postgresql://owner:secret@db.example.org/data")
    with pytest.raises(ConfigError, match="keep the password out of the file") as err:
        load(path)
    assert "secret" not in str(err.value)
    assert os.path.exists(path)
