"""DuckDB rewrite: a disjunction of conjunctions where only its truth counts, each
conjunction as ``(...) IS TRUE``.

Owns: keeping DuckDB's optimiser out of a rule whose time grows with the square of a
statement's size. DuckDB's expression rewriter looks for terms common to every
conjunction of a disjunction (its distributivity rule): a ``WHERE`` of 1,700 OR-ed pairs
``(age > i AND income < c)`` (61 kB, within every limit) took 4.5 s to prepare in plain
DuckDB and 22 s inside a dpsql plan, where no timeout or cancel reaches it (issue 33's
twenty-eighth review, F4). A conjunction wrapped in ``IS TRUE`` is no longer one, and the
same statement prepares in 0.2 s.

Only where a condition's truth alone is used (a ``WHERE``, ``HAVING``, join condition,
``FILTER`` or ``CASE WHEN`` condition, and their conjuncts and disjuncts): there NULL and
FALSE are alike, so ``(p AND q) IS TRUE`` (FALSE where ``p AND q`` is NULL) means the same.
Anywhere else (under ``NOT``, in a value) the node is left as it is.
"""
from __future__ import annotations

from sqlglot import exp

MIN_TERMS = 16
"""Disjunctions with fewer conjunctions are left alone (the rule is fast on them, and
DuckDB may still factor a common term out of them)."""


def truth_only(tree: exp.Expression) -> exp.Expression:
    """``tree``, changed in place: each large disjunction in a truth-only position has its
    conjunctions wrapped in ``IS TRUE``."""
    for node in list(tree.find_all(exp.Where, exp.Having, exp.Join, exp.If, exp.Filter)):
        key = "on" if isinstance(node, exp.Join) else "this"
        condition = node.args.get(key)
        if isinstance(node, exp.Filter):
            key, condition = "expression", node.args.get("expression")
            condition = condition.this if isinstance(condition, exp.Where) else None
        if isinstance(condition, exp.Expression):
            _truthy(condition)
    return tree


def _truthy(node: exp.Expression) -> None:
    """Rewrite below ``node``, a condition whose truth alone is used."""
    while isinstance(node, exp.Paren):
        node = node.this
    if isinstance(node, exp.And):
        for part in node.flatten():
            _truthy(part)
    elif isinstance(node, exp.Or):
        parts = list(node.flatten())
        for part in parts:
            _truthy(part)
        conjunctions = [p for p in parts if isinstance(_bare(p), exp.And)]
        if len(conjunctions) >= MIN_TERMS:
            for part in conjunctions:
                wrapper = exp.Is(expression=exp.true())
                part.replace(wrapper)
                wrapper.set("this", exp.Paren(this=part))


def _bare(node: exp.Expression) -> exp.Expression:
    while isinstance(node, exp.Paren):
        node = node.this
    return node
