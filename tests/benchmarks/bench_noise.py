"""Draws per second of the exact samplers, per scale (one process, one core).

Run: python tests/benchmarks/bench_noise.py [draws]   (default 2,000,000 per call)
Targets (issue 3): discrete Laplace >= 2,000,000/s, discrete Gaussian >= 500,000/s
at every scale from 0.5 to 1e6. Each figure is the best of three calls.
"""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))

from dpsql.mechanisms import samplers as noise  # noqa: E402

SCALES = [0.5, 1, 1.01, 3.7, 10, 100, 1e3, 1e4, 1e6]
TARGETS = {"discrete_laplace": 2_000_000, "discrete_gaussian": 500_000}


def rate(sampler, scale: float, draws: int) -> float:
    sampler(scale, 1000)                      # warm the caches of the scale's constants
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        sampler(scale, draws)
        best = min(best, time.perf_counter() - start)
    return draws / best


def main() -> int:
    draws = int(sys.argv[1]) if len(sys.argv) > 1 else 2_000_000
    print(f"{'sampler':<18} {'scale':>9} {'draws/s':>14}  target")
    missed = 0
    for name, target in TARGETS.items():
        sampler = getattr(noise, name)
        for scale in SCALES:
            r = rate(sampler, scale, draws)
            ok = r >= target
            missed += not ok
            print(f"{name:<18} {scale:>9g} {r:>14,.0f}  {'ok' if ok else 'MISSED'} (>= {target:,})")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
