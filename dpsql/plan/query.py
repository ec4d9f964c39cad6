"""The validated query: what the planner needs from step 2, nothing evaluated yet.

Owns: the ``Query`` record that ``dpsql.plan.validate`` builds and ``dpsql.plan``
reads; its own module so that neither imports the other for it.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from sqlglot import exp

from ..metadata.model import Table
from .relations import Relation


@dataclass
class Cut:
    """The ORDER BY and LIMIT/OFFSET of an aggregation that an outer query reads, and
    that outer query's WHERE (``dpsql.plan.outer``): the groups are ordered and cut
    first (after HAVING), then ``where`` filters the groups kept, and the query's own
    ``order``, ``limit`` and ``offset`` (the outer ones) apply to what remains."""

    order: list                                       # exp.Ordered over keys and aggregates
    limit: int | None
    offset: int | None
    where: exp.Expression | None = None


@dataclass
class Query:
    """A validated query: what the planner needs, nothing evaluated yet."""

    tree: exp.Select
    table: Table                                      # the relation, as a table
    relation: Relation                                # its columns' bounds, unit and k
    where: exp.Expression | None
    keys: list = field(default_factory=list)          # GROUP BY expressions (row-level)
    aggregates: list = field(default_factory=list)    # distinct aggregate nodes
    outputs: list = field(default_factory=list)       # (name, expression) per SELECT item
    having: exp.Expression | None = None
    order: list = field(default_factory=list)         # exp.Ordered nodes
    limit: int | None = None
    offset: int | None = None
    distinct: bool = False
    cut: Cut | None = None                            # an inner ORDER BY ... LIMIT first
    notes: list = field(default_factory=list)         # for explain (dpsql.plan.contributions)
    work: int = 0             # the statement's work per private row (binding.MAX_ROW_WORK)
