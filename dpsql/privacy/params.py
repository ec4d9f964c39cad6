"""What an analyst asks for: per-query privacy, session budget, mechanism choice.

Owns: the user-facing privacy parameters (SmartNoise-compatible names). No
arithmetic on privacy lives here; the mechanisms and the accountant do that.
"""
from __future__ import annotations

import enum
import math
from dataclasses import MISSING, dataclass, field, fields

from . import zcdp
from .composition import ACCOUNTANTS, COMPOSED
from .pools import pool_of
from .spend import MIN_QUERY_EPSILON
from ..errors import ProgrammingError

DEFAULT_DELTA = 1e-10
"""Default per-query delta: below 1/(world population), so that an event of
probability delta is not expected to hit anyone. Spent only by statistics
that need it (thresholds for unknown keys, Gaussian noise)."""


class Stat(enum.Enum):
    """Kinds of noisy statistic; keys of ``Privacy.mechanisms.map``."""

    count = "count"
    sum_int = "sum_int"
    sum_large_int = "sum_large_int"
    sum_float = "sum_float"
    threshold = "threshold"
    quantile = "quantile"     # permute-and-flip (dpsql.mechanisms.quantile), not in the map


class Mechanism(enum.Enum):
    """Noise mechanisms. All are realised by exact integer samplers."""

    laplace = "laplace"
    geometric = "geometric"
    discrete_laplace = "discrete_laplace"
    gaussian = "gaussian"
    discrete_gaussian = "discrete_gaussian"

    @property
    def is_gaussian(self) -> bool:
        return self in (Mechanism.gaussian, Mechanism.discrete_gaussian)


class _MechanismMap(dict):
    """``map[Stat.count] = Mechanism.gaussian``; names work too (``map["count"] = "gaussian"``)."""

    def __init__(self, items=()):
        super().__init__()
        for key, value in dict(items).items():
            self[key] = value

    def __setitem__(self, key, value) -> None:
        super().__setitem__(_enum(Stat, key, "a statistic"), _enum(Mechanism, value, "a mechanism"))

    def __getitem__(self, key):
        return super().__getitem__(_enum(Stat, key, "a statistic"))

    def get(self, key, default=None):
        return super().get(_enum(Stat, key, "a statistic"), default)


def _enum(kind, value, what: str):
    if isinstance(value, kind):
        return value
    try:
        return kind(str(value).split(".")[-1].lower())
    except ValueError:
        raise ProgrammingError(f"{value!r} is not {what}; use one of "
                               f"{', '.join(m.value for m in kind)} (dpsql.{kind.__name__})") from None


def _default_map() -> dict:
    # The book's Table 2-1 (SmartNoise defaults), with exact samplers.
    return _MechanismMap({
        Stat.count: Mechanism.discrete_laplace,
        Stat.sum_int: Mechanism.discrete_laplace,
        Stat.sum_large_int: Mechanism.laplace,
        Stat.sum_float: Mechanism.laplace,
        Stat.threshold: Mechanism.laplace,
    })


@dataclass(repr=False)
class Mechanisms:
    """SmartNoise-style ``privacy.mechanisms.map[Stat.count] = Mechanism.gaussian``."""

    map: dict = field(default_factory=_default_map)
    large: int = 1000
    """An integer SUM whose bound exceeds this is a ``sum_large_int``."""
    quantile_cells: int = 2 ** 16
    """Cells of the candidate grid of quantiles, MEDIAN, MIN and MAX (public, part of the
    plan); integer columns with at most this many values use the integers themselves."""

    def __post_init__(self) -> None:
        if isinstance(self.large, bool) or not isinstance(self.large, int) or self.large < 1:
            raise ProgrammingError(f"Mechanisms: large must be a whole number >= 1, got {self.large!r}")
        cells = self.quantile_cells
        if isinstance(cells, bool) or not isinstance(cells, int) or not 16 <= cells <= 2 ** 20:
            raise ProgrammingError("Mechanisms: quantile_cells must be a whole number from 16 "
                                   f"to 2**20 (1,048,576), got {cells!r}")
        if not isinstance(self.map, _MechanismMap):
            self.map = _MechanismMap({**_default_map(), **_MechanismMap(self.map)})

    def for_stat(self, stat: Stat) -> Mechanism:
        return self.map.get(stat) or _default_map()[stat]

    def __repr__(self) -> str:
        """Only what differs from the defaults, by name: ``Mechanisms(map={'count':
        'gaussian'})``, ``Mechanisms()``; it evaluates back to an equal object."""
        defaults = _default_map()
        changed = {s.value: m.value for s, m in self.map.items() if defaults.get(s) is not m}
        shown = ([f"map={changed!r}"] if changed else []) + [
            f"{name}={value!r}" for name, value in _changed(self) if name != "map"]
        return f"Mechanisms({', '.join(shown)})"

    def key(self) -> tuple:
        """A hashable summary, for caching plans."""
        return tuple((s.value, self.for_stat(s).value) for s in Stat if s is not Stat.quantile) + (
            self.large, self.quantile_cells)


def _changed(params) -> list:
    """[(field, value)] of a dataclass's fields whose value is not their default."""
    out = []
    for each in fields(params):
        default = each.default_factory() if each.default is MISSING else each.default
        value = getattr(params, each.name)
        if value != default:
            out.append((each.name, value))
    return out


def _number(value) -> float | None:
    """``value`` as a finite float, or None (bools, strings, huge ints are not numbers here)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        value = float(value)
    except OverflowError:
        return None
    return value if math.isfinite(value) else None


def _check_eps_delta(epsilon: float, delta: float, what: str) -> None:
    eps, dlt = _number(epsilon), _number(delta)
    if eps is None or eps <= 0:
        raise ProgrammingError(f"{what}: epsilon must be a finite number > 0, got {epsilon!r}")
    if dlt is None or not 0 <= dlt < 1:
        raise ProgrammingError(f"{what}: delta must be in [0, 1), got {delta!r}")


SPLITS = ("error", "equal")
MAX_QUERY_EPSILON = 1e6
"""Largest epsilon of one query (rho: its square over 2)."""


LARGE_QUERY_EPSILON, LARGE_QUERY_RHO = 10.0, 50.0
"""Above these, a query's privacy is accepted (up to MAX_QUERY_EPSILON) with a warning."""


def large_privacy_warning(privacy) -> str | None:
    """The warning for a query's privacy so large that it protects almost no one, or None."""
    if privacy.rho is not None and privacy.rho > LARGE_QUERY_RHO:
        value, over, usual = (f"rho={privacy.rho:g}", f"rho above {LARGE_QUERY_RHO:g}",
                              "rho is usually below 0.5")
    elif privacy.epsilon is not None and privacy.epsilon > LARGE_QUERY_EPSILON:
        value, over, usual = (f"epsilon={privacy.epsilon:g}",
                              f"epsilon above {LARGE_QUERY_EPSILON:g}",
                              "epsilon is usually between 0.1 and 1")
    else:
        return None
    return (f"dpsql: {value} per query gives almost no privacy: with {over} the noise "
            f"hardly hides any one person, and an answer can reveal their data (a query's "
            f"{usual}). It is answered; lower it unless that is intended")


@dataclass(repr=False)
class Privacy:
    """The most one query may cost, all its noisy statistics together.

    ``epsilon`` (default 1.0) or ``rho`` (zCDP), not both. ``split``: how the
    query's privacy is shared by its statistics: ``"error"`` (default) minimises
    the error of what the query releases, ``"equal"`` gives equal shares
    (docs/privacy.md)."""

    epsilon: float | None = None
    delta: float = DEFAULT_DELTA
    mechanisms: Mechanisms = field(default_factory=Mechanisms)
    rho: float | None = None
    split: str = "error"
    alphas: tuple = ()
    """SmartNoise's: the levels (1 - alpha) of ``reader.execute_with_accuracy``'s
    accuracies, e.g. ``[0.05, 0.01]``; they change nothing else."""
    neighboring: str = "addremove"
    """SmartNoise's: "addremove" (a person added or removed) is what dpsql protects."""

    def __post_init__(self) -> None:
        if self.epsilon is None and self.rho is None:
            self.epsilon = 1.0
        self.check()

    def __repr__(self) -> str:
        """``Privacy(epsilon=1, delta=1e-10)``: the size, delta, and the mechanisms and split
        only where they differ from the defaults."""
        size = f"rho={self.rho!r}" if self.rho is not None else f"epsilon={self.epsilon!r}"
        rest = [f"{name}={value!r}" for name, value in _changed(self)
                if name not in ("epsilon", "rho", "delta")]
        return f"Privacy({', '.join([size, f'delta={self.delta!r}'] + rest)})"

    def check(self) -> None:
        """Validate (again: the fields can be changed after construction)."""
        if self.rho is not None:
            if self.epsilon is not None:
                raise ProgrammingError("Privacy: give epsilon or rho (zCDP), not both")
            _check_rho(self.rho, "Privacy")
            _check_eps_delta(1.0, self.delta, "Privacy")
            if _number(self.rho) < MIN_QUERY_EPSILON ** 2 / 2:
                raise ProgrammingError(f"Privacy: rho={self.rho!r} is below dpsql's smallest "
                                       f"per-query rho, {MIN_QUERY_EPSILON ** 2 / 2:g}: its "
                                       "noise would dwarf any answer")
            if _number(self.rho) > MAX_QUERY_EPSILON ** 2 / 2:
                raise ProgrammingError(f"Privacy: rho={self.rho!r} is beyond dpsql's largest "
                                       f"per-query rho, {MAX_QUERY_EPSILON ** 2 / 2:g}")
            _check_rho_delta(_number(self.rho), _number(self.delta))
        else:
            _check_eps_delta(self.epsilon, self.delta, "Privacy")
            if _number(self.epsilon) < MIN_QUERY_EPSILON:
                raise ProgrammingError(
                    f"Privacy: epsilon={self.epsilon!r} is below dpsql's smallest per-query "
                    f"epsilon, {MIN_QUERY_EPSILON:g}: a count's noise would be about "
                    f"±{3 / _number(self.epsilon):.0e}, which answers nothing")
            if _number(self.epsilon) > MAX_QUERY_EPSILON:
                raise ProgrammingError(
                    f"Privacy: epsilon={self.epsilon!r} is beyond dpsql's largest per-query "
                    f"epsilon, {MAX_QUERY_EPSILON:g}: past it the exact samplers' range no longer "
                    "holds the exact answers of sums (which would be clamped), and such a "
                    "release protects no one")
        if not isinstance(self.mechanisms, Mechanisms):
            raise ProgrammingError("Privacy: mechanisms must be a dpsql.Mechanisms, got "
                                   f"{type(self.mechanisms).__name__}")
        if self.split not in SPLITS:
            raise ProgrammingError(f"Privacy: split must be one of {', '.join(SPLITS)}, "
                                   f"got {self.split!r}")
        _check_smartnoise(self.alphas, self.neighboring)
        self.mechanisms.__post_init__()


def _check_smartnoise(alphas, neighboring) -> None:
    """SmartNoise's ``alphas`` and ``neighboring``, as dpsql can honour them."""
    from ..errors import NotSupportedError
    if isinstance(alphas, (str, bytes)) or not hasattr(alphas, "__iter__") or not all(
            isinstance(a, (int, float)) and not isinstance(a, bool) and 0 < a < 1
            for a in alphas):
        raise ProgrammingError(f"Privacy: alphas must be a list of numbers in (0, 1), e.g. "
                               f"[0.05, 0.01] for 95% and 99% accuracies, got {alphas!r}")
    if neighboring == "substitute":
        raise NotSupportedError(
            "Privacy: neighboring='substitute' is not supported: dpsql's epsilon is for a "
            "person added or removed (neighboring='addremove'); replacing one person is at most "
            "an addition and a removal, so ask with half the epsilon for the same guarantee")
    if neighboring != "addremove":
        raise ProgrammingError(f"Privacy: neighboring must be 'addremove', got {neighboring!r}")


def _check_rho_delta(rho: float, delta: float) -> None:
    """A query's rho is converted to an (epsilon, delta) guarantee at its delta; a delta
    so large that the conversion needs no epsilon at all (rho=0.2 at delta=0.5) would
    give a query of epsilon 0, whose share of each statistic cannot be computed."""
    epsilon = zcdp.epsilon_for(rho, delta) if delta > 0 else None
    if epsilon is not None and epsilon < MIN_QUERY_EPSILON:
        raise ProgrammingError(
            f"Privacy: rho={rho:g} with delta={delta:g} converts to epsilon {epsilon:.3g}, "
            f"below the smallest per-query epsilon ({MIN_QUERY_EPSILON:g}): that delta "
            "is too large to mean anything for this rho; give a delta below 1e-3 "
            "(usually 1e-6 or less)")


def _check_rho(rho, what: str) -> None:
    value = _number(rho)
    if value is None or value <= 0:
        raise ProgrammingError(f"{what}: rho must be a finite number > 0, got {rho!r}")


@dataclass(repr=False)
class Budget:
    """One pool of privacy: every reader and DB-API connection given this object spends
    from it (safely under threads); queries beyond it are refused before running. A ledger
    file is the way to share a budget across processes.

    ``Budget(epsilon=3.0)`` accounts in (epsilon, delta) by basic composition;
    ``Budget(rho=0.5, delta=1e-6)`` accounts in zCDP: queries add up in rho (a pure
    epsilon statistic costs epsilon^2 / 2), and the session's (epsilon, delta) is
    reported through the tight conversion at ``delta`` (less what thresholds spent).
    ``Budget(epsilon=1.0, delta=1e-6, accountant="pld")`` (or ``"rdp"``) composes the
    releases' noise distributions with Google's dp-accounting (dpsql.privacy.composition):
    the session's epsilon at ``delta`` (less what thresholds spent) stays within epsilon."""

    epsilon: float | None = None
    delta: float = 1e-6
    """Default: room for 10,000 queries at the default per-query delta."""
    rho: float | None = None
    accountant: str | None = None
    """"basic" (the default of an epsilon budget), "zcdp" (a rho budget's), "pld", "rdp"."""

    def __post_init__(self) -> None:
        if (self.epsilon is None) == (self.rho is None):
            raise ProgrammingError("Budget: give epsilon (basic composition) or rho (zCDP), "
                                   "exactly one of them")
        self.accountant = _accountant(self.accountant, self.rho is not None)
        if self.accountant in COMPOSED and not _number(self.delta):
            raise ProgrammingError(f"Budget: accountant={self.accountant!r} needs delta > 0 "
                                   "(the session's epsilon is read at that delta)")
        if self.rho is not None:
            _check_rho(self.rho, "Budget")
            _check_eps_delta(1.0, self.delta, "Budget")
            if self.delta <= 0:
                raise ProgrammingError("Budget: a rho budget needs delta > 0 (its (epsilon, "
                                       "delta) is reported at that delta)")
        else:
            _check_eps_delta(self.epsilon, self.delta, "Budget")

    def __repr__(self) -> str:
        size = f"rho={self.rho!r}" if self.rho is not None else f"epsilon={self.epsilon!r}"
        kind = f", accountant={self.accountant!r}" if self.accountant in COMPOSED else ""
        return f"Budget({size}, delta={self.delta!r}{kind})"

    @property
    def zcdp(self) -> bool:
        return self.rho is not None

    @property
    def spent(self) -> tuple:
        """(epsilon, delta) spent from this pool by every session that shares it."""
        pool = pool_of(self)
        return zcdp.reported(pool.spent, self, pool.tally)


def _accountant(name, rho_budget: bool) -> str:
    """The accountant's name, checked: the default is the budget's own kind."""
    if name is None:
        return "zcdp" if rho_budget else "basic"
    if not isinstance(name, str) or name.lower() not in ACCOUNTANTS:
        raise ProgrammingError(f"Budget: accountant must be one of {', '.join(ACCOUNTANTS)}, "
                               f"got {name!r}")
    name = name.lower()
    if rho_budget != (name == "zcdp"):
        raise ProgrammingError(
            "Budget: a rho budget is accounted in zCDP (accountant='zcdp'); an epsilon budget "
            f"by 'basic', 'pld' or 'rdp', not {name!r}: give Budget(epsilon=..., delta=..., "
            "accountant='pld') or Budget(rho=..., delta=...)")
    return name
