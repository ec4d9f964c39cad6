"""Reference joins: a table that reaches its person through ``references``, joined with
the table it references.

Owns: the privacy analysis of ``order_items i JOIN orders o ON i.order_id =
o.order_id`` (order_items.order_id references orders.order_id, whose customer_id
is the person). The referencing side (``pending``, unit "reference") has no
person of its own; each of its rows belongs to the person of the referenced row
with its key. The rules:

- Both join columns must be the tables' own columns, unchanged (``Field.ref`` on
  the referencing side, ``Field.source`` on the other): a value renamed or
  computed in the query would hand rows to another person.
- The plan keeps only key values held by **exactly one row** of the referenced
  table, and that row's owner not NULL (``key_held_once``). A key given to two
  persons (a broken foreign key) is dropped, so one person's rows never depend on
  another's; a key repeated in the referenced table is dropped too, so that a
  referencing row meets the copies of one referenced row only (below). Which keys
  are kept depends only on the rows that hold the key: the rows of its owners, and
  rows that belong to no one.
- ``k`` afterwards is the referencing table's bound (plus the other side's, for a
  LEFT join that keeps it); the aggregation truncates to it.

The work bound (``Relation.fanout``: rows of a relation per private source row of
its person). A reference join matches each referencing row with the rows of *its*
key only. Since the key is held by one row ``r`` of the referenced table T, the
rows of the other side with that key are the copies of ``r`` that earlier joins
made: at most ``M = other.copies[T]`` (1 when T was read directly; 1 x k_c after a
join of ``customers c`` (``max_ids`` k_c) with ``orders`` on the person: each order
row meets at most k_c customer rows). So each referencing row meets at most M rows,
and the join holds at most ``pending.fanout x M`` rows per referencing source row.
Counted from the other side, the copies of one referenced row (a customer row
copied once per order) meet disjoint sets of referencing rows, one key each: in
all, the person's referencing rows, each already counted. The join's fanout is
``max(pending.fanout x M, other.fanout)`` (the max for a LEFT join that keeps the
other side's unmatched rows), within MAX_FANOUT; the old rule multiplied the other
side's copies by the referencing side's ``k`` (customers x orders x lineitems:
30 x 210 = 6,300 per customer row) though no referencing row meets more than one
order row.

The referencing side is not truncated before the join (it has no person yet), so a
referenced row may meet many referencing rows: the bound is on the total, at most
the fanout times the person's own rows, which is what keeps the time a query takes
from growing with one person beyond a factor the metadata fixes. After the join the
other side's copies are no longer bounded per row (a referenced row meets all of
its key's referencing rows), so ``copies`` keeps the referencing side's tables only:
a second table joined through a reference to the same referenced rows (orders with
two item tables: items x items per order) is refused.
"""
from __future__ import annotations

from sqlglot import exp

from ..frontend.binding import fail
from .relations import MAX_FANOUT, Relation
from .rewrite import WHOLE, column, typed_name


def reference_join(join, fields, pairs, lback, rback) -> tuple:
    """(result, how, lsql, rsql, fanout) of ``join`` (a ``dpsql.plan.joins.Join`` one of
    whose sides is a referencing relation)."""
    left, right = join.left, join.right
    pending, other = (left, right) if left.unit == "reference" else (right, left)
    back_p, back_o = (lback, rback) if pending is left else (rback, lback)
    ref_field, target_table, target_col = pending.ref
    target = f"{target_table.full_name}.{target_col}".lower()
    match = None
    for a, b in pairs:
        p_name, o_name = (a, b) if pending is left else (b, a)
        p_src, o_src = back_p.get(p_name), back_o.get(o_name)
        if (pending.fields[p_src.lower()].ref == target
                and other.fields[o_src.lower()].source == target):
            match = (p_name, o_name)
    if match is None or join.cross:
        fail(f"the rows of {pending.base.full_name} belong to persons through "
             f"{ref_field} -> {target_table.full_name}.{target_col}: join them on exactly "
             f"that (ON {ref_field} = {target_table.name}.{target_col}), both columns as "
             "they are in the tables (not renamed from or computed by the query)")
    if other.unit not in ("person", "reference"):
        fail(f"{target_table.full_name} has no privacy unit to reach")
    keeps_other = join.side == "LEFT" and other is left
    k = pending.k + (other.k if keeps_other else 0)
    owner = owner_column(target_table)
    fanout, copies, meets = _reference_fanout(pending, other, target_table)
    how = (f"{pending.base.full_name} reaches its person through {ref_field} -> "
           f"{target_table.full_name}.{target_col}; a {target_col} that "
           f"{target_table.full_name} gives to more than one {owner} is dropped, and so is one "
           f"it holds in more than one row, so each {pending.base.name} row meets at most "
           f"{meets} row(s) of the other side; truncated to {k} row(s) per person before "
           "aggregation")
    extra = exp.In(this=column(ref_field),
                   query=exp.Subquery(this=key_held_once(target_table, target_col, owner)))
    result = dict(unit=other.unit, pid=other.pid, k=k, bounded=False, base=other.base,
                  ref=other.ref, groups=None, owner_left=other is left, copies=copies)
    lsql = filtered(left, extra) if pending is left else left
    rsql = right if pending is left else filtered(right, extra)
    return result, how, lsql, rsql, fanout


def _reference_fanout(pending: Relation, other: Relation, target) -> tuple:
    """(fanout, copies, M) of a reference join (the module docstring's bound), refused
    beyond MAX_FANOUT or where the referenced rows' copies are not bounded."""
    meets = other.copies.get(target.full_name.lower())
    if meets is None:
        fail(f"earlier joins already match each row of {target.full_name} with a number of "
             f"rows that grows with one person's rows (another table reaching its person "
             f"through {target.full_name}); joining {pending.base.full_name} through it as "
             "well would multiply them, so one person's work could grow as a power of their "
             "rows. Aggregate each such table per person in its own subquery, and join those")
    fanout = max(pending.fanout * meets, other.fanout)
    if fanout > MAX_FANOUT:
        fail(f"this join through a reference makes each private row meet up to {fanout:,} "
             f"rows (each {pending.base.full_name} row meets the {meets:,} copie(s) that earlier "
             f"joins made of its {target.full_name} row, x {pending.fanout:,} from its own "
             f"joins; the other side holds up to {other.fanout:,} rows per private row), more "
             f"than dpsql's limit of {MAX_FANOUT:,} per private row, which keeps the work one "
             "person's rows cause (and so the time a query takes) from growing with the "
             "query. Join fewer tables, or aggregate per person first")
    copies = {name: c * meets for name, c in pending.copies.items()}
    return fanout, copies, meets


def key_held_once(table, key: str, owner: str) -> exp.Select:
    """The values of ``key`` held by exactly one row of ``table``, whose ``owner`` is not
    NULL: a key of two persons (a broken foreign key) or repeated is not among them."""
    typed = exp.Table(this=exp.to_identifier(typed_name(table), quoted=True))
    typed.meta[WHOLE] = True        # every stored row, never the cut (dpsql.plan.precut)
    # COUNT(*) <= 1 AND COUNT(owner) >= 1 is COUNT(*) = 1 AND COUNT(owner) = 1 (a group has a
    # row), written so that PostgreSQL does not estimate one row and join by nested loop
    once = exp.and_(
        exp.LTE(this=exp.Count(this=exp.Star()), expression=exp.Literal.number(1)),
        exp.GTE(this=exp.Count(this=column(owner)), expression=exp.Literal.number(1)))
    return exp.select(column(key)).from_(typed).group_by(column(key)).having(once)


def owner_column(table) -> str:
    """The column of ``table`` that names whose its rows are: its private_id, or the
    column through which it reaches its person."""
    if table.private_ids:
        return table.private_ids[0]
    return next(c.name for c in table.columns.values() if c.references)


def filtered(relation: Relation, condition) -> Relation:
    """``relation``'s rows for which ``condition`` holds (nothing else changes)."""
    if condition is None:
        return relation
    sql = exp.select(exp.Star()).from_(relation.source("_f")).where(condition)
    return relation.derived(dict(relation.fields), relation.pid, relation.k, relation.bounded,
                            sql, list(relation.steps))
