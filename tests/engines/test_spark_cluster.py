"""dpsql on a Spark cluster started by the test (``local-cluster[2,1,1024]``: a master and two
executor JVMs on this machine), in a process of its own (one SparkContext per process):
truncation, the cut before heavy statements, the sampler's uniformity, max_groups and the
threshold hold when the rows and their random tags live in executors
(``tests/engines/spark_cluster_checks.py``)."""
import os
import subprocess
import sys

from tests.paths import ROOT


def test_bounds_hold_on_a_cluster(spark):
    # ``spark``: the session's own check that pyspark and Java are there (a skip, or a
    # failure under CI=true, when not); the cluster is started by the script.
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    run = subprocess.run([sys.executable, "-m", "tests.engines.spark_cluster_checks"], cwd=ROOT,
                         env=env, capture_output=True, text=True, timeout=900)
    lines = [line for line in run.stdout.splitlines() if not line.startswith(("WARN", "Using"))]
    assert run.returncode == 0, "\n".join(lines) + run.stderr[-2000:]
    assert any(line.startswith("master local-cluster") and "2 executor(s), adaptive true" in line
               for line in lines), lines
