"""Module paths of the layout before dpsql's modules moved into folders (commit 3c22ea1)
still import: each is the module at its new place, with one FutureWarning saying where.
Checked in a fresh interpreter, since an import is cached once made."""
import json
import os
import subprocess
import sys

import pytest

from tests.paths import ROOT

# Every module of that layout that is no longer at its path (git show 3c22ea1^:dpsql/).
OLD_LAYOUT = {
    "dpsql.accounting": "dpsql.privacy.accounting", "dpsql.accuracy": "dpsql.release.intervals",
    "dpsql.cli_bounds": "dpsql.cli.bounds", "dpsql.cli_metadata": "dpsql.cli.metadata",
    "dpsql.cli_report": "dpsql.cli.report", "dpsql.cli_text": "dpsql.cli.text",
    "dpsql.dbapi": "dpsql.api.dbapi", "dpsql.execute": "dpsql.engines.duckdb.engine",
    "dpsql.explain": "dpsql.release.explain", "dpsql.ledger": "dpsql.privacy.ledger",
    "dpsql.metadata_reading": "dpsql.metadata.reading", "dpsql.noise": "dpsql.mechanisms.samplers",
    "dpsql.params": "dpsql.frontend.params", "dpsql.parse": "dpsql.frontend.parse",
    "dpsql.quantile_mechanism": "dpsql.mechanisms.quantile",
    "dpsql.quantile_plan": "dpsql.plan.quantiles", "dpsql.reader": "dpsql.api.reader",
    "dpsql.report": "dpsql.release.report", "dpsql.rewrite": "dpsql.plan.rewrite",
    "dpsql.sql": "dpsql.frontend", "dpsql.sql.allowed": "dpsql.frontend.allowed",
    "dpsql.sql.binding": "dpsql.frontend.binding", "dpsql.sql.ranges": "dpsql.frontend.ranges",
    "dpsql.sql.typecheck": "dpsql.frontend.typecheck", "dpsql.statistic": "dpsql.plan.statistic",
    "dpsql.statistics": "dpsql.plan.statistics", "dpsql.validate": "dpsql.plan.validate",
    "dpsql.zcdp": "dpsql.privacy.zcdp",
}
LATER = {"dpsql.engines.duckdb.filters": "dpsql.engines.filters"}   # moved since (issue 35)

PROBE = """
import importlib, json, sys, warnings
old, new = sys.argv[1], sys.argv[2]
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("default")
    exec(f"import {old}")          # an import statement, as a script has it
    first = sys.modules[old]
    exec(f"import {old}")
    again = sys.modules[old]
print(json.dumps({"same": first is again is importlib.import_module(new),
                  "warnings": [(w.category.__name__, str(w.message), w.filename)
                               for w in caught]}))
"""


def probe(old: str, new: str) -> dict:
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    done = subprocess.run([sys.executable, "-c", PROBE, old, new], capture_output=True,
                          text=True, env=env, timeout=60, check=True)
    return json.loads(done.stdout)


@pytest.mark.parametrize("old", ["dpsql.noise", "dpsql.ledger", "dpsql.sql.typecheck",
                                 "dpsql.reader", "dpsql.cli_text", "dpsql.engines.duckdb.filters"])
def test_an_old_path_is_the_new_module_with_one_warning(old):
    new = {**OLD_LAYOUT, **LATER}[old]
    found = probe(old, new)
    assert found["same"]
    mine = [w for w in found["warnings"] if w[0] == "FutureWarning" and old + " " in w[1]]
    assert len(mine) == 1 and new in mine[0][1], found["warnings"]
    assert mine[0][2] == "<string>"            # attributed to the importing line


def test_the_names_users_had_import_from_the_old_paths():
    code = ("import warnings; warnings.simplefilter('ignore')\n"
            "from dpsql.noise import discrete_gaussian, discrete_laplace\n"
            "from dpsql.ledger import Ledger\n"
            "import dpsql.privacy.ledger as ledger, dpsql.mechanisms.samplers as samplers\n"
            "assert Ledger is ledger.Ledger and discrete_laplace is samplers.discrete_laplace\n"
            "assert len(discrete_gaussian(1.0, 4)) == 4\n")
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    subprocess.run([sys.executable, "-c", code], env=env, timeout=60, check=True)


def test_every_old_path_has_its_alias_and_its_target_exists():
    import importlib.util

    import dpsql
    assert dpsql.MOVED == {**OLD_LAYOUT, **LATER}
    for new in dpsql.MOVED.values():
        assert importlib.util.find_spec(new) is not None, new
