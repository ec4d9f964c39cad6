"""Rewrite rule: expressions inside aggregates, and public group keys, become columns.

Owns: lifting the argument of ``SUM``/``AVG``/``VAR``/``STDDEV`` when it is an
expression (``SUM(CASE WHEN married THEN 1 ELSE 0 END)``, ``AVG(age - 30)``)
into a derived column of the relation, with bounds derived from the metadata
and the query (``dpsql.plan.bounds``); and lifting group keys whose possible
values follow from the query (``age // 10``, a literal ``CASE``, a date part) into
columns with that public value set. The aggregation planner then sees plain
bounded columns, exactly as for a metadata table.

Also refuses, whatever the metadata says, a released ``GROUP BY`` on the
privacy unit's id or any expression of it: it would publish ids.
"""
from __future__ import annotations

import math
from dataclasses import replace

from sqlglot import exp

from ..errors import QueryError
from .aggregates import BOUNDED
from .dialect import int_constant
from .rewrite import clamp, column, substitute
from ..frontend.typecheck import check
from .bounds import Deriver
from .relations import Field, Relation, _unbounded_message
from ..frontend.dialect import ANALYST_DIALECT

BOUNDED_AGGREGATES = BOUNDED       # dpsql.plan.aggregates: their argument needs bounds
MAX_GRID = 10_000
"""Most public key combinations one query may release (each a noisy row)."""


def refuse_id_keys(query, relation: Relation) -> None:
    for key in query.keys:
        for col in key.find_all(exp.Column):
            f = relation.fields.get(col.name.lower())
            if f is not None and (f.of_id or f.is_id or f.name == relation.pid):
                raise QueryError(
                    f"GROUP BY {key.sql(ANALYST_DIALECT)[:60]} uses the privacy unit's id: releasing "
                    "one group per person (or per value computed from the id) would publish "
                    "who is in the data, whatever censor_dims says. Group per person inside a "
                    "subquery, e.g. SELECT AVG(n) FROM (SELECT id, COUNT(*) AS n FROM t "
                    "GROUP BY id)")


def _with_argument(node, name: str) -> exp.Expression:
    """``node`` reading column ``name`` (a quantile keeps its p)."""
    new = node.copy()
    new.set("this", column(name))
    # Messages name the aggregate as the analyst wrote it, never the plan's own column
    new.meta["dpsql_written"] = node.meta.get("dpsql_written") or node.sql(ANALYST_DIALECT)
    return new


def lift(query):
    """``query`` over a relation in which every bounded aggregate reads a column."""
    relation: Relation = query.relation
    refuse_id_keys(query, relation)
    types = relation.types()
    new_fields: list = []
    mapping: list = []
    deriver = Deriver(relation.fields)
    lifted: dict = {}      # argument (as written) -> its column: AVG(x + 1), SUM(x + 1) share one
    for node in query.aggregates:
        if not isinstance(node, BOUNDED_AGGREGATES) or isinstance(node.this, exp.Column):
            continue
        if node.this in lifted:
            mapping.append((node, _with_argument(node, lifted[node.this])))
            continue
        name = f"_dpsql_e{len(new_fields)}"
        new_fields.append(_lifted_argument(node, name, types, deriver))
        mapping.append((node, _with_argument(node, name)))
        lifted[node.this.copy()] = name
    for node in query.aggregates:
        # COUNT(x + 1) next to AVG(x + 1) counts the same column: one statistic, and the
        # sum can be centred on it.
        if isinstance(node, exp.Count) and node.this in lifted:
            mapping.append((node, exp.Count(this=column(lifted[node.this]))))
    keys = list(query.keys)
    key_fields = _public_keys(query, relation, types, deriver)
    if key_fields:
        for i, (f, expr) in key_fields.items():
            new_fields.append((f, expr))
            mapping.append((keys[i], column(f.name)))
    if not new_fields:
        return query
    return _with_columns(query, relation, new_fields, mapping)


def _lifted_argument(node, name: str, types: dict, deriver: Deriver) -> tuple:
    """(field ``name``, typed expression) for the argument of bounded aggregate ``node``."""
    if isinstance(node.this, exp.Distinct):
        raise QueryError(f"{node.sql(ANALYST_DIALECT)[:60]}: DISTINCT is supported in COUNT only")
    expr, kind = check(node.this, types, f"the argument of {node.sql_name()}")
    if kind not in ("int", "float", "boolean"):
        raise QueryError(f"{node.sql(ANALYST_DIALECT)[:60]} needs a number, but its argument is "
                         f"of type {kind}")
    shifted = _clamped_shift(expr, deriver.fields)
    if shifted is not None:
        expr, lo, hi = shifted
        return (Field(name, kind, lo, hi, origin=node.this.sql(ANALYST_DIALECT)[:60],
                      in_bounds=True), expr)
    deriver.unbounded = []
    lo, hi = deriver.interval(expr)
    if kind != "boolean" and not (math.isfinite(lo) and math.isfinite(hi)):
        raise QueryError(_unbounded_message(node, deriver.unbounded))
    if kind == "int":
        lo, hi = math.floor(lo), math.ceil(hi)
    exact = deriver.guaranteed(expr, kind)
    if exact is not None and (exact[0] < lo or exact[1] > hi):
        exact = None             # the metadata's bounds give a narrower interval: clamp
    if exact is not None:        # holds for any data: no clamp needed
        lo, hi = exact
    return (Field(name, kind, lo if kind != "boolean" else None,
                  hi if kind != "boolean" else None,
                  origin=node.this.sql(ANALYST_DIALECT)[:60],
                  in_bounds=exact is not None), expr)


def _clamped_shift(expr, fields: dict):
    """``column ± c`` or ``c - column`` of an int column with integer bounds and an integer
    literal c: (``clamp(column) ± c``, lower, upper), else None.

    The clamp moves before the shift, where it is the same function of every in-range
    value, and the shift of a bounded value cannot overflow, so no guard is needed: the
    engine clamps a plain column (docs/performance.md). A value so far outside the bounds
    that ``column ± c`` would overflow 64 bits counts as its nearest bound, not as NULL.
    """
    node = expr.this if isinstance(expr, exp.Try) else expr
    if not isinstance(node, (exp.Add, exp.Sub)):
        return None
    a, b = node.this, node.expression
    flipped = isinstance(a, exp.Literal) or int_constant(a) is not None
    col, constant = (b, int_constant(a)) if flipped else (a, int_constant(b))
    f = fields.get(col.name.lower()) if isinstance(col, exp.Column) else None
    if (constant is None or f is None or f.kind != "int" or f.lower is None or f.upper is None
            or not (float(f.lower).is_integer() and float(f.upper).is_integer())):
        return None
    lo, hi = int(f.lower), int(f.upper)
    if max(abs(lo), abs(hi), abs(constant)) >= 2 ** 52:
        return None
    bounded = clamp(col, lo, hi) if not f.in_bounds else col.copy()
    if isinstance(node, exp.Add):
        return exp.Add(this=exp.Paren(this=bounded), expression=b.copy() if not flipped else a.copy()), \
            lo + constant, hi + constant
    if flipped:                   # c - column
        return exp.Sub(this=a.copy(), expression=exp.Paren(this=bounded)), constant - hi, constant - lo
    return exp.Sub(this=exp.Paren(this=bounded), expression=b.copy()), lo - constant, hi - constant


def _with_columns(query, relation: Relation, new_fields: list, mapping: list):
    """``query`` over ``relation`` plus the lifted columns, its expressions rewritten to read them."""
    fields = dict(relation.fields)
    projections = [exp.Star()]
    for f, expr in new_fields:
        fields[f.name.lower()] = f
        projections.append(exp.alias_(expr, f.name, quoted=True))
    steps = relation.steps + ["derived columns: " + ", ".join(
        f"{f.name} = {f.origin} {f.bounds_text()}" for f, _ in new_fields)]
    lifted = relation.derived(fields, relation.pid, relation.k, relation.bounded,
                              exp.select(*projections).from_(relation.source("_l")), steps)
    return replace(
        query, relation=lifted, table=lifted.table(),
        keys=[substitute(k, mapping) for k in query.keys],
        aggregates=[substitute(a, mapping) for a in query.aggregates],
        outputs=[(n, substitute(e, mapping)) for n, e in query.outputs],
        having=substitute(query.having, mapping) if query.having is not None else None,
        order=[substitute(o, mapping) for o in query.order],
        cut=query.cut and replace(
            query.cut, order=[substitute(o, mapping) for o in query.cut.order],
            where=substitute(query.cut.where, mapping) if query.cut.where is not None else None))


def _public_keys(query, relation: Relation, types: dict, deriver: Deriver) -> dict:
    """Index -> (field, expression) of keys to lift, if that makes every key public."""
    if not query.keys:
        return {}
    lifted, size = {}, 1
    for i, key in enumerate(query.keys):
        if isinstance(key, exp.Column):
            f = relation.fields.get(key.name.lower())
            if f is None or f.domain is None:
                return {}
            size *= max(len(f.domain), 1)
            continue
        expr, kind = check(key, types, "GROUP BY")
        domain = deriver.domain(expr, kind)
        if domain is None:
            return {}
        size *= max(len(domain), 1)
        lifted[i] = (Field(f"_dpsql_k{i}", kind, domain=tuple(domain),
                           origin=key.sql(ANALYST_DIALECT)[:60]), expr)
    return lifted if size <= MAX_GRID else {}
