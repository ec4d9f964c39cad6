"""zCDP <-> (epsilon, delta): the tight conversion of Canonne, Kamath & Steinke (2020).

Owns: the privacy map of the Gaussian mechanisms. A mechanism that is
rho-zCDP is (epsilon, delta)-DP with (CKS 2020, Section 2.3)

    delta = inf_{a > 1}  exp((a - 1)(a rho - epsilon)) / (a - 1) * (1 - 1/a)^a,

equivalently epsilon = inf_a  a rho + c(a) with

    c(a) = (log(1/delta) + (a - 1) log(1 - 1/a) - log a) / (a - 1).

Every order ``a`` gives a *valid* bound, so a numerical search that misses the
optimum by a little only costs a little utility, never privacy. Calibration
inverts the map in one step: epsilon(rho) <= epsilon iff some a has
a rho + c(a) <= epsilon, so the largest rho is sup_a (epsilon - c(a)) / a.
Both searches are a log-spaced scan of ``a`` refined by golden section
(about 0.2 ms), cached per argument.
"""
from __future__ import annotations

import functools
import math

_GOLDEN = (math.sqrt(5) - 1) / 2
_SCAN = [-14 + 0.25 * i for i in range(149)]   # log(a - 1) from about 8e-7 to 1.3e7


def _c(alpha: float, log_inv_delta: float) -> float:
    return (log_inv_delta + (alpha - 1) * math.log1p(-1 / alpha) - math.log(alpha)) / (alpha - 1)


def _best(f, maximise: bool) -> tuple[float, float]:
    """(value, alpha) optimising f over alpha = 1 + e^x: scan, then golden section."""
    sign = 1.0 if maximise else -1.0

    def g(x: float) -> float:
        try:
            return sign * f(1.0 + math.exp(x))
        except (OverflowError, ValueError, ZeroDivisionError):
            return -math.inf

    values = [g(x) for x in _SCAN]
    i = max(range(len(values)), key=values.__getitem__)
    lo, hi = _SCAN[max(i - 1, 0)], _SCAN[min(i + 1, len(_SCAN) - 1)]
    best_x, best_v = _SCAN[i], values[i]
    a, b = hi - _GOLDEN * (hi - lo), lo + _GOLDEN * (hi - lo)
    ga, gb = g(a), g(b)
    for _ in range(60):
        if ga >= gb:
            hi, b, gb = b, a, ga
            a = hi - _GOLDEN * (hi - lo)
            ga = g(a)
        else:
            lo, a, ga = a, b, gb
            b = lo + _GOLDEN * (hi - lo)
            gb = g(b)
    for x, v in ((a, ga), (b, gb)):
        if v > best_v:
            best_x, best_v = x, v
    return sign * best_v, 1.0 + math.exp(best_x)


@functools.lru_cache(maxsize=1024)
def rho_for(epsilon: float, delta: float) -> tuple[float, float]:
    """(rho, alpha): the largest rho found with rho-zCDP => (epsilon, delta)-DP,
    and the order alpha that proves it (alpha rho + c(alpha) <= epsilon)."""
    if not (epsilon > 0 and 0 < delta < 1):
        raise ValueError("rho_for needs epsilon > 0 and 0 < delta < 1")
    lid = math.log(1 / delta)
    rho, alpha = _best(lambda a: (epsilon - _c(a, lid)) / a, maximise=True)
    if not rho > 0:
        raise ValueError("no positive rho reaches this (epsilon, delta)")
    return rho * (1 - 1e-12), alpha      # a hair below: float rounding stays on the safe side


@functools.lru_cache(maxsize=4096)
def epsilon_for(rho: float, delta: float) -> float:
    """The smallest epsilon found with rho-zCDP => (epsilon, delta)-DP."""
    if not (rho > 0 and 0 < delta < 1):
        raise ValueError("epsilon_for needs rho > 0 and 0 < delta < 1")
    lid = math.log(1 / delta)
    eps, _ = _best(lambda a: a * rho + _c(a, lid), maximise=False)
    return max(eps, 0.0) * (1 + 1e-12)


def epsilon_at(rho: float, delta: float, alpha: float) -> float:
    """The epsilon that order ``alpha`` alone proves (a valid upper bound)."""
    return (alpha * rho + _c(alpha, math.log(1 / delta))) * (1 + 1e-12)


def delta_for(rho: float, epsilon: float) -> float:
    """The smallest delta found with rho-zCDP => (epsilon, delta)-DP."""
    if rho <= 0:
        return 0.0

    def log_delta(a: float) -> float:
        return (a - 1) * (a * rho - epsilon) + a * math.log1p(-1 / a) - math.log(a - 1)

    value, _ = _best(log_delta, maximise=False)
    return min(math.exp(value), 1.0)
