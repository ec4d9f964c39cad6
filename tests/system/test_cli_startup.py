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
