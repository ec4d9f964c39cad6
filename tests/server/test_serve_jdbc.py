"""dpsql serve with a JDBC client (PostgreSQL's driver, over TLS on loopback): tables listed
through DatabaseMetaData, a prepared statement with an int parameter, SET and SHOW.

JDBC is optional ("a client if one is at hand"): the driver jar is taken from
DPSQL_PG_JDBC or the local Maven repository; without it, or without Java, the test skips."""
from __future__ import annotations

import glob
import os
import shutil
import subprocess

import pytest

from tests.server.serving import PASSWORDS, Served, write_deployment
from tests.servers import missing

HERE = os.path.dirname(__file__)


def _driver() -> str | None:
    found = os.environ.get("DPSQL_PG_JDBC") or next(iter(sorted(glob.glob(os.path.expanduser(
        "~/.m2/repository/org/postgresql/postgresql/*/postgresql-*.jar")), reverse=True)), None) \
        or next(iter(glob.glob("/usr/share/java/postgresql*.jar")), None)
    return found if found and os.path.isfile(found) else None


def test_jdbc_lists_tables_and_runs_a_prepared_statement(tmp_path):
    jar = _driver()
    if jar is None or shutil.which("java") is None:
        missing("no PostgreSQL JDBC driver (DPSQL_PG_JDBC, ~/.m2 or Debian's "
                "libpostgresql-jdbc-java) or no Java")
    served = Served(write_deployment(tmp_path, tls=True))
    try:
        done = subprocess.run(["java", "-cp", jar, os.path.join(HERE, "jdbc", "Client.java"),
                               str(served.port), PASSWORDS["alice"]],
                              capture_output=True, text=True, timeout=180)
    finally:
        served.stop()
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    assert "table PUMS.PUMS" in lines
    count = int(next(line for line in lines if line.startswith("count ")).split()[1])
    assert 300 < count < 800                       # about 530 of 1,000, at epsilon 0.1
    assert "spent epsilon=0.1, delta=0" in lines
