"""Comma joins: ``FROM a, b WHERE a.x = b.y`` planned as ``FROM a JOIN b ON a.x = b.y``.

Owns: the tree rewrite that turns the implicit joins of a FROM list into the INNER
JOINs they stand for, before the joins are resolved, so that they plan exactly as
the same ``JOIN ... ON`` (sqlglot's optimizer moves predicates the same way). The
privacy rules of joins see only ON conditions: left as a CROSS JOIN with a filter
above it, ``FROM customers c, orders o WHERE c.customer_id = o.customer_id`` would
be a cross join of two private tables, which no rule allows.

Each top-level AND-conjunct of WHERE that equates a column of one FROM item with a
column of another moves into the ON of the join that brings in the later of the
two, when that join is a comma join (which becomes an INNER JOIN). The result is
the same as DuckDB's for every data set: WHERE filters the rows of the joined FROM
list, and an equality between two items filters the same rows when it is tested as
soon as both are joined, since every later join keeps those rows as they are (INNER,
CROSS and comma joins filter or multiply them; a LEFT join keeps every row of its
left side). A RIGHT or FULL join null-extends the rows before it, so no condition
moves into a join before one. Everything else stays in WHERE: a conjunct that reads
one item or three, an OR of equalities, a comparison other than ``=``, a column whose
item is unknown (an outer query's, or a name two items share unqualified), an
equality whose later item comes by an explicit JOIN. A comma join that gets no
equality stays a CROSS JOIN (between private tables it is refused, as before).
"""
from __future__ import annotations

from sqlglot import exp


def comma_joins(tree: exp.Select, items: list) -> exp.Select:
    """``tree`` with its comma joins made INNER JOINs on the equalities of its WHERE.

    ``items``: one ``(qualifiers, columns)`` per FROM item, the first table's and then
    each join's, in order: the names that may qualify its columns and its column
    names (all lower case)."""
    joins = tree.args.get("joins") or []
    where = tree.args.get("where")
    if where is None or not any(_is_comma(j) for j in joins):
        return tree
    # Items before a RIGHT or FULL join are null-extended by it: nothing moves below it.
    floor = max((i + 1 for i, j in enumerate(joins)
                 if (j.side or "").upper() in ("RIGHT", "FULL")), default=0)
    moved, rest = {}, []
    for part in _conjuncts(where.this):
        later = _later_item(part, items)
        if later is not None and later > floor and _is_comma(joins[later - 1]):
            while isinstance(part, exp.Paren):
                part = part.this
            moved.setdefault(later - 1, []).append(part)
        else:
            rest.append(part)
    if not moved:
        return tree
    new_joins = []
    for i, join in enumerate(joins):
        if i in moved:
            join = exp.Join(this=join.this.copy(), on=_and([p.copy() for p in moved[i]]))
        else:
            join = join.copy()
        new_joins.append(join)
    out = tree.copy()
    out.set("joins", new_joins)
    out.set("where", exp.Where(this=_and([p.copy() for p in rest])) if rest else None)
    return out


def _is_comma(join: exp.Join) -> bool:
    """A join written ``FROM a, b`` (sqlglot: no kind, side, ON or USING)."""
    return not any(join.args.get(k) for k in ("kind", "side", "on", "using", "method"))


def _conjuncts(node) -> list:
    if isinstance(node, exp.And):
        return _conjuncts(node.left) + _conjuncts(node.right)
    if isinstance(node, exp.Paren):
        inner = _conjuncts(node.this)
        return inner if len(inner) > 1 else [node]
    return [node]


def _and(parts: list):
    out = parts[0]
    for p in parts[1:]:
        out = exp.And(this=out, expression=p)
    return out


def _later_item(part, items: list) -> int | None:
    """The index of the later of the two items ``part`` equates a column of, or None."""
    node = part
    while isinstance(node, exp.Paren):
        node = node.this
    if not isinstance(node, exp.EQ):
        return None
    sides = (node.this, node.expression)
    if not all(isinstance(s, exp.Column) and not isinstance(s.this, exp.Star) for s in sides):
        return None
    owners = [_item_of(s, items) for s in sides]
    if None in owners or owners[0] == owners[1]:
        return None
    return max(owners)


def _item_of(col: exp.Column, items: list) -> int | None:
    """The FROM item a column reference names (as the binder will read it), or None."""
    name = col.name.lower()
    if col.table:
        hits = [i for i, (quals, cols) in enumerate(items)
                if col.table.lower() in quals and name in cols]
    else:
        hits = [i for i, (_, cols) in enumerate(items) if name in cols]
    return hits[0] if len(hits) == 1 else None
