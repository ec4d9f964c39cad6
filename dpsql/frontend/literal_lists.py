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

A VALUES list of at least ``MIN_LISTED`` rows of one plain integer each (``(VALUES (1), (2),
...) AS v(x)``) is read the same way: one ``exp.Var`` (``listed_rows``) as the VALUES' only
expression, rendered as its rows as written; ``dpsql.plan.resolve`` reads its values without
typing them one by one, and an engine renders it once (DuckDB: one array constant).
The planner writes its own lists this way (a key filter, a key grid: ``cast`` set, each value
standing for ``TRY_CAST(value AS cast)``); an engine without arrays expands them back into
the nodes they stand for (``dpsql.plan.dialect``).

Only lists of at least ``MIN_LISTED`` plain integers (``-?[1-9][0-9]*`` or ``0``, each
within BIGINT) are taken. The list is replaced in the text by a placeholder name padded
with the list's own newlines and spaces, so every position after it (in error messages)
is unchanged. The parsed tree must hold each placeholder exactly once, as the whole list
of an ``IN``; if it does not (the text was inside a string, a comment or a quoted name),
the query is parsed again as written (for a VALUES list: exactly once the only row of a
VALUES, as its only value).
"""
from __future__ import annotations

import re

from sqlglot import exp

from ..errors import QueryError
from .literals import INT64

MIN_LISTED = 64
"""Shorter lists are parsed value by value (a query of a few dozen values plans quickly)."""

_PLACEHOLDER = "_dpsql_list_{}"
_ROWS_PLACEHOLDER = "(_dpsql_rows_{})"
_NUMBER = r"-?\d+"
_LIST = re.compile(rf"\bIN\s*\(\s*({_NUMBER}(?:\s*,\s*{_NUMBER}){{{MIN_LISTED - 1},}})\s*\)",
                   re.IGNORECASE)
_ROW = rf"\(\s*{_NUMBER}\s*\)"
_ROWS = re.compile(rf"\bVALUES\s*({_ROW}(?:\s*,\s*{_ROW}){{{MIN_LISTED - 1},}})", re.IGNORECASE)
_SEPARATOR = re.compile(r"\s*,\s*")
_PARENS = re.compile(r"[()\s]")
_KEY = "dpsql_listed"


class Listed:
    """The values of one list, in order (immutable: a copy of the tree shares them);
    ``rows``: a VALUES list's rows; ``cast``: each value stands for ``TRY_CAST(value AS
    cast)`` (the planner's lists), else for its literal."""

    __slots__ = ("values", "rows", "cast")

    def __init__(self, values: tuple, rows: bool = False, cast: str | None = None) -> None:
        self.values, self.rows, self.cast = values, rows, cast

    def __deepcopy__(self, memo) -> "Listed":
        return self


def _values(text: str) -> tuple | None:
    """The integers of a list's text, or None if one is not written canonically (``007``,
    ``-0``) or does not fit in a BIGINT."""
    tokens = _SEPARATOR.split(text.strip())
    if any(len(t) > 20 for t in tokens):    # beyond BIGINT; int() refuses 4,301+ digits
        return None                         # (eighteenth review: an internal error)
    values = tuple(int(t) for t in tokens)
    if any(str(v) != t for v, t in zip(values, tokens)) or \
            not INT64[0] < min(values) <= max(values) <= INT64[1]:
        return None
    return values


def collapse(sql: str) -> tuple:
    """(the text with each long integer list or VALUES list replaced by a placeholder, the
    lists' values by placeholder name); the text unchanged and {} if there is none."""
    found, parts, at = {}, [], 0
    matches = sorted([(m, False) for m in _LIST.finditer(sql)] +
                     [(m, True) for m in _ROWS.finditer(sql)], key=lambda m: m[0].start())
    for match, rows in matches:
        start, end = match.span(1)
        if start < at:
            continue
        content = sql[start:end]
        name = (_ROWS_PLACEHOLDER if rows else _PLACEHOLDER).format(len(found))
        first_line = content.split("\n", 1)[0]
        values = _values(_PARENS.sub("", content) if rows else content)
        if values is None or len(first_line) < len(name):
            continue
        found[name.strip("()")] = (values, rows)
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
    is not exactly once the whole list of an IN, or the only row of a VALUES (the query is
    then parsed as written)."""
    seen = {}
    for tree in statements:
        if tree is None:
            continue
        for node in tree.find_all(exp.Column):
            if node.name.startswith(("_dpsql_list_", "_dpsql_rows_")):
                if node.name not in lists or node.name in seen or node.table or \
                        node.this.quoted or not _in_place(node, lists[node.name][1]):
                    return None
                seen[node.name] = node
    if len(seen) != len(lists):
        return None
    for name, node in seen.items():
        values, rows = lists[name]
        if rows:
            node.parent.parent.set("expressions", [listed_rows(values)])
        else:
            node.replace(listed(values, typed=False))
    return statements


def _in_place(node: exp.Column, rows: bool) -> bool:
    """Whether a placeholder is where its list was: the whole list of an IN, or the only
    value of the only row of a VALUES."""
    parent = node.parent
    if not rows:
        return isinstance(parent, exp.In) and parent.expressions == [node]
    return isinstance(parent, exp.Tuple) and parent.expressions == [node] and \
        isinstance(parent.parent, exp.Values) and parent.parent.expressions == [parent]


def listed(values: tuple, typed: bool, cast: str | None = None) -> exp.Var:
    """The node of a list: its text as the analyst wrote it (``-5``), or ``typed``, as the
    typecheck writes a negative integer literal (``(-5)``); ``cast``: a list of the
    planner's, each value standing for ``TRY_CAST(value AS cast)``."""
    if cast is not None:
        text = ", ".join(f"TRY_CAST({_typed(v)} AS {cast})" for v in values)
    elif typed:
        text = ", ".join(map(_typed, values))
    else:
        text = ", ".join(map(str, values))
    node = exp.Var(this=text)
    node.meta[_KEY] = Listed(values, cast=cast)
    return node


def _typed(value: int) -> str:
    """An integer as the typecheck and the planner write it (``(-5)``)."""
    return str(value) if value >= 0 else f"({value})"


def listed_rows(values: tuple, cast: str | None = None) -> exp.Var:
    """The node of a VALUES list of one integer per row, its only expression: rendered as
    its rows as written (``(1), (-5)``), or with ``cast``, as ``(TRY_CAST(1 AS cast))``
    (``(TRY_CAST((-5) AS cast))``)."""
    if cast is None:
        text = ", ".join(f"({v})" for v in values)
    else:
        text = ", ".join(f"(TRY_CAST({_typed(v)} AS {cast}))" for v in values)
    node = exp.Var(this=text)
    node.meta[_KEY] = Listed(values, rows=True, cast=cast)
    return node


def _listed(node: exp.Expression) -> Listed | None:
    if type(node) is not exp.Var or node._meta is None:
        return None
    return node._meta.get(_KEY)


def values_of(node: exp.Expression) -> tuple | None:
    """The values of a list node (not a VALUES list's), or None for any other node."""
    found = _listed(node)
    return found.values if found is not None and not found.rows else None


def cast_of(node: exp.Expression) -> str | None:
    """The type each value of a planner's list node (of an ``IN`` or a VALUES) stands
    cast to, or None."""
    found = _listed(node.expressions[0]) if len(node.expressions) == 1 else None
    return found.cast if found is not None else None


def rows_in(node: exp.Expression) -> tuple | None:
    """The values of a VALUES whose rows are one list node, or None."""
    if isinstance(node, exp.Values) and len(node.expressions) == 1:
        found = _listed(node.expressions[0])
        if found is not None and found.rows:
            return found.values
    return None


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


def values_count(node: exp.Expression) -> int:
    """How many values ``node`` stands for: a long list's, else 1."""
    found = _listed(node)
    return 1 if found is None else len(found.values)


def weight(node: exp.Expression) -> int:
    """How many syntax nodes ``node`` stands for (a list: its values as parsed, a negative
    one as two nodes; a VALUES list: a row node more per value)."""
    found = _listed(node)
    if found is None:
        return 1
    return len(found.values) * (2 if found.rows else 1) + sum(v < 0 for v in found.values)
