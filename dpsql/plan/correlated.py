"""EXISTS whose subquery refers to the outer row more than once, within one person.

Owns: ``EXISTS (SELECT * FROM lineitems l2 WHERE l2.order_id = l1.order_id AND
l2.part_id <> l1.part_id)`` and its ``NOT EXISTS``: a subquery with several conditions
that read outer columns (``dpsql.plan.resolve`` plans the one-equality form as
``IN``). The rule: one of the conditions is an equality that ties the inner rows to
the outer row's person, exactly as the one-equality form must be tied
(``dpsql.plan.setops``: both sides the person's id, or both one key that
``references`` tie to one person, whose values that more than one person claims match
nothing). Every inner row an outer row can then meet is its own person's, so further
conditions between inner and outer columns (any row-level condition of the
allow-list, typed and made total as a WHERE) choose among that person's rows only, and
whether the outer row stays is still a function of its person's rows: a filter, ``k``
unchanged. Correlation without such an equality is refused, as before.

The plan keeps SQL's meaning: ``EXISTS (SELECT 1 FROM (inner rows) _in WHERE
<conditions, inner columns read from _in and outer ones from _o>)`` over the outer
relation ``_o``; the inner rows are the subquery's own (its FROM and the conditions
that read no outer column), less key values more than one person claims.
"""
from __future__ import annotations

from dataclasses import replace

from sqlglot import exp

from ..frontend.binding import Binder, charge_work, fail
from ..frontend.dialect import ANALYST_DIALECT
from ..frontend.typecheck import Checker
from .joins import at_most, conjuncts
from .relations import Relation, field_cost
from .rewrite import column
from .setops import LOCAL_IDS, _refuse_link, _through_key, filtered_by, owned_once

HIDDEN = "_dpsql_c"
"""The inner columns a correlated condition reads are selected as _dpsql_c0, _dpsql_c1, ...:
names the analyst cannot write (``dpsql.frontend.binding`` reserves _dpsql)."""
TIED = ("may refer to the outer query more than once only if one condition ties it to the "
        "outer row's person: inner.id = outer.id, or inner.key = outer.key for a key that "
        "references tie to one person (l2.order_id = l1.order_id)")


def split(sub: exp.Select, outer_scope: dict) -> tuple:
    """(names of the subquery's own tables, conditions that read the outer row, the others)
    of the AND-ed conditions of ``sub``'s WHERE."""
    inner_names = set()
    for t in sub.find_all(exp.Table):
        inner_names |= {(t.alias or t.name).lower(), t.name.lower()}
    where = sub.args.get("where")
    linked, rest = [], []
    for part in conjuncts(where.this) if where is not None else []:
        (linked if any(is_outer(c, outer_scope, inner_names) for c in part.find_all(exp.Column))
         else rest).append(part)
    return inner_names, linked, rest


def is_outer(col: exp.Column, outer_scope: dict, inner_names: set) -> bool:
    """Whether ``col`` names a column of the outer query (by its qualifier, or as the
    tested value of a correlated IN)."""
    return bool(col.meta.get("dpsql_outer")) or (
        bool(col.table) and col.table.lower() in outer_scope
        and col.table.lower() not in inner_names)


def simple_link(linked: list) -> bool:
    """Whether ``linked`` is the one form ``dpsql.plan.resolve`` plans as IN: a single
    equality of two columns."""
    return len(linked) == 1 and isinstance(linked[0], exp.EQ) and all(
        isinstance(x, exp.Column) for x in (linked[0].this, linked[0].expression))


def correlated_in(resolver, sub: exp.Select, target: exp.Expression, negated: bool,
                  relation: Relation, scope: dict, env: dict, label: str) -> Relation:
    """``target IN (sub)`` where ``sub`` reads the outer row: ``EXISTS (sub with
    sub's column = target)``, the same filter (a row whose IN is NULL is dropped too)."""
    if negated:
        fail(f"{label}: a NOT IN whose subquery reads the outer row is not supported (SQL's "
             "NOT IN and NULLs); write NOT EXISTS (SELECT ... WHERE inner.key = outer.key "
             "AND ...)")
    if len(sub.expressions) != 1 or isinstance(sub.expressions[0], exp.Star):
        fail(f"{label}: the subquery must select exactly one column")
    if not isinstance(target, exp.Column):
        fail(f"{label}: the tested value must be a column")
    outer = target.copy()
    outer.meta["dpsql_outer"] = True
    new = sub.copy()
    tie = exp.EQ(this=sub.expressions[0].unalias().copy(), expression=outer)
    where = sub.args.get("where")
    new.set("where", exp.Where(this=exp.and_(where.this.copy(), tie) if where else tie))
    return correlated_filter(resolver, new, False, relation, scope, env, label)


def correlated_filter(resolver, sub: exp.Select, negated: bool, relation: Relation,
                      scope: dict, env: dict, label: str) -> Relation:
    """``relation``'s rows for which ``EXISTS (sub)`` (or its NOT) holds, ``sub`` reading
    the outer row in several conditions (the module docstring's rule)."""
    inner_names, linked, rest = split(sub, scope)
    if any(sub.args.get(k) for k in ("group", "having", "distinct")) or any(
            isinstance(n, exp.AggFunc) for item in sub.expressions for n in item.walk()):
        fail(f"{label}: a subquery that groups rows may refer to the outer query once, as "
             "inner.key = outer.key")
    hidden: dict = {}
    for part in linked:
        for col in part.find_all(exp.Column):
            if not is_outer(col, scope, inner_names):
                hidden.setdefault(_key(col), (f"{HIDDEN}{len(hidden)}", col))
    new = sub.copy()
    items = []
    for name, col in hidden.values():
        item = exp.alias_(col.copy(), name, quoted=True)
        item.meta["dpsql_hidden"] = True
        items.append(item)
    new.set("expressions", items)
    new.set("where", exp.Where(this=exp.and_(*[p.copy() for p in rest])) if rest else None)
    inner = resolver.select(new, env, label)
    binder = Binder(relation.table(), scope, relation.fanout)

    def placed(node):
        if not isinstance(node, exp.Column):
            return node
        if is_outer(node, scope, inner_names):
            return binder.bind(node.copy(), "WHERE")
        return column(hidden[_key(node)][0])
    conditions = [part.copy().transform(placed) for part in linked]
    names = {name: col.meta.get("dpsql_written") or col.sql(ANALYST_DIALECT)
             for name, col in hidden.values()}
    return semi_join_on(relation, inner, conditions, negated, label, resolver.metadata, names)


def _key(col: exp.Column) -> tuple:
    return ((col.table or "").lower(), col.name.lower())


def semi_join_on(outer: Relation, inner: Relation, conditions: list, negated: bool,
                 label: str, metadata, names: dict) -> Relation:
    """``outer`` rows for which some row of ``inner`` meets every one of ``conditions``
    (bound: outer columns by their names, inner ones as _dpsql_c...), one of which must
    tie the two to one person. ``names``: each _dpsql_c... column as the query wrote it."""
    if inner.unit != "public" and (outer.local_ids or inner.local_ids):
        fail(f"{label}: " + LOCAL_IDS.format(what="tested against other private rows"))
    key, link = None, None
    if inner.unit != "public":
        key, link = _tie(outer, inner, conditions, label, metadata, names)
    types = {**outer.types(), **{n: f.kind for n, f in inner.fields.items()
                                 if n.startswith(HIDDEN)}}
    cond = Checker(types, clause=f"WHERE of {label}").predicate(exp.and_(*conditions))
    _charge(outer, inner, cond, label)
    for col in list(cond.find_all(exp.Column)):
        col.set("table", exp.to_identifier("_in" if col.name.startswith(HIDDEN) else "_o"))
    # A public relation's rows as many as read when planning (the work charged above), so
    # that one grown since a cached plan read it meets no outer row (review s18, R2).
    capped = at_most(inner, [], inner.rows) if inner.unit == "public" else None
    rows = exp.select(exp.Star()).from_((capped or inner).source("_i"))
    if key is not None:
        rows = rows.where(exp.In(this=column(link), query=exp.Subquery(this=owned_once(*key))))
    test = exp.Exists(this=exp.select(exp.Literal.number(1)).from_(exp.Subquery(
        this=rows, alias=exp.TableAlias(this=exp.to_identifier("_in")))).where(cond))
    return filtered_by(outer, inner, exp.Not(this=test) if negated else test, key,
                       f"{'anti' if negated else 'semi'}-join {label} on {len(conditions)} "
                       "conditions, tied to the outer row's person", label)


def _charge(outer: Relation, inner: Relation, cond: exp.Expression, label: str) -> None:
    """Count ``cond`` toward the statement's work per private row (``MAX_ROW_WORK``): it runs
    for an outer row once for each inner row it is tested against, all of a public
    relation's rows or the person's own (sixteenth review of issue 33: a CASE-gated LIKE in
    an EXISTS over 1,000 VALUES rows ran into PostgreSQL's timeout with one person only)."""
    tested = max(inner.rows or 1, 1) if inner.unit == "public" else max(inner.k, 1) * inner.fanout
    fields = {**outer.fields, **{n: f for n, f in inner.fields.items() if n.startswith(HIDDEN)}}
    charge_work(field_cost(cond, fields), outer.fanout * tested, f"WHERE of {label}")


def _tie(outer: Relation, inner: Relation, conditions: list, label: str, metadata,
         names: dict) -> tuple:
    """(key of ``dpsql.plan.setops._through_key`` or None for the person's id, inner column)
    of the first equality of ``conditions`` that ties inner rows to the outer row's
    person; refused when none does."""
    pairs = []
    for cond in conditions:
        if isinstance(cond, exp.EQ) and all(isinstance(x, exp.Column)
                                            for x in (cond.this, cond.expression)):
            a, b = cond.this.name, cond.expression.name
            if a.startswith(HIDDEN) != b.startswith(HIDDEN):
                pairs.append((b, a) if a.startswith(HIDDEN) else (a, b))
    for outer_name, inner_name in pairs:
        outer_f, inner_f = outer.fields[outer_name.lower()], inner.fields[inner_name.lower()]
        key = _through_key(outer, outer_f, inner, inner_f, metadata)
        if key is not None:
            return key, inner_name
        if (outer.unit == "person" and inner.unit == "person"
                and (outer_f.is_id or outer_f.id_copy) and (inner_f.is_id or inner_f.id_copy)):
            return None, inner_name
    if pairs:
        outer_f, inner_f = outer.fields[pairs[0][0].lower()], inner.fields[pairs[0][1].lower()]
        _refuse_link(outer, outer_f, inner, replace(inner_f, name=names[pairs[0][1]]), label)
    fail(f"{label}: the subquery {TIED}; none of its conditions on the outer row is such an "
         "equality of two columns, so whether a row stays could depend on other persons' rows")
