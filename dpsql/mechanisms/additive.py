"""Calibrated noise mechanisms: scale, output grid, privacy map, accuracy, threshold.

Owns: turning a statistic's sensitivity and a target (epsilon, delta) into the
exact noise that is added to it, what releasing it costs, and how accurate it
is. All noise is drawn by ``dpsql.mechanisms.samplers`` in integer units of an output grid
``g`` (a power of two), so the set of possible outputs never depends on the
data. docs/mechanisms.md gives the rules and their proofs in short:

* Laplace family (laplace, geometric, discrete_laplace): discrete Laplace in
  grid units, epsilon = Delta_1 / b, delta = 0.
* Gaussian family (gaussian, discrete_gaussian): discrete Gaussian in grid
  units, rho = Delta_2^2 / (2 sigma^2) zCDP, charged as (epsilon, delta) through
  the tight conversion of ``dpsql.privacy.zcdp``.
* Grid: 1 for the discrete names on integer statistics; otherwise
  g = 2^(floor(log2(min(scale, per-group sensitivity))) - 10), never above 1 on
  integers. Rounding a real value to the grid moves each entry by at most g/2,
  so one person moves the grid-unit vector by at most Delta_1/g + groups (L1)
  or Delta_2/g + sqrt(groups) (L2): that is charged.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from . import samplers as noise
from ..privacy import zcdp
from ..privacy.composition import gaussian_event, laplace_event
from ..errors import InternalError, QueryError
from ..privacy.params import Mechanism
from .base import NoiseMechanism

_DISCRETE = (Mechanism.geometric, Mechanism.discrete_laplace, Mechanism.discrete_gaussian)
_GRID_BITS = 10              # grid = scale / 2^10 or finer: invisible next to the noise
_MAX_UNITS_LAPLACE = 2 ** 40   # largest noise scale in grid units before the grid widens
_MAX_UNITS_GAUSSIAN = 2 ** 24
_EXACT_TAIL_SIGMA = 2 ** 14  # Gaussian tails summed exactly up to this sigma (grid units)
_LIMIT = 2 ** 62             # |grid units| of a released value
_EVENT_SIGMA = 2 ** 11       # largest sigma (grid units) given to dp-accounting as itself


def _round_up(x: Fraction) -> float:
    f = float(x)
    return math.nextafter(f, math.inf) if Fraction(f) < x else f


def _sqrt_up(k: int) -> Fraction:
    """A rational >= sqrt(k), within 2^-30."""
    r = math.isqrt(k * 4 ** 30)
    return Fraction(r if r * r == k * 4 ** 30 else r + 1, 2 ** 30)


# ----------------------------------------------------------------------------
# Tails of the noise in grid units


def _laplace_q(t: int, s: int) -> float:
    return math.exp(-s / t)


def _laplace_two_sided(t: int, s: int, beta: float) -> int:
    """Smallest a >= 0 with P(|Z| > a) = 2 q^(a+1) / (1+q) <= beta."""
    q = _laplace_q(t, s)

    def tail(a: int) -> float:
        return 2 * math.exp((a + 1) * (-s / t)) / (1 + q)

    a = max(0, math.ceil(math.log(beta * (1 + q) / 2) * -t / s) - 1)
    while tail(a) > beta:
        a += 1
    while a > 0 and tail(a - 1) <= beta:
        a -= 1
    return a


def _laplace_upper(t: int, s: int, bound: float) -> int:
    """Smallest m >= 1 with P(Z >= m) = q^m / (1+q) <= bound."""
    q = _laplace_q(t, s)

    def tail(m: int) -> float:
        return math.exp(m * (-s / t)) / (1 + q)

    m = max(1, math.ceil(math.log(bound * (1 + q)) * -t / s))
    while tail(m) > bound:
        m += 1
    while m > 1 and tail(m - 1) <= bound:
        m -= 1
    return m


def _gaussian_upper_tails(p: int, q: int) -> tuple[np.ndarray, float]:
    """(T, N): T[m] = sum_{z >= m} exp(-z^2 / (2 sigma^2)) for m = 0..L, and the
    normaliser N = sum over all integers (terms beyond L underflow to 0)."""
    var = p / q
    top = math.ceil(39 * math.sqrt(var)) + 2
    z = np.arange(top + 1, dtype=np.float64)
    f = np.exp(-z * z / (2 * var))
    tails = np.cumsum(f[::-1])[::-1]
    return tails, 2 * tails[0] - f[0]


def _erfc_inverse_ceiling(sigma: float, bound: float) -> int:
    """Smallest integer x >= 0 with erfc(x / (sigma sqrt 2)) / 2 <= bound."""
    lo, hi = 0, 1
    while math.erfc(hi / (sigma * math.sqrt(2))) / 2 > bound:
        hi *= 2
    while lo < hi:
        mid = (lo + hi) // 2
        if math.erfc(mid / (sigma * math.sqrt(2))) / 2 <= bound:
            hi = mid
        else:
            lo = mid + 1
    return lo


@functools.lru_cache(maxsize=1024)
def _gaussian_two_sided(p: int, q: int, beta: float) -> int:
    """Smallest a >= 0 with P(|Z| > a) <= beta, exact up to sigma = 2^14 grid units;
    beyond, P(|Z| > a) <= erfc(a / (sigma sqrt 2)) (sum <= integral, N >= sigma
    sqrt(2 pi)), at most one unit above the exact answer."""
    sigma = math.sqrt(p / q)
    if sigma <= _EXACT_TAIL_SIGMA:
        tails, norm = _gaussian_upper_tails(p, q)
        ok = 2 * tails[1:] / norm <= beta             # ok[a]: P(|Z| > a) <= beta
        if ok.any():
            return int(np.argmax(ok))
    return _erfc_inverse_ceiling(sigma, beta / 2)


@functools.lru_cache(maxsize=1024)
def _gaussian_upper(p: int, q: int, bound: float) -> int:
    """Smallest m >= 1 with P(Z >= m) <= bound (exact, or the integral bound
    P(Z >= m) <= erfc((m - 1) / (sigma sqrt 2)) / 2 for large sigma)."""
    sigma = math.sqrt(p / q)
    if sigma <= _EXACT_TAIL_SIGMA:
        tails, norm = _gaussian_upper_tails(p, q)
        ok = tails / norm <= bound                    # ok[m]: P(Z >= m) <= bound
        if ok.any():
            return max(1, int(np.argmax(ok)))
    return 1 + _erfc_inverse_ceiling(sigma, bound)


# ----------------------------------------------------------------------------
# The calibrated mechanism


@dataclass(frozen=True)
class Calibrated(NoiseMechanism):
    """One statistic's additive noise: release(values) adds it; epsilon/delta are its cost."""

    mechanism: Mechanism
    l1: float
    l2: float
    integer: bool
    groups: int | None
    grid: float              # output granularity g (a power of two)
    rounding: bool           # exact values are rounded to the grid (charged)
    sensitivity: float       # the charged sensitivity (L1 or L2, rounding included)
    scale: float             # b (Laplace) or sigma (Gaussian), statistic units
    epsilon: float
    delta: float
    rho: float | None        # zCDP cost (Gaussian family), None for Laplace
    params: tuple            # exact noise in grid units: ("laplace", T, S) scale T/S,
    #                          or ("gaussian", P, Q) variance P/Q

    @property
    def is_gaussian(self) -> bool:
        return self.mechanism.is_gaussian

    @property
    def name(self) -> str:
        return self.mechanism.value

    @property
    def integer_output(self) -> bool:
        return self.integer and self.grid >= 1

    def value_bounds(self) -> None:
        return None                      # the accuracy is in the value's units

    def accuracy_text(self, beta: float = 0.05) -> str:
        return f"+/-{self.accuracy(beta):.6g}"

    def explain(self, stat, query_epsilon: float) -> str:
        sens = f"L1={stat.l1:.6g}" + (f", L2={stat.l2:.6g}" if stat.l2 != stat.l1 else "")
        return (f"{stat.stat.value}, sensitivity {sens}, {self.name} scale={self.scale:.6g} "
                f"grid={self.grid:.6g}, 95% accuracy {self.accuracy_text(0.05)}, "
                f"epsilon={self.epsilon:.6g} ({self.epsilon / query_epsilon:.0%} of the query), "
                f"delta={self.delta:.3g}")

    def report(self, stat) -> dict:
        return {"mechanism": self.name, "scale": float(self.scale), "l1": float(stat.l1),
                "l2": float(stat.l2), "delta": float(self.delta),
                "accuracy95": self.accuracy_text(0.05)}

    def events(self) -> tuple:
        """Discrete Laplace in grid units, P(z) ~ exp(-|z| s / t), on integer vectors whose
        L1 change is at most floor(sensitivity / grid) (an integer); discrete Gaussian of
        variance P / Q when one person moves one entry, by at most that much (sigma up to
        2^11 grid units: the library's PLD of a larger one takes a large part of a second). Otherwise none here:
        the query composes its Gaussian part once (dpsql.plan.split.query_events)."""
        kind, a, b = self.params
        units = math.floor(self.sensitivity / self.grid)
        if kind == "laplace":
            return (laplace_event(a, b, units),)
        if (self.groups or 1) == 1 and a <= _EVENT_SIGMA ** 2 * b:
            return (gaussian_event(a, b, units, self.epsilon, self.delta),)
        return ()

    def _noise(self, n: int) -> np.ndarray:
        kind, a, b = self.params
        if kind == "laplace":
            return noise.discrete_laplace_rational(a, b, n)
        return noise.discrete_gaussian_rational(a, b, n)

    def _units(self, values) -> np.ndarray:
        """Exact values -> integers in grid units, rounded to the nearest grid
        point when the grid is coarser than the values (charged in calibrate)."""
        arr = np.asarray(values)
        if arr.dtype.kind not in "iubf":
            try:
                arr = arr.astype(np.float64)
            except (TypeError, ValueError):
                raise InternalError("release: exact values must be numbers") from None
        # Exact values beyond the range are clamped into it, never refused: whether a
        # release fails must not depend on the data. Clamping is 1-Lipschitz, so the
        # sensitivity still holds.
        if arr.dtype.kind == "f":
            edge = float(_LIMIT) * min(self.grid, 1.0) - 2 ** 11 * max(self.grid, 1.0)
            arr = np.clip(np.nan_to_num(arr, nan=0.0, posinf=edge, neginf=-edge), -edge, edge)
            if not self.integer:
                return np.rint(arr / self.grid).astype(np.int64)  # / 2^e is exact
            if not (arr == np.rint(arr)).all():
                raise InternalError("release: a statistic declared integer has a fractional value")
        arr = arr.astype(np.int64)
        if self.grid >= 1:
            step = int(self.grid)
            return arr if step == 1 else (arr + step // 2) // step    # round half up
        per_unit = int(1 / self.grid)
        edge = _LIMIT // per_unit - 1
        return np.clip(arr, -edge, edge) * per_unit

    def release(self, values) -> np.ndarray:
        """Noisy values, one independent draw per entry, on the grid.

        int64 for integer statistics with grid >= 1, float64 multiples of the
        grid otherwise."""
        units = self._units(values)
        shape = units.shape
        noisy = units.ravel() + self._noise(units.size)
        if self.integer and self.grid >= 1:
            return (noisy * int(self.grid)).reshape(shape)
        return (noisy.astype(np.float64) * self.grid).reshape(shape)

    def accuracy(self, beta: float = 0.05) -> float:
        """alpha with P(|released - exact| <= alpha) >= 1 - beta, in statistic units.

        Exact from the discrete CDF (Gaussian: up to sigma = 2^14 grid units);
        plus g/2 when the exact value is rounded to the grid."""
        if not 0 < beta < 1:
            raise QueryError(f"accuracy: beta must be in (0, 1), got {beta!r}")
        kind, a, b = self.params
        units = (_laplace_two_sided(a, b, beta) if kind == "laplace"
                 else _gaussian_two_sided(a, b, float(beta)))
        return units * self.grid + (self.grid / 2 if self.rounding else 0.0)

    def _unit_of_one(self) -> int:
        return int(self._units(np.array([1], np.int64 if self.integer else np.float64))[0])

    def threshold(self, max_groups: int, delta: float) -> float:
        """Smallest tau on the grid with max_groups * P(1 + noise >= tau) <= delta.

        A key held by one person (true count 1) is then released with
        probability <= delta even if that person is in max_groups keys."""
        if not (isinstance(max_groups, (int, np.integer)) and max_groups >= 1):
            raise InternalError(f"threshold: max_groups must be an integer >= 1, "
                                f"got {max_groups!r}")
        if not 0 < delta < 1:
            raise QueryError("a threshold for unknown group keys needs 0 < delta < 1; set "
                             "Privacy(delta=...) or list the keys' public values in the metadata")
        bound = delta / int(max_groups)
        kind, a, b = self.params
        m = _laplace_upper(a, b, bound) if kind == "laplace" else _gaussian_upper(a, b, bound)
        return (self._unit_of_one() + m) * self.grid

    def describe(self) -> str:
        norm = "L2" if self.is_gaussian else "L1"
        kind = "integer" if self.integer else "real"
        rounded = f" incl. grid rounding, {self.groups} group(s)" if self.rounding else ""
        cost = f"epsilon={self.epsilon:.6g}, delta={self.delta:.3g}"
        if self.rho is not None:
            cost += f" (rho={self.rho:.6g} zCDP)"
        return (f"{self.mechanism.value} on {kind} values: {norm} sensitivity "
                f"{self.sensitivity:.6g}{rounded}, {'sigma' if self.is_gaussian else 'scale'} "
                f"{self.scale:.6g}, grid {self.grid:g}, {cost}")


# ----------------------------------------------------------------------------
# Calibration


def _check(mechanism, l1, l2, epsilon, delta, groups) -> None:
    if not isinstance(mechanism, Mechanism):
        raise InternalError(f"calibrate: mechanism must be a dpsql.Mechanism, got {mechanism!r}")
    for name, v in (("l1", l1), ("l2", l2)):
        if not (isinstance(v, (int, float, np.number)) and math.isfinite(v) and v > 0):
            raise QueryError(f"the statistic's {name} sensitivity must be a finite number > 0, "
                             f"got {v!r}; check the column's lower/upper bounds in the metadata")
    if not (isinstance(epsilon, (int, float, np.number)) and math.isfinite(epsilon)
            and epsilon > 0):
        raise QueryError(f"epsilon for a statistic must be a finite number > 0, got {epsilon!r}")
    if not (isinstance(delta, (int, float, np.number)) and 0 <= delta < 1):
        raise QueryError(f"delta for a statistic must be in [0, 1), got {delta!r}")
    if mechanism.is_gaussian and delta == 0:
        raise QueryError(f"the {mechanism.value} mechanism needs delta > 0 (a Gaussian mechanism "
                         "is not pure epsilon-DP); set Privacy(delta=...) or pick a Laplace "
                         "mechanism")
    if groups is not None and not (isinstance(groups, (int, np.integer)) and groups >= 1):
        raise InternalError(f"calibrate: groups must be an integer >= 1, got {groups!r}")


def _grid_exponent(mechanism, integer, scale0, per_group, gaussian) -> int:
    """log2 of the output grid (see the module docstring and docs/mechanisms.md)."""
    top = _MAX_UNITS_GAUSSIAN if gaussian else _MAX_UNITS_LAPLACE
    floor_top = math.floor(math.log2(scale0 / top)) + 1     # keeps scale/g below `top`
    if integer and mechanism in _DISCRETE:
        return max(0, floor_top)
    e = max(math.floor(math.log2(min(scale0, per_group))) - _GRID_BITS, floor_top)
    return min(e, 0) if integer else e


def calibrate(mechanism: Mechanism, l1: float, l2: float, epsilon: float, delta: float = 0.0,
              integer: bool = True, groups: int | None = None) -> Calibrated:
    """The mechanism for one statistic: noise scale, grid and cost (epsilon, delta).

    l1 / l2: the statistic's L1 and L2 sensitivity (one person added or removed).
    integer: the exact statistic is an integer. groups: the most entries of the
    released vector one person can change; needed only when values are rounded
    to a grid (real-valued statistics), where each changed entry may move one
    grid step. Cached: a repeated call costs a dictionary lookup."""
    _check(mechanism, l1, l2, epsilon, delta, groups)
    return _calibrate(mechanism, float(l1), float(l2), float(epsilon), float(delta),
                      bool(integer), None if groups is None else int(groups))


def calibrate_rho(mechanism: Mechanism, l1: float, l2: float, rho: float, delta: float,
                  integer: bool = True, groups: int | None = None) -> Calibrated:
    """A Gaussian mechanism for a zCDP target ``rho``: the (epsilon, delta) that rho
    converts to at ``delta`` (tight CKS conversion), calibrated as usual, so the
    mechanism's own rho is at most ``rho``."""
    if not mechanism.is_gaussian:
        raise QueryError(f"a rho target needs a Gaussian mechanism, not {mechanism.value}")
    if not (rho > 0 and math.isfinite(rho)):
        raise QueryError(f"rho must be a finite number > 0, got {rho!r}")
    return calibrate(mechanism, l1, l2, epsilon=zcdp.epsilon_for(rho, delta), delta=delta,
                     integer=integer, groups=groups)


@functools.lru_cache(maxsize=4096)
def _calibrate(mechanism, l1, l2, epsilon, delta, integer, groups) -> Calibrated:
    try:
        return _calibrate_exact(mechanism, l1, l2, epsilon, delta, integer, groups)
    except (ValueError, ArithmeticError) as err:     # float under/overflow in a privacy map
        raise QueryError(
            f"the {mechanism.value} noise for this statistic cannot be calibrated for "
            f"epsilon={epsilon:g}, delta={delta:g} ({err}); give the statistic a larger "
            "epsilon (or delta), or pick a Laplace mechanism"
        ) from None


def _calibrate_exact(mechanism, l1, l2, epsilon, delta, integer, groups) -> Calibrated:
    gaussian = mechanism.is_gaussian
    k = groups or 1
    if gaussian:
        rho_target, alpha = zcdp.rho_for(epsilon, delta)
        scale0, per_group = l2 / math.sqrt(2 * rho_target), l2 / math.sqrt(k)
    else:
        scale0, per_group = l1 / epsilon, l1 / k
    e = _grid_exponent(mechanism, integer, scale0, per_group, gaussian)
    if not -1000 <= e <= 60:
        raise QueryError(f"the {mechanism.value} noise for this statistic would be out of range "
                         f"(scale {scale0:.3g}); check epsilon and the column bounds")
    grid = Fraction(2) ** e
    rounding = not (integer and e <= 0)
    if rounding and groups is None:
        raise InternalError(
            "calibrate: this statistic is rounded to a grid of width 2^%d, and rounding may move "
            "every entry one person changes by one grid step; pass groups= (the most entries one "
            "person can change: 1 ungrouped, max_ids when grouped)" % e)
    try:
        if gaussian:
            sens = Fraction(l2) / grid + (_sqrt_up(k) if rounding else 0)
            p, q = noise.gaussian_variance_params(sens * sens / (2 * Fraction(rho_target)))
            rho = _round_up(sens * sens * q / (2 * p))
            eps = min(zcdp.epsilon_for(rho, delta), zcdp.epsilon_at(rho, delta, alpha), epsilon)
            params, scale = ("gaussian", p, q), math.sqrt(p / q) * float(grid)
        else:
            sens = Fraction(l1) / grid + (k if rounding else 0)
            t, s = noise.laplace_params(sens / Fraction(epsilon))
            rho, eps = None, min(_round_up(sens * s / t), epsilon)
            params, scale, delta = ("laplace", t, s), float(Fraction(t, s) * grid), 0.0
    except InternalError as err:
        raise QueryError(f"the {mechanism.value} noise for this statistic would be out of range "
                         f"({err}) at epsilon={epsilon:g}; give the statistic a larger epsilon "
                         "if the noise is too large (a smaller one if too small), or check the "
                         "column's bounds in the metadata") from None
    return Calibrated(mechanism=mechanism, l1=l1, l2=l2, integer=integer, groups=groups,
                      grid=float(grid), rounding=rounding, sensitivity=float(sens * grid),
                      scale=scale, epsilon=eps, delta=delta, rho=rho, params=params)
