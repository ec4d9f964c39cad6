"""What a user of the `dpsql` command meets: Ctrl-C, several metadata problems, the
command list, warnings at the caller's line, an epsilon that protects no one. Real
processes (`python -m dpsql`, a script run by the interpreter)."""
import os
import random
import re
import select
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import duckdb
import pytest

from tests.paths import DATA, ROOT

PUMS = ["--metadata", str(DATA / "PUMS.yaml"), "--table", f"PUMS.PUMS={DATA / 'PUMS.csv'}"]
ENV = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))


def run(*args):
    return subprocess.run([sys.executable, "-m", "dpsql", *map(str, args)], capture_output=True,
                          text=True, env=ENV, timeout=120, cwd=ROOT)


# Imported by the interpreter at the end of its start-up (the site module): says so on the
# pipe whose descriptor the variable names. (It hides any other sitecustomize, in the child.)
STARTED = """import os
_fd = os.environ.pop("DPSQL_TEST_STARTED_FD", None)
if _fd is not None:
    os.write(int(_fd), b".")
    os.close(int(_fd))
"""


def interrupted_after(delay: float, *args, stdin=None):
    """``python -m dpsql args``, sent SIGINT ``delay`` seconds after the interpreter has
    started, so that the Ctrl-C lands in dpsql's start-up or later whatever the machine's
    load. (From the process's creation, 0.08 s and even 0.1 s landed inside the site
    module on a loaded machine, in Python's own start-up: "Fatal Python error:
    init_import_site", exit 1, before any dpsql code had run.)"""
    with tempfile.TemporaryDirectory() as hook:
        (Path(hook) / "sitecustomize.py").write_text(STARTED)
        started, write = os.pipe()
        env = dict(ENV, PYTHONPATH=hook + os.pathsep + ENV["PYTHONPATH"],
                   DPSQL_TEST_STARTED_FD=str(write))
        try:
            proc = subprocess.Popen([sys.executable, "-m", "dpsql", *map(str, args)], env=env,
                                    cwd=ROOT, stdin=stdin, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True, pass_fds=(write,))
        finally:
            os.close(write)
        with os.fdopen(started, "rb") as pipe:
            ready = select.select([pipe], [], [], 120)[0]
            said = pipe.read(1) if ready else b""
        if said != b".":
            proc.kill()
            pytest.fail(f"the interpreter did not report its start-up: {proc.communicate()}")
        time.sleep(delay)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    return proc.returncode, out, err


def _parquet(tmp, rows: int) -> list:
    """``rows`` rows of about ``rows / 1000`` per person (pid the privacy unit, at most 5
    kept), as --metadata and --table arguments."""
    path = tmp / "t.parquet"
    duckdb.execute(f"COPY (SELECT range % 1000 AS pid, random() AS x FROM range({rows})) "
                   f"TO '{path}'")
    meta = tmp / "t.yaml"
    meta.write_text("Database:\n  t:\n    t:\n      max_ids: 5\n      pid:\n        type: int\n"
                    "        private_id: true\n      x:\n        type: float\n        lower: 0\n"
                    "        upper: 1\n")
    return ["--metadata", meta, "--table", f"t.t={path}"]


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    """A Parquet file whose COUNT takes seconds, and metadata with pid as the privacy unit."""
    return _parquet(tmp_path_factory.mktemp("big"), 30_000_000)


def test_ctrl_c_during_a_query_exits_130_with_one_line(big):
    started = time.monotonic()
    code, out, err = interrupted_after(1.0, "query", *big, "--epsilon", "1",
                                       "SELECT COUNT(*) FROM t.t")
    assert (code, err, out) == (130, "dpsql: interrupted\n", ""), (code, err)
    assert time.monotonic() - started < 30


# The delays count from the end of the interpreter's own start-up (interrupted_after): a
# Ctrl-C before that is Python's, before any dpsql code runs. From there, dpsql's start-up
# (the heavy imports) is under way for the next few tenths of a second.
@pytest.mark.parametrize("delay", [0.08, 0.1, 0.15, 0.2, 0.3])
def test_ctrl_c_during_start_up_exits_130_without_a_traceback(big, delay):
    code, out, err = interrupted_after(delay, "query", *big, "--epsilon", "1",
                                       "SELECT COUNT(*) FROM t.t")
    assert code == 130 and "Traceback" not in err, (delay, code, err)
    assert err == "dpsql: interrupted\n", err


def test_ctrl_c_at_twenty_moments_of_the_start_up_exits_130(big):
    """A Ctrl-C that landed while DuckDB or pandas was being imported, once the command had
    started, aborted the interpreter about 2% of the time (exit -6, "nanobind: ..."), or
    was lost (exit 0). They are now imported while a Ctrl-C still ends the process at once.
    Twenty moments spread over the start-up and the query's first tenths of a second
    (seeded; the query over ``big`` takes seconds)."""
    rng = random.Random(20261128)
    for i in range(20):
        delay = rng.uniform(0.08, 0.45)  # as above: earlier is Python's own start-up
        code, out, err = interrupted_after(delay, "query", *big, "--epsilon", "1",
                                           f"SELECT COUNT(*) AS n FROM t.t WHERE x > {i / 100}")
        assert (code, err) == (130, "dpsql: interrupted\n"), (delay, code, err)


# Run by the interpreter: `dpsql query`, noting the extension modules (compiled code) that
# were first imported while the command ran, once Ctrl-C raised KeyboardInterrupt.
IMPORTED_WHILE_RUNNING = """import sys
import dpsql.cli
import dpsql.cli.command as command
run = command.main
def noted(argv=None):
    before = set(sys.modules)
    try:
        return run(argv)
    finally:
        new = set(sys.modules) - before
        compiled = sorted(m for m in new if str(getattr(sys.modules[m], "__file__", "")
                                                    ).endswith((".so", ".pyd")))
        sys.stderr.write(f"compiled: {compiled}\\n")
command.main = noted
sys.exit(dpsql.cli.main(sys.argv[1:]))
"""


@pytest.mark.parametrize("extra", [[], ["--accuracy", "0.95"]])
def test_no_library_with_compiled_code_is_first_imported_once_a_query_runs(extra):
    """numpy's and rpds' compiled code prints the error of an import it makes
    (``PyErr_Print``): a Ctrl-C that landed there, once the command had started, printed a
    traceback before ``dpsql: interrupted`` (a clean-clone CI run, at 0.15 s; exit 130).
    Every such library is imported before the command starts, where a Ctrl-C ends the
    process at once; the standard library's compiled modules print nothing of the kind."""
    proc = subprocess.run([sys.executable, "-c", IMPORTED_WHILE_RUNNING, "query", *PUMS,
                           "--epsilon", "1", *extra, "SELECT COUNT(*) AS n FROM PUMS.PUMS"],
                          capture_output=True, text=True, env=ENV, timeout=120, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    compiled = eval(re.search(r"compiled: (\[.*\])", proc.stderr).group(1))
    outside = [m for m in compiled if not _standard_library(m)]
    assert outside == [], outside


def _standard_library(module: str) -> bool:
    top = module.split(".")[0]
    return top in sys.stdlib_module_names or top.lstrip("_") in sys.stdlib_module_names


# Commands that wait on stdin (kept open and empty), so that the Ctrl-C finds them running
# however fast they start: `ledger show` answers in a tenth of a second (it imports no
# engine library), before a fixed delay would have interrupted it.
@pytest.mark.parametrize("args", [["serve", "--hash-password"],
                                  ["query", *PUMS, "--epsilon", "1", "-"]])
def test_ctrl_c_in_other_commands_exits_130(args):
    code, out, err = interrupted_after(1.0, *args, stdin=subprocess.PIPE)
    assert code == 130 and err == "dpsql: interrupted\n", (code, err)


def test_several_metadata_problems_are_one_per_line_in_query(tmp_path):
    bad = tmp_path / "bad.yaml"
    text = (DATA / "PUMS.yaml").read_text().replace("type: int", "type: integerish", 1)
    bad.write_text(text.replace("row_privacy: True", "row_privacy: True\n      max_idz: 2", 1))
    proc = run("query", "--metadata", bad, "--table", f"PUMS.PUMS={DATA / 'PUMS.csv'}",
               "--epsilon", "1", "SELECT COUNT(*) AS n FROM PUMS.PUMS")
    assert proc.returncode == 4 and proc.stdout == "" and "Traceback" not in proc.stderr
    head, *problems = proc.stderr.splitlines()
    assert head.startswith("dpsql: metadata error: ") and "2 problem(s)" in head, head
    assert len(problems) == 2, proc.stderr
    assert "PUMS.PUMS.max_idz" in problems[0] + problems[1]
    assert "PUMS.PUMS.age.type" in problems[0] + problems[1]
    assert all(("max_idz" in p) != ("integerish" in p) for p in problems), problems


def test_help_lists_every_command_with_one_line_each():
    proc = run("--help")
    assert proc.returncode == 0, proc.stderr
    for command in ("query", "ledger show", "ledger report", "metadata check", "metadata init",
                    "metadata bounds", "serve"):
        lines = [x for x in proc.stdout.splitlines() if x.startswith(f"  {command}  ")]
        assert len(lines) == 1 and len(lines[0].split()) > len(command.split()) + 2, command
    assert "130" in proc.stdout


def test_api_warnings_point_at_the_callers_line(tmp_path):
    script = tmp_path / "analysis.py"
    script.write_text(
        "import warnings\nimport pandas as pd\nimport dpsql\n"
        f"frame = pd.read_csv({str(DATA / 'PUMS.csv')!r})\n"
        f"reader = dpsql.from_df({{'PUMS.PUMS': frame}}, {str(DATA / 'PUMS.yaml')!r},\n"
        "                       privacy=dpsql.Privacy(epsilon=100))\n"
        "with warnings.catch_warnings(record=True) as got:\n"
        "    warnings.simplefilter('always')\n"
        "    reader.execute_df('SELECT COUNT(*) AS n FROM PUMS.PUMS')\n"
        "for w in got:\n"
        "    print(w.category.__name__, w.filename, w.lineno, str(w.message)[:40], sep='|')\n")
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          env=ENV, timeout=120, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    rows = [line.split("|") for line in proc.stdout.splitlines()]
    messages = [r[3] for r in rows]
    assert any(m.startswith("dpsql: no budget set") for m in messages), rows
    assert any(m.startswith("dpsql: epsilon=100 per query gives") for m in messages), rows
    assert all(r[0] == "UserWarning" and r[1] == str(script) and r[2] == "9" for r in rows), rows


@pytest.mark.parametrize("size, shown", [(["--epsilon", "100000"], "epsilon=100000"),
                                         (["--rho", "60"], "rho=60")])
def test_an_extreme_privacy_is_answered_with_a_warning(size, shown):
    proc = run("query", *PUMS, *size, "--format", "csv", "SELECT COUNT(*) AS n FROM PUMS.PUMS")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[0] == "n" and len(proc.stdout.splitlines()) == 2
    warned = [x for x in proc.stderr.splitlines()
              if x.startswith(f"dpsql: warning: {shown} per query gives almost no privacy: ")]
    assert len(warned) == 1, proc.stderr


def test_an_ordinary_privacy_gets_no_such_warning():
    proc = run("query", *PUMS, "--epsilon", "10", "SELECT COUNT(*) AS n FROM PUMS.PUMS")
    assert proc.returncode == 0 and "almost no privacy" not in proc.stderr, proc.stderr


@pytest.fixture(scope="module")
def huge(tmp_path_factory):
    """100 million rows: a query reads them for about two seconds."""
    return _parquet(tmp_path_factory.mktemp("huge"), 100_000_000)


def test_progress_of_a_long_query_on_a_terminal_and_nowhere_else(huge):
    """A query reading data for over a second shows its progress on stderr when stderr is a
    terminal (tqdm's bar, one line rewritten in place, erased at the end); through a pipe,
    nothing."""
    import pty
    args = [sys.executable, "-m", "dpsql", "query", *map(str, huge), "--epsilon", "1",
            "SELECT COUNT(*) AS n, AVG(x) AS a FROM t.t"]
    leader, follower = pty.openpty()
    proc = subprocess.Popen(args, env=ENV, cwd=ROOT, stdout=subprocess.PIPE, stderr=follower)
    os.close(follower)
    seen = b""
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:
            break
        if not chunk:
            break
        seen += chunk
    out, _ = proc.communicate(timeout=120)
    os.close(leader)
    assert proc.returncode == 0 and b"n" in out
    assert b"dpsql: reading the data:" in seen and b"%|" in seen, seen
    last = seen[seen.rindex(b"reading the data"):]
    assert re.search(rb"\r {20,}\r", last), last     # the line is erased when done
    assert "▕".encode() not in seen                   # DuckDB's own bar is not drawn
    piped = run("query", *huge, "--epsilon", "1", "SELECT COUNT(*) AS n, AVG(x) AS b FROM t.t")
    assert piped.returncode == 0 and "reading the data" not in piped.stderr


def test_the_api_reports_progress_to_a_callback(huge):
    import dpsql
    meta, path = huge[1], huge[3].split("=", 1)[1]
    reader = dpsql.from_df({"t.t": path}, str(meta), privacy=dpsql.Privacy(epsilon=1.0))
    told = []
    reader.progress = told.append
    reader.execute_df("SELECT COUNT(*) AS n, AVG(x) AS a FROM t.t")
    assert told and told[-1] is None, told
    assert all(0 <= v <= 100 for v in told[:-1]) and len(told) >= 2
    quick = []
    reader.progress = quick.append
    reader.execute_df("SELECT COUNT(*) AS n FROM t.t WHERE x > 2")   # under a second: silent
    assert quick == [] or quick[-1] is None


# A Ctrl-C whose KeyboardInterrupt is raised inside a weakref callback (here one that sends
# SIGINT to its own process, as a real Ctrl-C did in importlib's module-lock callback, ci40)
# is ignored by Python: printed as "Exception ignored in" and lost, so the command ran on
# and exited 0. It is now delivered again and ends the command with 130.
IGNORED_CTRL_C = """
import gc, signal, sys, time, weakref
from dpsql.cli import interrupt
from dpsql.cli.command import _interrupted
interrupt.at_start()
class Thing:
    pass
try:
    with interrupt.raising():
        thing = Thing()
        ref = weakref.ref(thing, lambda _: signal.raise_signal(signal.SIGINT))
        del thing
        for _ in range(1000):
            time.sleep(0.001)
        print("ran on")
except KeyboardInterrupt:
    sys.exit(_interrupted())
"""


def test_a_ctrl_c_python_would_ignore_in_a_callback_still_ends_the_command():
    proc = subprocess.run([sys.executable, "-c", IGNORED_CTRL_C], capture_output=True, text=True,
                          env=ENV, timeout=120, cwd=ROOT)
    assert (proc.returncode, proc.stdout, proc.stderr) == (130, "", "dpsql: interrupted\n")
