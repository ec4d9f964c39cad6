"""The engine seam: what the user passes chooses the engine through engines/registry.py,
and a new engine plugs in there without a change to the API layer (issue 35)."""
import duckdb
import pandas as pd
import pytest

import dpsql
from dpsql.engines import registry
from dpsql.engines.duckdb.engine import Engine
from tests.paths import ROOT

EXAMPLES = ROOT / "examples" / "data"

PUMS_YAML = str(EXAMPLES / "PUMS.yaml")


class Pooled:
    """A connection type dpsql does not know: a pool's handle on a DuckDB database."""

    def __init__(self, con) -> None:
        self.con = con


@pytest.fixture
def pooled():
    con = duckdb.connect()
    con.execute("CREATE SCHEMA PUMS")
    con.execute(f"CREATE TABLE PUMS.PUMS AS SELECT * FROM read_csv('{EXAMPLES / 'PUMS.csv'}')")
    entry = registry.Registration(("pooled",), lambda obj: isinstance(obj, Pooled),
                                  lambda obj, meta: Engine.from_connection(obj.con, meta))
    registry.register(entry)
    try:
        yield Pooled(con)
    finally:
        registry.unregister(entry)
        con.close()


def test_a_new_engine_plugs_in_at_the_registry(pooled):
    reader = dpsql.from_connection(pooled, PUMS_YAML, privacy=dpsql.Privacy(epsilon=1.0))
    assert reader.execute_df("SELECT COUNT(*) AS n FROM PUMS.PUMS")["n"][0] > 500
    assert dpsql.from_connection(pooled, PUMS_YAML, privacy=1.0, engine="Pooled")
    with dpsql.connect(pooled, metadata=PUMS_YAML, privacy=1.0) as con:
        rows = con.cursor().execute("SELECT AVG(age) AS a FROM PUMS.PUMS").fetchall()
        assert len(rows) == 1
    with pytest.raises(dpsql.ProgrammingError, match="engine='spark' but the connection is "
                                                     "pooled's"):
        dpsql.from_connection(pooled, PUMS_YAML, privacy=1.0, engine="spark")


def test_an_engine_left_the_registry_is_gone(pooled):
    with pytest.raises(dpsql.ProgrammingError, match="pooled"):
        dpsql.from_connection(pooled, PUMS_YAML, privacy=1.0, engine="nosuch")
    assert "pooled" in registry.engine_names()


def test_what_no_engine_claims_is_refused_with_what_is_taken():
    with pytest.raises(dpsql.ProgrammingError) as err:
        dpsql.from_connection(object(), PUMS_YAML, privacy=1.0)
    text = str(err.value)
    for kind in ("duckdb.DuckDBPyConnection", "psycopg 3", "SparkSession", "from_df"):
        assert kind in text
    with pytest.raises(dpsql.ProgrammingError, match="duckdb, postgres, spark"):
        dpsql.from_connection(duckdb.connect(), PUMS_YAML, privacy=1.0, engine="oracle")


def test_the_built_in_engines_are_chosen_by_type():
    con = duckdb.connect()
    assert registry.claimant(con).name == "duckdb"
    assert registry.claimant(pd.DataFrame()) is None
    assert registry.is_connection(con) and not registry.is_connection("PUMS.csv")
    assert not registry.takes_tables(con)
    with pytest.raises(dpsql.ProgrammingError, match="needs a SparkSession"):
        dpsql.from_connection(con, PUMS_YAML, privacy=1.0,
                              tables={"PUMS.PUMS": str(EXAMPLES / "PUMS.csv")})


def test_a_duckdb_session_loads_no_other_engines_driver():
    import subprocess
    import sys
    script = ("import sys, dpsql; r = dpsql.from_df(sys.argv[1], sys.argv[2], privacy=1.0); "
              "r.execute_df('SELECT COUNT(*) AS n FROM PUMS.PUMS'); "
              "print(sorted(m for m in ('pyspark', 'psycopg') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", script, str(EXAMPLES / "PUMS.csv"), PUMS_YAML],
                         capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
