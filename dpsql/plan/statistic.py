"""One noisy statistic of a plan: an exact aggregate and its stability map.

Owns: the ``Statistic`` record shared by the planner of additive statistics
(``dpsql.plan.statistics``) and of quantiles (``dpsql.plan.quantiles``), so that
neither imports the other's module for it.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from sqlglot import exp

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
    unit: float = 1.0         # exact value = engine value * unit
    mechanism: object = None  # dpsql.mechanisms.additive.Calibrated, set by the planner
    meta: dict = field(default_factory=dict)
