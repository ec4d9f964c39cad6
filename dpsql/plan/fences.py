"""Fences that keep an engine's planner from inlining a guard into a guard, level by level.

Owns: ``fence_inlining``, the last step of the PostgreSQL and Spark compilations. Their
planners put a plain subquery's column expressions in place of every reference to them
(PostgreSQL pulls the subquery up; Spark pushes a filter down through it and collapses
projections). A guard reads its operand several times (a CASE that tests a value, then
computes with it: ``a + a`` reads ``a`` eight times on PostgreSQL), so guards in nested
subqueries grew by that factor at each level once inlined: five levels of ``SELECT a + a
AS a FROM (...)`` (288 bytes) took PostgreSQL's planner 1.1 GB, seven took 19 GB and ran
49 s past the statement's timeout (issue 33's thirty-third review); on Spark five levels
planned for 15-178 s and ran the driver out of heap (thirty-fourth review). Neither planner
stops to look for a cancel. DuckDB does not grow so.

The pass measures, bottom-up over the plan's scopes (sqlglot's), what each SELECT would
grow by if the subqueries it reads were inlined: the nodes each column reference would
bring in. A SELECT that would grow by more than ``MAX_GROWTH`` nodes gets its inlinable
sources fenced by the engine's ``fence`` (PostgreSQL: ``OFFSET 0``; Spark: each column
behind a condition that is always true but not deterministic), which the engine then
computes once per row, as written. So what a planner holds is at most the plan's own size
plus ``MAX_GROWTH`` per SELECT. Ordinary plans grow by far less and are left as they are
(a fence also stops filters from being pushed down).
"""
from __future__ import annotations

from typing import Callable

from sqlglot import exp
from sqlglot.optimizer.scope import Scope, traverse_scope

MAX_GROWTH = 2_000
"""Most nodes a SELECT may gain by inlining the subqueries it reads before they are fenced
(the plans of the fixture files gain at most a few hundred)."""


def fence_inlining(tree: exp.Expression, fence: Callable) -> exp.Expression:
    """``tree`` with ``fence(select)`` applied to each inlinable subquery whose inlining
    would grow its reader by more than MAX_GROWTH nodes (in place; returned). ``fence``
    returns whether the engine will still inline the columns the SELECT passes through
    with ``*`` (then its own inlinable sources are fenced too)."""
    sizes: dict = {}          # id(SELECT) -> {output name: nodes of it once inlined}
    sources: dict = {}        # id(SELECT) -> its inlinable sources, as _inlinable_sources
    for scope in traverse_scope(tree):          # the innermost scopes first
        select = scope.expression
        if not isinstance(select, exp.Select):
            continue
        inlined = _inlinable_sources(scope, sizes)
        if _growth(scope, inlined) > MAX_GROWTH:
            for child in {id(s): s for s, _ in inlined.values()}.values():
                _fence(child, fence, sizes, sources)
            inlined = {}
        sizes[id(select)] = _output_sizes(select, scope, inlined)
        sources[id(select)] = inlined
    return tree


def _fence(select: exp.Select, fence: Callable, sizes: dict, sources: dict) -> None:
    """Fence ``select`` (and, where its ``*`` still passes columns through, what it reads)."""
    if id(select) not in sizes:
        return                                   # fenced already
    sizes.pop(id(select))
    if fence(select):
        for child, _ in sources.get(id(select), {}).values():
            _fence(child, fence, sizes, sources)


def _inlinable_sources(scope: Scope, sizes: dict) -> dict:
    """alias -> (SELECT, its output sizes) of the sources PostgreSQL may pull up into
    ``scope``: plain SELECTs, without aggregation, DISTINCT, windows, LIMIT or OFFSET."""
    found = {}
    for alias, source in scope.selected_sources.items():
        node = source[1] if isinstance(source, tuple) else source
        if isinstance(node, Scope) and id(node.expression) in sizes \
                and _inlinable(node.expression):
            found[alias] = (node.expression, sizes[id(node.expression)])
    return found


def _inlinable(select: exp.Select) -> bool:
    if any(select.args.get(k) for k in ("group", "having", "distinct", "limit", "offset",
                                        "qualify")):
        return False
    return not any(isinstance(e, (exp.AggFunc, exp.Window)) for p in select.expressions
                   for e in p.walk(prune=lambda n: isinstance(n, exp.Subquery)))


def _column_size(column: exp.Column, inlined: dict) -> int:
    """Nodes the reference stands for once its source is inlined (1 if it is not)."""
    if column.table:
        source = inlined.get(column.table)
    else:
        source = next(iter(inlined.values())) if len(inlined) == 1 else None
    if source is None:
        return 1
    return source[1].get(column.name.lower(), 1)


def _growth(scope: Scope, inlined: dict) -> int:
    if not inlined:
        return 0
    return sum(_column_size(c, inlined) - 1 for c in scope.columns)


def _output_sizes(select: exp.Select, scope: Scope, inlined: dict) -> dict:
    """Output name -> nodes of its expression once the sources are inlined."""
    out: dict = {}
    for projection in select.expressions:
        if isinstance(projection, exp.Star) or (isinstance(projection, exp.Column)
                                                and isinstance(projection.this, exp.Star)):
            for _, names in inlined.values():    # passed through as they are
                for name, size in names.items():
                    out.setdefault(name, size)
            continue
        size = 0
        for node in projection.walk(prune=lambda n: isinstance(n, exp.Subquery)):
            size += _column_size(node, inlined) if isinstance(node, exp.Column) else 1
        out[projection.alias_or_name.lower()] = size
    return out
