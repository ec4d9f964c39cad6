"""The server's reading of statement text: where statements end, which ``$n`` are
placeholders, where comments are, and what a quoted setting value says.

Owns: the lexemes that splitting and placeholder numbering must see (quoted strings and
identifiers, escape and dollar-quoted strings, comments nested as PostgreSQL nests them,
``$n``, ``;``), scanned by the regular expression engine and ``str.find`` so that a
statement's characters cost no Python step each; and the text of a setting's value.
"""
from __future__ import annotations

import re

from ..errors import QueryError

_BLANK = re.compile(r"(?:\s|--[^\n]*)+")

LEXEMES = re.compile(r"""(?<![\w$])[Ee]'(?:[^'\\]|\\.|'')*(?:'|\Z)"""
                     r"""|'(?:[^']|'')*(?:'|\Z)|"(?:[^"]|"")*(?:"|\Z)|--[^\n]*|/\*.*?(?:\*/|\Z)"""
                     r"|(?<![\w$])\$(?P<tag>(?:[^\W\d][\w]*)?)\$.*?(?:\$(?P=tag)\$|\Z)"
                     r"|\$[0-9]+|;", re.S)
"""What splitting statements and numbering placeholders must see: a quoted string or
identifier (quotes doubled inside), an escape string (``E'..\\'..'``) or a dollar-quoted
one (``$$..$$``, ``$tag$..$tag$``: thirteenth review, a ``;`` in one split the
statement), a comment, a ``$n``, a ``;``. Scanned by the regular
expression engine, so that a statement's characters cost no Python step each: a scan in
Python took 55-65 ms for 100 KB, in the event loop, per Bind or Query message (eighth
review of issue 33: pipelined, they delayed other analysts' ``SELECT 1`` by up to 4 s)."""


def lexemes(sql: str):
    """LEXEMES' matches in ``sql`` in order, but a block comment read to the end of its
    nesting, as PostgreSQL reads ``/* a /* b */ ; */`` (the regular expression ended it at
    the first ``*/``, so the ``;`` split the statement: fourteenth review); comments are
    skipped, not yielded."""
    pos = 0
    while True:
        found = LEXEMES.search(sql, pos)
        if found is None:
            return
        if found.group().startswith("/*"):
            pos = _comment_end(sql, found.start())
            if pos < 0:
                raise QueryError("unterminated /* comment: close each /* with */ (comments "
                                 "nest, as in PostgreSQL)")
        else:
            yield found
            pos = found.end()


def _comment_end(sql: str, start: int) -> int:
    """Where the nested block comment that opens at ``start`` ends (-1 if it does not);
    each marker found once (``str.find``), so linear in the text."""
    depth, at = 0, start
    opening, closing = sql.find("/*", at), sql.find("*/", at + 2)
    while True:
        if opening != -1 and (closing == -1 or opening < closing):
            depth, at = depth + 1, opening + 2
            opening = sql.find("/*", at)
            if closing != -1 and closing < at:
                closing = sql.find("*/", at)
        elif closing != -1:
            depth, at = depth - 1, closing + 2
            closing = sql.find("*/", at)
            if opening != -1 and opening < at:
                opening = sql.find("/*", at)
            if depth == 0:
                return at
        else:
            return -1


def without_comments(sql: str) -> str:
    """``sql`` with each comment (nested block comments whole) replaced by a blank, quoted
    text untouched: how a session command (``SHOW x /* why */``) is read."""
    out, start, pos = [], 0, 0
    while True:
        found = LEXEMES.search(sql, pos)
        if found is None:
            break
        token = found.group()
        if token[:2] in ("/*", "--"):
            end = _comment_end(sql, found.start()) if token[:2] == "/*" else found.end()
            end = len(sql) if end < 0 else end
            out.append(sql[start:found.start()] + " ")
            start = end
        pos = max(found.end(), start)
    out.append(sql[start:])
    return "".join(out)


def strip(sql: str) -> str:
    """``sql`` without the blanks and comments it starts with (block comments nested)."""
    at = 0
    while True:
        blank = _BLANK.match(sql, at)
        if blank is not None and blank.end() > at:
            at = blank.end()
        elif sql.startswith("/*", at):
            at = _comment_end(sql, at)
            if at < 0:
                return ""
        else:
            return sql[at:].strip()


_QUOTED = re.compile(r"'((?:[^']|'')*)'|[Ee]'((?:[^'\\]|\\.|'')*)'"
                     r"|\$(?P<tag>(?:[^\W\d]\w*)?)\$(.*)\$(?P=tag)\$", re.S)
_ESCAPES = re.compile(r"\\(x[0-9A-Fa-f]{1,2}|u[0-9A-Fa-f]{4}|U[0-9A-Fa-f]{8}|[0-7]{1,3}|.)", re.S)
_NAMED = {"b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


def unquoted(value: str) -> str:
    """A setting's value as PostgreSQL reads it: the text of a quoted string (``'it''s'``,
    ``E'a\\tb'``, ``$$x$$``, ``$q$x$q$``), or the value as written (fourteenth review: the
    quotes of ``$$..$$`` and ``E'..'`` were kept)."""
    found = _QUOTED.fullmatch(value.strip())
    if found is None:
        return value.strip()
    plain, escaped, _, dollar = found.groups()
    if plain is not None:
        return plain.replace("''", "'")
    if escaped is not None:
        return _ESCAPES.sub(_escape, escaped.replace("''", "'"))
    return dollar


def _escape(found) -> str:
    code = found.group(1)
    if code[0] in "xuU" and len(code) > 1:
        value = int(code[1:], 16)
    elif code[0] in "01234567":
        value = int(code, 8)
    else:
        return _NAMED.get(code, code)
    return chr(value) if 0 < value < 0x110000 and not 0xD800 <= value < 0xE000 else "\ufffd"


def split_statements(sql: str) -> list:
    """The statements of a simple-protocol query string, split at ``;`` outside quotes
    and comments (blank ones dropped)."""
    if not any(c in sql for c in "'\"-/$"):        # no quote or comment: split in C
        out = sql.split(";")
    else:
        out, start = [], 0
        for found in lexemes(sql):
            if found.group() == ";":
                out.append(sql[start:found.start()])
                start = found.end()
        out.append(sql[start:])
    return [t for t in (s.strip() for s in out) if t and strip(t)]
