"""Private selection: the k most frequent public keys, by peeling permute-and-flip.

Owns: releasing which k keys (of a public list) have the largest counts, and nothing
else about the counts. The seeds' book gives Report Noisy Max and Durfee and Rogers'
one-shot Gumbel top-k, which releases exactly what k rounds of the exponential
mechanism, each removing its winner, release ("peeling"). dpsql peels with
permute-and-flip (McKenna and Sheldon 2020) instead of the exponential mechanism:

* One round: visit the remaining keys in a uniformly random order and stop at the
  first key r whose coin, of probability exp(-eps_r (c_max - c_r) / Delta), comes up
  heads (the best key always does). Equivalently, as sampled here, every key flips its
  coin and a uniformly random head wins (``dpsql.mechanisms.quantile.permute_and_flip``),
  with coins built from the exact Bernoulli(exp(-gamma)) trials of
  ``dpsql.mechanisms.samplers``: no floating point shapes the distribution (Gumbel
  noise cannot be drawn exactly from these samplers; the coins can).
* Privacy of one round: a count is monotone (adding a person raises counts, removing
  one lowers them, never both) and one person moves each count by at most Delta rows
  (the L-inf bound: ``max_ids``, or ``max_rows_per_group`` with ``max_groups``). For a
  monotone quality, permute-and-flip with exp(-eps gap / Delta) (no factor 2) is
  eps-DP, as the exponential mechanism is; it is never less accurate than the
  exponential mechanism in expectation (McKenna and Sheldon, Theorem 2).
* k rounds compose to k eps_r = epsilon (each round is eps_r-DP given the earlier
  winners). The cost grows with k and not with the number of keys; the L0 bound
  (``max_groups``) does not enter, since every round already allows any number of
  counts to move by Delta.
* Only the winners are released, in the order they were picked (the order is part of
  what is released, and private). The released statistic holds k for the first
  winner, k - 1 for the second, ..., 1 for the last and 0 for every other key, so
  ``ORDER BY COUNT(*) DESC LIMIT k`` over it returns the winners in order.
* Counts are clipped at 2^31 rows before scoring (1-Lipschitz: the sensitivity holds).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from ..errors import QueryError
from .base import NoiseMechanism
from .quantile import CELL_CAP, permute_and_flip, rational_rate


def _rate(delta: int, epsilon: float) -> tuple[int, int]:
    """(a, M) with a / M <= epsilon / Delta as close as fits, a * M < 2^62."""
    return rational_rate(Fraction(delta) / Fraction(epsilon),
                         f"epsilon={epsilon:.3g} per round is too small for a top-k selection "
                         "with this contribution bound; raise epsilon or lower k")


@dataclass(frozen=True)
class TopK(NoiseMechanism):
    """The k winners of peeling permute-and-flip over one count per public key."""

    k: int                  # winners released
    rows: int               # Delta: rows one person adds to one key's count
    a: int
    m: int                  # each round: a coin per key of probability exp(-gap * a / m)
    epsilon: float          # charged: k rounds of Delta * a / m each
    keys: int = 2           # candidates (the public keys listed; for the accuracy statement)
    delta: float = 0.0
    rho: float | None = None
    integer_output: bool = True

    @classmethod
    def calibrate(cls, k: int, rows: int, epsilon: float, keys: int = 2) -> "TopK":
        if k < 1:
            raise QueryError("a top-k selection needs LIMIT k with k >= 1")
        a, m = _rate(int(rows), epsilon / k)
        cost = Fraction(k * int(rows) * a, m)
        charged = float(cost)
        if Fraction(charged) < cost:
            charged = math.nextafter(charged, math.inf)
        return cls(int(k), int(rows), a, m, charged, keys=max(int(keys), 2))

    @property
    def name(self) -> str:
        return "top_k_permute_and_flip"

    @property
    def scale(self) -> float:
        """Temperature per round, in rows: a key one row worse is exp(-1/scale) as likely."""
        return float(Fraction(self.m, self.a))

    def release(self, values) -> np.ndarray:
        """``values``: the exact count of every public key. Returns k, k-1, ..., 1 for the
        winners in the order picked, 0 elsewhere."""
        counts = np.minimum(np.maximum(np.asarray(values, dtype=np.int64), 0), CELL_CAP)
        ranks = np.zeros(counts.size, np.int64)
        left = np.arange(counts.size)
        for round_ in range(min(self.k, counts.size)):
            live = counts[left]
            gaps = (live.max() - live)[None, :]
            won = int(permute_and_flip(gaps, self.a, self.m)[0])
            ranks[left[won]] = self.k - round_
            left = np.delete(left, won)
        return ranks

    def accuracy(self, beta: float) -> float:
        """t with P(each winner's count is within t rows of the best key not yet picked)
        >= 1 - beta (union bound over the k rounds and the keys)."""
        return self.scale * math.log(self.keys * self.k / beta)

    def accuracy_text(self, beta: float = 0.05) -> str:
        return (f"{1 - beta:.0%}: each winner's count is within {self.accuracy(beta):.4g} rows "
                f"of the best key not yet picked (over {self.keys:,} keys)")

    def value_bounds(self) -> tuple:
        return (0.0, float(self.k))

    def describe(self) -> str:
        return (f"top-{self.k} selection by {self.k} rounds of permute-and-flip over the public "
                f"keys (monotone counts, sensitivity {self.rows} row(s) per key), temperature "
                f"{self.scale:.6g} rows per round, epsilon={self.epsilon:.6g} "
                f"({self.epsilon / self.k:.6g} per round), delta=0")

    def explain(self, stat, query_epsilon: float) -> str:
        return (f"private selection, {self.describe()} ({self.epsilon / query_epsilon:.0%} of "
                f"the query); only the {self.k} winning key(s) are released, not their counts; "
                f"accuracy {self.accuracy_text(0.05)}")

    def report(self, stat) -> dict:
        return {"mechanism": self.name, "k": self.k, "scale": self.scale,
                "rank_error95": self.accuracy(0.05),
                "accuracy95": f"each winner's count is within {self.accuracy(0.05):.4g} rows of "
                              "the best key not yet picked (95%)"}
