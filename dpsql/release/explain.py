"""Explain: a plan as text, for analysts and auditors.

Owns: the human-readable account of a plan: the bounded query that runs on
the engine and, for every noisy statistic, its sensitivity, mechanism, noise
scale, 95% accuracy and share of the query's budget.
"""
from __future__ import annotations

from .intervals import describe_outputs
from ..plan import Plan
from ..plan.rewrite import typed_name
from ..frontend.allowed import ENGINE_TYPES

def _centring(stat) -> str:
    if stat.centre is None:
        return ""
    offset, count = stat.centre
    return (f"; centred exactly before noise: the engine's {stat.name} minus "
            f"{offset * stat.step:.6g} x the exact {count}")


def describe(plan: Plan, engine_sql: str, post_sql: str) -> str:
    """``plan`` as text; ``engine_sql`` and ``post_sql``: its two queries as the engine and
    the post-processing connection render them."""
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
    elif relation.bounded or relation.held:
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
              "bounded plan (runs on the engine):", engine_sql, "",
             "noisy statistics:"]
    for stat in plan.statistics:
        lines.append(f"  {stat.name} = {stat.label}: {stat.mechanism.explain(stat, eps)}"
                     + _centring(stat))
    if plan.threshold_choice is not None:
        lines.append(plan.threshold_choice.describe())
    elif plan.selection:
        lines.append("  group keys: public values (from the metadata); only the winners of the "
                     "private selection are released, without their counts; no threshold needed")
    elif plan.public_keys:
        lines.append("  group keys: every public value (from the metadata or the query) is released "
                     "(absent ones as noisy zeros); no threshold needed")
    for note in plan.notes:
        lines.append(f"  note: {note}")
    outputs = describe_outputs(plan, 0.05)
    if outputs:
        lines += ["", "accuracy of each noisy output (execute_with_accuracy_df, --accuracy; "
                  "noise only, not the bias of clamping or truncation):", *outputs]
    lines += ["", "post-processing (on noisy values only):", post_sql]
    return "\n".join(lines)
