"""The protocol every noise mechanism implements.

Owns: what the rest of dpsql may ask of a calibrated mechanism, so that the release,
the intervals, ``explain`` and the report never test which mechanism they hold. A
mechanism is calibrated by the planner (``dpsql.plan.split``) from a statistic's
stability map and a privacy share; after that it is immutable and carries its cost.

To add a mechanism: one module in ``dpsql/mechanisms/`` with a subclass of
``NoiseMechanism`` and a calibrate function, and one registration where the planner
chooses it (``dpsql.plan.aggregates`` for a new aggregate, ``dpsql.plan.split`` for a
new choice of ``Privacy.mechanisms``); docs/architecture.md has the list.
"""
from __future__ import annotations

import abc

from ..errors import InternalError
from ..privacy.composition import dp_event


class NoiseMechanism(abc.ABC):
    """A calibrated mechanism for one statistic (one value per released group)."""

    epsilon: float
    delta: float
    rho: float | None

    reads_histograms: bool = False
    """False: ``release`` takes one exact value per group (all groups, before the
    threshold). True: one histogram per group, of the groups the threshold kept."""

    @property
    @abc.abstractmethod
    def name(self) -> str:
        """The mechanism's name in reports (``laplace``, ``permute_and_flip``, ...)."""

    integer_output: bool
    """Whether released values are whole numbers (int64): a field or a property."""

    @abc.abstractmethod
    def release(self, values):
        """Noisy values, one independent draw per group."""

    @abc.abstractmethod
    def accuracy(self, beta: float) -> float:
        """alpha with P(error <= alpha) >= 1 - beta, in the mechanism's own units."""

    @abc.abstractmethod
    def accuracy_text(self, beta: float = 0.05) -> str:
        """The accuracy statement at level 1 - beta, for people."""

    @abc.abstractmethod
    def value_bounds(self) -> tuple | None:
        """(lower, upper) that always hold the released value, when the accuracy is not
        in the value's units (an interval is then these bounds); None otherwise."""

    @abc.abstractmethod
    def describe(self) -> str:
        """One line: the mechanism, its scale and its cost."""

    @abc.abstractmethod
    def explain(self, stat, query_epsilon: float) -> str:
        """``explain``'s line for ``stat`` (after ``name = label:``)."""

    @abc.abstractmethod
    def report(self, stat) -> dict:
        """The release table's fields for ``stat`` (JSON-safe)."""

    def events(self) -> tuple:
        """Its privacy events for a PLD or RDP budget (dpsql.privacy.composition): by
        default a pure epsilon-DP event. A Gaussian mechanism's cost is the query's
        (``dpsql.plan.split.query_events``)."""
        return (dp_event(self.epsilon),)

    def threshold(self, max_groups: int, delta: float) -> float:
        """The smallest noisy count that releases a key held by one person with
        probability at most ``delta`` (mechanisms that can count)."""
        raise InternalError(f"{self.name} cannot serve as a threshold")
