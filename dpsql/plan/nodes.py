"""Plan nodes that every engine compiles in its own way (step 3's engine-neutral tree).

Owns: the few constructs of a bounded plan that SQL dialects spell differently. The
planner builds them as these nodes and never renders SQL; the engine's dialect
(``dpsql.plan.dialect.Dialect``) replaces each by its own construct before it
renders the plan. Guarded evaluation is sqlglot's ``exp.Try`` (built by
``dpsql.frontend.typecheck.guard``) and time as microseconds is ``exp.UnixMicros``:
both are sqlglot nodes already, compiled by the dialect like any other.
"""
from __future__ import annotations

from sqlglot import exp


class Truncated(exp.Expression):
    """At most ``k`` uniformly random rows per person of the rows ``this``, which hold
    the columns ``fields`` (their person id in ``pid`` is never NULL). ``prefix`` keeps
    the names of nested truncations apart."""

    arg_types = {"this": True, "pid": True, "k": True, "fields": True, "prefix": False}


class TruncatedGroups(exp.Expression):
    """At most ``max_groups`` groups (values of the key expressions ``keys``) per person,
    chosen at random, and at most ``max_rows`` random rows of the person in each."""

    arg_types = {"this": True, "pid": True, "keys": True, "max_groups": True, "max_rows": True}


def truncated(rows: exp.Select, pid: str, k: int, fields: list, prefix: str = "") -> Truncated:
    return Truncated(this=rows, pid=pid, k=int(k), fields=tuple(fields), prefix=prefix)


def truncated_groups(rows: exp.Select, pid: str, keys: list, max_groups: int,
                     max_rows: int) -> TruncatedGroups:
    return TruncatedGroups(this=rows, pid=pid, keys=[k.copy() for k in keys],
                           max_groups=int(max_groups), max_rows=int(max_rows))


def epoch_us(node: exp.Expression) -> exp.Expression:
    """A timestamp as microseconds since 1970, NULL where it cannot be computed."""
    return exp.Try(this=exp.UnixMicros(this=node))


def every_node(tree: exp.Expression) -> list:
    """Every node of ``tree``, each once (parents before their children): sqlglot's ``walk``
    runs a generator per node, twice the time of this loop over a plan of thousands."""
    found, stack = [], [tree]
    while stack:
        node = stack.pop()
        found.append(node)
        for value in node.args.values():
            if type(value) is list:
                stack.extend([v for v in value if isinstance(v, exp.Expression)])
            elif isinstance(value, exp.Expression):
                stack.append(value)
    return found
