"""The `dpsql` command line, run as a real subprocess (`python -m dpsql`) on tests/data."""
import csv
import io
import json
import os
import subprocess
import sys

import duckdb
import pytest
import yaml

from dpsql.cli import command as cli
from dpsql.cli import text

from tests.paths import DATA, ROOT

PUMS = ["--metadata", str(DATA / "PUMS.yaml"), "--table", f"PUMS.PUMS={DATA / 'PUMS.csv'}"]
PUMS_AGE_SUM, PUMS_ROWS = 44797, 1000


def run(*args, stdin=None):
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-m", "dpsql", *map(str, args)], input=stdin,
                          capture_output=True, text=True, env=env, timeout=120)
    return proc


def assert_one_line_error(proc, code, *words):
    assert proc.returncode == code, (proc.returncode, proc.stdout, proc.stderr)
    errors = [x for x in proc.stderr.splitlines() if not x.startswith("dpsql: warning:")]
    assert len(errors) == 1 and errors[0].startswith("dpsql: "), proc.stderr
    assert "Traceback" not in proc.stderr and proc.stdout == ""
    for word in words:
        assert word in errors[0], errors[0]
    return errors[0]


# ----------------------------------------------------------------- query

def test_query_prints_an_aligned_table_by_default():
    proc = run("query", *PUMS, "--epsilon", "1",
               "SELECT COUNT(*) AS n, SUM(age) AS total_age FROM PUMS.PUMS")
    assert proc.returncode == 0, proc.stderr
    header, rule, row, *rest = proc.stdout.splitlines()
    assert header.split() == ["n", "total_age"] and set(rule) <= {"-", " "} and rest == []
    n, total = map(float, row.split())
    # Count: discrete Laplace, scale <= 1/(eps/2); |noise| > 40 has p < 1e-8.
    assert abs(n - PUMS_ROWS) < 40
    assert abs(total - PUMS_AGE_SUM) < 4000
    assert len(header) == len(row)  # aligned: numbers right-aligned under their header


def test_query_csv_from_stdin_with_group_by():
    sql = "SELECT married, COUNT(*) AS n FROM PUMS.PUMS GROUP BY married ORDER BY married"
    proc = run("query", *PUMS, "--epsilon", "2", "--format", "csv", "-", stdin=sql)
    assert proc.returncode == 0, proc.stderr
    rows = list(csv.reader(io.StringIO(proc.stdout)))
    assert rows[0] == ["married", "n"]
    got = {int(float(k)): float(v) for k, v in rows[1:]}
    assert set(got) == {0, 1}  # both groups clear the threshold by far
    assert abs(got[0] - 451) < 60 and abs(got[1] - 549) < 60


def test_query_json_is_a_list_of_objects_from_a_duckdb_database(tmp_path):
    db = tmp_path / "data.duckdb"
    con = duckdb.connect(str(db))
    con.execute("CREATE SCHEMA PUMS")
    con.execute("CREATE TABLE PUMS.PUMS AS SELECT * FROM read_csv(?)", [str(DATA / "PUMS.csv")])
    con.close()
    proc = run("query", "--metadata", DATA / "PUMS.yaml", "--database", db, "--epsilon", "1",
               "--format", "json", "SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE age >= 0")
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert isinstance(result, list) and len(result) == 1 and list(result[0]) == ["n"]
    assert abs(result[0]["n"] - PUMS_ROWS) < 40
    assert duckdb.connect(str(db)).execute("SELECT COUNT(*) FROM PUMS.PUMS").fetchone() == (
        PUMS_ROWS,)  # opened read-only and left as it was


def test_query_reads_parquet_tables(tmp_path):
    parquet = tmp_path / "student.parquet"
    duckdb.read_csv(str(DATA / "student.csv")).write_parquet(str(parquet))
    proc = run("query", "--metadata", DATA / "student.yaml", "--table",
               f"MySchema.MyTable={parquet}", "--epsilon", "1", "--format", "json",
               "SELECT COUNT(*) AS n FROM MySchema.MyTable")
    assert proc.returncode == 0, proc.stderr
    assert abs(json.loads(proc.stdout)[0]["n"] - 649) < 40


def test_explain_runs_nothing_and_spends_nothing(tmp_path):
    ledger = tmp_path / "s.ledger"
    missing = run("query", *PUMS, "--epsilon", "1", "--ledger", ledger, "--budget", "1",
                  "--explain", "SELECT COUNT(*) AS n FROM PUMS.PUMS")
    assert missing.returncode == 0, missing.stderr
    assert not ledger.exists()            # explain leaves no trace, not even a new ledger
    from dpsql.privacy.ledger import Ledger
    from dpsql import Budget
    Ledger(str(ledger), Budget(1.0))      # an existing, empty ledger
    proc = run("query", *PUMS, "--epsilon", "1", "--ledger", ledger, "--budget", "1",
               "--explain", "SELECT COUNT(*) AS n, AVG(income) AS inc FROM PUMS.PUMS")
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout.lower()
    assert "laplace" in text and "scale" in text and "95" in text
    assert f"ledger {ledger}: remaining epsilon=1, delta=1e-06; this query fits" in proc.stdout
    show = run("ledger", "show", ledger, "--format", "json")
    doc = json.loads(show.stdout)
    assert doc["releases"] == [] and doc["spent"] == {"epsilon": 0.0, "delta": 0.0}


def _reject_constant(name):
    raise ValueError(f"not JSON (RFC 8259): {name}")


def test_cli_json_output_is_strict_json_even_for_non_finite_values():
    """`--format json` must be parseable by any JSON reader; Infinity/NaN are not JSON."""
    proc = run("query", *PUMS, "--epsilon", "1", "--format", "json",
               "SELECT POWER(SUM(income), 1000) AS big FROM PUMS.PUMS")
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout, parse_constant=_reject_constant)
    assert rows == [{"big": None}] or isinstance(rows[0]["big"], str)


def test_cli_json_output_never_drops_a_released_column():
    """Two output columns with one name: JSON objects keep one key, so a charged result is
    silently lost. Either refuse the query or keep both columns."""
    proc = run("query", *PUMS, "--epsilon", "1", "--format", "json",
               "SELECT COUNT(*) AS n, AVG(income) AS n FROM PUMS.PUMS")
    if proc.returncode == 0:
        rows = json.loads(proc.stdout)
        assert len(rows[0]) == 2, f"one released column was dropped: {proc.stdout}"
    else:
        assert "Traceback" not in proc.stderr


# ----------------------------------------------------------------- ledger

def test_ledger_keeps_spending_across_invocations_and_refuses_overspending(tmp_path):
    ledger = tmp_path / "s.ledger"
    opts = ["--ledger", ledger, "--budget", "1.0,1e-6"]
    sql = "SELECT COUNT(*) AS n FROM PUMS.PUMS"
    first = run("query", *PUMS, "--epsilon", "0.6", *opts, "--format", "csv", sql)
    assert first.returncode == 0, first.stderr
    # The budget is in the ledger; a later invocation need not repeat it.
    # The same query again is a replay, free; a fresh release (or another query) pays.
    again = run("query", *PUMS, "--epsilon", "0.6", "--ledger", ledger, "--format", "csv", sql)
    assert again.returncode == 0 and again.stdout == first.stdout, again.stderr
    second = run("query", *PUMS, "--epsilon", "0.6", "--ledger", ledger, "--fresh", sql)
    assert_one_line_error(second, cli.EXIT_BUDGET, "budget exceeded", "nothing was run")
    show = run("ledger", "show", ledger)
    assert show.returncode == 0, show.stderr
    assert "spent:     epsilon=0.6," in show.stdout
    assert "remaining: epsilon=0.4," in show.stdout
    assert "releases:  1 (and 1 free replay(s))" in show.stdout and f"(replay) {sql}" in show.stdout
    doc = json.loads(run("ledger", "show", ledger, "--format", "json").stdout)
    assert doc["budget"] == {"epsilon": 1.0, "delta": 1e-6}
    assert [(r["query"], r["replay"]) for r in doc["releases"]] == [(sql, False), (sql, True)]
    assert [r["epsilon"] for r in doc["releases"]] == pytest.approx([0.6, 0.0])


def test_a_ledger_budget_cannot_be_raised_by_reopening(tmp_path):
    ledger = tmp_path / "s.ledger"
    ok = run("query", *PUMS, "--epsilon", "0.5", "--ledger", ledger, "--budget", "0.5",
             "SELECT COUNT(*) AS n FROM PUMS.PUMS")
    assert ok.returncode == 0, ok.stderr
    raised = run("query", *PUMS, "--epsilon", "0.5", "--ledger", ledger, "--budget", "100",
                 "SELECT COUNT(*) AS n FROM PUMS.PUMS")
    assert_one_line_error(raised, cli.EXIT_BUDGET, "ledger error", "fixed when it is created")


def test_explain_with_a_ledger_leaves_no_trace(tmp_path):
    """`--explain` runs and spends nothing; it should not create a ledger either (creating
    one with --budget fixes that session's budget for good)."""
    ledger = tmp_path / "new.ledger"
    proc = run("query", *PUMS, "--epsilon", "1", "--ledger", ledger, "--budget", "0.5",
               "--explain", "SELECT COUNT(*) AS n FROM PUMS.PUMS")
    assert proc.returncode == 0, proc.stderr
    assert not ledger.exists(), "explain created the ledger and fixed its budget at 0.5"


# ----------------------------------------------------------------- errors

@pytest.mark.parametrize("args, code, words", [
    (["query", *PUMS, "SELECT 1"], cli.EXIT_USAGE, ["--epsilon"]),
    (["query", *PUMS, "--epsilon", "1", "--budget", "3", "SELECT 1"], cli.EXIT_USAGE,
     ["--budget needs --ledger"]),
    (["query", *PUMS, "--epsilon", "1", "SELECT * FROM PUMS.PUMS"], cli.EXIT_QUERY,
     ["query refused"]),
    (["query", "--metadata", DATA / "PUMS.yaml", "--table", "PUMS.PUMS=/no/such.csv",
      "--epsilon", "1", "SELECT COUNT(*) FROM PUMS.PUMS"], cli.EXIT_DATA, ["/no/such.csv"]),
])
def test_errors_are_one_line_with_a_distinct_exit_code(args, code, words):
    assert_one_line_error(run(*args), code, *words)


def test_invalid_metadata_gives_the_metadata_exit_code(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text((DATA / "PUMS.yaml").read_text().replace("type: int", "type: integerish", 1))
    proc = run("query", "--metadata", bad, "--table", f"PUMS.PUMS={DATA / 'PUMS.csv'}",
               "--epsilon", "1", "SELECT COUNT(*) AS n FROM PUMS.PUMS")
    assert_one_line_error(proc, cli.EXIT_METADATA, "metadata error", "integerish")
    check = run("metadata", "check", bad)
    assert check.returncode == cli.EXIT_METADATA
    assert "PUMS.PUMS.age.type" in check.stdout and "integerish" in check.stdout
    assert_one_line_error(subprocess.CompletedProcess([], check.returncode, "",
                                                      check.stderr), cli.EXIT_METADATA)


def test_help_documents_the_exit_codes():
    proc = run("query", "--help")
    assert proc.returncode == 0
    for code in (cli.EXIT_QUERY, cli.EXIT_METADATA, cli.EXIT_BUDGET, cli.EXIT_DATA):
        assert f"\n  {code}  " in proc.stdout


# ----------------------------------------------------------------- metadata

def test_metadata_check_accepts_the_shared_files():
    proc = run("metadata", "check", DATA / "PUMS_two_table.yaml")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.strip().endswith(": OK")


def test_metadata_init_writes_a_schema_only_skeleton_that_then_answers_counts(tmp_path):
    proc = run("metadata", "init", "--table", f"PUMS.PUMS={DATA / 'PUMS_pid.csv'}",
               "--table", f"MySchema.MyTable={DATA / 'student.csv'}")
    assert proc.returncode == 0, proc.stderr
    doc = yaml.safe_load(proc.stdout)
    pums = doc["Database"]["PUMS"]["PUMS"]
    student = doc["Database"]["MySchema"]["MyTable"]
    # The privacy unit is the owner's choice: the guessed id is only suggested, commented.
    assert pums["pid"] == {"type": "int"} and "max_ids" not in pums
    assert "# private_id: true" in proc.stdout
    assert pums["age"] == {"type": "int"} and student["school"] == {"type": "string"}
    # No bounds were read from the data; they are commented placeholders.
    assert not any("lower" in c for t in (pums, student) for c in t.values()
                   if isinstance(c, dict))
    assert "# lower:" in proc.stdout and "never from" in proc.stdout
    # Student has no id-like column: the privacy unit is left as a commented choice.
    assert "row_privacy" not in student and "# row_privacy: true" in proc.stdout
    meta = tmp_path / "m.yaml"
    meta.write_text(proc.stdout)
    checked = run("metadata", "check", meta)     # valid, but its owner is told what is missing
    assert checked.returncode == 0 and "warning" in checked.stdout and "refuse every query" in checked.stdout
    refused = run("query", "--metadata", meta, "--table", f"PUMS.PUMS={DATA / 'PUMS_pid.csv'}",
                  "--epsilon", "1", "SELECT COUNT(*) AS n FROM PUMS.PUMS")
    assert refused.returncode == cli.EXIT_QUERY and "privacy" in refused.stderr.lower()
    meta.write_text(proc.stdout.replace("# private_id: true", "private_id: true", 1))
    count = run("query", "--metadata", meta, "--table", f"PUMS.PUMS={DATA / 'PUMS_pid.csv'}",
                "--epsilon", "1", "--format", "json", "SELECT COUNT(*) AS n FROM PUMS.PUMS")
    assert count.returncode == 0, count.stderr
    assert abs(json.loads(count.stdout)[0]["n"] - PUMS_ROWS) < 40


def test_metadata_init_leaves_a_guessed_private_id_as_a_commented_choice(tmp_path):
    """Issue 4: '`row_privacy` or a guessed `private_id` left as a commented choice'. The
    guess must not become the privacy unit until the data owner uncomments it."""
    proc = run("metadata", "init", "--table", f"PUMS.PUMS={DATA / 'PUMS_pid.csv'}")
    assert proc.returncode == 0, proc.stderr
    table = yaml.safe_load(proc.stdout)["Database"]["PUMS"]["PUMS"]
    active = [c for c, v in table.items() if isinstance(v, dict) and v.get("private_id")]
    assert active == [] and not table.get("row_privacy"), (
        f"the skeleton chose the privacy unit itself: private_id on {active}")
    assert "private_id: true" in proc.stdout  # still offered, commented


# ----------------------------------------------------------------- in process

def test_classify_maps_every_error_class_to_its_code():
    import dpsql
    from dpsql.privacy.ledger import LedgerError
    cases = [(dpsql.QueryError("x"), cli.EXIT_QUERY), (dpsql.MetadataError("x"),
             cli.EXIT_METADATA), (dpsql.BudgetExceededError("x"), cli.EXIT_BUDGET),
             (LedgerError("x"), cli.EXIT_BUDGET), (dpsql.DataError("x"), cli.EXIT_DATA),
             (dpsql.OperationalError("x"), cli.EXIT_DATA), (FileNotFoundError(), cli.EXIT_DATA),
             (duckdb.IOException("x"), cli.EXIT_DATA), (cli.UsageError("x"), cli.EXIT_USAGE),
             (KeyError("x"), cli.EXIT_INTERNAL), (dpsql.InternalError("x"), cli.EXIT_INTERNAL)]
    assert [cli.classify(e)[0] for e, _ in cases] == [c for _, c in cases]
    assert len({cli.EXIT_QUERY, cli.EXIT_METADATA, cli.EXIT_BUDGET, cli.EXIT_DATA,
                cli.EXIT_USAGE, cli.EXIT_INTERNAL}) == 6


def test_format_frame_renders_nulls_numbers_and_text():
    import pandas as pd
    frame = pd.DataFrame({"k": ["a", None], "n": [1.5, float("nan")], "c": [3, 4]})
    table = text.format_frame(frame, "table").splitlines()
    assert table[0].split() == ["k", "n", "c"] and table[3].split() == ["NULL", "NULL", "4"]
    assert table[2].endswith("  3") and table[2].index("1.5") > table[0].index("n") - 3
    assert text.format_frame(frame, "csv") == "k,n,c\na,1.5,3\n,,4\n"
    assert json.loads(text.format_frame(frame, "json")) == [
        {"k": "a", "n": 1.5, "c": 3}, {"k": None, "n": None, "c": 4}]


def test_main_returns_the_exit_code_for_the_console_script(capsys):
    # The `dpsql` console script calls sys.exit(dpsql.cli:main()).
    assert cli.main(["query"]) == cli.EXIT_USAGE
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("dpsql: usage error: ")
    assert cli.main(["--version"]) == 0
    assert "dpsql" in capsys.readouterr().out


# ----------------------------------------------------------------- metadata bounds

def test_metadata_bounds_writes_the_yaml_keeping_comments_and_records_the_spending(tmp_path):
    # A column without bounds; a comment and key order the data owner wrote must survive.
    meta = tmp_path / "M.yaml"
    meta.write_text("# the owner's note\nPUMS:\n  PUMS:\n    PUMS:\n      row_privacy: True\n"
                    "      income:   # yearly, dollars\n        type: int\n"
                    "      age:\n        type: int\n", "utf-8")
    values = tmp_path / "big.csv"
    # 100,000 rows of 1..1000: enough rows for tight bounds at epsilon = 1.
    values.write_text("income,age\n" + "".join(f"{i % 1000 + 1},{i % 90}\n" for i in range(100_000)))
    ledger = tmp_path / "l.ledger"
    proc = run("metadata", "bounds", "--metadata", meta, "--table", f"PUMS.PUMS={values}",
               "--column", "income", "--epsilon", "1", "--ledger", ledger, "--budget", "2",
               "--write")
    assert proc.returncode == 0, proc.stderr
    assert "spent: epsilon=1" in proc.stdout and "Traceback" not in proc.stderr
    text = meta.read_text("utf-8")
    assert text.startswith("# the owner's note\n") and "# yearly, dollars" in text
    column = yaml.safe_load(text)["PUMS"]["PUMS"]["PUMS"]["income"]
    assert list(column) == ["type", "lower", "upper"]
    # The edges of the powers of two holding the data: 1 (the range [1, 1]) and 1023; an
    # empty range next to them joins w.p. < 1e-4 (a factor of two wider, never more).
    assert column["lower"] in (0, 1) and column["upper"] in (1023, 2047)
    assert "age" in yaml.safe_load(text)["PUMS"]["PUMS"]["PUMS"]
    shown = json.loads(run("ledger", "show", "--format", "json", ledger).stdout)
    assert shown["spent"]["epsilon"] == pytest.approx(1.0) and len(shown["releases"]) == 1
    # Over what the ledger has left: refused before reading, nothing written.
    before = meta.read_text("utf-8")
    proc = run("metadata", "bounds", "--metadata", meta, "--table", f"PUMS.PUMS={values}",
               "--column", "age", "--epsilon", "1.5", "--ledger", ledger, "--write")
    assert_one_line_error(proc, 5, "budget")
    assert meta.read_text("utf-8") == before


def test_bounds_write_replaces_the_skeletons_placeholders():
    """`metadata init` writes `# lower:` / `# upper:` placeholders under each column; the
    round-trip edit replaces that column's placeholders and keeps every other comment."""
    from dpsql.cli.bounds import set_bounds
    skeleton = ("S:\n  S:\n    T:   # from t.csv\n      # PRIVACY UNIT: choose one\n"
                "      age:\n        type: int\n        # lower:   # from domain knowledge\n"
                "        # upper:\n      sex:\n        type: int\n        # lower:\n"
                "        # upper:\n")
    out = set_bounds(skeleton, "T", "age", 0, 100)
    age = out[out.index("age:"):out.index("sex:")]
    assert "lower: 0" in age and "upper: 100" in age and "#" not in age
    sex = out[out.index("sex:"):]
    assert "# lower:" in sex and "# upper:" in sex
    assert "# from t.csv" in out and "# PRIVACY UNIT: choose one" in out
    assert yaml.safe_load(out)["S"]["S"]["T"]["age"] == {"type": "int", "lower": 0, "upper": 100}


# ----------------------------------------------------------------- composed budgets (issue 37)

COUNT = "SELECT COUNT(*) AS n FROM PUMS.PUMS"


def test_a_pld_ledger_from_the_cli_names_its_accountant(tmp_path):
    from dpsql import Budget
    from dpsql.privacy.ledger import Ledger
    ledger = tmp_path / "s.ledger"
    for age in (30, 40):
        proc = run("query", *PUMS, "--epsilon", "0.5", "--ledger", ledger,
                   "--budget", "1,1e-6,pld", f"{COUNT} WHERE age > {age}")
        assert proc.returncode == 0, proc.stderr
    assert Ledger(str(ledger)).budget == Budget(1.0, 1e-6, accountant="pld")
    doc = json.loads(run("ledger", "show", "--format", "json", ledger).stdout)
    assert doc["budget"] == {"epsilon": 1.0, "delta": 1e-6, "accountant": "pld"}
    assert doc["spent"]["epsilon"] == pytest.approx(1.0, abs=1e-3)
    assert "composed by the PLD accountant" in run("ledger", "show", ledger).stdout
    refused = run("query", *PUMS, "--epsilon", "0.5", "--ledger", ledger,
                  f"{COUNT} WHERE age > 50")
    assert refused.returncode != 0 and "PLD accountant" in refused.stderr
    bad = run("query", *PUMS, "--epsilon", "0.5", "--ledger", tmp_path / "x", "--budget",
              "1,1e-6,moments", COUNT)
    assert bad.returncode == 2 and "accountant must be one of" in bad.stderr


def test_accuracy_target_prints_the_epsilon_and_the_count_and_runs_nothing(tmp_path):
    from dpsql import Budget
    from dpsql.privacy.ledger import Ledger
    ledger = tmp_path / "s.ledger"
    proc = run("query", *PUMS, "--accuracy-target", "300", "--ledger", ledger,
               "--budget", "1,1e-6,pld", COUNT)
    assert proc.returncode == 0, proc.stderr
    first, second = proc.stdout.splitlines()
    assert first.startswith("epsilon=0.00997 ") and "nothing was run or spent" in first
    assert second.startswith("budget: about 5") and "PLD accountant" in second
    assert not ledger.exists()                  # no trace, not even a new ledger
    Ledger(str(ledger), Budget(1.0))
    proc = run("query", *PUMS, "--accuracy-target", "300", "--accuracy", "0.99",
               "--ledger", ledger, COUNT)
    assert proc.returncode == 0, proc.stderr
    assert "probability 0.99;" in proc.stdout
    assert "budget: 64 more queries" in proc.stdout      # 1 / 0.0154 by basic composition
    assert Ledger(str(ledger)).records() == []
    both = run("query", *PUMS, "--accuracy-target", "300", "--epsilon", "1", COUNT)
    assert both.returncode != 0 and "not allowed with argument" in both.stderr
