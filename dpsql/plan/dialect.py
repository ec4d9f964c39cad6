"""What a bounded plan needs of an engine's SQL dialect.

Owns: the seam between the engine-neutral plan and an engine. A plan is a sqlglot
tree in which the constructs dialects spell differently are nodes of
``dpsql.plan.nodes``; an engine supplies a ``Dialect`` that compiles them
(``lower``) and renders the result (``render``). Everything else in the plan is
plain sqlglot, transpiled by sqlglot's own generator for ``name``. To add an
engine's dialect: subclass, set ``name``, implement the two truncations, and check
that sqlglot renders ``exp.Try`` (NULL where evaluation would raise),
``exp.UnixMicros``, ``exp.TryCast``, ``exp.Uuid`` and ``exp.Rand`` for it
(override ``lower`` to rewrite any it does not).
"""
from __future__ import annotations

from sqlglot import exp

from .nodes import Truncated, TruncatedGroups


class Dialect:
    """One engine's SQL: the compilation of the plan's engine-neutral nodes."""

    name: str = ""
    """The sqlglot dialect the plan is rendered in."""

    def truncated(self, node: Truncated) -> exp.Select:
        raise NotImplementedError

    def truncated_groups(self, node: TruncatedGroups) -> exp.Select:
        raise NotImplementedError

    def lower(self, tree: exp.Expression) -> exp.Expression:
        """``tree`` with every engine-neutral node replaced by this engine's construct."""
        def compile_node(node):
            if isinstance(node, Truncated):
                return self.truncated(node)
            if isinstance(node, TruncatedGroups):
                return self.truncated_groups(node)
            return node
        return tree.copy().transform(compile_node, copy=False)

    def render(self, tree: exp.Expression, pretty: bool = False) -> str:
        return self.lower(tree).sql(self.name, pretty=pretty)


def apply_rules(tree: exp.Expression, rule_for, without_rule) -> exp.Expression:
    """``tree`` with each node replaced by its rule's result (``rule_for(node)``: a function
    of the node, or None, in which case ``without_rule(node)`` is called, e.g. to refuse
    it), deepest first (reversed breadth-first order), so that a rule sees its operands
    compiled; every node is visited once. How the guarded dialects compile the analyst's
    expressions (``dpsql.engines.postgres.dialect``, ``dpsql.engines.spark.dialect``)."""
    for node in reversed(list(tree.walk(bfs=True))):
        rule = rule_for(node)
        if rule is None:
            without_rule(node)
            continue
        parent, key, index = node.parent, node.arg_key, node.index
        new = rule(node)
        if new is node:
            continue
        if parent is None:
            tree = new
        else:
            parent.set(key, new, index=index)
    return tree


def int_constant(node: exp.Expression) -> int | None:
    """The value of an integer literal (possibly cast, parenthesized or negated), else None:
    a guard against its overflow can then be one comparison with a bound computed here."""
    sign = 1
    while isinstance(node, (exp.Cast, exp.Paren, exp.Neg)):
        if isinstance(node, exp.Neg):
            sign = -sign
        node = node.this
    if isinstance(node, exp.Literal) and node.is_int:
        return sign * int(node.this)
    return None


def date_diff_tree(part: str, days: exp.Expression, field_diff) -> exp.Expression:
    """DATE_DIFF('part', a, b) as DuckDB counts it (the part's boundaries from a to b), for a
    dialect without DuckDB's function (``dpsql.frontend.temporal.diff_value`` is the rule):
    built from the whole days between a and b (``days``, an integer) and the differences of
    the fields of b and a (``field_diff(name)``, name YEAR, QUARTER, MONTH, HOUR, MINUTE or
    SECOND, whole numbers): exact, with no division but the week's (truncated, as DuckDB)."""
    if part in ("year", "quarter", "month"):
        per_year = {"year": 1, "quarter": 4, "month": 12}[part]
        value = exp.Mul(this=field_diff("YEAR"), expression=exp.Literal.number(per_year))
        return value if part == "year" else exp.Add(this=value, expression=field_diff(part.upper()))
    if part == "week":
        return exp.IntDiv(this=days, expression=exp.Literal.number(7))
    value = days
    for name, factor in (("HOUR", 24), ("MINUTE", 60), ("SECOND", 60)):
        if part == "day":
            break
        value = exp.Add(this=exp.Mul(this=exp.Paren(this=value), expression=exp.Literal.number(factor)),
                        expression=field_diff(name))
        if part == name.lower():
            break
    return value
