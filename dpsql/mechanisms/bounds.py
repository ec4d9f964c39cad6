"""Bounds of a numeric column: a noisy histogram over powers of two, and its extreme bins
that clear a threshold.

Owns: the bins (``OctaveBins``: zero, then one bin per power of two of |x|, on each side),
the noise, the threshold, which bins become the bounds, and what is said when none can.
``dpsql.plan.bounds_estimate`` bins the rows in the engine; ``dpsql.api.bounds`` runs it.

* Bins. Zero is a bin of its own; a positive x is in bin k when 2^k <= x < 2^(k+1), a
  negative one when 2^k <= -x < 2^(k+1), for k over the whole range of the column's type
  (int64: 0..62, the last bin reaching 2^63; doubles: -1022..1023, the first bin also
  holding the subnormal doubles, the last every larger value, infinities and NaN). The bins are public: they do not depend on the
  data.
* Sensitivity. A person has at most R rows in the histogram (R = max_ids after truncation,
  1 with row privacy), each in one bin: adding or removing the person moves the histogram
  by at most R in L1.
* Noise. Discrete Laplace of scale R / epsilon on **every** bin, empty or not (exact, from
  ``dpsql.mechanisms.samplers``): epsilon-DP, delta = 0. Everything after is
  post-processing of the noisy histogram.
* Thresholds. A window of w adjacent bins (w = 1, 2, 4, 8) is found when the sum of its
  noisy counts is at least K_w, set so that the chance that any window of empty bins is
  found is at most FAILURE = 1e-9 (a union bound over every window; exact for one bin,
  Chernoff's bound for sums; Google's ApproxBounds uses the same success probability for
  single bins). Windows let values spread over several powers of two be found together.
  A window found stands for the run of adjacent bins around its fullest bin whose noisy
  counts are at least K2 (an empty bin's noise reaches K2 with probability EXTEND = 1e-4),
  or for itself when no bin of it reaches K2 (values spread thin). An empty bin next to
  data thus makes a bound a factor of two wider than needed with probability 1e-4, never
  one with no data near it; data separated from the rest by a gap counts only when a
  window of its own clears a threshold.
* Bounds. The low edge of the lowest bin found and the high edge of the highest: every
  value in these bins is inside; values in sparser bins beyond are clamped by later
  queries. No window found: no bounds (the table is too small for this epsilon).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from . import samplers as noise
from ..errors import InternalError, QueryError
from .base import NoiseMechanism

FAILURE = 1e-9
"""The probability that some empty bin clears the threshold (a bound with no data)."""
EXTEND = 1e-4
"""The probability that an empty bin next to the bins found extends the bounds to itself
(a bound a factor of two wider than needed, never one without data nearby)."""
FOUND = 0.95
"""``needed``: the count a bin must hold to be found with this probability."""
_DOUBLE_MAX = float(np.finfo(np.float64).max)


@dataclass(frozen=True)
class OctaveBins:
    """Zero, and one bin per power of two of |x| on each side: cell ``side`` is zero, cell
    ``side + 1 + (k - emin)`` holds 2^k <= x < 2^(k+1), ``side - 1 - (k - emin)`` its
    mirror. k runs from ``emin`` to ``emax - 1``."""

    integer: bool

    @property
    def emin(self) -> int:
        return 0 if self.integer else -1022

    @property
    def emax(self) -> int:
        return 63 if self.integer else 1024

    @property
    def side(self) -> int:
        return self.emax - self.emin

    @property
    def cells(self) -> int:
        return 2 * self.side + 1

    def edges(self, cell: int) -> tuple:
        """(low, high) that hold every value of ``cell`` (ints for an int column)."""
        j = int(cell) - self.side
        if j == 0:
            return (0, 0) if self.integer else (0.0, 0.0)
        k = abs(j) - 1 + self.emin
        low, high = self._magnitude(k)
        if j > 0:
            # the top int bin ends at the largest int64, its mirror at the least (-2^63)
            return low, (2 ** 63 - 1 if high == 2 ** 63 else high)
        return -high, -low

    def _magnitude(self, k: int) -> tuple:
        """(least, largest) |x| of bin k."""
        if self.integer:
            # An int64 is binned by its double, which rounds to 2^k from just below it
            # beyond 2^53 (half an ulp, 2^(k - 54)); the top bin reaches -2^63.
            low = 2 ** k - (2 ** (k - 54) if k >= 54 else 0)
            return low, (2 ** 63 if k == self.emax - 1 else 2 ** (k + 1) - 1)
        # The lowest double bin also holds the subnormal doubles, down to 0 (excluded).
        low = 0.0 if k == self.emin else math.ldexp(1.0, k)
        return low, (_DOUBLE_MAX if k == self.emax - 1 else math.ldexp(1.0, k + 1))

    def describe(self) -> str:
        kind = "int64" if self.integer else "double"
        return (f"{self.cells:,} bins over the {kind} range: zero, and |x| in [2^k, 2^(k+1)) "
                f"for k = {self.emin}..{self.emax - 1} on each side")


@dataclass(frozen=True)
class Estimate:
    """What one estimate released: the bounds, or why there are none."""

    lower: float | int | None
    upper: float | int | None
    threshold: int                    # K: one bin is found when its noisy count is >= K
    needed: int                       # count one bin needs to be found with probability FOUND
    factor: float | None = None       # no bounds: about how many times the rows it takes
    counts: tuple = field(default=())  # noisy counts of the lowest and highest bins kept

    @property
    def ok(self) -> bool:
        return self.lower is not None


def _log_mgf(lam: np.ndarray, rate: float) -> np.ndarray:
    """ln E[exp(lam Z)], Z discrete Laplace with P(z) ~ exp(-rate |z|), 0 < lam < rate."""
    return (2 * np.log(-np.expm1(-rate)) - np.log(-np.expm1(lam - rate))
            - np.log(-np.expm1(-lam - rate)))


def threshold_for(width: int, cells: int, t: int, s: int) -> int:
    """K_w: the least integer such that a sum of ``width`` noisy empty bins reaches it with
    probability at most FAILURE * SHARE[width] / cells (a union bound over every window of
    every width). One bin: exactly, P(Z >= K) = exp(-K s/t) / (1 + exp(-s/t));
    a sum: Chernoff's bound with the noise's moment generating function."""
    rate = s / t
    log_p = math.log(FAILURE * SHARE[width]) - math.log(cells)
    if width == 1:
        return max(1, math.ceil((-log_p - math.log1p(math.exp(-rate))) / rate))
    lam = rate * np.linspace(0.001, 0.999, 4000)
    return max(1, math.ceil(float(np.min((width * _log_mgf(lam, rate) - log_p) / lam))))


def extension_for(t: int, s: int) -> int:
    """K2: the least integer with P(Z >= K2) <= EXTEND (one bin next to the bins found)."""
    rate = s / t
    return max(1, math.ceil((-math.log(EXTEND) - math.log1p(math.exp(-rate))) / rate))


def needed_for(k: int, width: int, t: int, s: int) -> int:
    """About the count a window needs to be found with probability FOUND: K_w plus the lower
    tail of its noise (exact for one bin, a normal approximation's upper side for sums)."""
    return k + math.ceil(math.log(1 / (1 - FOUND)) * math.sqrt(width) * t / s)


def _runs(kept: np.ndarray) -> list:
    """(first, last) of each maximal run of True in ``kept``."""
    edges = np.diff(np.concatenate([[0], kept.astype(np.int8), [0]]))
    return list(zip(np.flatnonzero(edges == 1).tolist(), (np.flatnonzero(edges == -1) - 1).tolist()))


WINDOWS = (1, 2, 4, 8)
"""Widths of the windows of adjacent bins tested: values spread over several powers of two
are found together where no single bin holds enough of them."""
SHARE = {1: 0.75, 2: 1 / 12, 4: 1 / 12, 8: 1 / 12}
"""Each width's share of FAILURE (single bins, the common case, get most of it)."""


@dataclass(frozen=True)
class OctaveBounds(NoiseMechanism):
    """The calibrated estimate: its bins, noise scale (t/s exactly), thresholds and cost."""

    reads_histograms = True

    bins: OctaveBins
    rows: int
    t: int
    s: int
    thresholds: tuple       # K_w for each width of WINDOWS
    extend: int             # K2: a bin next to those found joins them at this noisy count
    epsilon: float
    delta: float = 0.0
    rho: float | None = None
    integer_output = False

    @classmethod
    def calibrate(cls, integer: bool, rows: int, epsilon: float) -> "OctaveBounds":
        bins = OctaveBins(bool(integer))
        try:
            t, s = noise.laplace_params(Fraction(int(rows)) / Fraction(epsilon))
        except InternalError as err:
            raise QueryError(f"estimate_bounds: epsilon={epsilon:g} is out of range for its "
                             f"noise ({err})") from None
        cost = Fraction(int(rows) * s, t)
        charged = float(cost)
        if Fraction(charged) < cost:
            charged = math.nextafter(charged, math.inf)
        thresholds = tuple(threshold_for(w, bins.cells, t, s) for w in WINDOWS)
        return cls(bins, int(rows), t, s, thresholds, extension_for(t, s), charged)

    @property
    def name(self) -> str:
        return "octave_histogram"

    @property
    def scale(self) -> float:
        return self.t / self.s

    @property
    def min_count(self) -> int:
        """K_1: the noisy count one bin needs on its own."""
        return self.thresholds[0]

    def release(self, histograms) -> np.ndarray:
        """One ``Estimate`` per group (an object array). ``histograms``: per group an int64
        array of cell * 2^32 + count, or None for a group with no rows."""
        out = np.empty(len(histograms), dtype=object)
        for i, packed in enumerate(histograms):
            counts = np.zeros(self.bins.cells, np.int64)
            if packed is not None and packed is not np.ma.masked:
                packed = np.asarray(packed, dtype=np.int64)
                counts[np.clip(packed >> 32, 0, self.bins.cells - 1)] = packed & 0xFFFFFFFF
            noisy = counts + noise.discrete_laplace_rational(self.t, self.s, self.bins.cells)
            del counts
            out[i] = self._choose(noisy)
        return out

    def _choose(self, noisy: np.ndarray) -> Estimate:
        """Post-processing of the noisy histogram: each window that clears its threshold
        stands for the run of adjacent bins at K2 or more around its fullest bin (or for
        itself, when its values are spread too thin for any bin to reach K2); the bounds
        span all of them."""
        sums = np.concatenate([[0], np.cumsum(noisy)])
        kept = noisy >= self.extend
        run_of = np.full(noisy.size, -1)
        runs = _runs(kept)
        for i, (low, high) in enumerate(runs):
            run_of[low:high + 1] = i
        found = []
        for width, k in zip(WINDOWS, self.thresholds):
            for start in np.flatnonzero(sums[width:] - sums[:-width] >= k).tolist():
                anchor = start + int(np.argmax(noisy[start:start + width]))
                found.append(runs[run_of[anchor]] if kept[anchor] else (start, start + width - 1))
        if not found:
            return Estimate(None, None, self.min_count, needed_for(self.min_count, 1, self.t,
                                                                    self.s), self._factor(sums))
        low, high = min(f[0] for f in found), max(f[1] for f in found)
        return Estimate(self.bins.edges(low)[0], self.bins.edges(high)[1], self.min_count,
                        needed_for(self.min_count, 1, self.t, self.s), None,
                        (int(noisy[low]), int(noisy[high])))

    def _factor(self, sums: np.ndarray) -> float | None:
        """No window cleared its threshold: about how many times as many rows (with the
        same spread) the fullest window of some width needed; None if all were noise."""
        best = None
        for width, k in zip(WINDOWS, self.thresholds):
            fullest = float(np.max(sums[width:] - sums[:-width]))
            if fullest >= k / 2:
                need = needed_for(k, width, self.t, self.s) / fullest
                best = need if best is None else min(best, need)
        return best

    def accuracy(self, beta: float) -> float:
        """The count one bin needs to be found with probability 1 - beta."""
        return self.min_count + math.log(1 / beta) * self.scale

    def accuracy_text(self, beta: float = 0.05) -> str:
        return (f"a power-of-two range of values is found with probability {1 - beta:.0%} "
                f"when it holds {self.accuracy(beta):.0f} rows")

    def value_bounds(self) -> tuple:
        return (self.bins.edges(0)[0], self.bins.edges(self.bins.cells - 1)[1])

    def describe(self) -> str:
        windows = ", ".join(f"{w} bin(s) {k}" for w, k in zip(WINDOWS, self.thresholds))
        return (f"noisy histogram over {self.bins.describe()}, L1 sensitivity {self.rows} "
                f"row(s), discrete Laplace scale {self.scale:.6g}; thresholds of adjacent "
                f"bins' noisy counts: {windows} (empty bins reach one with probability "
                f"< {FAILURE:g}), {self.extend} for a bin next to those found; "
                f"epsilon={self.epsilon:.6g}, delta=0")

    def explain(self, stat, query_epsilon: float) -> str:
        return f"bounds estimate, {self.describe()}; {self.accuracy_text(0.05)}"

    def report(self, stat) -> dict:
        return {"mechanism": self.name, "grid": self.bins.describe(), "scale": float(self.scale),
                "thresholds": [int(k) for k in self.thresholds], "extend": int(self.extend),
                "accuracy95": self.accuracy_text(0.05)}
