"""Parse errors in the analyst's terms: what is wrong, where, and near which text.

Owns: turning sqlglot's ``ParseError`` (whose descriptions name its own classes, e.g.
``Required keyword: 'expression' missing for <class 'sqlglot.expressions.core.And'>``)
into a sentence about the SQL the analyst wrote: ``AND needs a condition after it``.
A description it does not know is kept, with any sqlglot class or token spelled as SQL.
"""
from __future__ import annotations

import re

from sqlglot import exp

# sqlglot's expression classes as the analyst wrote them, for "X has nothing after it".
_OPERATORS = {
    "And": "AND", "Or": "OR", "Xor": "XOR", "Not": "NOT", "EQ": "=", "NEQ": "<>", "GT": ">",
    "GTE": ">=", "LT": "<", "LTE": "<=", "NullSafeEQ": "IS NOT DISTINCT FROM", "Add": "+",
    "Sub": "-", "Mul": "*", "Div": "/", "IntDiv": "//", "Mod": "%", "DPipe": "||",
    "Like": "LIKE", "ILike": "ILIKE", "Is": "IS", "In": "IN", "Neg": "-", "BitwiseAnd": "&",
    "BitwiseOr": "|", "BitwiseXor": "^", "Glob": "GLOB", "SimilarTo": "SIMILAR TO",
    "Escape": "ESCAPE",
}
_CONDITION = {"And", "Or", "Xor", "Not"}

# Clauses that were left empty: (class, keyword) -> what is missing.
_CLAUSES = {
    "Where": "WHERE has no condition after it",
    "Having": "HAVING has no condition after it",
    "Limit": "LIMIT has no number after it",
    "Offset": "OFFSET has no number after it",
    "Order": "ORDER BY lists nothing to sort by",
    "Group": "GROUP BY lists nothing to group by",
    "Between": "BETWEEN needs both ends: x BETWEEN low AND high",
    "Cast": "CAST needs a type: CAST(x AS INTEGER)",
    "Alias": "AS has no name after it",
    "Join": "the JOIN has no table",
}

_MISSING = re.compile(r"Required keyword: '(\w+)' missing for <class '[\w.]*\.(\w+)'>")
_TOKEN = re.compile(r"<Token token_type: TokenType\.(\w+), text: (.*?), line: \d+.*?>")
_CLASS = re.compile(r"<class '[\w.]*\.(\w+)'>")


def _token_text(match: re.Match) -> str:
    kind, text = match.group(1), match.group(2)
    return "the end of the query" if kind == "SENTINEL" else repr(text)


def describe(description: str, highlight: str, at_end: bool) -> str:
    """The problem, said in SQL: ``description`` is sqlglot's, ``highlight`` the token it
    stopped at; ``at_end`` whether that token ends the query."""
    missing = _MISSING.fullmatch(description)
    if missing:
        kind = missing.group(2)
        if kind in _OPERATORS:
            what = "a condition" if kind in _CONDITION else "a value"
            return f"{_OPERATORS[kind]} needs {what} after it"
        if kind in _CLAUSES:
            return _CLAUSES[kind]
        # Not sqlglot's class and argument names (eighteenth review of issue 33).
        if isinstance(getattr(exp, kind, None), type) and issubclass(getattr(exp, kind), exp.Func):
            return "a function call has too few arguments"
        return "an expression is incomplete"
    if description == "Invalid expression / Unexpected token":
        return ("the query ends unexpectedly" if not highlight else
                f"{highlight!r} is not expected here")
    if description.startswith("Expecting )"):
        return ("a '(' is not closed: ')' expected" + (" at the end of the query" if at_end
                else f" before {highlight!r}"))
    if description == "Expected END after CASE":
        return "CASE has no END"
    if description == "Expected TYPE after CAST":
        return "CAST needs a type after AS: CAST(x AS INTEGER)"
    expected = re.fullmatch(r"Expected (.+?) but got (<Token .*>)", description)
    if expected:
        return f"expected a {expected.group(1)}, found {_TOKEN.sub(_token_text, expected.group(2))}"
    text = _TOKEN.sub(_token_text, description)
    return _CLASS.sub(lambda m: m.group(1), text)


def parse_error(info: dict, sql: str) -> str:
    """``cannot parse the query at line L, column C, near '...': <problem>``."""
    line, col = info.get("line"), info.get("col")
    highlight = str(info.get("highlight") or "")
    before = " ".join(str(info.get("start_context") or "").split())
    after = str(info.get("end_context") or "")
    at_end = not after.strip()
    near = " ".join(f"{before} {highlight}".split())
    if len(near) > 40:
        near = "..." + near[-37:]
    if isinstance(col, int) and highlight and "\n" not in highlight:
        col = max(col - len(highlight) + 1, 1)       # sqlglot's column is the token's end
    where = f" at line {line}, column {col}" if line else ""
    where += f", near {near!r}" if near else ""
    problem = describe(str(info.get("description") or "invalid SQL"), highlight, at_end)
    return (f"cannot parse the query{where}: {problem}. Write one SELECT statement in "
            "standard SQL.")
