"""The typed relations a plan reads, cut to the columns it names.

Owns: ``prune``. An engine reads each table through its typed relation (one cast or
guard per metadata column, ``dpsql.plan.rewrite.typed_relation``), placed as the plan's
first CTEs. The engine binds every column of it whether the query reads it or not: on a
1,000-row DataFrame of six columns, binding the four unread ones cost DuckDB about 1 ms
of a 4.4 ms statement (docs/performance.md, "ninth round"). ``prune`` drops the columns
whose name no identifier of the rest of the plan spells, which changes no value, no row
and no error, provided that no ``*`` of the plan could expand to a dropped column where
the width of a row matters. So it prunes only when every ``*`` of the plan is either a
``COUNT(*)``, or expands to a list of named columns (it reads a subquery, a CTE or rows
whose SELECT lists are names: its width is fixed), or sits where its width cannot show:
the SELECT list of a plain SELECT (no DISTINCT, GROUP BY, ORDER BY, DISTINCT ON or
``* EXCLUDE``-like modifiers) that is no operand of a UNION, INTERSECT or EXCEPT, reading
sources joined without NATURAL or POSITIONAL. Anything else leaves the relations whole.
Names are compared case-folded, so a name spelled differently keeps its column.
"""
from __future__ import annotations

from sqlglot import exp

_MODIFIERS = ("distinct", "group", "order", "having", "qualify", "windows")


def prune(tree: exp.Select, count: int) -> None:
    """Drop, in place, the columns of the first ``count`` CTEs of ``tree`` (its typed
    relations, each a SELECT of aliased columns) that the rest of ``tree`` never names,
    when no ``*`` of the rest could expand to one of them where it matters."""
    typed = tree.args["with_"].expressions[:count]
    named = {cte.alias.casefold() for cte in typed}
    skip = {id(cte) for cte in typed}
    bodies: dict = {}
    for cte in tree.find_all(exp.CTE):
        if id(cte) not in skip:
            bodies.setdefault(cte.alias.casefold(), []).append(cte.this)
    names: set = set()
    for node in tree.walk(prune=lambda n: id(n) in skip):
        if id(node) in skip:
            continue
        if isinstance(node, exp.Identifier):
            names.add(node.this.casefold())
        elif isinstance(node, exp.Star) and not _harmless(node, named, bodies):
            return
        elif isinstance(node, exp.Join) and node.args.get("method"):
            return
    for cte in typed:
        _keep(cte.this, names)


def _keep(relation: exp.Expression, names: set) -> None:
    if not isinstance(relation, exp.Select):
        return
    items = relation.expressions
    if not all(isinstance(e, exp.Alias) for e in items):
        return
    kept = [e for e in items if e.alias.casefold() in names]
    if len(kept) < len(items):
        relation.set("expressions", kept or items[:1])


def _harmless(star: exp.Star, typed: set, bodies: dict) -> bool:
    parent = star.parent
    if isinstance(parent, exp.Count):
        return True
    if isinstance(parent, exp.Column):          # alias.*
        parent = parent.parent
    if not isinstance(parent, exp.Select) or any(star.args.values()):     # EXCLUDE, ...
        return False
    if not _open(parent, typed, bodies, set()):
        return True
    return not any(parent.args.get(k) for k in _MODIFIERS) and not _operand(parent)


def _operand(select: exp.Select) -> bool:
    """Whether ``select`` is (in brackets or not) an operand of a set operation."""
    node = select.parent
    while isinstance(node, (exp.Subquery, exp.Paren)):
        node = node.parent
    return isinstance(node, exp.SetOperation)


def _open(select: exp.Expression, typed: set, bodies: dict, seen: set) -> bool:
    """Whether a ``*`` in ``select``'s list could expand to a typed relation's column."""
    sources = [select.args.get("from_")] + list(select.args.get("joins") or [])
    return any(_source_open(s.this, typed, bodies, seen) for s in sources if s is not None)


def _source_open(source: exp.Expression, typed: set, bodies: dict, seen: set) -> bool:
    if isinstance(source, exp.Table) and isinstance(source.this, exp.Identifier):
        name = source.name.casefold()
        if name in typed or name in seen or name not in bodies:
            return True
        seen = seen | {name}
        return any(_body_open(b, typed, bodies, seen) for b in bodies[name])
    if isinstance(source, exp.Subquery):
        return _body_open(source.this, typed, bodies, seen)
    return not isinstance(source, exp.Values)


def _body_open(body: exp.Expression, typed: set, bodies: dict, seen: set) -> bool:
    if isinstance(body, exp.SetOperation):
        return (_body_open(body.this, typed, bodies, seen)
                or _body_open(body.expression, typed, bodies, seen))
    if isinstance(body, exp.Subquery):
        return _body_open(body.this, typed, bodies, seen)
    if not isinstance(body, exp.Select):
        return True
    if any(isinstance(e, exp.Star) or isinstance(e, exp.Column) and isinstance(e.this, exp.Star)
           for e in body.expressions):
        return _open(body, typed, bodies, seen)
    return False
