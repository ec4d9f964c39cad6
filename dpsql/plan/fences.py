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

from ..errors import QueryError

MAX_GROWTH = 2_000
"""Most nodes a SELECT may gain by inlining the subqueries it reads before they are fenced
(the plans of the fixture files gain at most a few hundred)."""


def fence_inlining(tree: exp.Expression, fence: Callable,
                   limit: int = MAX_GROWTH) -> exp.Expression:
    """``tree`` with ``fence(select)`` applied to each inlinable subquery whose inlining
    would grow its reader by more than ``limit`` nodes (in place; returned). ``fence``
    returns whether the engine will still inline the columns the SELECT passes through
    with ``*`` (then its own inlinable sources are fenced too)."""
    sizes: dict = {}          # id(SELECT) -> {output name: nodes of it once inlined}
    sources: dict = {}        # id(SELECT) -> its inlinable sources, as _inlinable_sources
    for scope in traverse_scope(tree):          # the innermost scopes first
        select = scope.expression
        if not isinstance(select, exp.Select):
            continue
        inlined = _inlinable_sources(scope, sizes)
        if _growth(scope, inlined) > limit:
            for child in {id(s): s for s, _ in inlined.values()}.values():
                _fence(child, fence, sizes, sources)
            inlined = {}
        sizes[id(select)] = _output_sizes(select, scope, inlined)
        sources[id(select)] = inlined
    return tree


def fence_columns(select: exp.Select, always: Callable[[], exp.Expression]) -> bool:
    """A fence of engines whose planner substitutes a projection's expressions into its
    readers unless they are volatile: each column of ``select`` behind ``CASE WHEN always()
    THEN column END``, ``always()`` a condition that is always true but not deterministic.
    Returns whether a ``*`` still passes columns through."""
    passes = False
    for projection in list(select.expressions):
        if projection.is_star:
            passes = True
            continue
        value = projection.this if isinstance(projection, exp.Alias) else projection
        fenced = exp.Case(ifs=[exp.If(this=always(), true=value.copy())])
        projection.replace(exp.alias_(fenced, projection.alias_or_name, quoted=True))
    return passes


def _fence(select: exp.Select, fence: Callable, sizes: dict, sources: dict) -> None:
    """Fence ``select`` (and, where its ``*`` still passes columns through, what it reads)."""
    if id(select) not in sizes:
        return                                   # fenced already
    sizes.pop(id(select))
    if fence(select):
        for child, _ in sources.get(id(select), {}).values():
            _fence(child, fence, sizes, sources)


def _inlinable_sources(scope: Scope, sizes: dict) -> dict:
    """alias -> (SELECT, its output sizes) of the sources a planner may inline into
    ``scope`` (``_inlinable``)."""
    found = {}
    for alias, source in scope.selected_sources.items():
        node = source[1] if isinstance(source, tuple) else source
        if isinstance(node, Scope) and id(node.expression) in sizes \
                and _inlinable(node.expression):
            found[alias] = (node.expression, sizes[id(node.expression)])
    return found


def _inlinable(select: exp.Select) -> bool:
    """Whether a planner may put the SELECT's expressions in its reader: pull it up, or
    push the reader's conditions down into it (PostgreSQL and Spark push them through a
    DISTINCT too: six levels of SELECT DISTINCT took PostgreSQL 6.2 GB, thirty-fifth review)."""
    if any(select.args.get(k) for k in ("group", "having", "limit", "offset", "qualify")):
        return False
    return not any(isinstance(e, (exp.AggFunc, exp.Window)) for p in select.expressions
                   for e in p.walk(prune=lambda n: isinstance(n, exp.Subquery)))


def _column_size(column: exp.Column, inlined: dict) -> int:
    """Nodes the reference stands for once its source is inlined (1 if it is not)."""
    name = column.name.lower()
    if column.table:
        source = inlined.get(column.table)
        return source[1].get(name, 1) if source is not None else 1
    # unqualified: whichever source has the name (the largest, so as never to undercount)
    return max((names.get(name, 1) for _, names in inlined.values()), default=1)


def _growth(scope: Scope, inlined: dict) -> int:
    if not inlined:
        return 0
    return sum(_column_size(c, inlined) - 1 for c in scope.columns)


def _output_sizes(select: exp.Select, scope: Scope, inlined: dict) -> dict:
    """Output name -> nodes of its expression once the sources are inlined."""
    out: dict = {}
    for projection in select.expressions:
        if projection.is_star:
            for _, names in inlined.values():    # passed through as they are
                for name, size in names.items():
                    out.setdefault(name, size)
            continue
        size = 0
        for node in projection.walk(prune=lambda n: isinstance(n, exp.Subquery)):
            size += _column_size(node, inlined) if isinstance(node, exp.Column) else 1
        out[projection.alias_or_name.lower()] = size
    return out


MAX_EXPANDED = 5_000_000
"""Most nodes any SELECT of a compiled plan may stand for once every subquery and CTE it
reads is expanded into it (``check_expansion``): four levels of nested guarded ``a + a``
under a filter stand for 520,000, five joined to five for 2.1 million (1.3 s to plan on
Spark), six joined to six for 25 million (Spark: 16.5 s at seven, 300 million). Each
more level multiplies it by 8-12."""


def check_expansion(tree: exp.Expression, limit: int = MAX_EXPANDED) -> None:
    """Refuse ``tree`` (for free, before anything runs) if a SELECT of it stands for more
    than ``limit`` nodes once the subqueries and CTEs it reads are expanded into it, whatever
    their kind (DISTINCT, grouped, joined, set operations). A planner that substitutes a
    column's expression for its references (pulling a subquery up, pushing a filter or a
    join's conditions down, inferring constraints) works on that many nodes at worst; with
    guards that read their operand several times it grows several-fold per level, past what
    fences can stop (issue 33's thirty-fifth review: a join on two nested guarded columns
    planned for 16-60 s on Spark; six levels of SELECT DISTINCT took PostgreSQL 6.2 GB)."""
    if largest_expansion(tree, limit) > limit:
        raise QueryError("the query's expressions are too large once every operation "
                         "in them is guarded and its subqueries are expanded "
                         f"(over {limit:,} nodes in one SELECT); nest fewer levels of "
                         "computed columns")


def largest_expansion(tree: exp.Expression, stop: float = float("inf")) -> int:
    """The most nodes a SELECT of ``tree`` stands for with what it reads expanded (the
    first past ``stop``, once one is)."""
    sizes: dict = {}
    largest = 0
    for scope in traverse_scope(tree):
        node = scope.expression
        if isinstance(node, exp.SetOperation):
            sizes[id(node)] = _set_sizes(node, sizes)
            continue
        if not isinstance(node, exp.Select):
            continue
        sources = {alias: (s.expression, sizes[id(s.expression)])
                   for alias, s in ((a, v[1] if isinstance(v, tuple) else v)
                                    for a, v in scope.selected_sources.items())
                   if isinstance(s, Scope) and id(s.expression) in sizes}
        total = sum(1 for _ in node.walk(prune=lambda n: isinstance(n, exp.Subquery)))
        total += _growth(scope, sources)
        largest = max(largest, total)
        if largest > stop:
            return largest
        sizes[id(node)] = _output_sizes(node, scope, sources)
    return largest


def _set_sizes(node: exp.SetOperation, sizes: dict) -> dict:
    """A set operation's output sizes: the largest of its branches', by position."""
    branches = [node.left, node.right]
    named = [sizes.get(id(b)) for b in branches]
    if any(n is None for n in named):
        return {}
    names = list(named[0])
    out = {}
    for i, name in enumerate(names):
        out[name] = max(list(n.values())[i] if i < len(n) else 1 for n in named)
    return out
