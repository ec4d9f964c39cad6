"""CORR, COVAR_POP, COVAR_SAMP, REGR_SLOPE, REGR_INTERCEPT against the truth.

Usage: python tests/benchmarks/bench_bivariate.py [--releases 200] [--epsilon 1.0]

tests/data PUMS (1,000 rows, row privacy; age in [0, 100], income in [0, 500000]), each
aggregate alone in its query at ``epsilon`` (fresh noise, ``replay=False``). Printed per
aggregate: DuckDB's exact value on the same rows (no clamping is needed: the data lie
within the bounds), and over the releases the median absolute error, the median relative
error |released - exact| / |exact| and the 90th percentile of the absolute error.
Not part of the test suite.
"""
from __future__ import annotations

import argparse
import warnings
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd

import dpsql

DATA = Path(__file__).resolve().parents[1] / "data"
FUNCTIONS = ["CORR(age, income)", "COVAR_POP(age, income)", "COVAR_SAMP(age, income)",
             "REGR_SLOPE(income, age)", "REGR_INTERCEPT(income, age)"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--releases", type=int, default=200)
    parser.add_argument("--epsilon", type=float, default=1.0)
    args = parser.parse_args()
    pums = pd.read_csv(DATA / "PUMS.csv")
    reader = dpsql.from_df(pums, DATA / "PUMS.yaml", privacy=dpsql.Privacy(epsilon=args.epsilon))
    print(f"PUMS, epsilon={args.epsilon}, {args.releases} releases")
    print(f"{'aggregate':<28} {'exact':>12} {'median |err|':>13} {'median rel':>11} "
          f"{'p90 |err|':>12}")
    warnings.simplefilter("ignore")
    for f in FUNCTIONS:
        exact = duckdb.sql(f"SELECT {f} FROM pums").fetchall()[0][0]
        got = np.array([reader.execute_df(f"SELECT {f} AS v FROM PUMS.PUMS", replay=False).v[0]
                        for _ in range(args.releases)], dtype=float)
        err = np.abs(got - exact)
        print(f"{f:<28} {exact:>12.5g} {np.median(err):>13.4g} "
              f"{np.median(err) / abs(exact):>11.2%} {np.quantile(err, 0.9):>12.4g}")


if __name__ == "__main__":
    main()
