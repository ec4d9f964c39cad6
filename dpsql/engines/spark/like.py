"""LIKE and ILIKE on Spark, in time linear in the text, with DuckDB's result.

Owns: the compilation of ``text [NOT] [I]LIKE 'pattern' [ESCAPE c]``. Spark runs a pattern
its optimizer does not simplify as a backtracking ``java.util.regex``: ``'%a%a%a%a%b'`` on
250 a's took minutes, so the time (and, past the statement limit, the failure) told whether
one person's text was there. Here no pattern with two or more ``%`` reaches Spark's LIKE:

- a pattern whose ``_`` lie only before its first ``%`` or after its last is a chain of
  string searches: the part before the first ``%`` starts the text, the part after the last
  ends it, and each literal part in between is found (``locate``, leftmost) at or after the
  end of the previous one; a part of ``_`` alone skips that many characters. Leftmost is
  exact for parts of fixed length: it leaves the most text to the parts after it. Each
  search costs the text's length times the part's, so the whole the text's length times
  the pattern's.
- a pattern with at most one ``%`` keeps Spark's LIKE: an anchored regex with at most one
  ``.*``, which costs the text's length times the pattern's.
- any other (a ``_`` next to a literal between two ``%``: ``'%a_b%c%'``) is refused, from
  the query text alone, with what to write instead.

DuckDB's LIKE has no escape character unless ESCAPE gives one, which escapes any character
that follows; ``_`` is one character (code point), as Spark's ``locate`` and ``length``
count them. ILIKE compares ``lower`` of both sides, as Spark's ILIKE does (Java's lower
case: ``'İ'`` is two characters there, one in DuckDB; docs/engines.md).
"""
from __future__ import annotations

from sqlglot import exp

from ...errors import QueryError
from ...plan.dialect import grouped
from .rules import _and, _fn, _num

INT32_MAX = 2 ** 31 - 1
_SPARK_ESCAPED = ("%", "_", "\\")


def _tokens(pattern: str, escape: str | None) -> list:
    """The pattern as DuckDB reads it: ("%", "%"), ("_", "_") or ("c", a literal character)."""
    out, i = [], 0
    while i < len(pattern):
        c = pattern[i]
        if escape is not None and c == escape and i + 1 < len(pattern):
            out.append(("c", pattern[i + 1]))
            i += 2
            continue
        out.append((c, c) if c in ("%", "_") else ("c", c))
        i += 1
    return out


def _parts(tokens: list) -> list:
    parts = [[]]
    for token in tokens:
        if token[0] == "%":
            parts.append([])
        else:
            parts[-1].append(token)
    return parts


def _spark_pattern(tokens: list) -> str:
    """A pattern for Spark's LIKE (whose escape is a backslash) with the same meaning."""
    return "".join("\\" + c if kind == "c" and c in _SPARK_ESCAPED else c for kind, c in tokens)


def compile_like(node: exp.Expression, escape: str | None = None) -> exp.Expression:
    """``node`` (a LIKE or ILIKE, its pattern a literal) as Spark computes it in linear
    time; a NULL pattern as it is (NULL)."""
    pattern = node.expression
    if not isinstance(pattern, exp.Literal):
        return node
    tokens = _tokens(pattern.this, escape)
    parts = _parts(tokens)
    if any(kind == "_" for kind, _ in tokens) and len(parts) <= 2:
        return grouped(type(node)(this=node.this, expression=exp.Literal.string(
            _spark_pattern(tokens))))
    for part in parts[1:-1]:
        if len({kind for kind, _ in part}) > 1:
            raise QueryError(
                f"the LIKE pattern '{pattern.this}' has '_' next to other characters between "
                "two '%', which Spark can only match by backtracking (its time would depend on "
                "the text); on Spark write '_' only before the first '%' or after the last "
                "one (e.g. 'a_%b%c' or '%b%c_'), or use the DuckDB engine")
    return grouped(_chain(node, parts))


class _Side:
    """The text searched and the literals searched for: lower-cased for ILIKE."""

    def __init__(self, node: exp.Expression):
        self.node, self.fold = node, isinstance(node, exp.ILike)

    def text(self) -> exp.Expression:
        value = grouped(self.node.this.copy())
        return _fn("lower", value) if self.fold else value

    def literal(self, part: list) -> exp.Expression:
        """The part's text, each ``_`` as ``x`` (for its length)."""
        value = exp.Literal.string("".join(c if kind == "c" else "x" for kind, c in part))
        return _fn("lower", value) if self.fold else value

    def length(self, part: list) -> exp.Expression:
        if self.fold:
            return _fn("length", self.literal(part))
        return _num(len(part))

    def starts_or_ends(self, part: list, starts: bool) -> exp.Expression:
        if all(kind == "c" for kind, _ in part):
            return _fn("startswith" if starts else "endswith", self.text(), self.literal(part))
        wildcard = [("%", "%")]
        tokens = part + wildcard if starts else wildcard + part
        return type(self.node)(this=grouped(self.node.this.copy()),
                               expression=exp.Literal.string(_spark_pattern(tokens)))


def _chain(node: exp.Expression, parts: list) -> exp.Expression:
    """Starts with the first part, ends with the last, and holds the ones between in order,
    each found leftmost at or after the end of the previous one. NULL for a NULL text."""
    side = _Side(node)
    if len(parts) == 1:
        return exp.EQ(this=side.text(), expression=side.literal(parts[0]))
    first, last = parts[0], parts[-1]
    conditions = [side.starts_or_ends(part, starts) for part, starts in ((first, True), (last, False))
                  if part]
    position = exp.Add(this=side.length(first), expression=_num(1))   # after the first part
    searched = False
    for part in parts[1:-1]:
        if not part:
            continue
        if part[0][0] == "_":        # only _: skip that many characters
            position = exp.Add(this=grouped(position), expression=side.length(part))
            continue
        found = _fn("locate", side.literal(part), side.text(), position)
        position = exp.Add(this=_fn("nullif", found, _num(0)), expression=side.length(part))
        searched = True
    if searched:                     # NULL where a part was not found: past any text
        position = exp.Coalesce(this=position, expressions=[_num(INT32_MAX)])
    room = exp.Sub(this=exp.Add(this=_fn("length", side.text()), expression=_num(1)),
                   expression=side.length(last))
    conditions.append(exp.GTE(this=room, expression=grouped(position)))
    return _and(*conditions)
