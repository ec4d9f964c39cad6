"""What the `dpsql` command says, in the user's terms: a table the metadata lacks, a
deployment file's error, a parse error, a replay that cost nothing (real processes)."""
import os
import subprocess
import sys

from tests.paths import DATA, ROOT

PUMS_META = ["--metadata", str(DATA / "PUMS.yaml")]
PUMS = PUMS_META + ["--table", f"PUMS.PUMS={DATA / 'PUMS.csv'}"]
ENV = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))


def run(*args):
    return subprocess.run([sys.executable, "-m", "dpsql", *map(str, args)], capture_output=True,
                          text=True, env=ENV, timeout=120, cwd=ROOT)


def test_data_for_a_table_the_metadata_lacks_is_a_binding_error_not_a_refused_query():
    proc = run("query", *PUMS_META, "--table", f"PUMS.OTHER={DATA / 'PUMS.csv'}", "--epsilon",
               "1", "SELECT COUNT(*) FROM PUMS.PUMS")
    assert proc.returncode == 3 and proc.stdout == ""
    line = proc.stderr.splitlines()[0]
    assert line.startswith("dpsql: data binding error: data given for 'PUMS.OTHER', which is "
                           "not a table of the metadata (PUMS.PUMS)"), line
    assert "--table" in line and "query refused" not in proc.stderr


def test_a_deployment_files_error_is_a_configuration_error(tmp_path):
    config = tmp_path / "deployment.yaml"
    config.write_text(f"metadata: {tmp_path / 'missing.yaml'}\n")
    proc = run("serve", "--config", config, "--check")
    assert proc.returncode == 3, proc.stderr
    assert proc.stderr.startswith(f"dpsql: configuration error: {config}: metadata: file not "
                                  "found"), proc.stderr
    assert "query refused" not in proc.stderr


def test_a_parse_error_says_what_is_wrong_and_where_in_sql_terms():
    proc = run("query", *PUMS, "--epsilon", "1",
               "SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE age > 30 AND")
    assert proc.returncode == 3
    line = proc.stderr.splitlines()[0]
    assert line.startswith("dpsql: query refused: cannot parse the query at line 1, column "
                           "52, near '"), line
    assert "age > 30 AND': AND needs a condition after it." in line, line
    assert "sqlglot" not in line and "<class" not in line and "Required keyword" not in line


def test_a_replayed_query_says_it_cost_nothing(tmp_path):
    ledger = tmp_path / "session.ledger"
    sql = "SELECT COUNT(*) AS n FROM PUMS.PUMS"
    first = run("query", *PUMS, "--epsilon", "1", "--ledger", ledger, "--budget", "3", sql)
    again = run("query", *PUMS, "--epsilon", "1", "--ledger", ledger, sql)
    fresh = run("query", *PUMS, "--epsilon", "1", "--ledger", ledger, "--fresh", sql)
    assert (first.returncode, again.returncode, fresh.returncode) == (0, 0, 0), again.stderr
    assert "replayed" not in first.stderr and "replayed" not in fresh.stderr
    assert again.stdout == first.stdout
    assert again.stderr.startswith(f"dpsql: replayed: cost 0; ledger {ledger} holds this "
                                   "query's release"), again.stderr
    shown = run("ledger", "show", ledger)
    assert "spent:     epsilon=2, delta=0" in shown.stdout, shown.stdout
