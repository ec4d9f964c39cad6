"""Rewrite rule: an outer SELECT that only reads an aggregating CTE or subquery.

Owns: queries written as ``WITH revenue (region, total) AS (SELECT region, SUM(x) ...
GROUP BY region) SELECT region, total FROM revenue ORDER BY total DESC``. The inner
aggregation is the release; everything the outer query does (choose, rename and compute
columns from the aggregates, filter them, order, limit) is post-processing of released
values, so the query is rewritten into the one aggregation it means: the outer columns
become the inner expressions, the outer WHERE becomes HAVING, the outer ORDER BY and
LIMIT replace the inner ones. The result is then validated like any query; nothing is
allowed that the rewritten form would not allow.

Only the simplest outer shape is rewritten (one relation, no joins, no GROUP BY, no
aggregate, no DISTINCT, no window): anything else is left to the planner, which
explains its refusal as before.
"""
from __future__ import annotations

from sqlglot import exp

from ..frontend.binding import fail


def lift_outer(tree: exp.Select) -> exp.Select:
    """The query an outer projection of an aggregation means (``tree`` if it is not one)."""
    if not _plain_outer(tree):
        return tree
    source = tree.args["from_"].this
    inner, names, cte = _aggregation(tree, source)
    if inner is None:
        return tree
    columns = dict(zip(names, inner.expressions))
    out = inner.copy()
    if cte is not None:
        out.set("with_", _remaining_ctes(tree, cte))
    elif tree.args.get("with_") is not None:
        out.set("with_", tree.args["with_"].copy())
    out.set("expressions", _projection(tree, names, columns))
    where = tree.args.get("where")
    if where is not None:
        cond = _substituted(where.this, columns)
        old = out.args.get("having")
        out.set("having", exp.Having(this=exp.and_(old.this, cond) if old else cond))
    if tree.args.get("order") is not None:
        order = tree.args["order"].copy()
        outputs = {e.alias_or_name.lower() for e in out.expressions}
        for node in order.expressions:
            node.set("this", _substituted(node.this, columns, keep_aliases=outputs))
        out.set("order", order)
    for part in ("limit", "offset"):
        if tree.args.get(part) is not None:
            out.set(part, tree.args[part].copy())
    return out


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
    """(inner select, its output names, the CTE's name or None) when ``source`` is an
    aggregating subquery or CTE; (None, None, None) otherwise."""
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
    names = [e.alias_or_name.lower() for e in inner.expressions]
    listed = alias.columns if isinstance(alias, exp.TableAlias) else []
    if len(listed) > len(names):
        fail(f"'{alias.name}' has {len(names)} columns but {len(listed)} names are given")
    names[:len(listed)] = [c.name.lower() for c in listed]
    return inner, names, (cte.alias_or_name if cte is not None else None)


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


def _projection(tree: exp.Select, names: list, columns: dict) -> list:
    out = []
    for item in tree.expressions:
        if isinstance(item, exp.Star) or (isinstance(item, exp.Column)
                                          and isinstance(item.this, exp.Star)):
            out += [exp.alias_(columns[n].unalias().copy(), n, quoted=False) for n in names]
            continue
        name = item.alias_or_name
        out.append(exp.alias_(_substituted(item.unalias(), columns), name, quoted=False))
    return out


def _substituted(node: exp.Expression, columns: dict, keep_aliases=()) -> exp.Expression:
    """``node`` with each column of the inner relation replaced by its expression (an
    ORDER BY may keep a bare output name, which binds to the output alias)."""
    if isinstance(node, exp.Column) and node.name.lower() in keep_aliases:
        return exp.column(node.name)

    def swap(n):
        if isinstance(n, exp.Column) and not isinstance(n.this, exp.Star):
            if n.name.lower() not in columns:
                fail(f"unknown column {n.sql()} in the outer query: its relation has "
                     f"{', '.join(sorted(columns))}")
            return columns[n.name.lower()].unalias().copy()
        return n
    return node.copy().transform(swap)
