"""Rewrite rule: an outer SELECT that only reads an aggregating CTE or subquery.

Owns: queries written as ``WITH revenue (region, total) AS (SELECT region, SUM(x) ...
GROUP BY region) SELECT region, total FROM revenue ORDER BY total DESC``. The inner
aggregation is the release; everything the outer query does (choose, rename and compute
columns from the aggregates, filter them, order, limit) is post-processing of released
values. ``split_outer`` takes the outer query off, and the inner query is validated as
the query, so its HAVING and ORDER BY bind to its own SELECT list, as in SQL. ``compose``
then puts the outer query back on the validated one: each outer column becomes the inner
expression it reads, and the clauses apply in SQL's order:

1. the inner HAVING, then its ORDER BY and LIMIT/OFFSET;
2. the outer WHERE, then the outer ORDER BY (the inner order where it has none) and
   LIMIT/OFFSET, on the groups step 1 kept (a ``Cut``: post-processing runs step 1 in a
   subquery of its own).
Without an inner LIMIT or OFFSET (or without outer WHERE, ORDER BY, LIMIT and OFFSET) the
two steps are one: the outer WHERE joins HAVING, the outer ORDER BY replaces the inner
one, and the one LIMIT given holds.

Only the simplest outer shape is taken off (one relation, no joins, no GROUP BY, no
aggregate, no DISTINCT, no window): anything else is left to the planner, which
explains its refusal as before.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, replace

from sqlglot import exp

from ..frontend.binding import fail
from .contributions import output_name
from .query import Cut, Query


@dataclass
class Outer:
    """An outer query taken off an aggregation: its tree, the names a column list gives
    the inner columns (the first ones), and the names it may qualify them with."""

    select: exp.Select
    listed: list
    qualifiers: set


def split_outer(tree: exp.Select) -> tuple:
    """(the inner aggregation, the ``Outer`` query over it) when ``tree`` is an outer
    projection of one aggregation; (``tree``, None) otherwise."""
    if not _plain_outer(tree):
        return tree, None
    source = tree.args["from_"].this
    inner, alias, cte = _aggregation(tree, source)
    if inner is None:
        return tree, None
    out = inner.copy()
    if cte is not None:
        out.set("with_", _remaining_ctes(tree, cte))
    elif tree.args.get("with_") is not None:
        out.set("with_", tree.args["with_"].copy())
    listed = [c.name.lower() for c in alias.columns] if isinstance(alias, exp.TableAlias) else []
    if len(listed) > len(inner.expressions):
        fail(f"'{alias.name}' has {len(inner.expressions)} columns but {len(listed)} names "
             "are given")
    qualifiers = {source.alias_or_name.lower(), (cte or source.alias_or_name).lower()}
    return out, Outer(tree, listed, qualifiers)


def compose(query: Query, outer: Outer, limit, offset) -> Query:
    """``query`` (the validated inner aggregation) read by ``outer``, whose LIMIT and
    OFFSET are ``limit`` and ``offset`` (checked integers or None)."""
    if query.distinct:
        fail("SELECT DISTINCT over aggregates inside a subquery that an outer query reads is "
             "not supported; group by the columns instead")
    names = [n.lower() for n, _ in query.outputs]
    names[:len(outer.listed)] = outer.listed
    columns = dict(zip(names, (e for _, e in query.outputs)))
    tree = outer.select
    outputs = _projection(tree, names, columns, outer.qualifiers)
    inner_order = [_as_expression(o, query.outputs) for o in query.order]
    where = tree.args.get("where")
    where = _substituted(where.this, columns, outer.qualifiers) if where is not None else None
    order = _outer_order(tree, outputs, columns, outer.qualifiers)
    cut, having = None, query.having
    if (query.limit is not None or query.offset is not None) and (
            where is not None or order or limit is not None or offset is not None):
        cut = Cut(inner_order, query.limit, query.offset, where)
    else:
        if where is not None:
            having = exp.and_(having, where) if having is not None else where
        limit = query.limit if limit is None else limit
        offset = query.offset if offset is None else offset
    order = order or inner_order
    parts = [e for _, e in outputs] + [having] + [o.this for o in order] + (
        [o.this for o in cut.order] + [cut.where] if cut is not None else [])
    aggregates = []
    for node in (n for part in parts if part is not None for n in part.find_all(exp.AggFunc)):
        if node not in aggregates:
            aggregates.append(node)
    return replace(query, outputs=outputs, having=having, order=order, limit=limit,
                   offset=offset, cut=cut, aggregates=aggregates)


def _plain_outer(tree: exp.Select) -> bool:
    if not isinstance(tree, exp.Select) or tree.args.get("joins") or tree.args.get("group"):
        return False
    if tree.args.get("distinct") or tree.args.get("having") or tree.find(exp.Window):
        return False
    if tree.args.get("from_") is None or any(
            e.find(exp.AggFunc) for e in tree.expressions):
        return False
    where = tree.args.get("where")
    return where is None or where.find(exp.AggFunc, exp.Subquery, exp.Exists) is None


def _aggregation(tree: exp.Select, source):
    """(inner select, its alias, the CTE's name or None) when ``source`` is an aggregating
    subquery or CTE; (None, None, None) otherwise."""
    cte, alias = None, source.args.get("alias")
    if isinstance(source, exp.Subquery) and isinstance(source.this, exp.Select):
        inner = source.this
    elif isinstance(source, exp.Table) and not source.args.get("db"):
        cte = _cte(tree, source.name)
        if cte is None or _reads(tree, cte.alias_or_name) != 1:
            return None, None, None
        inner, alias = cte.this, cte.args.get("alias")
    else:
        return None, None, None
    if not isinstance(inner, exp.Select) or inner.args.get("with_") or not (
            inner.args.get("group") or any(
            e.find(exp.AggFunc) for e in inner.expressions)):
        return None, None, None
    return inner, alias, (cte.alias_or_name if cte is not None else None)


def _cte(tree: exp.Select, name: str):
    with_ = tree.args.get("with_")
    for cte in (with_.expressions if with_ is not None else []):
        if cte.alias_or_name.lower() == name.lower():
            return cte
    return None


def _reads(tree: exp.Select, name: str) -> int:
    return sum(1 for t in tree.find_all(exp.Table)
               if not t.args.get("db") and t.name.lower() == name.lower())


def _remaining_ctes(tree: exp.Select, name: str):
    with_ = tree.args["with_"].copy()
    with_.set("expressions", [c for c in with_.expressions
                              if c.alias_or_name.lower() != name.lower()])
    return with_ if with_.expressions else None


def _projection(tree: exp.Select, names: list, columns: dict, qualifiers: set) -> list:
    """The outer SELECT list as (name, expression over the inner aggregation)."""
    out = []
    for item in tree.expressions:
        if isinstance(item, exp.Star) or (isinstance(item, exp.Column)
                                          and isinstance(item.this, exp.Star)):
            out += [(n, columns[n].copy()) for n in names]
            continue
        out.append((output_name(item), _substituted(item.unalias(), columns, qualifiers)))
    seen = set()
    for name, _ in out:
        if name.lower() in seen:
            fail(f"two output columns are named {name!r}; give each a different alias")
        seen.add(name.lower())
    return out


def _as_expression(ordered: exp.Ordered, outputs: list) -> exp.Ordered:
    """An ORDER BY term of the inner query as an expression (not a reference to one of
    its outputs, which the outer SELECT list replaces)."""
    node = ordered.this
    if isinstance(node, exp.Column) and re.fullmatch(r"_o\d+", node.name):
        out = ordered.copy()
        out.set("this", outputs[int(node.name[2:])][1].copy())
        return out
    return ordered


def _outer_order(tree: exp.Select, outputs: list, columns: dict, qualifiers: set) -> list:
    """The outer ORDER BY: positions and output names bind to the outer SELECT list
    (``_o<i>``), anything else to the inner columns (as DuckDB binds them)."""
    node = tree.args.get("order")
    names = [n.lower() for n, _ in outputs]
    out = []
    for ordered in (node.expressions if node is not None else []):
        key = ordered.this
        if isinstance(key, exp.Literal) and not key.is_string:
            if not key.this.isdigit():
                fail(f"ORDER BY {key.this} is not a position; write a whole number from 1 to "
                     f"{len(outputs)}, or name a column")
            if not 1 <= int(key.this) <= len(outputs):
                fail(f"ORDER BY {key.this} is out of range: the SELECT list has "
                     f"{len(outputs)} items")
            target = exp.column(f"_o{int(key.this) - 1}", quoted=True)
        elif isinstance(key, exp.Column) and not key.table and key.name.lower() in names:
            target = exp.column(f"_o{names.index(key.name.lower())}", quoted=True)
        else:
            target = _substituted(key, columns, qualifiers)
        out.append(exp.Ordered(this=target, desc=ordered.args.get("desc"),
                               nulls_first=ordered.args.get("nulls_first")))
    return out


def _substituted(node: exp.Expression, columns: dict, qualifiers: set) -> exp.Expression:
    """``node`` with each column of the inner relation replaced by its expression."""
    def swap(n):
        if isinstance(n, exp.Column) and not isinstance(n.this, exp.Star):
            if n.name.lower() not in columns or (n.table and n.table.lower() not in qualifiers):
                fail(f"unknown column {n.sql()} in the outer query: its relation has "
                     f"{', '.join(sorted(columns))}")
            return columns[n.name.lower()].copy()
        return n
    return node.copy().transform(swap)
