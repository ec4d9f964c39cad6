"""Long lists of integer literals (``x IN (1, 2, ..., 15000)``) as one typed unit.

Owns: finding such a list in the SQL text before it is parsed, and the node that holds it
from then on. sqlglot parses, copies, walks and renders a list value by value: a list of
15,000 values took a second to plan, most of it in those steps repeated by every pass of
the planner (issue 34). Here the list is read once, by a regular expression, and becomes
one ``exp.Var`` node (rendered as its text by every sqlglot dialect, and opaque to the
engines' rules) whose meta holds the values (``Listed``, shared by copies). The
typecheck types the list once (``dpsql.frontend.typecheck``): integers compared with a
number are the integer literals they are, written as the typecheck writes them.
Anything else (a list compared with text or a date, a constant on the left) expands the
list back into literal nodes and is typed value by value, as before.

Only lists of at least ``MIN_LISTED`` plain integers (``-?[1-9][0-9]*`` or ``0``, each
within BIGINT) are taken. The list is replaced in the text by a placeholder name padded
with the list's own newlines and spaces, so every position after it (in error messages)
is unchanged. The parsed tree must hold each placeholder exactly once, as the whole list
of an ``IN``; if it does not (the text was inside a string, a comment or a quoted name),
the query is parsed again as written.
"""
from __future__ import annotations

import re

from sqlglot import exp

from ..errors import QueryError
from .literals import INT64

MIN_LISTED = 64
"""Shorter lists are parsed value by value (a query of a few dozen values plans quickly)."""

_PLACEHOLDER = "_dpsql_list_{}"
_NUMBER = r"-?\d+"
_LIST = re.compile(rf"\bIN\s*\(\s*({_NUMBER}(?:\s*,\s*{_NUMBER}){{{MIN_LISTED - 1},}})\s*\)",
                   re.IGNORECASE)
_SEPARATOR = re.compile(r"\s*,\s*")
_KEY = "dpsql_listed"


class Listed:
    """The values of one list, in order (immutable: a copy of the tree shares them)."""

    __slots__ = ("values",)

    def __init__(self, values: tuple) -> None:
        self.values = values

    def __deepcopy__(self, memo) -> "Listed":
        return self


def _values(text: str) -> tuple | None:
    """The integers of a list's text, or None if one is not written canonically (``007``,
    ``-0``) or does not fit in a BIGINT."""
    tokens = _SEPARATOR.split(text.strip())
    values = tuple(int(t) for t in tokens)
    if any(str(v) != t for v, t in zip(values, tokens)) or \
            not INT64[0] < min(values) <= max(values) <= INT64[1]:
        return None
    return values


def collapse(sql: str) -> tuple:
    """(the text with each long integer list replaced by a placeholder, the lists' values
    by placeholder name); the text unchanged and {} if there is none."""
    found, parts, at = {}, [], 0
    for match in _LIST.finditer(sql):
        start, end = match.span(1)
        content = sql[start:end]
        name = _PLACEHOLDER.format(len(found))
        first_line = content.split("\n", 1)[0]
        values = _values(content)
        if values is None or len(first_line) < len(name):
            continue
        found[name] = values
        padding = re.sub(r"[^\n]", " ", content[len(name):])
        parts += [sql[at:start], name, padding]
        at = end
    if not found:
        return sql, {}
    return "".join(parts + [sql[at:]]), found


def parsed(sql: str, parse) -> tuple:
    """``parse(sql)`` (statements, and what else it returns), its long integer lists read as
    list nodes."""
    text, lists = collapse(sql)
    if lists:
        try:
            statements, *rest = parse(text)
        except QueryError:           # refused: the message is the one of the text as written
            return parse(sql)
        if restore(statements, lists) is not None:
            return (statements, *rest)
    return parse(sql)


def restore(statements: list, lists: dict) -> list | None:
    """``statements`` with each placeholder replaced by its list, or None if a placeholder
    is not exactly once the whole list of an IN (the query is then parsed as written)."""
    seen = {}
    for tree in statements:
        if tree is None:
            continue
        for node in tree.find_all(exp.Column):
            if node.name.startswith("_dpsql_list_"):
                parent = node.parent
                if node.name not in lists or node.name in seen or node.table or \
                        not isinstance(parent, exp.In) or parent.expressions != [node] or \
                        node.this.quoted:
                    return None
                seen[node.name] = node
    if len(seen) != len(lists):
        return None
    for name, node in seen.items():
        node.replace(listed(lists[name], typed=False))
    return statements


def listed(values: tuple, typed: bool) -> exp.Var:
    """The node of a list: its text as the analyst wrote it (``-5``), or ``typed``, as the
    typecheck writes a negative integer literal (``(-5)``)."""
    if typed:
        text = ", ".join(str(v) if v >= 0 else f"({v})" for v in values)
    else:
        text = ", ".join(map(str, values))
    node = exp.Var(this=text)
    node.meta[_KEY] = Listed(values)
    return node


def values_of(node: exp.Expression) -> tuple | None:
    """The values of a list node, or None for any other node."""
    if type(node) is not exp.Var or node._meta is None:
        return None
    found = node._meta.get(_KEY)
    return found.values if found is not None else None


def listed_in(node: exp.Expression) -> tuple | None:
    """The values of ``x IN (<a list>)``, or None."""
    if isinstance(node, exp.In) and len(node.expressions) == 1:
        return values_of(node.expressions[0])
    return None


def expanded(node: exp.In) -> exp.In:
    """``x IN (<a list>)`` with its list as the literal nodes sqlglot would have parsed."""
    items = [exp.Literal.number(v) if v >= 0 else exp.Neg(this=exp.Literal.number(-v))
             for v in values_of(node.expressions[0])]
    return exp.In(this=node.this.copy(), expressions=items)


def weight(node: exp.Expression) -> int:
    """How many syntax nodes ``node`` stands for (a list: its values as parsed, a negative
    one as two nodes)."""
    values = values_of(node)
    return 1 if values is None else len(values) + sum(v < 0 for v in values)
