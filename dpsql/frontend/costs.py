"""The work one row costs: an upper bound, from the query text and the metadata only.

Owns: ``row_cost`` (the work to evaluate an expression once: bytes of text processed, and
``NODE_COST`` an interpreter step) and ``text_length`` (the most bytes an expression's text
may have). The planner
multiplies a row's cost by the rows one private row becomes (``Relation.fanout``) and
bounds the sum over a statement (``dpsql.frontend.binding.MAX_ROW_WORK``), so that what
a query makes the engine do for one person's rows is small whatever their values and
whatever a CASE confines the work to.

The rules, in bytes processed (fifteenth review of issue 33: a LIKE over a 54,000
character CONCAT of literals, in a CASE that runs it only on one person's row, under a
1,000-row VALUES join, took PostgreSQL past a 5 s timeout with the person and 0.5 s
without; neither the literals' text nor the pattern's length was counted):

- every node costs NODE_COST (an interpreter step: ``age + age + ... 10,000 times`` is
  work too), a long list of literals (``dpsql.frontend.literal_lists``) as IN_SCANNED nodes
  (every engine hashes a long constant IN list once per query);
- a node that builds or reads text (CONCAT, ||, UPPER, LOWER, TRIM, REVERSE, SUBSTRING,
  LEFT, RIGHT, LENGTH, a CAST to or from text) costs the length of its text; a comparison,
  IN or BETWEEN of text the lengths of its text operands (IN: the tested value once per
  value, up to IN_SCANNED);
- ``s LIKE p`` costs ``n + m * n ** w`` for a subject of ``n`` bytes, a pattern of ``m``
  and ``w`` runs of ``%`` that more pattern follows: each makes a matcher try the rest at
  every position of the subject (``'%ab%'`` and ``'%ab'`` are ``n * m``, ``'ab%'`` ``n + m``;
  a backtracking matcher, as Spark's regular expressions, multiplies them);
  ILIKE adds the case folding of both sides;
- STRPOS, POSITION and CONTAINS cost ``n * m``; STARTS_WITH ``n + m``; an aggregate the
  length of the text it compares or hashes (``MAX(s)``, ``COUNT(DISTINCT s)``);
- a column costs what computing it costs (a derived column of a CTE or subquery: its
  expression's cost, as the engines may compute it again for every reference).

All of it is an upper bound on what PostgreSQL, DuckDB and Spark do; it never reads data.
"""
from __future__ import annotations

from sqlglot import exp

from . import literal_lists

NODE_COST = 8
"""Bytes processed one interpreter step stands for (PostgreSQL: about 8 ns a step against
about 1 ns a compared byte)."""
NUMBER_TEXT = 32
"""The most bytes a number, date, time or boolean has as text."""
BYTES_PER_CHAR = 4
"""Text is counted in bytes: PostgreSQL's and DuckDB's LIKE compare UTF-8 bytes, and a
character takes up to 4 (twentieth review of issue 33: 250 emoji made a LIKE 4 x 4 times
the work the characters counted). A literal counts its own bytes; a column its
``max_length`` times this (``chars_as_bytes``)."""
CAP = 10 ** 15
"""Costs are counted up to this (a pattern of many '%' over long text would be astronomic)."""
IN_SCANNED = 16
"""Values of an IN list a value is compared with, at most (longer lists are hashed)."""

NUMBER_CHARS = 48
"""The most characters a number, date, time or boolean has as text, for a LENGTH's bounds
(a DECIMAL(38, s) or HUGEINT has up to 40; the bound is a clamp, so a wider one only costs
accuracy)."""

_OTHER_STRINGS = (exp.RawString, exp.ByteString, exp.National)   # $$..$$, E'..', N'..'
_CASE_FOLDS = (exp.Upper, exp.Lower)
_KEEPS_VALUE = tuple(getattr(exp, n) for n in ("Max", "Min", "AnyValue", "First", "Last", "Mode")
                     if hasattr(exp, n))
"""Aggregates whose value is one of their argument's (MAX(text) is as long as its text:
nineteenth review of issue 33, a LIKE over MAX(CONCAT(s x 40)) in a per-person HAVING was
counted as 32 characters)."""
_NOT_STEPS = (exp.Identifier, exp.DataType)      # parts of a name or a type, not evaluated
_SAME_LENGTH = (exp.Trim, exp.Reverse, exp.Substring, exp.Left, exp.Right, exp.Paren, exp.Try)
_BRANCHES = (exp.Case, exp.If, exp.Coalesce, exp.Nullif, exp.Greatest, exp.Least)
_COMPARES = (exp.EQ, exp.NEQ, exp.LT, exp.LTE, exp.GT, exp.GTE, exp.NullSafeEQ,
             exp.NullSafeNEQ, exp.Between)


def text_length(node: exp.Expression, column_text, unit=None) -> int | None:
    """The most bytes ``node``'s value has as text, or None if it is not text
    (``column_text(column)``: a column's most bytes, None if it is not a string).
    ``unit=CHARS`` counts characters instead (``column_text`` then gives characters)."""
    count, number = unit or BYTES
    if isinstance(node, exp.Column):
        return column_text(node)
    if isinstance(node, exp.Literal):
        return count(str(node.this)) if node.is_string else None
    if isinstance(node, _OTHER_STRINGS):    # refused later, but counted all the same
        return count(str(node.this))
    named = str(node.this).lower() if isinstance(node, exp.Anonymous) else None
    if isinstance(node, (exp.Concat, exp.DPipe)) or named == "concat":   # typed: Anonymous
        return sum(_as_text(a, column_text, unit) for a in _operands(node))
    if isinstance(node, _CASE_FOLDS):       # a character may fold to 3 (Java: 'ΐ')
        inner = text_length(node.this, column_text, unit)
        return None if inner is None else 3 * inner
    if isinstance(node, _SAME_LENGTH) or isinstance(node, _KEEPS_VALUE):
        return text_length(node.this, column_text, unit)
    if isinstance(node, (exp.Cast, exp.TryCast)):
        if node.to.this in exp.DataType.TEXT_TYPES:
            return _as_text(node.this, column_text, unit)
        return None
    if isinstance(node, _BRANCHES) or named in ("greatest", "least"):
        lengths = [text_length(a, column_text, unit) for a in _results(node)]
        lengths = [n for n in lengths if n is not None]
        return max(lengths) if lengths else None
    return None


def _bytes(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


BYTES = (_bytes, NUMBER_TEXT)
CHARS = (len, NUMBER_CHARS)
"""``text_length``'s units: bytes (work), or characters (the value of LENGTH)."""


def chars_as_bytes(chars: int) -> int:
    """The most bytes ``chars`` characters take (a column's ``max_length``)."""
    return BYTES_PER_CHAR * chars


def row_cost(expr: exp.Expression, column_text, column_cost) -> int:
    """The work (bytes processed, steps) evaluating ``expr`` once may take, at most
    (``column_cost(column)``: what computing a derived column costs; 0 for a stored one)."""
    total = 0
    for node in expr.walk():
        if isinstance(node, _NOT_STEPS) or _listed_constant(node):
            continue            # an IN list's values are counted by the IN (_compared)
        total += NODE_COST * min(literal_lists.weight(node), IN_SCANNED)
        if isinstance(node, exp.Column):
            total += column_cost(node)
        elif isinstance(node, (exp.Like, exp.ILike)):
            total += _like(node, column_text)
        elif isinstance(node, (exp.StrPosition, exp.Contains)):
            total += _search(node, column_text)
        elif isinstance(node, exp.StartsWith):
            total += sum(_as_text(a, column_text) for a in (node.this, node.expression))
        elif isinstance(node, (*_COMPARES, exp.In)):
            total += _compared(node, column_text)
        elif isinstance(node, exp.AggFunc):     # text compared or hashed (MIN, DISTINCT)
            args = [x for a in node.iter_expressions()
                    for x in (a.expressions if isinstance(a, exp.Distinct) else [a])]
            total += sum(text_length(a, column_text) or 0 for a in args)
        elif isinstance(node, (exp.Length, exp.Cast, exp.TryCast)):
            total += _as_text(node.this, column_text)
        elif not isinstance(node, (exp.Column, exp.Literal)):
            total += text_length(node, column_text) or 0
    return min(total, CAP)


def _like(node: exp.Expression, column_text) -> int:
    n = _as_text(node.this, column_text)
    pattern = node.expression
    if isinstance(pattern, exp.Literal) and pattern.is_string:
        text = str(pattern.this)
        m, searches = _bytes(text), _searches(text)
    else:                   # refused by the typecheck, which says so (after this)
        m, searches = _as_text(pattern, column_text), 0
    cost = n + m * min(n ** searches, CAP)
    if isinstance(node, exp.ILike):
        cost += 3 * (n + m)
    return cost


def _searches(pattern: str) -> int:
    """Runs of '%' that more pattern follows: each makes a matcher try the rest at every
    position of the subject ('%abc', 'a%bc', '%abc%': 1; 'abc%': 0; '%a%b%': 2). The
    twentieth review of issue 33: a leading '%' with no trailing one was counted as a
    prefix (n + m), while PostgreSQL tried the tail at every position (n * m)."""
    count, i = 0, 0
    while i < len(pattern):
        if pattern[i] != "%":
            i += 1
            continue
        while i < len(pattern) and pattern[i] == "%":
            i += 1
        count += i < len(pattern)
    return count


def _search(node: exp.Expression, column_text) -> int:
    haystack = _as_text(node.this, column_text)
    needle = node.args.get("substr") if isinstance(node, exp.StrPosition) else node.expression
    return haystack * max(_as_text(needle, column_text), 1) if needle is not None else haystack


def _compared(node: exp.Expression, column_text) -> int:
    if isinstance(node, exp.In):
        subject = text_length(node.this, column_text)
        constants = [i for i in node.expressions if _constant(i)]
        count = sum(literal_lists.values_count(i) for i in node.expressions)
        steps = NODE_COST * min(sum(literal_lists.weight(i) for i in constants), IN_SCANNED)
        if subject is None:
            return steps
        return steps + subject * min(count, IN_SCANNED) + sum(
            _as_text(i, column_text) * literal_lists.values_count(i) for i in node.expressions)
    operands = [node.this, node.expression] + [node.args.get(k) for k in ("low", "high")]
    return sum(text_length(o, column_text) or 0 for o in operands if o is not None)


def _constant(node: exp.Expression) -> bool:
    """A value of an IN list written as a constant (a literal, a negated one, a long list)."""
    return isinstance(node, exp.Literal) or literal_lists.values_count(node) > 1 or (
        isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal))


def _listed_constant(node: exp.Expression) -> bool:
    """Whether ``node`` is (part of) a constant value of an IN list: the same list costs the
    same whether it was read as one long-list node or value by value (a threshold on the
    work, ``dpsql.plan.precut``, must not tell the two apart)."""
    parent = node.parent
    if isinstance(parent, exp.Neg) and isinstance(node, exp.Literal):
        node, parent = parent, parent.parent
    return isinstance(parent, exp.In) and node.arg_key == "expressions" and _constant(node)


def _as_text(node: exp.Expression | None, column_text, unit=None) -> int:
    if node is None:
        return 0
    n = text_length(node, column_text, unit)
    return (unit or BYTES)[1] if n is None else n


def _operands(node: exp.Expression) -> list:
    if isinstance(node, exp.DPipe):
        return [node.this, node.expression]
    return list(node.expressions)


def _results(node: exp.Expression) -> list:
    if isinstance(node, exp.Case):
        found = [i.args.get("true") for i in node.args.get("ifs", [])] + [node.args.get("default")]
    elif isinstance(node, exp.If):
        found = [node.args.get("true"), node.args.get("false")]
    else:
        found = [node.this, *node.expressions]
    return [r for r in found if r is not None]
