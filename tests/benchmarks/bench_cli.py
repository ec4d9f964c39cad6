"""CLI start-up benchmark: how long ``dpsql`` takes per invocation, from the shell.

Usage: python tests/benchmarks/bench_cli.py [--repeat 5] [--importtime]

Each command runs ``--repeat`` times, each in a new process (as a shell user runs it: the
interpreter starts, imports, answers, exits; bytecode caches are warm after the first run),
and its wall-clock time is reported as the best and the median, the way hyperfine does,
with the median CPU time (user + system) of the process: on a loaded machine the wall
clock waits for the other processes, the CPU time much less, so it is close to what the
same command takes on a quiet machine.
The commands: ``dpsql --help``, ``dpsql query --help``, a small query (the 1,000-row
tests/data/PUMS.csv, docs/cli.md's first example) and its ``--explain``, and for scale the
interpreter alone (``python -c pass``) and ``import dpsql``. The program is the installed
console script next to this interpreter (``python -m dpsql`` if there is none), so a
version manager's shim (pyenv's, about 0.1 s of bash) is not counted. Bytecode is cached
as an installed package has it: PYTHONDONTWRITEBYTECODE is unset for the runs (with it,
every run compiles dpsql's modules again, about 0.3 s more). The load average is printed
with the figures: on a shared machine, compare runs made under the same load.

``--importtime`` adds, for ``dpsql --help`` and the query, the ten modules that took the
longest to import, cumulative (``python -X importtime``).

Targets (issue 36): ``--help`` under 0.3 s, the small query under 1 s.
Not part of the test suite; tests/system/test_cli_startup.py checks what ``--help`` imports.
"""
from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"
QUERY = ["query", "--metadata", str(DATA / "PUMS.yaml"), "--table",
         f"PUMS.PUMS={DATA / 'PUMS.csv'}", "--epsilon", "1",
         "SELECT sex, COUNT(*) AS n, AVG(age) AS mean_age FROM PUMS.PUMS GROUP BY sex"]


def program() -> list:
    """The installed ``dpsql`` script beside this interpreter, else ``python -m dpsql``."""
    script = Path(sys.executable).with_name("dpsql")
    return [str(script)] if script.is_file() else [sys.executable, "-m", "dpsql"]


def commands() -> list:
    dpsql = program()
    return [
        ("python -c pass", [sys.executable, "-c", "pass"]),
        ("python -c 'import dpsql'", [sys.executable, "-c", "import dpsql"]),
        ("dpsql --help", dpsql + ["--help"]),
        ("dpsql query --help", dpsql + ["query", "--help"]),
        ("dpsql query (PUMS, 1,000 rows)", dpsql + QUERY),
        ("dpsql query --explain", dpsql + QUERY[:-1] + ["--explain", QUERY[-1]]),
    ]


def timed(argv: list, repeat: int) -> tuple:
    """Wall-clock and CPU (user + system) seconds of ``repeat`` runs, after one untimed run
    that warms the caches."""
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    runs, cpu = [], []
    for i in range(repeat + 1):
        used = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        done = subprocess.run(argv, cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True)
        elapsed = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if done.returncode != 0:
            raise SystemExit(f"{' '.join(argv)} failed ({done.returncode}): {done.stderr}")
        if i:
            runs.append(elapsed)
            cpu.append(after.ru_utime + after.ru_stime - used.ru_utime - used.ru_stime)
    return runs, cpu


def slowest_imports(argv: list, top: int = 10) -> list:
    """The ``top`` imports with the largest cumulative time (us, module) of one run."""
    if argv[0] != sys.executable:
        argv = [sys.executable, "-m", "dpsql"] + argv[1:]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    done = subprocess.run([sys.executable, "-X", "importtime"] + argv[1:], cwd=ROOT, env=env,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    rows = []
    for line in done.stderr.splitlines():
        if line.startswith("import time:") and "|" in line and "cumulative" not in line:
            _, cumulative, name = line[len("import time:"):].split("|")
            rows.append((int(cumulative), name.rstrip()))
    return sorted(rows, reverse=True)[:top]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--importtime", action="store_true")
    args = parser.parse_args()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"{' '.join(program())}; {args.repeat} runs each, seconds (best, median); "
          f"{os.cpu_count()} cores, load average {load:.1f}")
    print(f"{'command':<34} {'best':>6} {'median':>7} {'cpu':>6}")
    for name, argv in commands():
        runs, cpu = timed(argv, args.repeat)
        print(f"{name:<34} {min(runs):6.3f} {statistics.median(runs):7.3f} "
              f"{statistics.median(cpu):6.3f}", flush=True)
    if args.importtime:
        for name, argv in commands()[2::2]:
            print(f"\nslowest imports of {name} (cumulative ms):")
            for micros, module in slowest_imports(argv):
                print(f"  {micros / 1000:8.1f}  {module}")


if __name__ == "__main__":
    main()
