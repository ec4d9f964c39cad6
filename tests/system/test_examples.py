"""Every script in examples/ runs to completion in a fresh process, from any directory."""
import subprocess
import sys
import pytest

from tests.paths import ROOT

SERVERS = {"postgres.py", "spark.py"}   # need a server (Java for Spark): run by tests/engines/
EXAMPLES = sorted(p for p in (ROOT / "examples").glob("*.py") if p.name not in SERVERS)


@pytest.mark.parametrize("script", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_example_runs(script, tmp_path):
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip()
    assert "Traceback" not in done.stderr
