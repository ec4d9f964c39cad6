"""The typed relations a plan reads, cut to the columns it names.

Owns: ``prune``. An engine reads each table through its typed relation (one cast or
guard per metadata column, ``dpsql.plan.rewrite.typed_relation``), placed as the plan's
first CTEs. The engine binds every column of it whether the query reads it or not: on a
1,000-row DataFrame of six columns, binding the four unread ones cost DuckDB about 1 ms
of a 4.4 ms statement (docs/performance.md, "ninth round"). ``prune`` drops the columns
whose name no identifier of the rest of the plan spells (compared case-folded; DuckDB's
names for a star's duplicate columns, ``x_1``, spell ``x``), which changes no value, no
row and no error unless a row's columns are read without their names. So it prunes only
when the plan has no such read: no PIVOT, ``COLUMNS(...)``, ``#n``, struct extraction,
column-alias list (``AS x(a, b)``; a VALUES' own excepted), NATURAL or POSITIONAL join,
whole row used as a value (``SELECT t FROM t``), and every ``*`` is a ``COUNT(*)``,
expands to named columns only (it reads a subquery, a CTE or VALUES whose SELECT lists are
names), or is read as a relation by name (a CTE's body, or a FROM's or JOIN's subquery) from
a plain SELECT (no DISTINCT, GROUP BY, ORDER BY, HAVING, QUALIFY, WINDOW or ``*`` modifier
such as ``EXCLUDE``) that is no operand of a set operation. Anything else leaves the
relations whole. The planner emits none of the refused shapes today (validation expands an
analyst's ``*`` and refuses the rest); the rules keep a future rewrite that emits one from
computing something else (tests/unit/test_prune.py runs each such shape both ways).
"""
from __future__ import annotations

from sqlglot import exp

_MODIFIERS = ("distinct", "group", "order", "having", "qualify", "windows")
_UNNAMED = (exp.Pivot, exp.Columns, exp.PositionalColumn, exp.StructExtract)
"""Reads of a row's columns that spell no column name: an implicit grouping by every other
column, a regular expression, a position, a string key."""


def prune(tree: exp.Select, count: int) -> None:
    """Drop, in place, the columns of the first ``count`` CTEs of ``tree`` (its typed
    relations, each a SELECT of aliased columns) that the rest of ``tree`` never names,
    unless a read of the rest could reach one of them without its name."""
    typed = tree.args["with_"].expressions[:count]
    named = {cte.alias.casefold() for cte in typed}
    skip = {id(cte) for cte in typed}
    bodies: dict = {}
    names: set = set()
    stars, columns, sources = [], [], set()
    for node in tree.walk(bfs=False, prune=lambda n: id(n) in skip):
        if id(node) in skip:
            continue
        if isinstance(node, exp.Identifier):
            names.add(node.this.casefold())
        elif isinstance(node, exp.Star):
            stars.append(node)
        elif isinstance(node, exp.Column):
            columns.append(node)
        elif isinstance(node, exp.CTE):
            bodies.setdefault(node.alias.casefold(), []).append(node.this)
            if node.args["alias"].columns:
                return                      # WITH u(a, b): names by position
        elif isinstance(node, exp.TableAlias):
            if node.columns and not isinstance(node.parent, exp.Values):
                return                      # AS x(a, b): names by position
        elif isinstance(node, _UNNAMED) or isinstance(node, exp.Join) and node.args.get("method"):
            return
        if isinstance(node, (exp.From, exp.Join)):
            sources.add(node.this.alias_or_name.casefold())
    if any(not c.table and c.name.casefold() in sources and _row_of_source(c) for c in columns):
        return                              # SELECT t FROM t: a whole row as a value
    if not all(_harmless(s, named, bodies) for s in stars):
        return
    names |= {n.rstrip("0123456789")[:-1] for n in names
              if n[-1:].isdigit() and n.rstrip("0123456789").endswith("_")}
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
    return (not any(parent.args.get(k) for k in _MODIFIERS) and not _operand(parent)
            and _relation(parent))


def _relation(select: exp.Select) -> bool:
    """Whether ``select``'s rows are read as a relation, by name (a CTE's body, a FROM's or
    a JOIN's subquery), not as the statement's result or a subquery's value (IN, a scalar
    subquery, ARRAY(...), a row comparison)."""
    node = select.parent
    while isinstance(node, exp.Paren):
        node = node.parent
    return isinstance(node, exp.CTE) or (isinstance(node, exp.Subquery)
                                         and isinstance(node.parent, (exp.From, exp.Join)))


def _row_of_source(column: exp.Column) -> bool:
    """Whether the unqualified ``column`` could name a whole row of a source of a SELECT
    around it: its name is that source's alias (``SELECT t FROM t`` on DuckDB and
    PostgreSQL)."""
    name = column.name.casefold()
    node = column.parent
    while node is not None:
        if isinstance(node, exp.Select):
            sources = [node.args.get("from_")] + list(node.args.get("joins") or [])
            if any(s is not None and s.this.alias_or_name.casefold() == name for s in sources):
                return True
        node = node.parent
    return False


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
