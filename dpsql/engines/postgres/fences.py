"""Fences that keep PostgreSQL's planner from inlining a guard into a guard, level by level.

Owns: ``fence_inlining``, the last step of the PostgreSQL compilation. PostgreSQL pulls a
simple subquery (and a CTE it inlines) up into the query that reads it, putting each
column's expression in place of every reference to it. A guard reads its operand several
times (a CASE that tests a value, then computes with it: ``a + a`` reads ``a`` eight
times), so guards in nested subqueries grew by that factor at each level once inlined: five
levels of ``SELECT a + a AS a FROM (...)`` (288 bytes) took the planner 1.1 GB, seven took
19 GB and ran 49 s past the statement's timeout, since the planner does not stop to look
for a cancel (issue 33's thirty-third review). DuckDB and Spark do not grow so.

The pass measures, bottom-up over the plan's scopes (sqlglot's), what each SELECT would
grow by if the subqueries it reads were inlined: the nodes each column reference would
bring in. A SELECT that would grow by more than ``MAX_GROWTH`` nodes gets its inlinable
sources fenced with ``OFFSET 0`` (PostgreSQL never pulls up a subquery with an OFFSET),
which PostgreSQL then computes once per row, as written. So what the planner holds is at
most the plan's own size plus ``MAX_GROWTH`` per SELECT. Ordinary plans grow by far less
and are left as they are (a fence would also stop PostgreSQL from pushing filters down).
"""
from __future__ import annotations

from sqlglot import exp
from sqlglot.optimizer.scope import Scope, traverse_scope

MAX_GROWTH = 2_000
"""Most nodes a SELECT may gain by inlining the subqueries it reads before they are fenced
(the plans of the fixture files gain at most a few hundred)."""


def fence_inlining(tree: exp.Expression) -> exp.Expression:
    """``tree`` with ``OFFSET 0`` on each inlinable subquery whose inlining would grow its
    reader by more than MAX_GROWTH nodes (in place; returned)."""
    sizes: dict = {}          # id(SELECT) -> {output name: nodes of it once inlined}
    for scope in traverse_scope(tree):          # the innermost scopes first
        select = scope.expression
        if not isinstance(select, exp.Select):
            continue
        inlined = _inlinable_sources(scope, sizes)
        if _growth(scope, inlined) > MAX_GROWTH:
            for child in {id(s): s for s, _ in inlined.values()}.values():
                child.set("offset", exp.Offset(expression=exp.Literal.number(0)))
                sizes.pop(id(child), None)
            inlined = {}
        sizes[id(select)] = _output_sizes(select, scope, inlined)
    return tree


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
