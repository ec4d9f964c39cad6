"""Semi-joins and UNION ALL of relations: whose rows the result holds, and how many.

Owns: the privacy analysis of filtering rows by another relation (``x IN (SELECT
...)``, ``EXISTS`` and their negations) and of ``UNION ALL``; joins proper are
``dpsql.plan.joins``. The same rules hold: every row is a function of one
person's rows (and public data), and ``k`` bounds one person's rows after.
- A semi-join is a filter, so ``k`` is unchanged. On private data it must keep
  whether a row stays a function of its own person's rows: both sides are the
  person's id, or both are one key that the metadata's ``references`` point at
  (orders.order_id, which order_items.order_id references), in a table whose rows
  have a person. Then only key values that this table gives to exactly one person
  are kept on the inner side (a broken foreign key matches nothing), so the inner
  rows an outer row meets are its own person's (``_through_key``).
- UNION ALL: the same unit in every part; ``k`` = the sum; the parts' work per
  private row (``fanout``) adds up.
"""
from __future__ import annotations

from sqlglot import exp

from .rewrite import WHOLE, column, typed_name
from ..frontend.binding import fail
from .joins import LOCAL_IDS
from .relations import (HIDDEN_PID, MAX_FANOUT, MAX_PUBLIC_ROWS, Field, Relation, referenced,
                        scan)


# ------------------------------------------------------------------ semi-joins

def semi_join(outer: Relation, column_name: str, inner: Relation, negated: bool,
              label: str, metadata=None, not_in: bool = False) -> Relation:
    """``outer`` rows whose ``column_name`` is (not) among ``inner``'s one column.

    ``not_in``: the query wrote ``NOT IN`` (``_absent`` says how NULLs count), not
    ``NOT EXISTS``, where a NULL matches nothing on either side."""
    if inner.unit != "public" and (outer.local_ids or inner.local_ids):
        fail(f"{label}: " + LOCAL_IDS.format(what="tested against other private rows"))
    # HAVING's hidden columns (_dpsql_h...) are not the subquery's
    cols = [f for f in inner.visible() if not f.name.lower().startswith("_dpsql")]
    if len(cols) != 1:
        fail(f"{label}: the subquery must select exactly one column")
    inner_col = cols[0]
    outer_f = outer.fields[column_name.lower()]
    key = None
    if inner.unit != "public":
        key = _through_key(outer, outer_f, inner, inner_col, metadata)
        on_ids = (outer.unit == "person" and inner.unit == "person"
                  and (outer_f.is_id or outer_f.id_copy) and (inner_col.is_id or inner_col.id_copy))
        if key is None and not on_ids:
            _refuse_link(outer, outer_f, inner, inner_col, label)
    if inner_col.kind != outer_f.kind:
        fail(f"{label}: the subquery's column is {inner_col.kind}, the tested column "
             f"{outer_f.kind}; CAST one of them")
    values = exp.select(column(inner_col.name)).from_(inner.source("_in"))
    if not (not_in and inner.unit == "public"):     # public NOT IN: SQL's NULLs, exactly
        values = values.where(_not_null(column(inner_col.name)))
    if key is not None:
        values = values.where(exp.In(this=column(inner_col.name),
                                     query=exp.Subquery(this=owned_once(*key))))
    cond = exp.In(this=column(outer_f.name), query=exp.Subquery(this=values))
    if negated:
        cond = _absent(cond, column(outer_f.name), inner, inner_col, not_in, label)
    return filtered_by(outer, inner, cond, key, f"{'anti' if negated else 'semi'}-join "
                       f"{label}: rows kept by their own person's rows only", label)


def filtered_by(outer: Relation, inner: Relation, cond: exp.Expression, key: tuple | None,
                step: str, label: str) -> Relation:
    """``outer``'s rows (as ``_o``) for which ``cond``, a test against ``inner``'s rows,
    holds: a filter (``k`` unchanged); the work per private row is both sides'."""
    sql = exp.select(exp.Star()).from_(outer.source("_o")).where(cond)
    rel = outer.derived(dict(outer.fields), outer.pid, outer.k, outer.bounded, sql,
                        outer.steps + [s for s in inner.steps if s not in outer.steps])
    rel.tables = tuple(dict.fromkeys(outer.tables + inner.tables + ((key[0],) if key else ())))
    if inner.unit != "public":
        rel.fanout = outer.fanout + inner.fanout
        if rel.fanout > MAX_FANOUT:
            fail(f"{label}: the query reads each private row {rel.fanout:,} times in all, more "
                 f"than dpsql's limit of {MAX_FANOUT:,} per private row")
    through = (f" (through {key[0].full_name}.{key[1]}; a value it gives to more than one "
               f"{key[2]} matches nothing)" if key else "")
    rel.steps.append(f"{step}{through}; rows per person unchanged")
    return rel


def _not_null(node: exp.Expression) -> exp.Expression:
    return exp.Not(this=exp.Is(this=node, expression=exp.Null()))


def _absent(cond: exp.In, outer_value: exp.Expression, inner: Relation, inner_col: Field,
            not_in: bool, label: str) -> exp.Expression:
    """The negation of ``cond`` (``outer_value IN (inner values, NULLs left out)``).

    ``NOT EXISTS``: a NULL matches nothing, so an outer NULL is always kept. ``NOT IN``
    over public rows: SQL's own (the values keep their NULLs; whether the set is empty is
    public). ``NOT IN`` over private rows: a NULL among the inner values would make it
    true for no row, so one person's NULL could empty the whole answer (no bound holds):
    the inner column must not hold NULLs by the metadata (``nullable: false``), by the
    query (``WHERE x IS NOT NULL``), or because a NULL there is a row without a person
    (the person's id, or the key through which the rows reach their person: dpsql drops
    such rows everywhere). An outer NULL is never kept: SQL keeps it only when the set is
    empty, which other persons' rows decide (docs/sql.md)."""
    if not not_in:
        return exp.or_(exp.Is(this=outer_value.copy(), expression=exp.Null()), exp.Not(this=cond))
    if inner.unit == "public":
        return exp.Not(this=cond)
    personal = inner_col.is_id or inner_col.id_copy or (
        inner.unit == "reference" and inner.ref is not None
        and inner.ref[0].lower() == inner_col.name.lower())
    if inner_col.nullable and not personal:
        fail(f"{label}: the subquery's {inner_col.name} may be NULL (the metadata does not "
             "declare it nullable: false), and SQL's NOT IN is then true for no row, so one "
             "person's NULL would empty the whole answer. Write NOT EXISTS (SELECT ... WHERE "
             "inner.key = outer.key ...), where a NULL matches nothing, or add WHERE "
             f"{inner_col.name} IS NOT NULL to the subquery")
    return exp.and_(_not_null(outer_value.copy()), exp.Not(this=cond))


def _key_of(f: Field) -> str | None:
    """The metadata column whose values ``f`` holds unchanged: the column it references,
    or its own (``schema.table.column``, lower case)."""
    return f.ref or f.source


def _through_key(outer: Relation, outer_f: Field, inner: Relation, inner_col: Field,
                 metadata) -> tuple | None:
    """(table T, key column, T's person column) when both sides hold one key of T that a
    ``references`` of the metadata points at (orders.order_id) and T's rows have a person;
    None otherwise.

    Why this keeps a row's fate with its person: the outer value comes from a row of T
    that belongs to the outer row's person (a column of T itself, or a referencing column
    joined with T, whose broken keys the join dropped; or, still to be joined, the column
    through which the row reaches its person at all); the inner rows of one value are
    rows of T with that value or rows reaching their person through it. Keeping only
    values that T gives to exactly one person (``owned_once``) makes them all that person's."""
    key = _key_of(outer_f)
    if (metadata is None or key is None or outer.unit not in ("person", "reference")
            or outer_f.is_id
            or inner.unit not in ("person", "reference") or _key_of(inner_col) != key):
        return None
    targets = [referenced(metadata, c.references) for t in metadata.tables.values()
               for c in t.columns.values() if c.references]
    found = [(t, c) for t, c in targets if f"{t.full_name}.{c.name}".lower() == key]
    if not found:
        return None
    table, col = found[0]
    owner = scan(table, metadata)
    if owner.unit != "person" or col.private_id:
        return None
    return table, col.name, owner.pid


def owned_once(table, key: str, owner: str) -> exp.Select:
    """The values of ``table.key`` that belong to exactly one person (``owner``, not NULL)
    in the whole table: a value two persons claim (a broken foreign key) is left out.
    Written ``<= 1`` (the same, as every group has an owner): PostgreSQL estimates ``= 1``
    of an aggregate at one row and then joins by nested loop, quadratic in the table."""
    persons = exp.Count(this=exp.Distinct(expressions=[column(owner)]))
    whole = exp.Table(this=exp.to_identifier(typed_name(table), quoted=True))
    whole.meta[WHOLE] = True        # every stored row, never the cut (dpsql.plan.precut)
    return (exp.select(column(key))
            .from_(whole)
            .where(exp.Not(this=exp.Is(this=column(owner), expression=exp.Null())))
            .group_by(column(key))
            .having(exp.LTE(this=persons, expression=exp.Literal.number(1))))


def _refuse_link(outer: Relation, outer_f: Field, inner: Relation, inner_col: Field,
                 label: str) -> None:
    """A semi-join over private rows on anything but the person or a shared key."""
    if "row" in (outer.unit, inner.unit):
        fail(f"{label}: a subquery over private rows is supported only on the privacy unit "
             "(WHERE id IN (SELECT id FROM ...)) of two tables of the same persons, or on a key "
             "that references tie to one person; a row-privacy table has neither")
    fail(f"{label}: both sides must be the privacy unit's id, or one key that the metadata's "
         "references tie to one person's rows (o.order_id IN (SELECT i.order_id ...) where "
         f"order_items.order_id references orders.order_id); {outer_f.name} and "
         f"{inner_col.name} are neither, so whether a row stays could depend on other "
         "persons' rows")


# ------------------------------------------------------------------ UNION ALL

def union_all(parts: list, name: str) -> Relation:
    """The rows of every part; a person has at most the sum of the parts' bounds."""
    first = parts[0]
    if any(p.local_ids for p in parts):
        fail(f"UNION ALL in {name!r}: " + LOCAL_IDS.format(what="unioned"))
    units = {p.unit for p in parts}
    if len(units) != 1 or "reference" in units:
        fail(f"UNION ALL in {name!r}: every part must hold rows of the same kind (all of persons "
             "with their id, all row-privacy, or all public)")
    width = len(first.visible())
    if any(len(p.visible()) != width for p in parts):
        fail(f"UNION ALL in {name!r}: every part must have {width} column(s)")
    unit = first.unit
    fields = {}
    for i, f in enumerate(first.visible()):
        fields[f.name.lower()] = _union_field(i, f, parts, unit, name)
    sql = _union_sql(parts, unit)
    pid = None
    if unit == "person":
        fields[HIDDEN_PID] = Field(HIDDEN_PID, parts[0].fields[parts[0].pid.lower()].kind,
                                   is_id=True, of_id=True, origin="UNION ALL")
        pid = HIDDEN_PID
    k = sum(p.k for p in parts)
    steps = [s for p in parts for s in p.steps]
    steps.append(f"UNION ALL of {len(parts)} parts in {name!r}: at most "
                 + " + ".join(str(p.k) for p in parts) + f" = {k} row(s) per person")
    tables = tuple(dict.fromkeys(t for p in parts for t in p.tables))
    bounded = unit != "person" or all(p.bounded for p in parts)
    fanout = sum(p.fanout for p in parts)
    if fanout > MAX_FANOUT:
        fail(f"UNION ALL in {name!r}: its parts read each private row {fanout:,} times in all, "
             f"more than dpsql's limit of {MAX_FANOUT:,} per private row (the work one "
             "person's rows cause must not grow with the query)")
    rows = (sum(p.rows for p in parts) if unit == "public" and all(p.rows is not None for p in parts)
            else None)
    if rows is not None and rows > MAX_PUBLIC_ROWS:
        fail(f"UNION ALL in {name!r}: {rows:,} public rows, more than dpsql's limit of "
             f"{MAX_PUBLIC_ROWS:,}")
    return Relation(first.base, fields, pid, k, bounded, sql, steps, unit, tables,
                    fanout=fanout, rows=rows)


def _union_field(i: int, f: Field, parts: list, unit: str, name: str) -> Field:
    """Column ``i`` (named ``f`` in the first part): the hull of the parts' columns."""
    column_fields = [p.visible()[i] for p in parts]
    kinds = {c.kind for c in column_fields}
    if len(kinds) != 1:
        fail(f"UNION ALL in {name!r}: column {i + 1} ({f.name}) is "
             f"{' in one part and '.join(sorted(kinds))} in another; CAST to one type")
    bounded = all(c.lower is not None and c.upper is not None for c in column_fields)
    domain = None
    if all(c.domain is not None for c in column_fields):
        domain = tuple(dict.fromkeys(v for c in column_fields for v in c.domain))
    return Field(
        f.name, f.kind, min(c.lower for c in column_fields) if bounded else None,
        max(c.upper for c in column_fields) if bounded else None, domain=domain,
        nullable=any(c.nullable for c in column_fields),
        of_id=any(c.of_id for c in column_fields),
        censored=any(c.censored for c in column_fields),
        weight=max(c.weight for c in column_fields),
        text=max(c.text_bytes() for c in column_fields) if f.kind == "string" else None,
        in_bounds=all(c.in_bounds for c in column_fields),
        id_copy=unit == "person" and all(c.is_id or c.id_copy for c in column_fields),
        origin="UNION ALL")


def _union_sql(parts: list, unit: str) -> exp.Select:
    """The parts' rows under the first part's column names (and each person's id)."""
    first = parts[0]
    selects = []
    for p in parts:
        items = [exp.alias_(column(c.name), f.name, quoted=True)
                 for c, f in zip(p.visible(), first.visible())]
        if unit == "person":
            items.append(exp.alias_(column(p.pid), HIDDEN_PID, quoted=True))
        selects.append(exp.select(*items).from_(p.source("_u")))
    sql = selects[0]
    for s in selects[1:]:
        sql = exp.union(sql, s, distinct=False)
    return exp.select(exp.Star()).from_(exp.Subquery(this=sql, alias=exp.TableAlias(
        this=exp.to_identifier("_union"))))
