"""Quantiles: permute-and-flip over a candidate grid, sampled exactly.

Owns: the candidate grids (integers, equal cells of a bounded range, log-spaced
cells for estimating bounds), the quantile score, its sensitivity, the exact
sampler, the privacy map, and the accuracy statement. docs/mechanisms.md has the
proofs in short; the essentials:

* Score (OpenDP's, in integers). For p = num/den and a candidate cell c, with
  L = #(values in cells below c) and G = #(values in cells above c) (values in
  c count as neither), s(c) = |(den - num) * L - num * G|; the best cell has the
  least score. Adding or removing one row changes L (cells above the row) or G
  (cells below it) by one, so every score moves by at most max(num, den - num);
  a person with at most R rows in the released histograms (over all groups)
  moves each score by at most Delta = R * max(num, den - num) in total.
* Mechanism: permute-and-flip (McKenna & Sheldon 2020), never worse than the
  exponential mechanism: in a random order, each cell flips a coin with
  probability exp(-epsilon * (s(c) - s_min) / (2 Delta)) and the first head is
  released. The score is not monotone (one row raises scores on one side and
  lowers them on the other), so the factor 2 stays. PF is epsilon-DP for score
  changes of at most Delta; a person moving group g's scores by r_g * Delta/R
  costs r_g * epsilon / R there, epsilon over all groups.
* Exact sampling: the first head of a random order is a uniformly random head
  of independent coins (the best cell always comes up heads), so every cell
  flips its coin, as the product of exact Bernoulli(exp(-1)) trials and one
  Bernoulli(exp(-f)) trial (``dpsql.mechanisms.samplers``), and a uniform head is chosen with
  exact uniform integers. gamma = d * a / M is an exact rational: epsilon is
  rounded down to 2 Delta a / M (charged as such).
* Counts are clipped (a cell at 2^31 rows, L and G at 2^36) before scoring; the
  clipping is 1-Lipschitz, so the sensitivity holds, and all score arithmetic
  stays exact in 64-bit integers. It changes answers only for groups of more than
  68 billion rows.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from . import samplers as noise
from ..errors import InternalError, QueryError
from .base import NoiseMechanism

MIN_CELLS, MAX_CELLS = 2 ** 4, 2 ** 20
CELL_CAP = 2 ** 31 - 1         # rows counted per cell
RANK_CAP = 2 ** 36             # L and G
MAX_DENOMINATOR = 10_000       # p is the nearest fraction with at most this denominator
_CHUNK_CELLS = 2 ** 20         # cells sampled per vectorised batch (groups x cells)
_DOUBLE_MAX = np.finfo(np.float64).max   # every finite double is below 2^1024


def _pow2(exponent) -> np.ndarray:
    """2 ** exponent as doubles; from 2 ** 1024 (beyond the double range, and above every
    finite double) on, the largest double, so a log cell's edge still bounds its values."""
    exponent = np.asarray(exponent, dtype=np.float64)
    beyond = exponent >= 1024
    return np.where(beyond, _DOUBLE_MAX, np.exp2(np.where(beyond, 0.0, exponent)))


def quantile_fraction(p) -> Fraction:
    """p as an exact fraction num/den, den <= 10,000 (the public rounding of p)."""
    return Fraction(str(p)).limit_denominator(MAX_DENOMINATOR)


# ----------------------------------------------------------------------------
# Candidate grids


@dataclass(frozen=True)
class Grid:
    """The candidates: ``cells`` cells of a public range; the data is binned into them.

    kind "integer": cell i is the integer lower + i (upper - lower + 1 cells).
    kind "linear": cell i is [lower + i w, lower + (i + 1) w), w = (upper - lower) / cells.
    kind "log": cell 0 holds |x| < 2^emin (zero); cells of magnitude
      [2^(emin + j/s), 2^(emin + (j+1)/s)) for j < (emax - emin) s, mirrored for
      negative values (``per_octave`` = s).
    """

    kind: str
    lower: float
    upper: float
    cells: int
    per_octave: int = 0
    emin: int = 0
    emax: int = 0

    @staticmethod
    def for_bounds(lower, upper, integer: bool, cells: int) -> "Grid":
        if integer and upper - lower + 1 <= cells:
            return Grid("integer", int(lower), int(upper), int(upper - lower + 1))
        if upper <= lower:
            return Grid("linear", float(lower), float(lower), 1)
        return Grid("linear", float(lower), float(upper), int(cells))

    @staticmethod
    def log(integer: bool, per_octave: int = 4) -> "Grid":
        """Log-spaced cells over the whole range of an int64 or a double column."""
        emin, emax = (0, 63) if integer else (-64, 1024)
        side = (emax - emin) * per_octave
        top = float(_pow2(emax))         # 2^1024 is not a double: the largest double
        return Grid("log", -top, top, 2 * side + 1, per_octave, emin, emax)

    @property
    def width(self) -> float:
        """Width of one cell (0 for integer candidates; log cells grow, see ``describe``)."""
        if self.kind == "integer":
            return 0.0
        if self.kind == "log":
            return math.inf
        return (self.upper - self.lower) / self.cells

    def describe(self) -> str:
        if self.kind == "integer":
            return f"the {self.cells:,} integers {self.lower}..{self.upper}"
        if self.kind == "log":
            return (f"{self.cells:,} log-spaced cells ({self.per_octave} per power of two, "
                    f"|x| from 2^{self.emin} to 2^{self.emax}, and zero)")
        return (f"{self.cells:,} cells of width {self.width:.6g} over "
                f"[{self.lower:.6g}, {self.upper:.6g}]")

    # -- values of cells -------------------------------------------------------
    def _log_edge(self, index: np.ndarray, upper: bool) -> np.ndarray:
        """The low edge (upper=False) or the high edge (upper=True) of log cells."""
        side = (self.cells - 1) // 2
        j = index.astype(np.int64) - side            # 0: zero cell; > 0 positive; < 0 negative
        mag = np.abs(j) - 1
        small = float(_pow2(self.emin))
        lo_mag = _pow2(self.emin + mag / self.per_octave)
        hi_mag = _pow2(self.emin + (mag + 1) / self.per_octave)
        if upper:
            return np.where(j > 0, hi_mag, np.where(j < 0, -lo_mag, small))
        return np.where(j > 0, lo_mag, np.where(j < 0, -hi_mag, -small))

    def values(self, index: np.ndarray, how: str) -> np.ndarray:
        """Released values of cells: ``how`` is "cont" (uniform in the cell), "mid",
        "low" or "high" (the cell's edges: for bounds that must contain its data)."""
        index = np.asarray(index, dtype=np.int64)
        if self.kind == "integer":
            return (self.lower + index).astype(np.float64)
        if self.kind == "log":
            return self._log_edge(index, upper=(how == "high"))
        w = self.width
        if how == "cont":
            # Post-processing of the released cell: an exact uniform fraction of it.
            offset = noise.uniform_below(2 ** 53, index.size).astype(np.float64) / 2.0 ** 53
        else:
            offset = {"mid": 0.5, "low": 0.0, "high": 1.0}[how]
        return np.minimum(self.lower + (index + offset) * w, self.upper)


# ----------------------------------------------------------------------------
# Exact sampling


def _coins(whole: np.ndarray, part: np.ndarray, m: int) -> np.ndarray:
    """Independent Bernoulli(exp(-(whole + part/m))) coins, exactly.

    Each coin is the AND of ``whole`` Bernoulli(exp(-1)) trials and one
    Bernoulli(exp(-part/m)) trial (independent, so their order is free): the cheap
    exp(-1) trials run first, and only the coins still standing draw the fraction."""
    out = np.ones(whole.size, bool)
    idx = np.flatnonzero(whole > 0)
    left = whole[idx]
    while idx.size:
        ok = noise.bernoulli_exp_minus_one(idx.size)
        out[idx[~ok]] = False
        idx, left = idx[ok], left[ok] - 1
        more = left > 0
        idx, left = idx[more], left[more]
    live = np.flatnonzero(out & (part > 0))
    if live.size:
        out[live] = noise.bernoulli_exp_fraction(part[live], m)
    return out


def uniform_below_each(ms: np.ndarray) -> np.ndarray:
    """One exact uniform integer in [0, ms[i]) per entry (ms >= 1, < 2^62)."""
    ms = np.asarray(ms, dtype=np.int64)
    limit = (np.int64(2 ** 62) // ms) * ms
    out = np.empty(ms.size, np.int64)
    todo = np.arange(ms.size)
    while todo.size:
        u = noise.uniform_below(2 ** 62, todo.size).astype(np.int64)
        ok = u < limit[todo]
        out[todo[ok]] = u[ok] % ms[todo[ok]]
        todo = todo[~ok]
    return out


def score_gaps(hist: np.ndarray, num: int, den: int) -> np.ndarray:
    """d = s - min(s) per cell for each row of ``hist`` (groups x cells), exact int64."""
    h = np.minimum(hist, CELL_CAP).astype(np.int64)
    below = np.cumsum(h, axis=1)
    total = below[:, -1:]
    lt = np.minimum(below - h, RANK_CAP)
    gt = np.minimum(total - below, RANK_CAP)
    s = np.abs((den - num) * lt - num * gt)
    return s - s.min(axis=1, keepdims=True)


def permute_and_flip(gaps: np.ndarray, a: int, m: int) -> np.ndarray:
    """The released cell per row of ``gaps`` (groups x cells): a uniform head among
    coins of probability exp(-gap * a / m)."""
    q, r = np.divmod(gaps, m)
    whole = q * a + (r * a) // m
    part = (r * a) % m
    heads = _coins(whole.ravel(), part.ravel(), m).reshape(gaps.shape)
    count = heads.sum(axis=1)
    if (count < 1).any():
        raise InternalError("permute-and-flip: the best cell lost its coin")
    pick = uniform_below_each(count)
    return np.argmax(np.cumsum(heads, axis=1) > pick[:, None], axis=1)


# ----------------------------------------------------------------------------
# The calibrated mechanism


def _rational_rate(delta_int: int, epsilon: float) -> tuple[int, int]:
    """(a, M) with gamma = d * a / M, 2 Delta a / M <= epsilon as close as fits, a * M < 2^62."""
    return rational_rate(Fraction(2 * delta_int) / Fraction(epsilon),
                         f"epsilon={epsilon:.3g} is too small for a quantile with this "
                         "contribution bound (its temperature exceeds 2^62); raise epsilon")


def rational_rate(target: Fraction, refusal: str) -> tuple[int, int]:
    """(a, M) with M / a >= ``target`` (a temperature in score units) as close as fits,
    a * M < 2^62; a temperature beyond that is refused with ``refusal``."""
    bits = max(0, min(24, (61 - target.numerator.bit_length() + target.denominator.bit_length()) // 2))
    a = 2 ** bits
    m = math.ceil(target * a)
    while a * m >= 2 ** 62 and a > 1:
        a //= 2
        m = math.ceil(target * a)
    if a * m >= 2 ** 62:
        raise QueryError(refusal)
    return a, m


_RELEASED_VALUE = {"cont": "a uniform point of the chosen cell (the integer itself on an "
                           "integer grid)",
                   "mid": "the chosen cell's middle, rounded for int columns (the integer itself "
                          "on an integer grid)",
                   "low": "the chosen cell's lower edge", "high": "the chosen cell's upper edge"}


@dataclass(frozen=True)
class PermuteAndFlip(NoiseMechanism):
    """One quantile statistic's mechanism: release per group, cost, accuracy."""

    reads_histograms = True        # one histogram per kept group (class constant, not a field)

    grid: Grid
    p: Fraction
    rows: int               # rows one person has in the histograms, over all groups
    how: str                # value of the released cell: "cont", "mid", "low", "high"
    integer_output: bool
    a: int
    m: int
    epsilon: float          # the cost charged: 2 Delta a / M <= the share given
    delta: float = 0.0
    rho: float | None = None

    @classmethod
    def calibrate(cls, grid: Grid, p: Fraction, rows: int, epsilon: float, how: str,
                  integer_output: bool) -> "PermuteAndFlip":
        delta_int = int(rows) * max(p.numerator, p.denominator - p.numerator)
        a, m = _rational_rate(delta_int, epsilon)
        cost = Fraction(2 * delta_int * a, m)
        charged = float(cost)
        if Fraction(charged) < cost:
            charged = math.nextafter(charged, math.inf)
        return cls(grid, p, int(rows), how, integer_output, a, m, charged)

    @property
    def sensitivity(self) -> float:
        """Delta in rank units (rows): R * max(p, 1 - p)."""
        return self.rows * float(max(self.p, 1 - self.p))

    @property
    def scale(self) -> float:
        """Temperature in rank units: a cell one rank worse is exp(-1/scale) as likely to flip heads."""
        return float(Fraction(self.m, self.a) / self.p.denominator)

    def release(self, histograms) -> np.ndarray:
        """One value per group. ``histograms``: per group an int64 array of
        cell * 2^32 + count (the engine's list), or None for a group with no rows."""
        n = len(histograms)
        cells = self.grid.cells
        chosen = np.empty(n, np.int64)
        per_chunk = max(1, _CHUNK_CELLS // cells)
        for start in range(0, n, per_chunk):
            part = histograms[start:start + per_chunk]
            dense = np.zeros((len(part), cells), np.int64)
            for i, packed in enumerate(part):
                if packed is None or packed is np.ma.masked:
                    continue
                packed = np.asarray(packed, dtype=np.int64)
                # cells are distinct within a group (GROUP BY keys, cell)
                dense[i, np.clip(packed >> 32, 0, cells - 1)] = packed & 0xFFFFFFFF
            gaps = score_gaps(dense, self.p.numerator, self.p.denominator)
            chosen[start:start + len(part)] = permute_and_flip(gaps, self.a, self.m)
        values = self.grid.values(chosen, self.how)
        if self.integer_output:
            return np.rint(values).astype(np.int64)
        return values

    def accuracy(self, beta: float) -> float:
        """Rank error t: with probability >= 1 - beta the released cell's score is within t
        rows of the best cell's (union bound: each cell t worse flips heads w.p. exp(-t/scale))."""
        return self.scale * math.log(self.grid.cells / beta)

    def accuracy_text(self, beta: float = 0.05) -> str:
        t = self.accuracy(beta)
        within = ("" if self.grid.kind == "integer" else
                  f", plus the cell width {self.grid.width:.6g} in value"
                  if self.grid.kind == "linear" else ", plus the width of the log cell")
        return (f"{1 - beta:.0%}: rank within {t:.4g} rows of the best cell's "
                f"(|(1-p)#below - p#above| <= best + {t:.4g}){within}")

    @property
    def name(self) -> str:
        return "permute_and_flip"

    def value_bounds(self) -> tuple:
        """Permute-and-flip bounds the released rank, not the value: the grid's range."""
        return (float(self.grid.lower), float(self.grid.upper))

    def explain(self, stat, query_epsilon: float) -> str:
        return (f"quantile, {self.describe()} ({self.epsilon / query_epsilon:.0%} of the query); "
                f"released value: {_RELEASED_VALUE[self.how]}; accuracy {self.accuracy_text(0.05)}")

    def report(self, stat) -> dict:
        within = ("" if self.grid.kind == "integer" else
                  f", give or take one grid cell ({self.grid.width:.6g}) in value"
                  if self.grid.kind == "linear" else ", give or take one log-spaced grid cell")
        return {"mechanism": self.name, "grid": self.grid.describe(), "scale": float(self.scale),
                "rank_error95": float(self.accuracy(0.05)),
                "accuracy95": rank_error_text(self.accuracy(0.05), "95%") + within}

    def describe(self) -> str:
        return (f"permute-and-flip over {self.grid.describe()}, p={self.p}, score sensitivity "
                f"{self.sensitivity:.6g} rows, temperature {self.scale:.6g} rows, "
                f"epsilon={self.epsilon:.6g}, delta=0")


def rank_error_text(t: float, level: str) -> str:
    """A quantile's rank error ``t`` (rows) at ``level`` (e.g. "95%"), in words."""
    rows = f"{t:.0f}" if t >= 10 else f"{t:.2g}"
    return (f"the released value's rank is within about {rows} rows of the true "
            f"quantile's rank ({level})")
