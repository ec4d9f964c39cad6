"""Every shell example in the docs runs: the ```console blocks of README.md and docs/*.md.

A console block holds commands (lines starting with ``$ ``, continued by a trailing
backslash) and their sample output. Each command is run for real, from the repo root, with
``dpsql`` replaced by ``python -m dpsql``; noisy output is not compared, the exit code is.
A line ``# exit N`` right after a command says the example shows a failure with code N.

The sample output is compared with what the command prints (stdout, then stderr), so a
doc cannot drift from the code. Conventions for what differs from run to run:
``~`` right before a number marks it noisy (any number matches: ``0    ~485  ~43.54``);
``...`` inside a line matches any text (``...  1  0  SELECT ...``: any time stamp), and a line of just ``...`` any number of lines
(an elided part: a long plan, a time stamp). Runs of spaces, and of dashes in table rules,
match any length (column widths follow the numbers).

Supported command forms, so that no example is silently skipped (anything else fails):
``dpsql ARGS``, ``dpsql ARGS > /tmp/FILE`` and ``echo 'SQL' | dpsql ARGS``. Set-up commands
(``pip ...``, ``git ...``, ``cd ...``) are shown to readers but not run. Paths under
``/tmp/`` are redirected into the test's temporary directory, one per document, and a
document's commands run in order (a ledger created by one example is read by the next).

Also runs examples/cli_ledger.sh, the CLI-with-a-ledger example script.
"""
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.paths import ROOT
from tests.system.doc_output import output_matches

DOCS = [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md"))
BLOCK = re.compile(r"^```console\n(.*?)^```", re.S | re.M)
EXIT_MARK = re.compile(r"#\s*exit\s+(\d+)\s*$")
SETUP = ("pip ", "git ", "cd ")  # installation steps: not run by this test
MAX_COMMANDS = 16  # each one is a ~0.5 s subprocess


def console_commands(text: str, with_output: bool = False) -> list:
    """[(command, expected exit code)] of every console block, in document order; with
    ``with_output``, [(command, code, sample output lines)]."""
    found = []
    for block in BLOCK.findall(text):
        lines = block.splitlines()
        i = 0
        while i < len(lines):
            line = lines[i]
            i += 1
            if not line.startswith("$ "):
                continue
            command = line[2:]
            while command.endswith("\\") and i < len(lines):
                command = command[:-1].rstrip() + " " + lines[i].strip()
                i += 1
            code = 0
            if i < len(lines) and EXIT_MARK.fullmatch(lines[i].strip()):
                code = int(EXIT_MARK.fullmatch(lines[i].strip()).group(1))
                i += 1
            sample = []
            while i < len(lines) and not lines[i].startswith("$ "):
                sample.append(lines[i])
                i += 1
            if not command.startswith(SETUP):
                found.append((command.strip(), code, sample) if with_output
                             else (command.strip(), code))
    return found


COMMANDS = {doc.name: console_commands(doc.read_text("utf-8")) for doc in DOCS}
OUTPUTS = {doc.name: console_commands(doc.read_text("utf-8"), True) for doc in DOCS}
WITH_COMMANDS = [name for name, cmds in COMMANDS.items() if cmds]


def to_invocation(command: str, tmp: Path) -> tuple:
    """(argv, stdin text or None, stdout file or None) for one documented command."""
    tokens = shlex.split(command)
    stdin = None
    if tokens and tokens[0] == "echo":
        assert "|" in tokens, f"echo without a pipe into dpsql: {command}"
        bar = tokens.index("|")
        stdin = " ".join(tokens[1:bar]) + "\n"
        tokens = tokens[bar + 1:]
    out = None
    if len(tokens) >= 2 and tokens[-2] == ">":
        out, tokens = tokens[-1], tokens[:-2]
    assert tokens and tokens[0] == "dpsql", (
        f"a console example this test cannot run (write it as `$ dpsql ...`): {command}")
    assert not {"|", ">", "<", ">>", "&&", ";"} & set(tokens), f"unsupported shell: {command}"

    def redirect(arg: str) -> str:
        return str(tmp / arg[len("/tmp/"):]) if arg.startswith("/tmp/") else arg

    argv = [sys.executable, "-m", "dpsql"] + [redirect(t) for t in tokens[1:]]
    return argv, stdin, (redirect(out) if out else None)


def _redirected(line: str, command: str, tmp: Path) -> str:
    """A sample line with the command's own /tmp/ paths where the test put them."""
    for path in re.findall(r"/tmp/[\w.-]+", command):
        line = line.replace(path, str(tmp / path[len("/tmp/"):]))
    return line


def _env() -> dict:
    return dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))


def test_console_examples_are_found_and_few():
    total = sum(len(c) for c in COMMANDS.values())
    # The CLI reference and the getting-started guide must show real commands.
    assert COMMANDS.get("cli.md") and COMMANDS.get("getting-started.md"), COMMANDS.keys()
    assert total <= MAX_COMMANDS, f"{total} console commands; keep the docs' examples few"


@pytest.mark.parametrize("doc", WITH_COMMANDS)
def test_console_commands_run(doc, tmp_path):
    for command, expected, sample in OUTPUTS[doc]:
        argv, stdin, out = to_invocation(command, tmp_path)
        done = subprocess.run(argv, cwd=ROOT, input=stdin, capture_output=True, text=True,
                              env=_env(), timeout=120)
        where = f"{doc}: $ {command}\nstdout:\n{done.stdout}\nstderr:\n{done.stderr}"
        assert done.returncode == expected, where
        assert "Traceback" not in done.stderr, where
        if expected == 0:
            assert done.stdout.strip(), where
        else:  # a failure is one clear line on stderr
            errors = [x for x in done.stderr.splitlines() if not x.startswith("dpsql: warning:")]
            assert len(errors) == 1 and errors[0].startswith("dpsql: "), where
        if out:
            Path(out).write_text(done.stdout, "utf-8")
        printed = ("" if out else done.stdout).splitlines() + done.stderr.splitlines()
        shown = [_redirected(x, command, tmp_path) for x in sample
                 if not EXIT_MARK.fullmatch(x.strip())]
        assert output_matches(shown, printed), f"the sample output drifted:\n{where}"


def test_parser_reads_exit_marks_and_continuations(tmp_path):
    text = ("```console\n$ dpsql query --epsilon 1 \\\n    \"SELECT 1\"\nout\n"
            "$ pip install .\n$ dpsql ledger show /tmp/a.ledger\n# exit 5\nerr\n```\n")
    assert console_commands(text) == [('dpsql query --epsilon 1 "SELECT 1"', 0),
                                      ("dpsql ledger show /tmp/a.ledger", 5)]
    argv, stdin, out = to_invocation("echo 'SELECT 1' | dpsql query - > /tmp/x.txt", tmp_path)
    assert argv[1:] == ["-m", "dpsql", "query", "-"] and stdin == "SELECT 1\n"
    assert out == str(tmp_path / "x.txt")
    with pytest.raises(AssertionError):
        to_invocation("python -m dpsql query", tmp_path)


def test_output_conventions_match_and_can_fail():
    sample = ["sex    n     mean_age", "---  ---  -----------", "0    ~485  ~43.54", "...",
              "dpsql: warning: without --ledger ..."]
    printed = ["sex     n    mean_age", "---  ----  ---------", "0     1002  44.1", "1  3  4",
               "dpsql: warning: without --ledger this release is not recorded"]
    assert output_matches(sample, printed)
    assert not output_matches(sample, printed[:2] + ["0  x  44.1"] + printed[3:])
    assert not output_matches(["a 1"], ["a 2"]) and output_matches(["a ~1"], ["a 2"])
    assert not output_matches(["a"], ["a", "b"]) and output_matches(["a", "..."], ["a", "b"])


def test_cli_ledger_script(tmp_path):
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("bash is not installed")
    script = ROOT / "examples" / "cli_ledger.sh"
    done = subprocess.run([bash, str(script)], cwd=tmp_path, capture_output=True, text=True,
                          env=dict(_env(), PYTHON=sys.executable), timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    assert "refused as expected (exit 5)" in done.stdout, done.stdout
    assert "budget exceeded" in done.stderr, done.stderr
    assert "releases:  2" in done.stdout, done.stdout  # the refused query was not recorded
