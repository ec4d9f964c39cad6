"""GROUP BY ROLLUP, CUBE and GROUPING SETS: one release, its privacy split over the sets.

Owns: what a query's grouping sets are, and the grouped query of each. A query grouped by
grouping sets answers, in one result, the query grouped by each set in turn, with NULL for
the keys a set leaves out (SQL's meaning). dpsql plans it as those queries, each with an
equal share of the query's privacy (epsilon, delta or rho divided by the number of sets),
so the query costs what one query costs (sequential composition over the sets) and its
totals and subtotals come in one release (issue 37). Each set's query is planned, bounded,
thresholded and checked exactly as if the analyst had asked it alone at that share.

Keys are matched as written (a key of a set, the same expression in the SELECT list, its
alias or its position). ORDER BY, LIMIT and OFFSET would order across the sets: refused
(order the rows of the result). GROUPING() is not supported.
"""
from __future__ import annotations

import itertools
from dataclasses import replace

from sqlglot import exp

from ..errors import QueryError
from ..frontend.dialect import ANALYST_DIALECT

MAX_SETS = 16
"""Most grouping sets of one query: each gets 1/n of its privacy (CUBE of 4 keys is 16)."""
_SETS = (exp.GroupingSets, exp.Rollup, exp.Cube)


def expand(tree: exp.Expression) -> list | None:
    """The grouped query of each grouping set of ``tree``'s GROUP BY, in SQL's order, or
    None when it has none."""
    group = tree.args.get("group") if isinstance(tree, exp.Select) else None
    if group is None or not any(isinstance(_bare_key(k), (*_SETS, exp.Tuple))
                                for k in group.expressions):
        return None
    sets = _sets(group, tree.expressions)
    if len(sets) > 1:
        for clause in ("order", "limit", "offset"):
            if tree.args.get(clause):
                raise QueryError(f"{clause.upper()} with GROUP BY ROLLUP, CUBE or GROUPING SETS "
                                 "is not supported: the result holds every grouping set's rows; "
                                 "order or cut them after the query")
    written = {_text(k): k for chosen in sets for k in chosen}
    return [_part(tree, chosen, [k for t, k in written.items()
                                 if t not in {_text(c) for c in chosen}]) for chosen in sets]


def share(privacy, parts: int):
    """``privacy`` divided equally over ``parts`` grouping sets."""
    if parts <= 1:
        return privacy
    if privacy.rho is not None:
        return replace(privacy, rho=privacy.rho / parts, delta=privacy.delta / parts)
    return replace(privacy, epsilon=privacy.epsilon / parts, delta=privacy.delta / parts)


def _sets(group: exp.Group, items: list) -> list:
    product = [[]]
    for item in group.expressions:
        product = [p + c for p in product for c in _choices(item, items)]
        if len(product) > MAX_SETS:
            raise QueryError(f"GROUP BY {group.sql(ANALYST_DIALECT)[9:89]}: more than "
                             f"{MAX_SETS} grouping sets; each takes a share of the query's "
                             "privacy, so ask for fewer")
    return product


def _choices(item: exp.Expression, items: list) -> list:
    """The grouping sets one GROUP BY item stands for (lists of keys), as PostgreSQL reads
    it: a ROLLUP, CUBE or GROUPING SETS nested in GROUPING SETS adds its own sets, ``()`` is
    the empty set, and a whole number a position in the SELECT list."""
    if isinstance(item, exp.GroupingSets):
        return [keys for x in item.expressions for keys in _choices(x, items)]
    if isinstance(item, (exp.Rollup, exp.Cube)):    # elements: a key, (a, b) or ()
        parts = [_element(e, items) for e in item.expressions]
        if isinstance(item, exp.Rollup):
            chosen = [parts[:i] for i in range(len(parts), -1, -1)]
        else:
            chosen = [list(c) for r in range(len(parts), -1, -1)
                      for c in itertools.combinations(parts, r)]
        return [[k for part in c for k in part] for c in chosen]
    return [_element(item, items)]


def _element(node: exp.Expression, items: list) -> list:
    """The keys of one element: ``(a, b)`` both, ``(a)`` a, ``()`` none."""
    node = _bare_key(node)                  # ((sex)) is sex, as in PostgreSQL
    if isinstance(node, exp.Tuple):        # ((a, b), c) is a, b, c, as in PostgreSQL
        return [k for member in node.expressions for k in _element(member, items)]
    return [_key(node, items)]


def _bare_key(node: exp.Expression) -> exp.Expression:
    while isinstance(node, exp.Paren):
        node = node.this
    return node


def _key(node: exp.Expression, items: list) -> exp.Expression:
    """A key as written, a position replaced by its SELECT item (its expression)."""
    if isinstance(node, exp.Literal) and not node.is_string and node.this.isdigit() and \
            node.this.isascii() and 1 <= int(node.this) <= len(items):
        return _bare(items[int(node.this) - 1]).copy()
    return node


def _text(node: exp.Expression) -> str:
    return node.sql(ANALYST_DIALECT).lower()


def _part(tree: exp.Select, chosen: list, dropped: list) -> exp.Select:
    part = tree.copy()
    items = part.expressions
    gone = {_text(k) for k in dropped}
    for key in dropped:       # a position or an alias names a SELECT item
        if isinstance(key, exp.Literal) and not key.is_string and key.this.isdigit() and \
                1 <= int(key.this) <= len(items):
            gone.add(_text(_bare(items[int(key.this) - 1])))
        elif isinstance(key, exp.Column) and not key.table:
            gone.update(_text(_bare(i)) for i in items if i.alias_or_name.lower() == key.name.lower()
                        and isinstance(i, exp.Alias))
    part.set("expressions", [exp.alias_(exp.Null(), i.alias_or_name)
                             if _text(_bare(i)) in gone else i for i in items])
    having = part.args.get("having")
    if having is not None:
        part.set("having", having.transform(
            lambda n: exp.Null() if not isinstance(n, exp.Having) and _text(n) in gone else n))
    part.set("group", exp.Group(expressions=[k.copy() for k in chosen]) if chosen else None)
    return part


def _bare(item: exp.Expression) -> exp.Expression:
    return item.this if isinstance(item, exp.Alias) else item
