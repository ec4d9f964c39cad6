"""Quantile benchmark: accuracy on PUMS against OpenDP, and speed against DuckDB at 10^7 rows.

Usage: python tests/benchmarks/bench_quantiles.py [--releases 200] [--rows 10000000]
       [--repeat 5] [--skip-speed]

Accuracy: median absolute error over ``releases`` fresh releases at epsilon = 1 (row
privacy, the metadata's bounds [0, 500000] and [0, 100]) of MEDIAN(income),
QUANTILE_CONT(income, 0.9) and MEDIAN(age), against the exact values of the data
(linear interpolation, as DuckDB's QUANTILE_CONT). Issue 13's targets: 45, 1,200 and
0.45 (Tumult Analytics 0.21 measured 45.3, 1,327, 0.45; OpenDP 0.14 88.4, 1,201, 0.52).
If ``opendp`` is installed (``pip install opendp``; never a dependency of dpsql), its
``make_private_quantile`` runs on the same data with a 1,024-point grid, side by side.

Speed: MEDIAN(income) and SELECT educ, MEDIAN(income) ... GROUP BY educ through dpsql
(plan cached, fresh releases) against DuckDB's exact QUANTILE_CONT on the same table,
best of ``repeat`` runs each, in the same process. Not part of the test suite.
"""
from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd

import dpsql

HERE = Path(__file__).resolve().parent
DATA = HERE.parent / "data"
sys.path.insert(0, str(HERE))
from bench_engine import best, make_tables, metadata  # noqa: E402

ACCURACY = [  # (label, SQL, column, p, lower, upper, target)
    ("MEDIAN(income)", "SELECT MEDIAN(income) AS v FROM PUMS.PUMS", "income", 0.5, 0, 500000, 45),
    ("QUANTILE_CONT(income, 0.9)", "SELECT QUANTILE_CONT(income, 0.9) AS v FROM PUMS.PUMS",
     "income", 0.9, 0, 500000, 1200),
    ("MEDIAN(age)", "SELECT MEDIAN(age) AS v FROM PUMS.PUMS", "age", 0.5, 0, 100, 0.45),
]


def opendp_releases(values: np.ndarray, p: float, lower: float, upper: float,
                    releases: int) -> np.ndarray | None:
    try:
        import opendp.prelude as dp
    except ImportError:
        return None
    dp.enable_features("contrib")
    candidates = [float(c) for c in np.linspace(lower, upper, 1024)]
    meas = dp.m.make_private_quantile(
        dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.symmetric_distance(),
        dp.max_divergence(), candidates=candidates, alpha=p, scale=0.0)
    # scale for epsilon = 1 at one record changed (add/remove): binary search on the map
    lo, hi = 1e-6, 1e6
    for _ in range(200):
        mid = (lo * hi) ** 0.5
        m = dp.m.make_private_quantile(
            dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.symmetric_distance(),
            dp.max_divergence(), candidates=candidates, alpha=p, scale=mid)
        if m.map(1) > 1.0:
            lo = mid
        else:
            hi = mid
    meas = dp.m.make_private_quantile(
        dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.symmetric_distance(),
        dp.max_divergence(), candidates=candidates, alpha=p, scale=hi)
    data = [float(v) for v in values]
    return np.array([meas(data) for _ in range(releases)])


def accuracy(releases: int) -> None:
    frame = pd.read_csv(DATA / "PUMS.csv")
    reader = dpsql.from_df(frame, DATA / "PUMS.yaml", privacy=dpsql.Privacy(epsilon=1.0))
    print(f"\naccuracy: median absolute error over {releases} releases at epsilon = 1 (PUMS, "
          "1,000 rows, row privacy)")
    print(f"{'statistic':28} {'exact':>9} {'dpsql':>9} {'target':>8} {'OpenDP 1,024 grid':>18}")
    for label, sql, column, p, lower, upper, target in ACCURACY:
        values = np.clip(frame[column].to_numpy(dtype=float), lower, upper)
        exact = float(np.quantile(values, p))
        ours = np.array([reader.execute_df(sql, replay=False).v[0] for _ in range(releases)])
        err = float(np.median(np.abs(ours - exact)))
        theirs = opendp_releases(values, p, lower, upper, releases)
        other = (f"{float(np.median(np.abs(theirs - exact))):18.4g}" if theirs is not None
                 else f"{'(opendp absent)':>18}")
        print(f"{label:28} {exact:9.6g} {err:9.4g} {target:8.6g} {other}")


SPEED = [
    ("MEDIAN(income)", "SELECT MEDIAN(income) AS m FROM bench.pums",
     "SELECT QUANTILE_CONT(income, 0.5) AS m FROM bench.pums"),
    ("educ, MEDIAN(income)", "SELECT educ, MEDIAN(income) AS m FROM bench.pums GROUP BY educ",
     "SELECT educ, QUANTILE_CONT(income, 0.5) AS m FROM bench.pums GROUP BY educ"),
]


def speed(rows: int, repeat: int) -> None:
    con = duckdb.connect()
    make_tables(con, rows)
    meta = metadata()
    meta[""]["bench"]["pums"]["educ"]["values"] = list(range(1, 17))    # public keys
    reader = dpsql.from_connection(con, meta, privacy=dpsql.Privacy(epsilon=1.0))
    threshold = metadata()
    keys = dpsql.from_connection(con, threshold, privacy=dpsql.Privacy(epsilon=1.0))
    print(f"\nspeed, {rows:,} rows (best of {repeat}; grid 2^16 cells)")
    print(f"{'query':32} {'duckdb ms':>10} {'dpsql ms':>10} {'ratio':>7}")
    for name, sql, plain_sql in SPEED:
        for label, r in (("", keys), (" (public keys)", reader)):
            if "GROUP BY" not in sql and label:
                continue
            r.execute_df(sql)
            plain = best(lambda: con.execute(plain_sql).df(), repeat)
            private = best(lambda: r.execute_df(sql, replay=False), repeat)
            print(f"{name + label:32} {plain * 1e3:10.1f} {private * 1e3:10.1f} "
                  f"{private / plain:7.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--releases", type=int, default=200)
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--skip-speed", action="store_true")
    args = parser.parse_args()
    warnings.filterwarnings("ignore", message="dpsql: no budget set")
    accuracy(args.releases)
    if not args.skip_speed:
        speed(args.rows, args.repeat)


if __name__ == "__main__":
    main()
