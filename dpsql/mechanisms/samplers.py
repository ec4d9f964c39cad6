"""Exact, secure, vectorised noise samplers: discrete Laplace and discrete Gaussian.

Owns: turning operating-system randomness into integer noise. Every number
dpsql releases gets its noise from here, so nothing in this module uses
floating point to shape a distribution: floating-point noise (``scale *
log(u)``, numpy's laplace/normal) leaks the true value through the low bits of
its output (Mironov 2012). The samplers follow Canonne, Kamath & Steinke
(2020, "The Discrete Gaussian for Differential Privacy", Algorithms 1-3):

* Bernoulli(exp(-gamma)) for rational gamma, built from Bernoulli(rational)
  draws, each an exact uniform integer compared with a numerator;
* discrete Laplace as a geometric split into a remainder ``U`` (rejection
  with Bernoulli(exp(-U/T))) and a quotient ``V`` (count of Bernoulli(exp(-1))
  successes), so the cost does not grow with the scale;
* discrete Gaussian by rejection from a discrete Laplace, centred at the
  integer (0, floor(sigma) or floor(sigma) + 1) that accepts most often.

Randomness comes only from ``os.urandom`` in bulk; uniform integers in a range
are made by rejection (never modulo bias). Work is vectorised with numpy over
the rounds of each rejection loop: Python loops run per *round*, never per draw.

Scales are used as exact rationals. A scale is used exactly when it has at
most 24 significant bits (every integer below 2**24, halves, quarters, ...);
any other scale is rounded *up* (more noise) by less than 2**-23 relative.
``laplace_params``/``gaussian_params`` return the exact rational in use so the
mechanisms can charge exactly what they add.
"""
from __future__ import annotations

import functools
import math
import os
from fractions import Fraction

import numpy as np

from ..errors import InternalError

MIN_LAPLACE_SCALE, MAX_LAPLACE_SCALE = 2.0 ** -20, 2.0 ** 50
MIN_GAUSSIAN_SIGMA, MAX_GAUSSIAN_SIGMA = 2.0 ** -10, 2.0 ** 30
_SIG_BITS = 24          # significant bits kept from a scale (rounded up)
_CHUNK = 1 << 18        # draws per vectorised batch: bounds memory, stays in cache
_INT63 = 2 ** 63

# ----------------------------------------------------------------------------
# Uniform integers and Bernoulli trials from os.urandom


_WIDTHS = ((8, np.uint8), (16, np.uint16), (32, np.uint32), (64, np.uint64))


def _words(n: int, dtype) -> np.ndarray:
    return np.frombuffer(os.urandom(n * np.dtype(dtype).itemsize), dtype=dtype)


def random_bits(n: int) -> np.ndarray:
    """n fair coin flips (bool), 8 per byte of OS randomness."""
    return np.unpackbits(_words((n + 7) // 8, np.uint8))[:n].astype(bool)


def uniform_below(m: int, n: int) -> np.ndarray:
    """n independent uniform integers in [0, m), exactly.

    Powers of two are masked bits; other ranges reject words at or above the
    largest multiple of m that fits, so every residue is equally likely. The
    word width is the narrowest whose rejection rate (2^w mod m) / 2^w is <= 1/64.
    """
    m = int(m)
    if not 1 <= m <= _INT63:
        raise InternalError(f"noise.uniform_below: range {m} outside [1, 2**63]")
    if m == 1 or n == 0:
        return np.zeros(n, np.uint8)
    w, dt, limit = _word_plan(m)
    if limit == 0:                                  # a power of two: masked bits
        u = _words(n, dt)
        u = u & dt(m - 1) if m < 2 ** w else u
        return u.view(np.int64) if w == 64 else u      # < 2**63: int64 compares exactly
    out = np.empty(n, dt)
    filled = 0
    while filled < n:
        k = n - filled
        u = _words(k + (k * (2 ** w - limit)) // limit + 8, dt)
        u = u[u < dt(limit)]
        take = min(u.size, k)
        out[filled:filled + take] = u[:take]
        filled += take
    out %= dt(m)
    return out.view(np.int64) if w == 64 else out


@functools.lru_cache(maxsize=4096)
def _word_plan(m: int) -> tuple:
    """(w, dtype, limit) of ``uniform_below(m, ...)`` for m >= 2: the word width; ``limit``
    the largest multiple of m that fits (words at or above it are rejected), 0 for a power
    of two (masked bits). Computed once per range: with the big-integer arithmetic and the
    search on every call, a discrete Laplace call of 6-40 draws took 10-25% longer (6 draws
    at scale 8,071.65: 246 against 205 us, old and new taking turns; 2026-11-30)."""
    bits = (m - 1).bit_length()
    if m & (m - 1) == 0:
        w, dt = next((w, dt) for w, dt in _WIDTHS if w >= bits)
        return w, dt, 0
    w, dt = next(((w, dt) for w, dt in _WIDTHS if w >= bits and (2 ** w % m) * 64 <= 2 ** w),
                 _WIDTHS[-1])
    return w, dt, (2 ** w // m) * m


def _bernoulli_ratio(a: np.ndarray, m: int) -> np.ndarray:
    """Bernoulli(a/m) for an integer array a in [0, m]."""
    if m < _INT63:
        return uniform_below(m, a.size) < a
    raise InternalError("noise: Bernoulli denominator beyond 2**63")


def _exp_minus_one_table() -> np.ndarray:
    """For u uniform in [0, 7!): the outcome of CKS Algorithm 1 with gamma=1.

    Writing u in mixed radix (digits d_j uniform in [0, j), j = 2..7), the
    trial "Bernoulli(1/j) succeeds" is "d_j == 0", i.e. "u % j! == 0" for all
    digits up to j. K is the first j whose trial fails; the result is K odd.
    u == 0 (all six trials succeeded) is undecided and continues at K = 8.
    """
    table = np.zeros(5040, bool)
    for u in range(1, 5040):
        k = next(j for j in range(2, 8) if u % math.factorial(j) != 0)
        table[u] = k % 2 == 1
    return table


_EXP_MINUS_ONE = _exp_minus_one_table()


def _reciprocal_chain(n: int, k0: int) -> np.ndarray:
    """CKS Algorithm 1 with gamma=1 from trial K = k0 on: Bernoulli(1/K)
    trials until one fails; True if the failing K is odd."""
    out = np.empty(n, bool)
    idx = np.arange(n)
    k = k0
    while idx.size:
        ok = uniform_below(k, idx.size) == 0
        out[idx[~ok]] = k % 2 == 1
        idx = idx[ok]
        k += 1
    return out


def bernoulli_exp_minus_one(n: int) -> np.ndarray:
    """n draws of Bernoulli(exp(-1)); one 16-bit word decides almost all."""
    u = uniform_below(5040, n)
    out = _EXP_MINUS_ONE[u]
    undecided = np.flatnonzero(u == 0)
    if undecided.size:
        out[undecided] = _reciprocal_chain(undecided.size, 8)
    return out


def bernoulli_exp_fraction(a: np.ndarray, m: int) -> np.ndarray:
    """Bernoulli(exp(-a/m)) for integers 0 <= a <= m (CKS Algorithm 1).

    K counts successive successes of Bernoulli(a/(m*K)); the result is K odd.
    Vectorised over rounds: round K handles the draws still running.
    """
    n = a.size
    out = np.empty(n, bool)
    idx = np.arange(n)
    live = a
    k = 1
    while idx.size:
        if m * k < _INT63:
            ok = uniform_below(m * k, idx.size) < live
        else:  # a/(m k) = (a/m) * (1/k): two independent trials
            ok = _bernoulli_ratio(live, m) & (uniform_below(k, idx.size) == 0)
        out[idx[~ok]] = k % 2 == 1
        idx, live = idx[ok], live[ok]
        k += 1
    return out


def bernoulli_exp(whole: np.ndarray, part: np.ndarray, m: int) -> np.ndarray:
    """Bernoulli(exp(-(whole + part/m))): the fractional trial and ``whole``
    Bernoulli(exp(-1)) trials must all succeed (CKS Algorithm 1, gamma > 1)."""
    out = bernoulli_exp_fraction(part, m)
    idx = np.flatnonzero(out & (whole > 0))
    left = whole[idx]
    while idx.size:
        ok = bernoulli_exp_minus_one(idx.size)
        out[idx[~ok]] = False
        left = left[ok] - 1
        idx = idx[ok]
        more = left > 0
        idx, left = idx[more], left[more]
    return out


# ----------------------------------------------------------------------------
# Exact rational scales


def _round_up_significant(x: Fraction) -> tuple[int, int]:
    """(num, den) with num/den >= x, den a power of two, num < 2**_SIG_BITS
    unless x is that large (then den = 1, num = ceil(x)); equal when possible."""
    if x >= 2 ** _SIG_BITS:
        return math.ceil(x), 1
    k = 0
    while x * 2 ** (k + 1) < 2 ** _SIG_BITS:
        k += 1
    num = math.ceil(x * 2 ** k)
    den = 2 ** k
    while num % 2 == 0 and den > 1:
        num, den = num // 2, den // 2
    return num, den


def _bounded_fraction(x, what: str, low: float, high: float) -> Fraction:
    try:
        f = Fraction(x)
    except (TypeError, ValueError, OverflowError):
        raise InternalError(f"noise: {what} must be a finite number, got {x!r}") from None
    if not low <= f <= high:
        raise InternalError(f"noise: {what} must be in [{low:g}, {high:g}], got {float(f):g}")
    return f


@functools.lru_cache(maxsize=4096)
def laplace_params(scale) -> tuple[int, int]:
    """(T, S): the discrete Laplace scale used for ``scale`` is exactly T/S >= scale."""
    return _round_up_significant(_bounded_fraction(scale, "discrete Laplace scale",
                                                   MIN_LAPLACE_SCALE, MAX_LAPLACE_SCALE))


@functools.lru_cache(maxsize=4096)
def gaussian_variance_params(variance) -> tuple[int, int]:
    """(P, Q): the discrete Gaussian variance used is exactly P/Q >= variance."""
    v = _bounded_fraction(variance, "discrete Gaussian variance", MIN_GAUSSIAN_SIGMA ** 2,
                          MAX_GAUSSIAN_SIGMA ** 2)
    return _round_up_significant(v)


def gaussian_params(sigma) -> tuple[int, int]:
    """(P, Q): the discrete Gaussian variance used for ``sigma`` is exactly
    P/Q >= sigma**2 (kept as a rational, never a float)."""
    s = _bounded_fraction(sigma, "discrete Gaussian sigma", MIN_GAUSSIAN_SIGMA,
                          MAX_GAUSSIAN_SIGMA)
    return gaussian_variance_params(s * s)


# ----------------------------------------------------------------------------
# Discrete Laplace


def _truncated_geometric(t: int, n: int) -> np.ndarray:
    """n draws of U on [0, t) with P(U=u) proportional to exp(-u/t)."""
    if t == 1:
        return np.zeros(n, np.int64)
    parts, have = [], 0
    while have < n:
        k = n - have
        u = uniform_below(t, int(k * 1.6) + 16).astype(np.int64)
        u = u[bernoulli_exp_fraction(u, t)]
        parts.append(u[:k])
        have += min(u.size, k)
    return np.concatenate(parts) if len(parts) > 1 else parts[0]


def geometric_exp_minus_one(n: int) -> np.ndarray:
    """n draws of V with P(V=v) = (1 - 1/e) e^-v: successes before a failure."""
    v = np.zeros(n, np.int64)
    idx = np.arange(n)
    while idx.size:
        idx = idx[bernoulli_exp_minus_one(idx.size)]
        v[idx] += 1
    return v


def _combine(u: np.ndarray, v: np.ndarray, t: int, s: int) -> np.ndarray:
    """floor((u + t v) / s) without int64 overflow (object ints for the
    astronomically rare v that would overflow)."""
    vmax = (_INT63 - 1 - t) // t
    big = v > vmax
    if big.any():  # probability < exp(-2**12) per draw at the largest scale
        y = np.empty(v.size, np.int64)
        ok = ~big
        y[ok] = (u[ok] + t * v[ok]) // s
        y[big] = np.array([(int(a) + t * int(b)) // s for a, b in zip(u[big], v[big])],
                          dtype=np.int64)
        return y
    x = u + t * v
    if s & (s - 1) == 0:
        return x >> (s.bit_length() - 1)
    return x // s


DECOYS = 128
"""Candidates each discrete Laplace batch draws beyond those it needs. The batch's rejection
loops run until the slowest candidate is done (the largest quotient V, the longest chain of
trials), so its time follows the largest of many draws, almost all discarded, and hardly the
released ones: with 16 extra candidates the number of rounds of a one-draw call correlated
0.14-0.15 with the |z| it released (20,000 calls at scales 3.7 and 1,000), with 128 0.02-0.04,
for about 35% more rounds (2026-11-30; a faster path that drew a few draws one by one was
withdrawn for a correlation of 0.57: docs/performance.md, eighth round). The discrete
Gaussian's proposals keep 16: at least 17 proposals, most rejected, already hide its draws
(0.01-0.03 with 16; 128 made a one-draw call 189 -> 236 us)."""


def _discrete_laplace_ts(t: int, s: int, n: int, decoys: int = DECOYS) -> np.ndarray:
    """n draws of Z with P(Z=z) proportional to exp(-|z| s/t) (CKS Algorithm 2), in
    batches of ``decoys`` candidates more than needed."""
    p_zero = 1.0 - math.exp(-s / t)            # P(Y = 0): only sizes the batches
    rate = max(1.0 - p_zero / 2, 0.5)
    parts, have = [], 0
    while have < n:
        k = n - have
        m = int(k / rate * 1.02) + decoys
        y = _combine(_truncated_geometric(t, m), geometric_exp_minus_one(m), t, s)
        neg = random_bits(m)
        keep = ~(neg & (y == 0))                # -0 is rejected: 0 counted once
        z = np.where(neg, -y, y)[keep]
        parts.append(z[:k])
        have += min(z.size, k)
    return np.concatenate(parts) if len(parts) > 1 else parts[0]


def _chunked(sample, n: int) -> np.ndarray:
    n = int(n)
    if n < 0:
        raise InternalError(f"noise: size must be >= 0, got {n}")
    if n <= _CHUNK:
        return sample(n) if n else np.zeros(0, np.int64)
    return np.concatenate([sample(min(_CHUNK, n - i)) for i in range(0, n, _CHUNK)])


def discrete_laplace(scale: float, size: int) -> np.ndarray:
    """``size`` int64 draws with P(x) proportional to exp(-|x| / scale).

    The scale used is ``T/S`` from ``laplace_params(scale)`` (>= scale)."""
    return discrete_laplace_rational(*laplace_params(scale), size)


def discrete_laplace_rational(t: int, s: int, size: int) -> np.ndarray:
    """``size`` int64 draws with P(x) proportional to exp(-|x| s / t) (integers t, s >= 1;
    anything else raises: s = 0 drew no noise at all)."""
    t, s = int(t), int(s)
    if t < 1 or s < 1:
        raise InternalError(f"noise: discrete Laplace parameters must be integers >= 1, "
                            f"got t={t}, s={s}")
    return _chunked(lambda n: _discrete_laplace_ts(t, s, n), size)


# ----------------------------------------------------------------------------
# Discrete Gaussian


def _gaussian_plan_centred(p: int, q: int, c: int) -> tuple:
    """Proposal and acceptance of the rejection step for variance v = p/q, with
    centre c (every integer c >= 0 gives the exact distribution, for any v):

    c >= 1 (CKS Algorithm 3 with an integer centre): proposal discrete Laplace of
    scale v/c, acceptance exp(-(|y| - c)^2 / 2v); the product is
    exp(-(y^2 + c^2) / 2v), proportional to exp(-y^2 / 2v).
    c == 0: proposal discrete Laplace of scale 2v, acceptance
    exp(-|y| (|y| - 1) / 2v), since y^2 = |y| + |y| (|y| - 1); it accepts every
    |y| <= 1.
    Returns (c, t, s, mult, den): y ~ DLap(t/s); gamma = a * b * mult / den with
    (a, b) = (|y| - c, |y| - c), or (|y|, |y| - 1) when c == 0.
    """
    t, s = (p, q * c) if c else (2 * p, q)
    g = math.gcd(t, s)
    g2 = math.gcd(q, 2 * p)
    return c, t // g, s // g, q // g2, 2 * p // g2


def _acceptance_weight(v: float, c: int) -> float:
    """The acceptance rate of centre c up to a factor common to all centres:
    sum_y exp(-(y^2 + c^2)/2v) / sum_y exp(-|y| c/v) = e^(-c^2/2v) tanh(c/2v) * N
    (c = 0: tanh(1/4v) * N). Only chooses among exact samplers; a float is fine."""
    return math.tanh(1 / (4 * v)) if c == 0 else math.exp(-c * c / (2 * v)) * math.tanh(c / (2 * v))


@functools.lru_cache(maxsize=4096)
def _gaussian_plan(p: int, q: int) -> tuple:
    """The plan of the centre that accepts most often among 0, floor(sigma) and
    floor(sigma) + 1: c = 0 below sigma ~ 0.9, c = 1 just above sigma = 1 (where
    floor(sigma) + 1 = 2 accepted only ~1/4 of proposals), c ~ sigma beyond."""
    v = p / q
    low = math.isqrt(p // q)                       # floor(sigma), exactly
    best = max({0, max(low, 1), low + 1}, key=lambda c: _acceptance_weight(v, c))
    return _gaussian_plan_centred(p, q, best)


def _gamma_parts(a: np.ndarray, b: np.ndarray, mult: int, den: int) -> tuple:
    """(whole, part) with a * b * mult / den = whole + part / den, exactly
    (a, b >= 0; Python integers for the rare entries that would overflow int64)."""
    small = math.isqrt(_INT63 - 1)
    safe = (a <= small) & (b <= small)
    prod = np.where(safe, a, 0) * np.where(safe, b, 0)
    safe &= prod <= (_INT63 - 1) // mult
    if safe.all():
        return np.divmod(prod * mult, den)
    whole = np.empty(a.size, np.int64)
    part = np.empty(a.size, np.int64)
    whole[safe], part[safe] = np.divmod(prod[safe] * mult, den)
    for i in np.flatnonzero(~safe):
        w, r = divmod(int(a[i]) * int(b[i]) * mult, den)
        # capping w at 2**62 changes an acceptance probability below exp(-2**62)
        whole[i], part[i] = min(w, 2 ** 62), r
    return whole, part


def _discrete_gaussian_pq(p: int, q: int, n: int, plan: tuple | None = None) -> np.ndarray:
    c, t, s, mult, den = plan or _gaussian_plan(p, q)
    parts, have = [], 0
    while have < n:
        k = n - have
        m = int(k * 1.6) + 16
        y = _discrete_laplace_ts(t, s, m, decoys=16)     # the proposals hide the draws
        a = np.abs(y)
        if c:
            a = np.abs(a - c)
            whole, part = _gamma_parts(a, a, mult, den)
        else:
            whole, part = _gamma_parts(a, np.maximum(a - 1, 0), mult, den)
        y = y[bernoulli_exp(whole, part, den)]
        parts.append(y[:k])
        have += min(y.size, k)
    return np.concatenate(parts) if len(parts) > 1 else parts[0]


def discrete_gaussian(sigma: float, size: int) -> np.ndarray:
    """``size`` int64 draws with P(x) proportional to exp(-x^2 / (2 sigma^2)).

    The variance used is ``P/Q`` from ``gaussian_params(sigma)`` (>= sigma^2)."""
    return discrete_gaussian_rational(*gaussian_params(sigma), size)


def discrete_gaussian_rational(p: int, q: int, size: int) -> np.ndarray:
    """``size`` int64 draws with P(x) proportional to exp(-x^2 q / (2 p)) (variance
    parameter p/q, integers >= 1; anything else raises InternalError, not Python's errors)."""
    p, q = int(p), int(q)
    if p < 1 or q < 1:
        raise InternalError(f"noise: discrete Gaussian parameters must be integers >= 1, "
                            f"got p={p}, q={q}")
    return _chunked(lambda n: _discrete_gaussian_pq(p, q, n), size)
