"""Fixed cost per query: a fresh release on a 1,000-row DataFrame against plain DuckDB.

Usage: python tests/benchmarks/bench_fixed.py [--runs 200] [--ledger] [--profile NAME]

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
prints cProfile's top functions of NAME's fresh releases instead. Not part of the tests.
"""
from __future__ import annotations

import argparse
import cProfile
import itertools
import pstats
import statistics
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
    return reader.execute_df(sql)       # a new text: a new plan and a fresh release


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--ledger", action="store_true", help="the reader writes a ledger")
    parser.add_argument("--profile", metavar="NAME", help="cProfile one query's releases")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    df = frame()
    counter = itertools.count(1)
    with tempfile.TemporaryDirectory() as tmp:
        ledger = str(Path(tmp) / "ledger.jsonl") if args.ledger else None
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
