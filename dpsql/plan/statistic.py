"""One noisy statistic of a plan: an exact aggregate and its stability map.

Owns: the ``Statistic`` record shared by the planner of additive statistics
(``dpsql.plan.statistics``) and of quantiles (``dpsql.plan.quantiles``), so that
neither imports the other's module for it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from sqlglot import exp

from ..mechanisms.base import NoiseMechanism
from ..privacy.params import Stat


@dataclass
class Statistic:
    """One noisy number per group: an exact aggregate plus its stability map."""

    name: str                 # column name in the exact result, "_s0", ...
    label: str                # what it is, for explain
    aggregate: exp.Expression
    stat: Stat
    l1: float
    l2: float
    integer: bool
    step: float = 1.0         # fixed-point step: exact value = engine value * step
    mechanism: NoiseMechanism | None = None    # calibrated by dpsql.plan.split
    centre: tuple | None = None  # (offset, count statistic): released is sum - offset * count
    persons: bool = False        # counts distinct persons (a threshold needs no shift)
    calibrator: Callable | None = None   # epsilon -> its own mechanism (not an additive one)
    cell: exp.Expression | None = None   # a quantile's grid cell of each row
    histogram: str | None = None         # the engine column of that cell's histogram
