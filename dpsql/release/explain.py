"""Explain: a plan as text, for analysts and auditors.

Owns: the human-readable account of a plan: the bounded query that runs on
the engine and, for every noisy statistic, its sensitivity, mechanism, noise
scale, 95% accuracy and share of the query's budget.
"""
from __future__ import annotations

from .intervals import describe_outputs
from ..plan import Plan
from ..privacy.params import Stat
from ..plan.rewrite import typed_name
from ..frontend.allowed import ENGINE_TYPES

DIALECT = "duckdb"
_QUANTILE_VALUE = {"cont": "a uniform point of the chosen cell (the integer itself on an "
                           "integer grid)",
                   "mid": "the chosen cell's middle, rounded for int columns (the integer itself "
                          "on an integer grid)",
                   "low": "the chosen cell's lower edge", "high": "the chosen cell's upper edge"}


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
    k = max(1, relation.k)
    if relation.pid is None:
        unit = "row (row_privacy)" + (f"; each row is in the relation at most {k} times"
                                      if k > 1 else "")
    else:
        person = (table.private_ids[0] if table.private_ids else
                  next((c.name for c in table.columns.values() if c.references), relation.pid))
        unit = f"person ({table.full_name}.{person}), at most {k} row(s) each in the relation"
    groups = relation.group_bounds if plan.query.keys else None
    if relation.pid is None:
        where = "none needed (row privacy)"
    elif relation.bounded:
        where = "none needed: the steps above bound it by construction"
    elif groups and not relation.bounded:
        where = (f"at most {groups[0]} group(s) per person and {groups[1]} row(s) per person in "
                 "each kept (uniformly at random), after all row-level filters")
    else:
        where = (f"at most {k} row(s) per person kept (uniformly at random), after all "
                 "row-level filters")
    lines = [f"tables: {', '.join(t.full_name for t in relation.tables)}; privacy unit: {unit}",
             f"cost: epsilon={eps:.6g}, delta={delta:.3g}", ""]
    lines += [f"typed relation {typed_name(t)}: {t.full_name} with every column cast to its "
              "metadata type (a cell that does not convert is NULL): "
              + ", ".join(f"{c.name} {ENGINE_TYPES[c.type]}" for c in t.columns.values())
              for t in relation.tables]
    lines += ["", "relational plan (bounds from the metadata and the query text only):"]
    lines += [f"  {i + 1}. {step}" for i, step in enumerate(relation.steps)]
    lines += [f"  {len(relation.steps) + 1}. DP aggregation: each person adds at most {k} row(s); "
              f"truncation: {where}", "",
              "bounded plan (runs on the engine):", plan.exact.sql(DIALECT, pretty=True), "",
             "noisy statistics:"]
    for stat in plan.statistics:
        m = stat.mechanism
        if stat.stat is Stat.quantile:
            lines.append(f"  {stat.name} = {stat.label}: quantile, {m.describe()} "
                         f"({m.epsilon / eps:.0%} of the query); released value: "
                         f"{_QUANTILE_VALUE[m.how]}; accuracy {m.accuracy_text(0.05)}")
            continue
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
    outputs = describe_outputs(plan, 0.05)
    if outputs:
        lines += ["", "accuracy of each noisy output (execute_with_accuracy_df, --accuracy; "
                  "noise only, not the bias of clamping or truncation):", *outputs]
    lines += ["", "post-processing (on noisy values only):", plan.post.sql(DIALECT, pretty=True)]
    return "\n".join(lines)
