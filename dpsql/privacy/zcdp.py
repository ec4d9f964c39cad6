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
(docs/performance.md), cached per argument. The scan's upper end grows with the
optimum: for small epsilon (or rho) the best order is a* ~ 2 log(1/delta) /
epsilon ~ sqrt(log(1/delta) / rho), so the scan reaches log(4 (log(1/delta) + 1)
/ epsilon) + 2 and beyond; a positive rho always exists (c(a) -> 0 as a grows)
and is found unless it underflows a float.
"""
from __future__ import annotations

import functools
import math
import sys

from .composition import COMPOSED, events_of, tally_of

_GOLDEN = (math.sqrt(5) - 1) / 2
_SCAN_LOW, _SCAN_HIGH, _SCAN_STEP = -14.0, 23.0, 0.25   # log(a - 1): 8e-7 .. 1e10 at least
_SCAN_CAP = 700.0                                       # exp() overflows beyond ~709


def _c(alpha: float, log_inv_delta: float) -> float:
    return (log_inv_delta + (alpha - 1) * math.log1p(-1 / alpha) - math.log(alpha)) / (alpha - 1)


def _scan(top: float) -> list[float]:
    """log(a - 1) grid from _SCAN_LOW up to at least max(_SCAN_HIGH, top)."""
    high = min(max(_SCAN_HIGH, top), _SCAN_CAP)
    return [_SCAN_LOW + _SCAN_STEP * i for i in range(int((high - _SCAN_LOW) / _SCAN_STEP) + 2)]


def _log_upper(x: float) -> float:
    """A scan end beyond log(x) with room for the golden-section bracket."""
    return math.log(x) + 2.0 if x > 0 and math.isfinite(x) else _SCAN_CAP


def _best(f, maximise: bool, top: float = _SCAN_HIGH) -> tuple[float, float]:
    """(value, alpha) optimising f over alpha = 1 + e^x, x scanned up to ``top``
    (at least _SCAN_HIGH), then refined by golden section."""
    sign = 1.0 if maximise else -1.0

    def g(x: float) -> float:
        try:
            return sign * f(1.0 + math.exp(x))
        except (OverflowError, ValueError, ZeroDivisionError):
            return -math.inf

    scan = _scan(top)
    values = [g(x) for x in scan]
    i = max(range(len(values)), key=values.__getitem__)
    lo, hi = scan[max(i - 1, 0)], scan[min(i + 1, len(scan) - 1)]
    best_x, best_v = scan[i], values[i]
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
    rho, alpha = _best(lambda a: (epsilon - _c(a, lid)) / a, maximise=True,
                       top=_log_upper(4 * (lid + 1) / epsilon))
    rho *= 1 - 1e-12                     # a hair below: float rounding stays on the safe side
    # rho is positive unless it underflows a float (epsilon near 1e-300); a subnormal
    # rho has lost the precision the margin above relies on, so refuse it too
    if not (rho >= sys.float_info.min and alpha * rho + _c(alpha, lid) <= epsilon):
        raise ValueError(f"no positive rho (as a float) reaches epsilon={epsilon:g}, "
                         f"delta={delta:g}")
    return rho, alpha


@functools.lru_cache(maxsize=4096)
def epsilon_for(rho: float, delta: float) -> float:
    """The smallest epsilon found with rho-zCDP => (epsilon, delta)-DP."""
    if not (rho > 0 and 0 < delta < 1):
        raise ValueError("epsilon_for needs rho > 0 and 0 < delta < 1")
    lid = math.log(1 / delta)
    eps, _ = _best(lambda a: a * rho + _c(a, lid), maximise=False,
                   top=0.5 * _log_upper((lid + 1) / rho) + 1.0)
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

    value, _ = _best(log_delta, maximise=False, top=_log_upper((epsilon + 1) / rho))
    return min(math.exp(value), 1.0)


def reported(spent: tuple, budget, tally=None) -> tuple:
    """(epsilon, delta) of a spend (epsilon, delta, rho, delta outside zCDP): its sums, or
    for a zCDP budget the tight conversion of its rho at the budget's delta, less what
    thresholds spent outside zCDP; for a PLD or RDP budget the composition of ``tally``'s
    events at that delta. Here, not in the accountant, so that ``Budget`` can report its
    own spend without importing the accountant."""
    epsilon, delta, rho, rho_delta = spent
    if budget is not None and budget.accountant in COMPOSED:
        if tally is None:
            tally = tally_of(events_of(spent))
        if not tally.events:
            return (0.0, rho_delta)
        return (tally.epsilon(budget.accountant, budget.delta - rho_delta), budget.delta)
    if budget is None or not budget.zcdp:
        return (epsilon, delta)
    if rho <= 0:
        return (0.0, rho_delta)
    return (epsilon_for(rho, budget.delta - rho_delta), budget.delta)
