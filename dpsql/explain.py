"""Explain: a plan as text, for analysts and auditors.

Owns: the human-readable account of a plan: the bounded query that runs on
the engine and, for every noisy statistic, its sensitivity, mechanism, noise
scale, 95% accuracy and share of the query's budget.
"""
from __future__ import annotations

from .plan import Plan
from .rewrite import TYPED_SOURCE
from .sql.allowed import ENGINE_TYPES

DIALECT = "duckdb"


def _centring(stat) -> str:
    if "centre" not in stat.meta:
        return ""
    offset, count = stat.meta["centre"]
    return (f"; centred exactly before noise: the engine's {stat.name} minus "
            f"{offset * stat.unit:.6g} x the exact {count}")


def describe(plan: Plan) -> str:
    relation = plan.query.relation
    table = relation.base
    eps, delta = plan.cost
    unit = ("row (row_privacy)" if table.row_privacy or not table.private_ids
            else f"person ({table.private_ids[0]}), at most {table.max_ids} row(s) each")
    k = plan.query.table.max_ids if relation.pid is not None else 1
    where = ("none needed: the per-person aggregation above bounds it" if relation.bounded
             else f"at most {k} row(s) per person kept (uniformly at random), after all "
             "row-level filters" if relation.pid is not None else "none needed (row privacy)")
    lines = [f"table: {table.full_name}; privacy unit: {unit}",
             f"cost: epsilon={eps:.6g}, delta={delta:.3g}", "",
             f"typed relation {TYPED_SOURCE}: {table.full_name} with every column cast to its "
             "metadata type (a cell that does not convert is NULL): "
             + ", ".join(f"{c.name} {ENGINE_TYPES[c.type]}" for c in table.columns.values()), "",
             "relational plan (bounds from the metadata and the query text only):"]
    lines += [f"  {i + 1}. {step}" for i, step in enumerate(relation.steps)]
    lines += [f"  {len(relation.steps) + 1}. DP aggregation: each person adds at most {k} row(s); "
              f"truncation: {where}", "",
              "bounded plan (runs on the engine):", plan.exact.sql(DIALECT, pretty=True), "",
             "noisy statistics:"]
    for stat in plan.statistics:
        m = stat.mechanism
        sens = f"L1={stat.l1:.6g}" + (f", L2={stat.l2:.6g}" if stat.l2 != stat.l1 else "")
        lines.append(
            f"  {stat.name} = {stat.label}: {stat.stat.value}, sensitivity {sens}, "
            f"{m.mechanism.value} scale={m.scale:.6g} grid={m.grid:.6g}, "
            f"95% accuracy +/-{m.accuracy(0.05):.6g}, "
            f"epsilon={m.epsilon:.6g} ({m.epsilon / eps:.0%} of the query), delta={m.delta:.3g}"
            + _centring(stat))
    if plan.threshold is not None:
        lines.append(f"  threshold: a group is released only if {plan.threshold.name} >= "
                     f"{plan.tau:.6g} (delta={plan.threshold_delta:.3g} for keys not public)")
    elif plan.public_keys:
        lines.append("  group keys: every public value (from the metadata or the query) is released "
                     "(absent ones as noisy zeros); no threshold needed")
    for note in plan.notes:
        lines.append(f"  note: {note}")
    lines += ["", "post-processing (on noisy values only):", plan.post.sql(DIALECT, pretty=True)]
    return "\n".join(lines)
