"""Private top-k selection against the full noisy histogram, at equal cost.

Usage: python tests/benchmarks/bench_selection.py [--releases 300] [--epsilon 1.0]

1,000 public keys with Zipf counts (key i has round(N / i) rows, N = 2,000 or 20,000).
Each release picks the top 10 keys at a total epsilon two ways: dpsql's selection
(``dpsql.mechanisms.selection``: 10 rounds of permute-and-flip, Delta = the rows one
person adds to one key) and the noisy histogram a GROUP BY with COUNT(*) releases
(discrete Laplace on every key at L1 = max_groups x max_rows_per_group, then its top
10: post-processing). Printed: how often the released set is exactly the true top 10,
and the mean number of true top-10 keys released. ``groups`` is the number of keys one
person may add a row to (max_groups, one row each): the histogram's L1 grows with it,
the selection's Delta does not. Not part of the test suite.
"""
from __future__ import annotations

import argparse

import numpy as np

from dpsql.mechanisms.samplers import discrete_laplace
from dpsql.mechanisms.selection import TopK

K, KEYS = 10, 1000


def _top(values: np.ndarray) -> set:
    return set(np.argsort(-values, kind="stable")[:K].tolist())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--releases", type=int, default=300)
    parser.add_argument("--epsilon", type=float, default=1.0)
    args = parser.parse_args()
    print(f"epsilon={args.epsilon}, {args.releases} releases, {KEYS} keys, top {K}")
    print(f"{'N':>6} {'groups':>6} | {'selection: exact set, mean overlap':>36} | "
          f"{'histogram: exact set, mean overlap':>36}")
    for n in (2_000, 20_000):
        counts = np.rint(n / np.arange(1, KEYS + 1)).astype(np.int64)
        truth = set(range(K))
        for groups in (1, 10, 100):
            top_k = TopK.calibrate(K, 1, args.epsilon)
            scale = groups / args.epsilon
            sel, hist = [], []
            for _ in range(args.releases):
                sel.append(len(_top(top_k.release(counts).astype(float)) & truth))
                noisy = counts + discrete_laplace(scale, KEYS)
                hist.append(len(_top(noisy.astype(float)) & truth))
            print(f"{n:>6} {groups:>6} | {np.mean(np.array(sel) == K):>16.1%} "
                  f"{np.mean(sel):>19.2f} | {np.mean(np.array(hist) == K):>16.1%} "
                  f"{np.mean(hist):>19.2f}")


if __name__ == "__main__":
    main()
