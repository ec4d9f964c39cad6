"""Semi-joins and UNION ALL of relations: whose rows the result holds, and how many.

Owns: the privacy analysis of filtering rows by another relation (``x IN (SELECT
...)``, ``EXISTS`` and their negations) and of ``UNION ALL``; joins proper are
``dpsql.plan.joins``. The same rules hold: every row is a function of one
person's rows (and public data), and ``k`` bounds one person's rows after.
- A semi-join is a filter: on private data only when both sides are the
  person's id, so whether a row stays depends on its own person. ``k`` unchanged.
- UNION ALL: the same unit in every part; ``k`` = the sum; the parts' work per
  private row (``fanout``) adds up.
"""
from __future__ import annotations

from sqlglot import exp

from .rewrite import column
from ..frontend.binding import fail
from .joins import LOCAL_IDS
from .relations import HIDDEN_PID, MAX_FANOUT, MAX_PUBLIC_ROWS, Field, Relation


# ------------------------------------------------------------------ semi-joins

def semi_join(outer: Relation, column_name: str, inner: Relation, negated: bool,
              label: str) -> Relation:
    """``outer`` rows whose ``column_name`` is (not) among ``inner``'s one column."""
    if inner.unit != "public" and (outer.local_ids or inner.local_ids):
        fail(f"{label}: " + LOCAL_IDS.format(what="tested against other private rows"))
    cols = inner.visible()
    if len(cols) != 1:
        fail(f"{label}: the subquery must select exactly one column")
    inner_col = cols[0]
    outer_f = outer.fields[column_name.lower()]
    if inner.unit != "public":
        if outer.unit != "person" or inner.unit != "person":
            fail(f"{label}: a subquery over private rows is supported only on the privacy unit "
                 "(WHERE id IN (SELECT id FROM ...)) of two tables of the same persons")
        if not (outer_f.is_id or outer_f.id_copy) or not (inner_col.is_id or inner_col.id_copy):
            fail(f"{label}: both sides must be the privacy unit's id: whether a row stays may "
                 "depend only on its own person's rows")
    if inner_col.kind != outer_f.kind:
        fail(f"{label}: the subquery's column is {inner_col.kind}, the tested column "
             f"{outer_f.kind}; CAST one of them")
    values = exp.select(column(inner_col.name)).from_(inner.source("_in")).where(
        exp.Not(this=exp.Is(this=column(inner_col.name), expression=exp.Null())))
    cond = exp.In(this=column(outer_f.name), query=exp.Subquery(this=values))
    if negated:
        cond = exp.Not(this=cond)
    sql = exp.select(exp.Star()).from_(outer.source("_o")).where(cond)
    rel = outer.derived(dict(outer.fields), outer.pid, outer.k, outer.bounded, sql,
                        outer.steps + [s for s in inner.steps if s not in outer.steps])
    rel.tables = tuple(dict.fromkeys(outer.tables + inner.tables))
    if inner.unit != "public":
        rel.fanout = outer.fanout + inner.fanout
        if rel.fanout > MAX_FANOUT:
            fail(f"{label}: the query reads each private row {rel.fanout:,} times in all, more "
                 f"than dpsql's limit of {MAX_FANOUT:,} per private row")
    rel.steps.append(f"{'anti' if negated else 'semi'}-join {label}: rows kept by their own "
                     "person's rows only; rows per person unchanged")
    return rel


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
