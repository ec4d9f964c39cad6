"""Column lists after an alias: ``(SELECT ...) AS t(a, b)``, ``WITH t(a, b) AS (...)``,
``FROM table AS t(a, b)``.

Owns: SQL's column list as a rename of a relation's output columns, in order. The list may
be shorter than the columns (the rest keep their names) but not longer. A rename changes
names only: every column keeps what the metadata and the query made it (the person's id
or not, what it references, its bounds, its public values), so no name can make a column
the person's id or a referencing column that it is not. Renaming ``order_id`` to
``customer_id`` gives a column that is still ``order_id`` to every join, semi-join and
``GROUP BY`` above it.
"""
from __future__ import annotations

from dataclasses import replace

from sqlglot import exp

from ..frontend.binding import fail
from .relations import Relation, _check_name
from .rewrite import column


def column_names(alias) -> list:
    """The names of a column list (``[]`` when there is none)."""
    if alias is None or not isinstance(alias, exp.TableAlias):
        return []
    return [c.name for c in alias.columns]


def name_items(body: exp.Expression, names: list) -> exp.Expression:
    """``body`` with a name on each unnamed item that the column list names
    (``SELECT c.customer_id, COUNT(*) ... AS t(customer_id, n)``): SQL lets a column list
    name what the SELECT list leaves unnamed, and dpsql needs a name on every column of a
    subquery. The name is the list's (or, if another item already has it, that name with
    a number), so explain shows the name the query reads; ``renamed`` then sets every name."""
    if not names:
        return body
    if isinstance(body, exp.Subquery):
        body = body.copy()
        body.set("this", name_items(body.this, names))
        return body
    if isinstance(body, exp.Union):
        body = body.copy()
        body.set("this", name_items(body.this, names))
        body.set("expression", name_items(body.expression, names))
        return body
    if not isinstance(body, exp.Select):
        return body
    body = body.copy()
    taken = {i.alias_or_name.lower() for i in body.expressions
             if isinstance(i, (exp.Alias, exp.Column))}
    items = []
    for i, item in enumerate(body.expressions):
        if _is_star(item) or i >= len(names):
            items.extend(body.expressions[i:])    # positions after a * are not known here
            break
        if not isinstance(item, (exp.Alias, exp.Column)):
            name, n = names[i], 1
            while name.lower() in taken:
                n += 1
                name = f"{names[i]}_{n}"
            taken.add(name.lower())
            item = exp.alias_(item, name, quoted=True)
        items.append(item)
    body.set("expressions", items)
    return body


def _is_star(item: exp.Expression) -> bool:
    return isinstance(item, exp.Star) or (isinstance(item, exp.Column)
                                          and isinstance(item.this, exp.Star))


def renamed(relation: Relation, names: list, label: str) -> Relation:
    """``relation`` with its first ``len(names)`` columns named ``names`` (see the module
    docstring: each column keeps its identity; only its name changes)."""
    if not names:
        return relation
    shown = [f for f in relation.fields.values() if not f.name.lower().startswith("_dpsql")]
    if len(names) > len(shown):
        fail(f"{label!r} has {len(shown)} column{'s' if len(shown) != 1 else ''} but "
             f"{len(names)} names are given; give at most {len(shown)}")
    new = {f.name: name for f, name in zip(shown, names)}
    fields, projections, seen = {}, [], set()
    for f in relation.fields.values():
        out = new.get(f.name, f.name)
        if not f.name.lower().startswith("_dpsql"):
            _check_name(out, seen, label)
        fields[out.lower()] = replace(f, name=out)
        projections.append(exp.alias_(column(f.name), out, quoted=True))
    pid = new.get(relation.pid, relation.pid) if relation.pid is not None else None
    steps = list(relation.steps)
    steps.append(f"{label}: columns renamed (each keeps its identity and bounds): "
                 + ", ".join(f"{old} AS {name}" for old, name in new.items()))
    out = relation.derived(fields, pid, relation.k, relation.bounded,
                           exp.select(*projections).from_(relation.source("_r")), steps)
    if relation.ref is not None:
        out.ref = (new.get(relation.ref[0], relation.ref[0]),) + tuple(relation.ref[1:])
    return out
