"""Composing a session's releases with Google's dp-accounting (PLD and RDP accountants).

Owns: the privacy events a release is made of, and their composition under
``Budget(accountant="pld")`` (``dp_accounting.pld``: privacy loss distributions) or
``"rdp"`` (``dp_accounting.rdp.RdpAccountant``). An event is a JSON-safe tuple, so that
a ledger keeps it and a later dpsql composes it again:

* ``("dlap", t, s, c)``: discrete Laplace noise in grid units, P(z) ~ exp(-|z| s / t),
  on an integer vector whose L1 change by one person is at most ``c`` (what every
  Laplace-family mechanism of dpsql draws: ``dpsql.mechanisms.additive``). PLD:
  ``DiscreteLaplaceDpEvent(s / t, c)``, the library's exact distribution; RDP: the
  library has no discrete Laplace, so its pure epsilon ``c s / t`` as
  ``ZCDpEvent(epsilon^2 / 2)``.
* ``("dgauss", p, q, c, epsilon, delta)``: discrete Gaussian noise of variance p / q in
  grid units on one entry (a statistic of which one person changes one value) moved by
  at most ``c``, and the (epsilon, delta) it was charged. PLD: the library's discrete
  Gaussian (``from_discrete_gaussian_mechanism``); RDP: ``ZCDpEvent(c^2 q / (2 p))``.
* ``("dp", epsilon, delta, rho)``: a mechanism that is (epsilon, delta)-DP and rho-zCDP
  (the discrete Gaussian part of a query where one person moves several entries, whose
  distribution the library cannot express, and pure epsilon mechanisms such as
  permute-and-flip, with delta 0 and rho = epsilon^2 / 2).
  PLD: the worst case of (epsilon, delta)-DP (``from_privacy_parameters``); RDP:
  ``ZCDpEvent(rho)``.

Thresholds' delta (unknown group keys) is not an event: as in zCDP sessions it is kept
apart, may use half the budget's delta, and the composition is read at the rest.
dp_accounting is imported only when a PLD or RDP budget is used.
"""
from __future__ import annotations

import contextlib
import copy
import functools
import math
import threading

from ..errors import InternalError, ProgrammingError

ACCOUNTANTS = ("basic", "zcdp", "pld", "rdp")
COMPOSED = ("pld", "rdp")
VALUE_INTERVAL = 1e-4     # PLDAccountant's default discretisation of the privacy loss


def laplace_event(t: int, s: int, sensitivity: int) -> tuple:
    return ("dlap", int(t), int(s), max(int(sensitivity), 1))


def gaussian_event(p: int, q: int, sensitivity: int, epsilon: float, delta: float) -> tuple:
    return ("dgauss", int(p), int(q), max(int(sensitivity), 1), float(epsilon), float(delta))


def dp_event(epsilon: float, delta: float = 0.0, rho: float | None = None) -> tuple:
    return ("dp", float(epsilon), float(delta),
            float(epsilon) ** 2 / 2 if rho is None else float(rho))


def events_of(cost) -> tuple:
    """The events of a cost known only as its sums (epsilon, delta, rho, delta outside
    zCDP): a ledger record written before events, or a charge without them. One event
    with the cost's basic composition: never less than what it stands for."""
    values = tuple(float(c) for c in cost)
    if len(values) == 2:           # a pair is delta-approximately epsilon^2/2-zCDP
        values += (values[0] ** 2 / 2, values[1])
    epsilon, delta, rho, rho_delta = values
    if epsilon <= 0 and delta - rho_delta <= 0:
        return ()
    return (dp_event(epsilon, max(delta - rho_delta, 0.0), rho),)


def read_events(value) -> tuple:
    """Events from a ledger record's JSON; ValueError if malformed."""
    if not isinstance(value, list):
        raise ValueError("events is not a list")
    out = []
    for item in value:
        if not isinstance(item, list) or not item:
            raise ValueError("an event is not a list")
        if item[0] == "dlap" and len(item) == 4 and all(
                isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in item[1:]):
            out.append(laplace_event(*item[1:]))
        elif item[0] == "dp" and len(item) == 4 and _costs(item[1:]) and item[2] < 1:
            out.append(dp_event(*item[1:]))
        elif item[0] == "dgauss" and len(item) == 6 and all(
                isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in item[1:4]) \
                and _costs(item[4:]) and item[5] < 1:
            out.append(gaussian_event(*item[1:]))
        else:
            raise ValueError(f"unknown event {item[:1]!r}")
    return tuple(out)


def _costs(values) -> bool:
    return all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
               and v >= 0 for v in values)


def library():
    """dp_accounting's modules, or a dpsql error saying how to install it."""
    try:
        from dp_accounting import dp_event as events
        from dp_accounting.pld import common, privacy_loss_distribution as pld
        from dp_accounting.rdp import rdp_privacy_accountant as rdp
    except ImportError:
        raise ProgrammingError("Budget(accountant='pld' or 'rdp') needs Google's dp-accounting "
                               "library: pip install 'dp-accounting>=0.4'") from None
    return events, common, pld, rdp


@functools.lru_cache(maxsize=256)
def _pld_of(event):
    """An event's privacy loss distribution (immutable: cached, as queries repeat)."""
    events, common, pld, _ = library()
    if event[0] == "dlap":
        _, t, s, c = event
        return pld.from_discrete_laplace_mechanism(
            parameter=s / t, sensitivity=c, value_discretization_interval=VALUE_INTERVAL)
    if event[0] == "dgauss":
        _, p, q, c, _, _ = event
        return pld.from_discrete_gaussian_mechanism(
            sigma=math.sqrt(p / q), sensitivity=c, value_discretization_interval=VALUE_INTERVAL)
    _, epsilon, delta, _ = event
    return pld.from_privacy_parameters(common.DifferentialPrivacyParameters(epsilon, delta),
                                       value_discretization_interval=VALUE_INTERVAL)


def _rdp_event(event):
    events = library()[0]
    if event[0] == "dlap":
        _, t, s, c = event
        return events.ZCDpEvent(rho=(c * s / t) ** 2 / 2)
    if event[0] == "dgauss":
        _, p, q, c, _, _ = event
        return events.ZCDpEvent(rho=c * c * q / (2 * p))
    return events.ZCDpEvent(rho=event[3])


def _sums(events, times: int = 1) -> tuple:
    """(epsilon, delta) of ``events`` by basic composition, ``times`` over."""
    costs = [(e[3] * e[2] / e[1], 0.0) if e[0] == "dlap" else (e[4], e[5])
             if e[0] == "dgauss" else (e[1], e[2]) for e in events]
    return (times * math.fsum(c[0] for c in costs), times * math.fsum(c[1] for c in costs))


class Tally:
    """A pool's events in order, with their running composition per accountant (composed
    once each: a check composes only the new query's events on top). The epsilon reported
    is the smaller of the accountant's and basic composition's (both hold, so the smaller
    does): a PLD discretises the privacy loss in steps of 1e-4, which overstates events
    far smaller than that, and RDP overstates a few large ones."""

    def __init__(self) -> None:
        self.events: list = []
        self._sums = (0.0, 0.0)    # basic composition of the events
        self._state: dict = {}     # accountant -> (events composed, state)
        self._pending: dict = {}   # accountant -> (events composed, extra, state with extra)
        self._one = None           # (events, their PLD): epsilon_repeated's last query
        self._lock = threading.RLock()   # checks run outside the pool's lock

    def add(self, events) -> None:
        with self._lock:
            self.events.extend(events)
            more = _sums(events)
            self._sums = (self._sums[0] + more[0], self._sums[1] + more[1])

    def _composed(self, kind: str):
        n, state = self._state.get(kind, (0, None))
        pending = self._pending.get(kind)
        if pending is not None and pending[0] == n and tuple(self.events[n:]) == pending[1]:
            n, state = len(self.events), pending[2]     # the last check's composition
        if state is None:
            state = (library()[2].identity(value_discretization_interval=VALUE_INTERVAL)
                     if kind == "pld" else library()[3].RdpAccountant())
        for event in self.events[n:]:
            state = _compose(kind, state, event)
        self._state[kind] = (len(self.events), state)
        return state

    def _basic(self, delta: float, extra: tuple) -> float:
        """Basic composition's epsilon with ``extra`` on top, if its delta is within."""
        epsilon, used = (a + b for a, b in zip(self._sums, extra))
        return epsilon if used <= delta * (1 + 1e-12) else math.inf

    def epsilon(self, kind: str, delta: float, extra=()) -> float:
        """The composed epsilon at ``delta`` of every event, and ``extra`` on top."""
        if not self.events and not extra:
            return 0.0
        if delta <= 0:
            return math.inf
        with self._lock, _library_errors(kind):
            return min(self._epsilon(kind, delta, extra), self._basic(delta, _sums(extra)))

    def _epsilon(self, kind: str, delta: float, extra) -> float:
        state = self._composed(kind)
        if extra:
            state = copy.deepcopy(state) if kind == "rdp" else state
            for event in extra:
                state = _compose(kind, state, event)
            self._pending[kind] = (len(self.events), tuple(extra), state)
        if kind == "pld":
            return float(state.get_epsilon_for_delta(delta))
        return float(state.get_epsilon(delta))

    def epsilon_repeated(self, kind: str, delta: float, events, n: int) -> float:
        """The composed epsilon at ``delta`` with ``n`` more releases of ``events`` on top
        (PLD: their distribution self-composed, so a hair from composing them one by one)."""
        if delta <= 0:
            return math.inf
        events = tuple(events)
        with self._lock, _library_errors(kind):
            basic = self._basic(delta, _sums(events, n))
            state = self._composed(kind)
            if kind == "rdp":
                state = copy.deepcopy(state)
                for event in events:
                    state.compose(_rdp_event(event), n)
                return min(float(state.get_epsilon(delta)), basic)
            if self._one is None or self._one[0] != events:
                one = library()[2].identity(value_discretization_interval=VALUE_INTERVAL)
                for event in events:
                    one = one.compose(_pld_of(event))
                self._one = (events, one)
            pld = state.compose(self._one[1].self_compose(n))
            return min(float(pld.get_epsilon_for_delta(delta)), basic)


@contextlib.contextmanager
def _library_errors(kind: str):
    """dp-accounting's own failures (numerical) as a dpsql error: nothing is charged."""
    try:
        yield
    except (ArithmeticError, ValueError, RuntimeError, MemoryError) as err:
        raise InternalError(f"dp-accounting's {kind.upper()} accountant could not compose "
                            f"this session's releases ({type(err).__name__}: {err}); the query "
                            "was refused and nothing was charged. Report it; meanwhile a "
                            "budget without accountant= (basic composition) works") from None


def _compose(kind: str, state, event):
    if kind == "pld":
        return state.compose(_pld_of(event))
    state.compose(_rdp_event(event))
    return state


def tally_of(events) -> Tally:
    tally = Tally()
    tally.add(events)
    return tally
