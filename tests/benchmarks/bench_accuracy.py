"""Accuracy at equal privacy: the error-minimising split against equal shares.

Usage: python tests/benchmarks/bench_accuracy.py [--releases 200] [--epsilon 1.0]

Each query runs ``releases`` times at a total epsilon per query (fresh noise each
time, ``replay=False``) with ``Privacy(split="equal")`` (every statistic the same
share: dpsql before the split rule) and with the default ``split="error"``
(docs/privacy.md). Printed per query and output: the median over releases of the
relative error |released - exact| / |exact|, where "exact" is the bounded plan's
answer (plain DuckDB with the same clamping; for the user-level queries, the
answer before truncation). Grouped outputs average the relative error over the
groups released. Data: tests/data PUMS (row privacy) and PUMS_dup (user-level, one
row kept per person). Not part of the test suite.
"""
from __future__ import annotations

import argparse
import statistics
import warnings
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd

import dpsql

DATA = Path(__file__).resolve().parents[1] / "data"
CLAMP_INCOME = "LEAST(GREATEST(income, 0), 500000)"
CLAMP_AGE = "LEAST(GREATEST(age, 0), 100)"

# (name, data set, dpsql query, exact query on the same rows)
QUERIES = [
    ("COUNT", "pums", "SELECT COUNT(*) AS v FROM PUMS.PUMS", "SELECT COUNT(*) AS v FROM t"),
    ("SUM(income)", "pums", "SELECT SUM(income) AS v FROM PUMS.PUMS",
     f"SELECT SUM({CLAMP_INCOME}) AS v FROM t"),
    ("AVG(income)", "pums", "SELECT AVG(income) AS v FROM PUMS.PUMS",
     f"SELECT AVG({CLAMP_INCOME}) AS v FROM t"),
    ("AVG(age)", "pums", "SELECT AVG(age) AS v FROM PUMS.PUMS",
     f"SELECT AVG({CLAMP_AGE}) AS v FROM t"),
    ("COUNT, AVG(income)", "pums", "SELECT COUNT(*) AS n, AVG(income) AS v FROM PUMS.PUMS",
     f"SELECT COUNT(*) AS n, AVG({CLAMP_INCOME}) AS v FROM t"),
    ("AVG(income) BY sex", "pums",
     "SELECT sex, AVG(income) AS v FROM PUMS.PUMS GROUP BY sex",
     f"SELECT CAST(sex AS VARCHAR) AS sex, AVG({CLAMP_INCOME}) AS v FROM t GROUP BY sex"),
    ("AVG(age) BY educ", "pums",
     "SELECT educ, AVG(age) AS v FROM PUMS.PUMS GROUP BY educ",
     f"SELECT CAST(educ AS VARCHAR) AS educ, AVG({CLAMP_AGE}) AS v FROM t GROUP BY educ"),
    ("VARIANCE(income)", "pums", "SELECT VARIANCE(income) AS v FROM PUMS.PUMS",
     f"SELECT VAR_SAMP({CLAMP_INCOME}) AS v FROM t"),
    ("VARIANCE(age)", "pums", "SELECT VARIANCE(age) AS v FROM PUMS.PUMS",
     f"SELECT VAR_SAMP({CLAMP_AGE}) AS v FROM t"),
    ("user-level COUNT", "dup", "SELECT COUNT(*) AS v FROM PUMS.PUMS",
     "SELECT COUNT(DISTINCT pid) AS v FROM t"),
    ("user-level AVG(income)", "dup", "SELECT AVG(income) AS v FROM PUMS.PUMS",
     f"SELECT AVG({CLAMP_INCOME}) AS v FROM t"),
]
SETS = {"pums": ("PUMS.csv", "PUMS.yaml"), "dup": ("PUMS_dup.csv", "PUMS_dup.yaml")}


def relative_errors(reader, sql, exact: pd.DataFrame, privacy, releases: int) -> dict:
    """Per output column: the median over releases of the (group-averaged) relative error."""
    keys = [c for c in exact.columns if c not in ("v", "n")]
    outputs = [c for c in exact.columns if c in ("v", "n")]
    errors = {c: [] for c in outputs}
    for _ in range(releases):
        got = reader.execute_df(sql, privacy=privacy, replay=False)
        if keys:
            got = got.astype({k: str for k in keys}).merge(
                exact.astype({k: str for k in keys}), on=keys, suffixes=("", "_exact"))
        else:
            got = got.join(exact, rsuffix="_exact")
        for c in outputs:
            if len(got):
                rel = (got[c].astype(float) - got[c + "_exact"]).abs() / got[c + "_exact"].abs()
                errors[c].append(float(rel.mean()))
    return {c: statistics.median(v) if v else float("nan") for c, v in errors.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--releases", type=int, default=200)
    parser.add_argument("--epsilon", type=float, default=1.0)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    readers, exact_con = {}, {}
    for name, (csv, yaml) in SETS.items():
        frame = pd.read_csv(DATA / csv)
        readers[name] = dpsql.from_df(frame, DATA / yaml)
        con = duckdb.connect()
        con.register("t", frame)
        exact_con[name] = con
    print(f"median relative error over {args.releases} releases, epsilon={args.epsilon} per "
          "query (equal shares -> error-minimising split)")
    print(f"{'query':28} {'output':6} {'equal':>10} {'split':>10} {'ratio':>7}  shares")
    for name, data, sql, exact_sql in QUERIES:
        exact = exact_con[data].execute(exact_sql).df()
        results = {}
        for split in ("equal", "error"):
            privacy = dpsql.Privacy(epsilon=args.epsilon, split=split)
            results[split] = relative_errors(readers[data], sql, exact, privacy, args.releases)
        plan = readers[data]._plan(sql, privacy=dpsql.Privacy(epsilon=args.epsilon))
        shares = ", ".join(f"{s.label} {s.mechanism.epsilon / plan.cost[0]:.0%}"
                           for s in plan.statistics)
        for c in results["equal"]:
            before, after = results["equal"][c], results["error"][c]
            print(f"{name:28} {c:6} {before:10.4g} {after:10.4g} {after / before:7.3f}  {shares}")


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
