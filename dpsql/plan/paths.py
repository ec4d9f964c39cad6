"""Implicit foreign-key path joins: the joins a referencing table needs to find its person.

Owns: ``join_to_person``. A query may aggregate ``shop.order_items`` alone, though its
rows reach their person only through ``order_id -> shop.orders.order_id``: the
metadata names the path (``references``), so the plan adds the join, exactly as if
the analyst had ended FROM with ``JOIN shop.orders _dpsql_path1 ON order_id =
_dpsql_path1.order_id`` (and again for each further hop of a longer path). The
join is built by ``dpsql.plan.joins.Join`` from that ON condition, so every rule of a
reference join (``dpsql.plan.references``: the key held by one row, ``k``, the work
bound) applies unchanged. Only what the join is for becomes part of the relation:
the referenced table is read as its key and its owner, and the owner becomes the
hidden person id (``_dpsql_pid``); none of the referenced table's other columns, and
no name the analyst could write (every ``_dpsql`` name is refused when a query is
parsed), is added. A join the analyst wrote already (``JOIN shop.orders o ON
i.order_id = o.order_id``) leaves nothing to add.

Only the relation the released aggregation reads gets the joins: a subquery of
order_items stays a referencing relation, which the outer query may still join
with orders itself.

``reaches`` and ``path_joins`` write the same path as SQL, for a rewrite that must
name the person inside a subquery (BigQuery's per-unit aggregation,
``dpsql.plan.contributions``): ``JOIN (SELECT order_id AS k, customer_id AS p FROM
shop.orders) r ON i.order_id = r.k``, one join per hop, each a reference join the
planner checks as any other.
"""
from __future__ import annotations

from dataclasses import replace

from sqlglot import exp

from ..frontend.binding import fail
from .joins import Join
from .relations import HIDDEN_PID, Relation, referenced, scan
from .rewrite import column

FROM = "_dpsql_from"
"""The hidden qualifier of the referencing column in the added ON condition."""


def join_to_person(resolver, relation: Relation, scope: dict) -> tuple:
    """(relation, scope) with the joins along ``references`` that give ``relation``'s rows
    their person; unchanged unless it is a referencing relation."""
    hops = 0
    while relation.unit == "reference":
        hops += 1
        if hops > len(resolver.metadata.tables):
            fail("the metadata's references go round in a circle; fix the metadata")
        relation, scope = _hop(resolver, relation, scope, hops)
    if hops:
        hidden = {k: f for k, f in relation.fields.items()
                  if not k.startswith("_dpsql_path")}
        relation.fields = hidden
        scope = {q: cols for q, cols in scope.items() if not q.startswith("_dpsql")}
    return relation, scope


def _hop(resolver, relation: Relation, scope: dict, n: int) -> tuple:
    ref_field, target, target_col = relation.ref
    if relation.fields.get(ref_field.lower()) is None:
        fail(f"the rows of {relation.base.full_name} reach their person through {ref_field} "
             f"-> {target.full_name}.{target_col}: keep {ref_field} among the columns of the "
             "subquery or CTE, or join it there")
    alias = f"_dpsql_path{n}"
    right = _referenced(resolver, target, target_col, alias)
    lscope = dict(scope)
    lscope[FROM] = {"ref": ref_field}
    rscope = {alias: {target_col.lower(): f"{alias}_key"}}
    on = exp.EQ(this=exp.column("ref", FROM), expression=exp.column(target_col, alias))
    node = exp.Join(this=exp.Table(this=exp.to_identifier(target.name)), on=on)
    pending = relation.base.full_name
    source = relation.fields[ref_field.lower()].source
    through = source.rsplit(".", 1)[-1] if source else ref_field.split(".")[-1]
    joined, scope = Join(resolver, relation, lscope, right, rscope, node).build()
    how = joined.steps[-1].split(": ", 1)[1].split("; ", 1)[-1]
    joined.steps[-1] = (f"join (INNER, added by dpsql) {pending} reaches its person through "
                        f"{target.full_name} (joined on {through}): {how}")
    return joined, scope


def _referenced(resolver, table, key: str, alias: str) -> Relation:
    """``table`` read as its ``key`` and what its rows belong to: the person's id
    (hidden), or the column through which it reaches its person in turn."""
    base = scan(table, resolver.metadata)
    fields = {f"{alias}_key": replace(base.fields[key.lower()], name=f"{alias}_key")}
    items = [exp.alias_(column(key), f"{alias}_key", quoted=True)]
    pid, ref = None, None
    if base.unit == "person":
        pid = HIDDEN_PID
        fields[HIDDEN_PID] = replace(base.fields[base.pid.lower()], name=HIDDEN_PID)
        items.append(exp.alias_(column(base.pid), HIDDEN_PID, quoted=True))
    elif base.unit == "reference":
        name = f"{alias}_ref"
        fields[name] = replace(base.fields[base.ref[0].lower()], name=name)
        items.append(exp.alias_(column(base.ref[0]), name, quoted=True))
        ref = (name, base.ref[1], base.ref[2])
    else:
        fail(f"{table.full_name} has no privacy unit to reach")
    sql = exp.select(*items).from_(base.source("_p"))
    out = base.derived(fields, pid, base.k, False, sql, [])
    out.ref = ref
    return out


def reaches(table, metadata) -> tuple:
    """(the column naming ``table``'s person, the hops to the table that holds it): ``hops``
    is a list of (referencing column, referenced table, its key), empty when ``table``
    holds the person itself; (None, []) for row privacy and public tables."""
    hops, seen = [], set()
    while not (table.row_privacy or table.public):
        if table.private_ids:
            return table.private_ids[0], hops
        ref = next((c for c in table.columns.values() if c.references), None)
        if ref is None or table.full_name in seen:
            return None, []
        seen.add(table.full_name)
        target, key = referenced(metadata, ref.references)
        if key.private_id:
            return ref.name, hops
        hops.append((ref.name, target, key.name))
        table = target
    return None, []


def path_joins(qualifier: str, hops: list, person: str, prefix: str) -> tuple:
    """(the person's column, the joins that reach it from ``qualifier``'s referencing
    column along ``hops``), each referenced table read as its key (``<prefix>k``) and the
    column that goes on (``<prefix>f``, at the end the person, ``<prefix>p``)."""
    joins, previous = [], exp.column(hops[0][0], table=qualifier)
    for i, (_, table, key) in enumerate(hops, 1):
        alias = f"{prefix}r{i}"
        onward, name = (hops[i][0], f"{prefix}f") if i < len(hops) else (person, f"{prefix}p")
        node = exp.Table(this=exp.to_identifier(table.name),
                         db=exp.to_identifier(table.schema) if table.schema else None)
        sub = exp.select(exp.alias_(exp.column(key), f"{prefix}k"),
                         exp.alias_(exp.column(onward), name)).from_(node)
        joins.append(exp.Join(this=exp.Subquery(this=sub, alias=exp.TableAlias(
            this=exp.to_identifier(alias))), on=exp.EQ(this=previous, expression=exp.column(
                f"{prefix}k", table=alias))))
        previous = exp.column(name, table=alias)
    return previous, joins
