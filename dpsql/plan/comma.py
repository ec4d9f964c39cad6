"""Comma joins: ``FROM a, b WHERE a.x = b.y`` planned as ``FROM a JOIN b ON a.x = b.y``.

Owns: the tree rewrite that turns the implicit joins of a FROM list into the INNER
JOINs they stand for, before the joins are resolved, so that they plan exactly as
the same ``JOIN ... ON`` (sqlglot's optimizer moves predicates the same way). The
privacy rules of joins see only ON conditions: left as a CROSS JOIN with a filter
above it, ``FROM customers c, orders o WHERE c.customer_id = o.customer_id`` would
be a cross join of two private tables, which no rule allows.

A FROM list is a set: its items are joined in the order of the join graph that the
equalities of WHERE draw (``join_order``), each item after one it is joined to, the
written order breaking ties; only an item joined to none of the others is a CROSS
JOIN. An item followed by explicit JOINs (``a JOIN b ON ...``) moves with them as one
unit, and a FROM list with a RIGHT or FULL join keeps its written order.

Each top-level AND-conjunct of WHERE that equates a column of one FROM item with a
column of another moves into the ON of the join that brings in the later of the
two, when that join is a comma join (which becomes an INNER JOIN). The result is
the same as DuckDB's for every data set: WHERE filters the rows of the joined FROM
list, and an equality between two items filters the same rows when it is tested as
soon as both are joined, since every later join keeps those rows as they are (INNER,
CROSS and comma joins filter or multiply them; a LEFT join keeps every row of its
left side). A RIGHT or FULL join null-extends the rows before it, so no condition
moves into a join before one. An equality common to every branch of an OR
(``(p.id = l.id AND p.brand = 'A') OR (p.id = l.id AND p.brand = 'B')``) is implied by
the OR: it is copied into the ON, and the OR stays in WHERE whole, so the rows kept are
the same. Everything else stays in WHERE: a conjunct that reads one item or three, an
equality in some branches of an OR only, a comparison other than ``=``, a column whose
item is unknown (an outer query's, or a name two items share unqualified), an equality
whose later item comes by an explicit JOIN. A comma join that gets no equality stays a
CROSS JOIN (between private tables it is refused, as before).
"""
from __future__ import annotations

from sqlglot import exp


def comma_joins(tree: exp.Select, items: list) -> tuple:
    """``(tree, order)``: ``tree`` with its FROM list in join-graph order (``order``: the
    written index of each item, in the new order) and its comma joins made INNER JOINs
    on the equalities of its WHERE.

    ``items``: one ``(qualifiers, columns)`` per FROM item, the first table's and then
    each join's, in order: the names that may qualify its columns and its column
    names (all lower case)."""
    joins = tree.args.get("joins") or []
    where = tree.args.get("where")
    written = list(range(len(items)))
    if where is None or not any(_is_comma(j) for j in joins):
        return tree, written
    parts = _conjuncts(where.this)
    edges = [_owners(e, items) for p in parts for e in _implied(p)]
    order = join_order(joins, edges)
    heads = [tree.args.get("from_") or tree.args.get("from")] + joins
    first = heads[order[0]].this
    joins = [joins[i - 1] if i else exp.Join(this=heads[0].this.copy()) for i in order[1:]]
    items = [items[i] for i in order]
    # Items before a RIGHT or FULL join are null-extended by it: nothing moves below it.
    floor = max((i + 1 for i, j in enumerate(joins)
                 if (j.side or "").upper() in ("RIGHT", "FULL")), default=0)
    moved, rest = {}, []
    for part in parts:
        alone = not isinstance(_unparen(part), exp.Or)
        kept = False
        for equality in _implied(part):
            later = _later_item(equality, items)
            if later is not None and later > floor and _is_comma(joins[later - 1]):
                moved.setdefault(later - 1, []).append(equality)
            else:
                kept = True
        if kept or not alone:
            rest.append(part)         # an OR stays whole: it implies what moved
    if not moved and order == written:
        return tree, written
    return _rebuilt(tree, first, joins, moved, rest), order


def _rebuilt(tree: exp.Select, first, joins: list, moved: dict, rest: list) -> exp.Select:
    new_joins = []
    for i, join in enumerate(joins):
        if i in moved:
            join = exp.Join(this=join.this.copy(), on=_and([p.copy() for p in moved[i]]))
        else:
            join = join.copy()
        new_joins.append(join)
    out = tree.copy()
    out.set("from_" if "from_" in out.args else "from", exp.From(this=first.copy()))
    out.set("joins", new_joins)
    out.set("where", exp.Where(this=_and([p.copy() for p in rest])) if rest else None)
    return out


def join_order(joins: list, edges: list) -> list:
    """The written indexes of the FROM items in the order they are joined. The units (an
    item and the explicit joins after it) tied to others by an equality of ``edges``
    (pairs of item indexes, or None) come first: the first such unit, then repeatedly the
    first unit tied to one already placed (or, if none is, the first tied one left: a
    CROSS JOIN between parts that no equality links); the units tied to none come last
    (CROSS JOINs), each group in written order. Written order with a RIGHT or FULL join."""
    if any((j.side or "").upper() in ("RIGHT", "FULL") for j in joins):
        return list(range(len(joins) + 1))
    units, unit_of = [[0]], {0: 0}
    for i, join in enumerate(joins, 1):
        if _is_comma(join):
            units.append([])
        units[-1].append(i)
        unit_of[i] = len(units) - 1
    links = {(unit_of[a], unit_of[b]) for a, b in (e for e in edges if e is not None)}
    links |= {(b, a) for a, b in links}
    tied = [u for u in range(len(units)) if any(a == u for a, _ in links)]
    placed, left = [], list(tied)
    while left:
        nxt = next((u for u in left if any((u, p) in links for p in placed)), left[0])
        placed.append(nxt)
        left.remove(nxt)
    placed += [u for u in range(len(units)) if u not in tied]
    return [i for u in placed for i in units[u]]


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


def _unparen(node):
    while isinstance(node, exp.Paren):
        node = node.this
    return node


def _implied(part) -> list:
    """The conjuncts ``part`` implies that may be join equalities: ``part`` itself, or for
    an OR the conjuncts common to all its branches (an equality in either column order)."""
    node = _unparen(part)
    if not isinstance(node, exp.Or):
        return [node]
    branches = [[_unparen(c) for c in _conjuncts(b)] for b in node.flatten(unnest=True)]
    common = [c for c in branches[0] if isinstance(c, exp.EQ)]
    for branch in branches[1:]:
        keys = {_key(c) for c in branch if isinstance(c, exp.EQ)}
        common = [c for c in common if _key(c) in keys]
    return common


def _key(eq: exp.EQ):
    """An equality the same whichever side each operand is written on."""
    return frozenset((eq.this, eq.expression))


def _and(parts: list):
    out = parts[0]
    for p in parts[1:]:
        out = exp.And(this=out, expression=p)
    return out


def _later_item(part, items: list) -> int | None:
    """The index of the later of the two items ``part`` equates a column of, or None."""
    owners = _owners(part, items)
    return None if owners is None else max(owners)


def _owners(part, items: list) -> tuple | None:
    """The indexes of the two different items whose columns ``part`` equates, or None."""
    node = _unparen(part)
    if not isinstance(node, exp.EQ):
        return None
    sides = (node.this, node.expression)
    if not all(isinstance(s, exp.Column) and not isinstance(s.this, exp.Star) for s in sides):
        return None
    owners = tuple(_item_of(s, items) for s in sides)
    if None in owners or owners[0] == owners[1]:
        return None
    return owners


def _item_of(col: exp.Column, items: list) -> int | None:
    """The FROM item a column reference names (as the binder will read it), or None."""
    name = col.name.lower()
    if col.table:
        hits = [i for i, (quals, cols) in enumerate(items)
                if col.table.lower() in quals and name in cols]
    else:
        hits = [i for i, (_, cols) in enumerate(items) if name in cols]
    return hits[0] if len(hits) == 1 else None


def in_written_order(relation, sizes: list, order: list):
    """``relation`` (its items joined in ``order``) with its columns in the written order
    of the FROM list, as ``SELECT *`` and column lists read them; ``sizes``: each item's
    number of visible columns, in written order."""
    if order == sorted(order):
        return relation
    shown = relation.visible()
    chunks, at = {}, 0
    for i in order:
        chunks[i] = shown[at:at + sizes[i]]
        at += sizes[i]
    fields = {f.name.lower(): f for i in sorted(chunks) for f in chunks[i]}
    fields.update((k, f) for k, f in relation.fields.items() if k not in fields)
    relation.fields = fields
    return relation
