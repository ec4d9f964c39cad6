"""The ``dpsql`` command starts light: help, version and usage errors import none of the
engine's libraries (pandas, DuckDB, sqlglot, numpy, the report module).

Checked on what a fresh process has imported, not on a timing (tests/benchmarks/bench_cli.py
times it): a parser that imports pandas to declare an option fails here on any machine.
"""
import json
import os
import subprocess
import sys

import pytest

from tests.paths import ROOT

HEAVY = ("pandas", "duckdb", "sqlglot", "numpy", "pyarrow", "jsonschema", "yaml",
         "dpsql.release.report", "dpsql.api.session", "dpsql.engines")

# Runs the console entry point as the ``dpsql`` script does, then lists what was imported.
PROBE = """
import json, sys
from dpsql.cli import main
code = main(sys.argv[1:])
heavy = sorted(m for m in sys.modules if m.split(".")[0] in {heavy_top}
               or any(m == h or m.startswith(h + ".") for h in {heavy}))
print(json.dumps({{"code": code, "heavy": heavy}}), file=sys.stderr)
"""


def imported(*args) -> tuple:
    """(exit code, heavy modules imported) of ``dpsql ARGS`` in a new process."""
    tops = {h for h in HEAVY if "." not in h}
    code = PROBE.format(heavy_top=tops, heavy=[h for h in HEAVY if "." in h])
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                          env=env, timeout=60, cwd=ROOT)
    last = proc.stderr.strip().splitlines()[-1]
    found = json.loads(last)
    return found["code"], found["heavy"], proc


@pytest.mark.parametrize("args", [
    ["--help"], ["--version"], ["query", "--help"], ["ledger", "show", "--help"],
    ["ledger", "report", "--help"], ["metadata", "bounds", "--help"], ["serve", "--help"]])
def test_help_and_version_import_no_engine_library(args):
    code, heavy, proc = imported(*args)
    assert code == 0, proc.stderr
    assert heavy == [], f"dpsql {' '.join(args)} imported {heavy}"


@pytest.mark.parametrize("args", [
    ["query"], ["query", "--metadata", "m.yaml", "--epsilon", "-1", "SELECT 1"],
    ["ledger", "show"], ["nonsense"]])
def test_a_usage_error_imports_no_engine_library(args):
    code, heavy, proc = imported(*args)
    assert code == 2, proc.stderr
    assert heavy == [], f"dpsql {' '.join(args)} imported {heavy}"


def test_usage_errors_name_the_command_as_typed():
    """A subcommand's usage error names it ``dpsql query``, not argparse's top usage line."""
    code, _, proc = imported("ledger", "show")
    error = proc.stderr.splitlines()[0]
    assert error == ("dpsql: usage error: the following arguments are required: FILE "
                     "(see 'dpsql ledger show --help')"), error
    code, _, proc = imported("query", "--help")
    assert proc.stdout.startswith("usage: dpsql query [-h] --metadata M.yaml"), proc.stdout


QUERY = ["query", "--metadata", "tests/data/PUMS.yaml", "--table",
         "PUMS.PUMS=tests/data/PUMS.csv", "--epsilon", "1"]


@pytest.mark.parametrize("sql", [
    "SELECT sex, COUNT(*) AS n, AVG(age) AS mean_age FROM PUMS.PUMS GROUP BY sex",
    "SELECT COUNT(*) AS n FROM PUMS.PUMS",
    "SELECT educ, COUNT(*) AS n FROM PUMS.PUMS GROUP BY educ ORDER BY n DESC LIMIT 3"])
def test_a_query_reads_its_rows_without_pandas(sql):
    """``dpsql query`` answers from numpy columns: pandas (and pyarrow) cost about 0.6 s of
    a 1.2 s command (docs/performance.md, "The CLI") and are not imported."""
    code, heavy, proc = imported(*QUERY, "--format", "json", sql)
    assert code == 0, proc.stderr
    rows = json.loads(proc.stdout)
    assert rows and all(isinstance(r["n"], int) for r in rows), rows
    assert not [m for m in heavy if m.split(".")[0] in ("pandas", "pyarrow")], heavy


def test_a_query_with_accuracy_still_answers_through_pandas():
    code, _, proc = imported(*QUERY, "--accuracy", "0.9", "--format", "json",
                             "SELECT COUNT(*) AS n FROM PUMS.PUMS")
    assert code == 0, proc.stderr
    [row] = json.loads(proc.stdout)
    assert row["n_lo"] <= row["n"] <= row["n_hi"], row


def test_a_list_of_quantiles_prints_as_a_list():
    """One output holding several values (``QUANTILE_CONT(x, [...])``) was an internal
    error in every format (a numpy array taken for one cell's NULL test)."""
    sql = "SELECT sex, QUANTILE_CONT(age, [0.25, 0.75]) AS q FROM PUMS.PUMS GROUP BY sex"
    code, _, proc = imported(*QUERY, "--format", "json", sql)
    assert code == 0, proc.stderr
    rows = json.loads(proc.stdout)
    assert [r["sex"] for r in rows] == ["0", "1"], rows
    assert all(len(r["q"]) == 2 and 0 <= r["q"][0] <= r["q"][1] <= 100 for r in rows), rows
    code, _, proc = imported(*QUERY, sql)
    assert code == 0, proc.stderr
    assert all(line.split(None, 1)[1].startswith("[") for line in proc.stdout.splitlines()[2:])


def test_the_dbapi_cursor_reads_its_rows_without_pandas():
    """A PEP 249 user over files never loads pandas either; a list of quantiles is a list
    (the cursor raised InternalError on it)."""
    code = """
import json, sys, warnings
warnings.simplefilter("ignore")
import dpsql
con = dpsql.connect(metadata="tests/data/PUMS.yaml", tables={"PUMS.PUMS": "tests/data/PUMS.csv"},
                    privacy=dpsql.Privacy(epsilon=1.0))
cur = con.cursor()
cur.execute("SELECT sex, COUNT(*) AS n, QUANTILE_CONT(age, [0.25, 0.75]) AS q FROM PUMS.PUMS GROUP BY sex")
rows = cur.fetchall()
print(json.dumps({"rows": rows, "types": [d[1] for d in cur.description],
                  "pandas": sorted(m for m in sys.modules if m.split(".")[0] in ("pandas", "pyarrow"))}))
"""
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                          timeout=60, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    found = json.loads(proc.stdout)
    assert found["pandas"] == [], found["pandas"]
    assert found["types"] == ["VARCHAR", "BIGINT", "VARCHAR"], found["types"]
    assert [r[0] for r in found["rows"]] == ["0", "1"]
    assert all(isinstance(r[1], int) and len(r[2]) == 2 for r in found["rows"]), found["rows"]
