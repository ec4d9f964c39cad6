"""Bounds estimate benchmark (issue 36): dpsql's estimate against Google's and Tumult's
algorithms on their kinds of test shapes.

Usage: python tests/benchmarks/bench_bounds.py [--runs 20] [--seed 36]

Per shape and epsilon, over ``runs`` estimates: how often no bounds come out ("none"), and
the median coverage (share of the values inside the bounds) and width (upper - lower over
the spread of the middle 99% of the values). The references follow the published
algorithms, reimplemented here with dpsql's exact discrete Laplace sampler:

* Google (ApproxBounds, the C++ library's defaults): one histogram bin per power of two
  over the type's range on each side, noise of scale 1/epsilon, threshold
  -ln(2 - 2 p^(1/(2B - 1))) / epsilon with p = 1 - 1e-9; the bounds are the edges of the
  most extreme bins above it.
* Tumult (``get_bounds``): bins by ceil(log2 |x|) (-100..100 for floats, 0..63 for ints),
  prefix sums over increasing magnitude, a sparse-vector test of each against 95% of the
  count (noise 4/epsilon on the sums, 2/epsilon on the threshold); bounds (-2^i, 2^i).

Not part of the test suite.
"""
from __future__ import annotations

import argparse
import math
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

import dpsql
from dpsql.mechanisms.samplers import discrete_laplace

DATA = Path(__file__).resolve().parents[2] / "examples" / "data"


def google(x: np.ndarray, eps: float, integer: bool):
    scale = 1.0 if integer else float(np.finfo(float).tiny)
    top = 2.0 ** 63 if integer else float(np.finfo(float).max)
    bins = math.ceil((math.log(top) - math.log(scale)) / math.log(2)) + 1
    k = -math.log(2 - 2 * (1 - 1e-9) ** (1 / (2 * bins - 1))) / eps
    mag = np.abs(x.astype(float))
    msb = np.clip(np.ceil(np.log2(np.maximum(mag, scale)) - math.log2(scale)), 0, bins - 1)
    msb = np.where(mag == 0, 0, msb).astype(int)
    pos = np.bincount(msb[x >= 0], minlength=bins) + discrete_laplace(1 / eps, bins)
    neg = np.bincount(msb[x < 0], minlength=bins) + discrete_laplace(1 / eps, bins)
    up, down = np.flatnonzero(pos > k), np.flatnonzero(neg > k)
    if not up.size and not down.size:
        return None

    def edge(i):
        return 0.0 if i < 0 else math.ldexp(scale, int(i)) if math.ldexp(scale, int(i) - 1) < top / 2 else math.inf
    lower = -edge(down.max()) if down.size else edge(up.min() - 1)
    upper = edge(up.max()) if up.size else -edge(down.min() - 1)
    return lower, upper


def tumult(x: np.ndarray, eps: float, integer: bool):
    low = 0 if integer else -100
    ranks = np.arange(low, 64 if integer else 101)
    mag = np.abs(x.astype(float))
    rank = np.where(mag == 0, low, np.clip(np.ceil(np.log2(np.where(mag == 0, 1, mag))), low,
                                           ranks[-1])).astype(int)
    prefix = np.cumsum(np.bincount(rank - low, minlength=ranks.size))
    threshold = int(0.95 * x.size) + discrete_laplace(2 / eps, 1)[0]
    hit = np.flatnonzero(prefix + discrete_laplace(4 / eps, ranks.size) >= threshold)
    i = ranks[hit[0]] if hit.size else ranks[-1]
    return -(2.0 ** i), 2.0 ** i


def ours(reader):
    def estimate(x, eps, integer):
        try:
            return tuple(float(v) for v in reader.estimate_bounds("s.t", "x", eps))
        except dpsql.OperationalError:
            return None
    return estimate


def shapes(rng) -> list:
    pums = pd.read_csv(DATA / "PUMS.csv")
    return [
        ("PUMS income, 1,000 rows (int)", pums.income.to_numpy(), True),
        ("PUMS age, 1,000 rows (int)", pums.age.to_numpy(), True),
        ("normal(50, 10), 100 rows (int)", np.round(rng.normal(50, 10, 100)).astype(np.int64), True),
        ("lognormal(0, 2), 1,000 rows", rng.lognormal(0, 2, 1000), False),
        ("Pareto(1), 10,000 rows", rng.pareto(1.0, 10_000) + 1, False),
        ("uniform [0, 1e-6], 20,000 rows", rng.uniform(0, 1e-6, 20_000), False),
        ("uniform [0, 1e12], 2,000 rows", rng.uniform(0, 1e12, 2_000), False),
        ("normal(-1e6, 1e5), 2,000 rows", rng.normal(-1e6, 1e5, 2_000), False),
        ("normal(0, 100), 1,000 rows (int)", np.round(rng.normal(0, 100, 1000)).astype(np.int64), True),
    ]


def summary(x: np.ndarray, results: list) -> str:
    found = [r for r in results if r is not None]
    none = 1 - len(found) / len(results)
    if not found:
        return f"none {none:.0%}"
    spread = np.subtract(*np.quantile(x, [0.995, 0.005])) or 1.0
    cover = np.median([np.mean((x >= lo) & (x <= hi)) for lo, hi in found])
    width = np.median([(hi - lo) / spread for lo, hi in found])
    return f"none {none:.0%}, cover {cover:.3f}, width {width:.3g}x"


def main(argv=None) -> int:
    args = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    args.add_argument("--runs", type=int, default=20)
    args.add_argument("--seed", type=int, default=36)
    opts = args.parse_args(argv)
    warnings.simplefilter("ignore")
    for name, x, integer in shapes(np.random.default_rng(opts.seed)):
        meta = {"": {"s": {"t": {"row_privacy": True, "x": {"type": "int" if integer else "float"}}}}}
        reader = dpsql.from_df(pd.DataFrame({"x": x}), meta)
        for eps in (0.1, 1.0):
            line = [f"{name:34s} eps={eps:<4}"]
            for label, method in (("dpsql", ours(reader)), ("google", google), ("tumult", tumult)):
                line.append(f"{label}: {summary(x, [method(x, eps, integer) for _ in range(opts.runs)])}")
            print(" | ".join(line), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
