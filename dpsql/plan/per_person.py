"""Per-person aggregation: a subquery or CTE that groups by the privacy unit's id.

Owns: the one aggregation allowed before the DP aggregation. The child's rows
are truncated to ``k`` per person first (``plan.nodes.Truncated``), so every
per-person aggregate has bounds from the metadata and ``k`` alone:
``COUNT(*)`` in ``[1, k]``, ``COUNT(x)``/``COUNT(DISTINCT x)`` in ``[0, k]``,
``SUM(x)`` in ``[k min(lo, 0), k max(hi, 0)]``, ``AVG``/``MIN``/``MAX`` in
``[lo, hi]`` (inputs clamped to ``[lo, hi]``). The result has one row per person
when grouped by the id alone (``k = 1``), otherwise at most ``k``. ``HAVING`` is
a row-level filter on the per-person rows. Any other aggregation in a subquery
mixes persons and is refused, except per key (``per_key``): a table that reaches its
person through ``references`` (order_items.order_id -> orders.order_id) grouped by that
key, whose rows then wait for their person as the table's rows do.
"""
from __future__ import annotations

import math
from dataclasses import replace

from sqlglot import exp

from .dialect import SUM_BOUND
from .rewrite import clamp, column, substitute
from ..frontend.binding import Binder, expression_weight, fail
from ..frontend.costs import text_length
from ..frontend.typecheck import Checker
from .bounds import Deriver
from .aggregates import PER_PERSON
from .nodes import truncated
from .relations import (HIDDEN_PID, Field, Relation, _check_name, _derive, _output_name,
                        _references_id, _unbounded_message, censored, field_text, not_null_id)
from ..frontend.dialect import ANALYST_DIALECT

PER_PERSON_AGGREGATES = PER_PERSON   # dpsql.plan.aggregates


class _PerPerson:
    """Builds one per-person aggregation (see the module docstring)."""

    def __init__(self, tree, child: Relation, binder: Binder, name: str, per: str = "person"):
        self.tree, self.child, self.binder, self.name = tree, child, binder, name
        self.per = per                   # "person", or the key of a per-key aggregation
        self.types = child.types()
        self.aggregates: list = []       # (bound node, output name, engine expression, Field)
        self.fields: dict = {}           # output name (lower case) -> Field
        self.projections: list = []
        self.aggs: list = []             # (bound node, output name) of each computed aggregate
        self.key_exprs: list = []        # the GROUP BY keys, typed
        self.key_outputs: dict = {}      # key index -> the output column that holds it

    def key_list(self) -> list:
        group = self.tree.args.get("group")
        if group is None:
            fail(f"aggregation inside {self.name!r} without GROUP BY mixes the rows of all "
                 "persons; only per-person aggregation (GROUP BY the privacy unit's id) is "
                 "allowed inside a subquery or CTE")
        if any(group.args.get(a) for a in ("rollup", "cube", "grouping_sets", "all")):
            fail(f"GROUP BY ROLLUP/CUBE/GROUPING SETS/ALL is not supported (inside {self.name!r})")
        items = self.tree.expressions
        by_alias = {i.alias.lower(): i.this for i in items if isinstance(i, exp.Alias)}
        keys = []
        for key in group.expressions:
            if isinstance(key, exp.Literal) and not key.is_string and key.this.isdigit() \
                    and 1 <= int(key.this) <= len(items):
                key = items[int(key.this) - 1].unalias()
            elif isinstance(key, exp.Column) and not key.table and key.name.lower() in by_alias \
                    and self.child.fields.get(key.name.lower()) is None:
                key = by_alias[key.name.lower()]
            bound = self.binder.bind(key.copy(), "GROUP BY")
            if any(isinstance(n, exp.AggFunc) for n in bound.walk()):
                fail(f"aggregate in GROUP BY (inside {self.name!r})")
            if bound not in keys:
                keys.append(bound)
        ids = [k for k in keys if isinstance(k, exp.Column) and (
            self.child.fields[k.name.lower()].is_id or self.child.fields[k.name.lower()].id_copy)]
        if self.child.pid is None and self.child.unit == "public":
            fail(f"aggregation inside {self.name!r} reads public rows only, which dpsql does "
                 "not aggregate inside a query; list the values (IN (...), VALUES) or query "
                 "the public table directly")
        if self.child.pid is None:
            fail(f"aggregation inside {self.name!r}: the table has row privacy (every row is a "
                 "person), so a GROUP BY inside a subquery or CTE would mix persons; aggregate "
                 "in the outer query")
        if not ids and self.per != "person":
            ref = self.child.ref
            fail(f"GROUP BY inside {self.name!r} must include {self.per}: the rows of "
                 f"{self.child.base.full_name} belong to persons only through {self.per} -> "
                 f"{ref[1].full_name}.{ref[2]}, so any other grouping mixes the rows of "
                 "different persons")
        if not ids:
            fail(f"GROUP BY inside {self.name!r} does not include the privacy unit's id "
                 f"({_person_column(self.child)}): that aggregation mixes the rows of "
                 "different persons. Group by the id (per-person aggregation) or aggregate in "
                 "the outer query")
        if self.child.bounded:
            fail(f"{self.name!r} aggregates per person a second time; aggregate the per-person "
                 "rows in the outer query")
        return keys

    def aggregate(self, node: exp.Expression, out: str) -> Field:
        if not isinstance(node, PER_PERSON_AGGREGATES):
            fail(f"{node.sql(ANALYST_DIALECT)[:60]} is not supported in a per-person aggregation "
                 f"(inside {self.name!r}); use COUNT, SUM, AVG, MIN or MAX")
        k = self.child.k
        checker = Checker(self.types, clause=f"the per-person aggregation {self.name!r}")
        arg = node.this
        if isinstance(node, exp.Count):
            if isinstance(arg, exp.Star) or isinstance(arg, (exp.Literal, exp.Boolean)):
                agg, lo = exp.Count(this=exp.Star()), 1
            elif isinstance(arg, exp.Distinct):
                if len(arg.expressions) != 1:
                    fail("COUNT(DISTINCT ...) takes one expression")
                agg, lo = exp.Count(this=exp.Distinct(expressions=[checker.check(arg.expressions[0])[0]])), 0
            else:
                agg, lo = exp.Count(this=checker.check(arg)[0]), 0
            return agg, Field(out, "int", lo, k, domain=tuple(range(lo, k + 1)), nullable=False,
                              origin=f"{node.sql(ANALYST_DIALECT)[:40]} per {self.per}, at most {k} rows",
                              in_bounds=True)
        expr, kind = checker.check(arg)
        if isinstance(node, (exp.Min, exp.Max)) and kind not in ("int", "float", "boolean"):
            return type(node)(this=expr), Field(out, kind, origin=node.sql(ANALYST_DIALECT)[:40])
        if kind not in ("int", "float", "boolean"):
            fail(f"{node.sql(ANALYST_DIALECT)[:60]} needs a number (inside {self.name!r})")
        d = Deriver(self.child.fields)
        lo, hi = (0, 1) if kind == "boolean" else d.interval(expr)
        if kind == "boolean":
            expr, kind = exp.Cast(this=expr, to=exp.DataType.build("BIGINT")), "int"
        if not (math.isfinite(lo) and math.isfinite(hi)):
            if isinstance(node, (exp.Min, exp.Max)):
                return type(node)(this=expr), Field(out, kind, origin=node.sql(ANALYST_DIALECT)[:40])
            fail(_unbounded_message(node, d.unbounded))
        if kind == "int":
            lo, hi = _within_int64(math.floor(lo)), _within_int64(math.ceil(hi))
        value = clamp(expr, lo, hi)
        # Typed, so that an engine sums it as what it is (Spark sums an untyped one as integers)
        value.type = exp.DataType.build("DOUBLE" if kind == "float" else "BIGINT")
        # At most k values per group, each within [lo, hi]: an engine whose float sums
        # raise on overflow reads whether they can (dpsql.engines.postgres.sums).
        bound = {SUM_BOUND: (k, max(abs(lo), abs(hi)))}
        if isinstance(node, exp.Sum):
            engine = "BIGINT" if kind == "int" else "DOUBLE"
            total = exp.Sum(this=value)
            total.meta.update(bound)
            return (exp.TryCast(this=total, to=exp.DataType.build(engine)),
                    Field(out, kind, k * min(lo, 0), k * max(hi, 0),
                          origin=f"SUM per {self.per} of {k} rows in [{lo:g}, {hi:g}]",
                          in_bounds=kind == "int"))
        if isinstance(node, exp.Avg):
            average = exp.Avg(this=value)
            average.meta.update(bound)
            return average, Field(out, "float", lo, hi, origin=f"AVG per {self.per}")
        return type(node)(this=value), Field(out, kind, lo, hi, origin=f"{node.key.upper()} per {self.per}",
                                             in_bounds=kind == "int")

    def add_aggregate(self, node, out: str) -> str:
        """Compute aggregate ``node`` as column ``out`` (once: a repeat reuses the first)."""
        child = self.child
        for existing, existing_out in self.aggs:
            if existing == node:
                return existing_out
        agg, f = self.aggregate(node, out)
        # Computed from the id (MIN(id), SUM(id), MAX(CAST(id AS VARCHAR)), COUNT(DISTINCT
        # id), ...): never a released key. A MIN/MAX keeps its column's values, so it needs
        # a threshold as that column does; any other aggregate is a new value that does.
        f.of_id = _references_id(node, child)
        f.censored = (not isinstance(node, (exp.Min, exp.Max))) or censored(node, child.fields)
        f.weight = expression_weight(node, lambda c: child.fields.get(
            c.name.lower(), Field("", "")).weight)
        f.text = text_length(node, field_text(child.fields)) if f.kind == "string" else None
        self.aggs.append((node, out))
        self.fields[out.lower()] = f
        self.projections.append(exp.alias_(agg, out, quoted=True))
        return out

    def add_outputs(self, keys: list) -> None:
        """The SELECT list: each item a GROUP BY key or one aggregate."""
        child, name, seen = self.child, self.name, set()
        for item in self.tree.expressions:
            out = _output_name(item)
            _check_name(out, seen, name)
            bound = self.binder.bind(item.unalias().copy(), "SELECT")
            if bound in keys:
                i = keys.index(bound)
                is_id = isinstance(bound, exp.Column) and child.fields[bound.name.lower()].is_id
                _, kind = Checker(self.types, clause=name).check(bound)
                self.fields[out.lower()] = _derive(bound if is_id else self.key_exprs[i], kind, child,
                                                   out, is_id)
                self.projections.append(exp.alias_(self.key_exprs[i], out, quoted=True))
                self.key_outputs.setdefault(i, out)
            elif isinstance(bound, exp.AggFunc):
                self.add_aggregate(bound, out)
            else:
                fail(f"{item.sql(ANALYST_DIALECT)[:60]} inside {name!r} is neither a GROUP BY key nor one "
                     "aggregate; per-person columns are keys or COUNT/SUM/AVG/MIN/MAX(...)")

    def mark_id(self) -> str:
        """The one output column that is the person's id (a hidden one if none is selected)."""
        fields, child = self.fields, self.child
        ids = [f.name for f in fields.values() if f.is_id]
        pid = ids[0] if ids else HIDDEN_PID
        for f in fields.values():
            f.is_id = f.name == pid
        if not ids:
            self.projections.append(exp.alias_(column(child.pid), HIDDEN_PID, quoted=True))
            fields[HIDDEN_PID] = replace(child.fields[child.pid.lower()], name=HIDDEN_PID, is_id=True)
        return pid

    def aliases(self) -> dict:
        """The SELECT list's aliases, bound (the first of a repeated name wins), so that
        HAVING may name one as DuckDB allows (``COUNT(*) AS k ... HAVING k > 2``): a name
        outside any aggregate that is no grouped column binds to the alias (the binder's
        rule, as in the outer query), and means exactly the aliased expression."""
        return {item.alias.lower(): self.binder.bind(item.this.copy(), "SELECT")
                for item in reversed(self.tree.expressions) if isinstance(item, exp.Alias)}

    def having_condition(self, having, keys: list) -> exp.Expression:
        """HAVING as a row-level filter over hidden columns of the per-person rows."""
        name, fields = self.name, self.fields
        bound = self.binder.bind(having.this.copy(), "HAVING", self.aliases(), keys)
        mapping = []
        for node in [n for n in bound.walk() if isinstance(n, exp.AggFunc)]:
            out = self.add_aggregate(node, f"_dpsql_h{len(self.aggs)}")
            mapping.append((node, column(out)))
        for i, key in enumerate(keys):
            if i not in self.key_outputs:
                out = f"_dpsql_h{len(self.aggs)}_{i}"
                _, kind = Checker(self.types, clause=name).check(key)
                fields[out.lower()] = _derive(self.key_exprs[i], kind, self.child, out, False)
                self.projections.append(exp.alias_(self.key_exprs[i], out, quoted=True))
                self.key_outputs[i] = out
            mapping.append((key, column(self.key_outputs[i])))
        having_expr = substitute(bound, mapping)
        return Checker({k: f.kind for k, f in fields.items()},
                       clause=f"HAVING of {name!r}").predicate(having_expr)

    def truncated_rows(self, keys: list) -> tuple:
        """(the child's rows after its WHERE, at most k per person; how that was done)."""
        child, name = self.child, self.name
        # Truncate the child's rows (after its WHERE) to k per person, then aggregate.
        rows = exp.select(exp.Star()).from_(child.source("_c"))
        where = self.tree.args.get("where")
        if where is not None:
            rows = rows.where(Checker(self.types, clause=f"WHERE of {name!r}").predicate(
                self.binder.bind(where.this.copy(), "WHERE")))
        rows = not_null_id(rows, child.pid)
        used = {child.pid} | {c.name for p in self.projections + self.key_exprs
                              for c in p.find_all(exp.Column)}
        used = sorted((child.fields[u.lower()].name for u in used if u.lower() in child.fields), key=str.lower)
        # Counting rows per person alone: keeping k of a person's n rows and counting them
        # gives min(n, k) whichever rows are kept, so the cap replaces the sampling.
        count_only = len(keys) == 1 and all(_counts_rows(node) for node, _ in self.aggs)
        if child.held:
            how = f"at most {child.k} row(s) per person, by construction"
        elif count_only:
            cap = exp.Anonymous(this="LEAST", expressions=[exp.Count(this=exp.Star()),
                                                            exp.Literal.number(child.k)])
            self.projections = [p.transform(lambda n: cap.copy() if isinstance(n, exp.Count) else n)
                                for p in self.projections]
            how = f"COUNT(*) per person capped at {child.k} (the count of {child.k} kept rows)"
        else:
            rows = truncated(rows, child.pid, child.k, used, prefix=f"_{len(child.steps)}")
            how = f"at most {child.k} row(s) per person kept (uniformly at random)"
        return rows, how


def _within_int64(end: int) -> int:
    """An end of an integer expression's interval, within int64: the expression's values are
    BIGINTs (NULL where they would leave int64), so this changes no value, and the clamp's
    ends stay BIGINT literals. (Review 34b, F1: an end beyond int64 was a DOUBLE literal,
    which made PostgreSQL sum the clamp in float8, where a per-person sum of 2^63 - 1
    rounds to 2^63 and its cast back to BIGINT raised.)"""
    return min(max(end, -2 ** 63), 2 ** 63 - 1)
def _person_column(child: Relation) -> str:
    """How the analyst names the person of ``child``: its table's id, or the column that
    references the person's table."""
    base = child.base
    if base.private_ids:
        return base.private_ids[0]
    return next((f"{c.name}, which references {c.references}" for c in base.columns.values()
                 if c.references), child.pid)


def _counts_rows(node) -> bool:
    return isinstance(node, exp.Count) and isinstance(node.this, (exp.Star, exp.Literal, exp.Boolean))


def per_key(tree: exp.Select, child: Relation, binder: Binder, name: str) -> Relation:
    """GROUP BY the key through which a table's rows reach their person (order_items
    GROUP BY order_id, order_id -> orders.order_id): one row per key value, a function of
    that value's rows only, truncated to the table's ``max_ids`` first so that its
    aggregates have bounds. Those rows belong to whoever owns the value; the relation
    still waits for its person, and every step that gives it one (a join with the
    referenced table, a semi-join on the key) keeps only values owned by exactly one
    person, so a per-key row is then row-level data of that person."""
    ref_field, target, target_col = child.ref
    key = child.fields[ref_field.lower()]
    fields = dict(child.fields)
    fields[ref_field.lower()] = replace(key, is_id=True)
    keyed = child.derived(fields, key.name, child.k, False, child.sql, child.steps)
    out = per_person(tree, keyed, binder, name, per=key.name)
    if out.pid == HIDDEN_PID:
        fail(f"{name!r} must select {key.name}, the key it groups by: its rows reach their "
             f"person only through {key.name} -> {target.full_name}.{target_col}")
    out.fields[out.pid.lower()] = replace(out.fields[out.pid.lower()], is_id=False,
                                          of_id=key.of_id)
    out.ref, out.pid, out.k, out.bounded = (out.pid, target, target_col), None, child.k, False
    return out


def per_person(tree: exp.Select, child: Relation, binder: Binder, name: str,
               per: str = "person") -> Relation:
    if child.unit == "reference" and per == "person":
        return per_key(tree, child, binder, name)
    builder = _PerPerson(tree, child, binder, name, per)
    keys = builder.key_list()
    for key in keys:
        expr, kind = Checker(builder.types, clause=f"GROUP BY of {name!r}").check(key)
        builder.key_exprs.append(expr)
    builder.add_outputs(keys)
    fields, key_exprs = builder.fields, builder.key_exprs
    pid = builder.mark_id()
    having = tree.args.get("having")
    condition = builder.having_condition(having, keys) if having is not None else None
    rows, how = builder.truncated_rows(keys)
    groups = [e.copy() for e in key_exprs]
    if not any(isinstance(e, exp.Column) and e.name == child.pid for e in groups):
        groups.append(column(child.pid))
    sql = exp.select(*builder.projections).from_(exp.Subquery(
        this=rows, alias=exp.TableAlias(this=exp.to_identifier("_t")))).group_by(*groups)
    hidden = [n for n in fields if n.startswith("_dpsql_h")]
    if condition is not None:
        # The columns only HAVING reads are dropped after it: not part of the relation
        # (SELECT * and UNION ALL above see the SELECT list's columns only).
        kept = [exp.alias_(column(f.name), f.name, quoted=True)
                for n, f in fields.items() if n not in hidden]
        sql = exp.select(*kept).from_(exp.Subquery(
            this=sql, alias=exp.TableAlias(this=exp.to_identifier("_p")))).where(condition)
    k = 1 if len(keys) == 1 else child.k
    steps = list(child.steps)
    if per != "person":
        how = how.replace("per person", f"per value of {per}")
    steps.append(f"truncation: {how}, before {name!r}")
    steps.append(f"{name}: per-{per} aggregation by {', '.join(key.sql(ANALYST_DIALECT) for key in keys)}"
                 f" -> at most {k} row(s) per {per}: "
                 + ", ".join(f"{f.name} {'key' if f.is_id and per != 'person' else f.bounds_text()}"
                             for n, f in fields.items() if n not in hidden and f.name != HIDDEN_PID)
                 + (f"; HAVING {having.this.sql(ANALYST_DIALECT)[:80]}" if having is not None else ""))
    out = child.derived({n: f for n, f in fields.items() if n not in hidden}, pid, k, True,
                        sql, steps)
    out.group_bounds = None
    return out
