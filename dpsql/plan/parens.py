"""Brackets where a plan's tree needs them: the text an engine reads has the tree's meaning.

Owns: ``bracketed``, run on every lowered plan before it is rendered
(``dpsql.plan.dialect.Dialect``). sqlglot writes a tree's operators as they stand, without
adding brackets for precedence: ``EQ(GT(a, 50), TRUE)`` is written ``a > 50 = TRUE``, which
DuckDB and PostgreSQL refuse (chained comparisons) and Spark cannot parse, and
``MUL(ADD(a, b), c)`` would be written ``a + b * c``, another value. A parsed query carries
the brackets its text had, but a rewrite that puts one expression in another's place does
not (review 43, F1: the guard of ``NULLIF(age > 50, TRUE)`` copies ``age > 50`` into a
comparison, and every engine refused the allowed expression). This pass brackets every
operand that binds less tightly than its operator, or as tightly where the operator is not
associative, so that no rewrite needs to think of it.

Precedence, loosest first (PostgreSQL's, which DuckDB follows; Spark's differs only in
``||``, which is bracketed against any arithmetic): OR, AND, NOT, the comparisons and
predicates (=, <, IS, LIKE, IN, BETWEEN: none associative), ``||``, ``+ -``,
``* / // %``, unary minus. An operator not listed is left as it is (a function-like node
has its own brackets).
"""
from __future__ import annotations

from sqlglot import exp

_PRECEDENCE = {
    exp.Or: 1, exp.Xor: 1, exp.And: 2, exp.Not: 3,
    **{c: 4 for c in (exp.EQ, exp.NEQ, exp.LT, exp.LTE, exp.GT, exp.GTE, exp.NullSafeEQ,
                      exp.NullSafeNEQ, exp.Is, exp.Like, exp.ILike, exp.In, exp.Between,
                      exp.SimilarTo, exp.Glob)},
    exp.DPipe: 5, exp.Add: 6, exp.Sub: 6, exp.Mul: 7, exp.Div: 7, exp.IntDiv: 7, exp.Mod: 7,
    exp.Neg: 8, exp.BitwiseNot: 8,
}
_PREDICATE = 4
_CONCAT = 5
_ASSOCIATIVE = (exp.And, exp.Or)
"""Whose right operand of the same kind means the same unbracketed (``a AND (b AND c)``;
a balanced AND of many conditions stays as it is written)."""
_OPERANDS = ("this", "expression", "low", "high")


def bracketed(tree: exp.Expression) -> exp.Expression:
    """``tree`` with a ``Paren`` around every operand that needs one, in place."""
    for node in list(tree.walk()):
        outer = _PRECEDENCE.get(type(node))
        if outer is None:
            continue
        for key in _OPERANDS:
            child = node.args.get(key)
            inner = _PRECEDENCE.get(type(child)) if child is not None else None
            if inner is not None and _needs(node, key, child, outer, inner):
                paren = exp.Paren(this=child)
                paren.type = child.type
                node.set(key, paren)
    return tree


def _needs(node, key: str, child, outer: int, inner: int) -> bool:
    if isinstance(node, exp.In) and key != "this":
        return False
    if outer == _CONCAT or inner == _CONCAT:      # || against + - * /: engines differ
        return inner != outer or key != "this"
    if isinstance(node, (exp.Not, exp.Neg, exp.BitwiseNot)):
        return inner <= outer                     # - -x is a comment; NOT (NOT x) as written
    if inner < outer:
        return True
    if inner > outer:
        return False
    if outer == _PREDICATE:
        return True                               # a > b = c: not associative
    if key == "this":
        return False                              # a - b - c: left to right
    return not (type(node) is type(child) and isinstance(node, _ASSOCIATIVE))
