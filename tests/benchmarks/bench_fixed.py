"""Fixed cost per query: a fresh release on a 1,000-row DataFrame against plain DuckDB.

Usage: python tests/benchmarks/bench_fixed.py [--runs 200] [--ledger] [--profile NAME]
       [--against DIR [--cached]]

A reader from ``dpsql.from_df`` over examples/data/PUMS.csv (1,000 rows: int columns,
text columns ``sex``, ``educ``, ``race``, ``married``, and a float column ``score``
derived from income). Every private run is a FRESH release of a query never asked before
in the session (the constant of its WHERE changes each time), so nothing is replayed and
no plan is cached: parse, validate, plan, compile, dry run, budget check, engine run,
charge, noise, post-processing and the result's DataFrame are all timed. Each is compared,
in the same loop (the two alternate), with the same query without privacy on a plain DuckDB
connection over the same DataFrame, its result fetched as a DataFrame. Prints medians of
``runs`` runs, their difference and ratio; then the post-processing step alone (a trivial
query over ten noisy rows) and the presentation of stored noisy statistics (post-processing
and the DataFrame). ``--ledger`` gives the reader a ledger file in a temporary directory
(each release is then written and synced to it before it is shown). ``--profile NAME``
prints cProfile's top functions of NAME's fresh releases instead. ``--against DIR``
compares two versions of dpsql run by two worker processes, DIR's (e.g. a checkout of an
older commit) and this checkout's, taking turns release by release (who goes first
alternates), so that a shared machine's changing load falls on both alike; it prints
each one's median difference from plain DuckDB (timed in the same worker, next to it).
With ``--cached`` each query keeps one constant, so its plan is cached and every run is a
fresh release of it (noise drawn anew, nothing replayed): the fixed cost of a query asked
again.
Not part of the tests.
"""
from __future__ import annotations

import argparse
import cProfile
import itertools
import pstats
import os
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd

import dpsql

DATA = Path(__file__).resolve().parents[2] / "examples" / "data" / "PUMS.csv"
TEXT = ("sex", "educ", "race", "married")

# (name, query with {k}: a constant that differs for every run; the WHERE keeps every row)
QUERIES = [
    ("count", "SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE age > -{k}"),
    ("avg", "SELECT AVG(income) AS a FROM PUMS.PUMS WHERE age > -{k}"),
    ("avg float", "SELECT AVG(score) AS a FROM PUMS.PUMS WHERE age > -{k}"),
    ("group text", "SELECT sex, COUNT(*) AS n, AVG(age) AS a FROM PUMS.PUMS "
                   "WHERE age > -{k} GROUP BY sex"),
    ("post-process", "SELECT educ, COUNT(*) * 2 + 1 AS n FROM PUMS.PUMS WHERE age > -{k} "
                     "GROUP BY educ ORDER BY n DESC LIMIT 10"),
]


def frame() -> pd.DataFrame:
    df = pd.read_csv(DATA)
    for name in TEXT:
        df[name] = df[name].astype(str)
    df["score"] = df["income"] / 1000.0
    return df


def metadata() -> dict:
    table = {"row_privacy": True, "rows": 1000,
             "age": {"type": "int", "lower": 0, "upper": 100},
             "income": {"type": "int", "lower": 0, "upper": 500000},
             "score": {"type": "float", "lower": 0.0, "upper": 500.0}}
    table.update({name: {"type": "string"} for name in TEXT})
    return {"PUMS": {"PUMS": {"PUMS": table}}}


def plain_connection(df: pd.DataFrame):
    con = duckdb.connect()
    con.register("pums_frame", df)
    con.execute("CREATE SCHEMA PUMS")
    con.execute("CREATE VIEW PUMS.PUMS AS SELECT * FROM pums_frame")
    return con


def open_reader(df: pd.DataFrame, ledger: str | None):
    return dpsql.from_df({"PUMS.PUMS": df}, metadata(), privacy=dpsql.Privacy(epsilon=1.0),
                         ledger=ledger)


def fresh(reader, sql: str):
    return reader.execute_df(sql, replay=False)     # a new text: a new plan; else a cached one


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def compare(reader, con, runs: int, counter) -> None:
    print(f"{'query':14} {'duckdb ms':>10} {'dpsql ms':>10} {'diff ms':>9} {'ratio':>7}"
          f"   (medians of {runs} fresh releases)")
    for name, template in QUERIES:
        for _ in range(3):                              # warm-up
            fresh(reader, template.format(k=next(counter)))
        plain, private = [], []
        for _ in range(runs):
            sql = template.format(k=next(counter))
            plain.append(timed(lambda: con.execute(sql).df()))
            private.append(timed(lambda: fresh(reader, sql)))
        p, d = statistics.median(plain), statistics.median(private)
        print(f"{name:14} {p * 1e3:10.2f} {d * 1e3:10.2f} {(d - p) * 1e3:9.2f} {d / p:7.2f}")


def post_alone(reader, runs: int) -> None:
    """The post-processing step over ten noisy rows, and a stored release presented."""
    sql = "SELECT educ, COUNT(*) * 2 + 1 AS n FROM PUMS.PUMS GROUP BY educ ORDER BY n DESC LIMIT 10"
    plan, noisy = reader._noisy(sql, None, None, False)
    post_sql = reader._sql(plan)[1]
    ten = {name: np.resize(values, 10) for name, values in noisy[0].items()}
    alone = [timed(lambda: reader.post.run(post_sql, ten)) for _ in range(runs)]
    shown = [timed(lambda: reader._present(plan, noisy)) for _ in range(runs)]
    print(f"post-processing alone, ten noisy rows: {statistics.median(alone) * 1e3:.3f} ms;"
          f" a stored release presented (post-processing and DataFrame):"
          f" {statistics.median(shown) * 1e3:.3f} ms")


def profile(reader, name: str, runs: int, counter) -> None:
    template = dict(QUERIES)[name]
    for _ in range(3):
        fresh(reader, template.format(k=next(counter)))
    sqls = [template.format(k=next(counter)) for _ in range(runs)]
    prof = cProfile.Profile()
    prof.enable()
    for sql in sqls:
        fresh(reader, sql)
    prof.disable()
    stats = pstats.Stats(prof).sort_stats("cumulative")
    stats.print_stats(60)
    stats.sort_stats("tottime").print_stats(40)


def serve(ledger: str | None, cached: bool) -> None:
    """A worker of ``--against``: answers "name k" lines with the seconds of the plain and
    the private query, wall then CPU (with ``--ledger``, each worker its own ledger file)."""
    df = frame()
    reader, con = open_reader(df, ledger), plain_connection(df)
    templates = dict(QUERIES)
    for line in sys.stdin:
        name, k = line.rsplit(" ", 1)
        sql = templates[name].format(k=1 if cached else k.strip())
        cpu = time.process_time()
        plain = timed(lambda: con.execute(sql).df())
        cpu, plain_cpu = time.process_time(), time.process_time() - cpu
        private = timed(lambda: fresh(reader, sql))
        print(f"{plain} {private} {plain_cpu} {time.process_time() - cpu}", flush=True)


def against(other: str, runs: int, ledger: str | None, cached: bool) -> None:
    here = str(Path(__file__).resolve().parents[2])
    command = ([sys.executable, __file__, "--serve"] + (["--ledger"] if ledger else [])
               + (["--cached"] if cached else []))
    workers = [subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                text=True, env={**os.environ, "PYTHONPATH": root})
               for root in (other, here)]
    print(f"medians of {runs} fresh releases each{' of a cached plan' if cached else ''}, taking turns; dpsql minus DuckDB, wall "
          f"(CPU) ms: {Path(other).name} first, then {Path(here).name}")
    print(f"{'query':14} {'duckdb ms':>10} {'before':>16} {'after':>16} {'after/before':>13}")
    counter = itertools.count(1)
    for name, _ in QUERIES:
        diffs, cpus, plains = ([], []), ([], []), []
        for run in range(runs + 3):
            order = (0, 1) if run % 2 == 0 else (1, 0)
            for i in order:
                workers[i].stdin.write(f"{name} {next(counter)}\n")
                workers[i].stdin.flush()
                plain, private, plain_cpu, private_cpu = map(
                    float, workers[i].stdout.readline().split())
                if run >= 3:                            # after a warm-up
                    diffs[i].append(private - plain)
                    cpus[i].append(private_cpu - plain_cpu)
                    plains.append(plain)
        (before, after), (cpu_before, cpu_after) = ([statistics.median(d) * 1e3 for d in pair]
                                                    for pair in (diffs, cpus))
        print(f"{name:14} {statistics.median(plains) * 1e3:10.2f} "
              f"{before:7.2f} ({cpu_before:6.2f}) {after:7.2f} ({cpu_after:6.2f}) "
              f"{after / before:13.2f}")
    for worker in workers:
        worker.stdin.close()
        worker.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--ledger", action="store_true", help="the reader writes a ledger")
    parser.add_argument("--profile", metavar="NAME", help="cProfile one query's releases")
    parser.add_argument("--against", metavar="DIR", help="compare with DIR's dpsql, in turns")
    parser.add_argument("--cached", action="store_true",
                        help="with --against: one text per query, its plan cached")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    df = frame()
    counter = itertools.count(1)
    with tempfile.TemporaryDirectory() as tmp:
        ledger = str(Path(tmp) / "ledger.jsonl") if args.ledger else None
        if args.serve:
            serve(ledger, args.cached)      # a temporary directory of its own
            return
        if args.against:
            against(args.against, args.runs, ledger, args.cached)
            return
        reader = open_reader(df, ledger)
        if args.profile:
            profile(reader, args.profile, args.runs, counter)
            return
        print(f"dpsql from {Path(dpsql.__file__).parent}; ledger: {bool(ledger)}")
        compare(reader, plain_connection(df), args.runs, counter)
        post_alone(reader, args.runs)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
