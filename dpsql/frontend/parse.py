"""Step 1: SQL text -> one sqlglot SELECT tree.

Owns: parsing, SmartNoise's ``TOP n``, and binding of qmark parameters as
literals into the tree (never by string formatting, so a parameter can never
change the query's shape). Everything after this step works on trees.

The analyst controls the SQL text and the parameters, so both are checked
before anything else sees them. Every refusal is a ``QueryError`` (nothing is
run, nothing is spent).

Limits on the SQL text and its tree. sqlglot's parser and the planner's
steps are recursive, so an unbounded query would exhaust Python's stack (a
``RecursionError`` deep inside the planner) or its time. The limits are far
above what a hand-written or generated aggregate query needs, and were
measured so that parsing and planning a query at any of them need at most
about 520 of Python's default 1,000 frames: a caller up to 400 frames deep
(notebooks, test runners and web frameworks are well below) never sees a
``RecursionError`` (tests/safety/test_parse_safety.py checks it).

* ``MAX_SQL_LENGTH`` = 100,000 characters of SQL text.
* ``MAX_NESTING`` = 20 levels of brackets ``( [ {`` and ``CASE ... END``,
  counted on the tokens (brackets inside string literals do not count), before
  parsing: sqlglot's recursive-descent parser spends up to 25 Python frames per
  bracket level. If the parser still runs out of stack (e.g. on a long
  ``NOT NOT NOT ...`` chain, 10 frames a level), that is a ``QueryError`` too.
* ``MAX_DEPTH`` = 64 levels and ``MAX_NODES`` = 20,000 nodes of the parsed
  tree, measured iteratively right after parsing (the later steps spend about 8
  frames per level). Chains of AND, and chains of OR, are first rebuilt as
  balanced trees (both are associative, also with NULLs), so
  ``a = 1 OR a = 2 OR ...`` of thousands of terms has a depth of about
  log2(terms) and is limited by the node count only (about 4,000 terms at 5
  nodes a term); ``x IN (1, 2, ...)`` costs one node a value and is the better
  way to write a long list. Other chains (``a + b + c ...``, ``- - - 1``) add a
  level per term.
* ``MAX_RELATION_DEPTH`` = 24 relations nested in one another, measured
  iteratively right after parsing: a SELECT is one level above every subquery
  and CTE it reads, so ``WITH t1 AS (... FROM t0), t2 AS (... FROM t1), ...``
  nests as deep as its chain is long although its syntax tree is shallow.
  ``SELECT COUNT(*) FROM t`` is 1 level. Rendering the plan costs about 12
  frames a level: called 400 frames deep, 52 levels render, and 33 with every
  other limit reached at once, so 24 leaves a margin of about 100 frames.

Parameters (``?``, paramstyle qmark) must be exactly one of: int, float
(finite), str (without NUL), bool, None, decimal.Decimal (finite),
datetime.date, datetime.datetime (naive), or a numpy scalar of type bool_,
a signed or unsigned integer type, float16/32/64, str_ or datetime64. A
subclass is refused (its ``__str__``/``__repr__``/``__format__`` could be
anything); each value is rendered from its value by the base type's own
methods. Public key values from the metadata go through the same ``literal``.
"""
from __future__ import annotations

import re
from typing import Sequence

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError
from sqlglot.tokens import TokenType

from ..errors import QueryError
from . import bigquery
from .allowed import WRITTEN_NAME
from .dialect import ANALYST_DIALECT, analyst_parser
from .literal_lists import parsed, weight
from .params import bind_params, literal, typed_params  # noqa: F401 - re-exported
from .parse_errors import parse_error
from .reads import (MAX_READS, MAX_RELATION_DEPTH, _children, check_relation_depth,  # noqa: F401
                    condition_count, relation_depth, relation_sizes)
from .spellings import date_spellings


MAX_SQL_LENGTH = 100_000
MAX_NESTING = 20
MAX_DEPTH = 64
MAX_NODES = 20_000
MAX_CONNECTIVES = 512
"""Most ANDs, ORs and CASE WHENs in a statement (engines plan them in squared time), and what
plans like them (``dpsql.frontend.reads.condition_count``: GREATEST, LEAST and COALESCE
operands, an equality of conditions)."""


# ----------------------------------------------------------------- parsing

_OPEN = frozenset({TokenType.L_PAREN, TokenType.L_BRACKET, TokenType.L_BRACE, TokenType.CASE})
_CLOSE = frozenset({TokenType.R_PAREN, TokenType.R_BRACKET, TokenType.R_BRACE, TokenType.END})

# Tokens after which a value is expected: there ``%s`` / ``%(name)s`` is a placeholder.
_VALUE_EXPECTED = frozenset(getattr(TokenType, name) for name in (
    "COMMA", "L_PAREN", "L_BRACKET", "L_BRACE", "EQ", "NEQ", "LT", "LTE", "GT", "GTE",
    "NULLSAFE_EQ", "PLUS", "DASH", "SLASH", "STAR", "MOD", "DPIPE", "AND", "OR", "NOT",
    "SELECT", "WHERE", "HAVING", "LIMIT", "OFFSET", "WHEN", "THEN", "ELSE", "IN", "LIKE",
    "ILIKE", "BETWEEN", "IS", "CASE", "DISTINCT", "TOP", "FETCH") if hasattr(TokenType, name))


def _adjacent(a, b) -> bool:
    return a.end + 1 == b.start


def _pyformat_at(tokens: list, i: int) -> bool:
    """Is tokens[i] (a ``%``) the start of ``%s`` or ``%(name)s``?"""
    rest = tokens[i + 1:i + 5]
    if rest and _adjacent(tokens[i], rest[0]) and rest[0].text == "s":
        return True
    return (len(rest) == 4 and rest[0].token_type == TokenType.L_PAREN
            and _adjacent(tokens[i], rest[0]) and rest[2].token_type == TokenType.R_PAREN
            and rest[3].text == "s" and _adjacent(rest[2], rest[3]))


def _pyformat_message(tokens: list, i: int) -> str:
    tok = tokens[i]
    return (f"'%s'-style placeholders are not supported (line {tok.line}): dpsql's paramstyle "
            "is qmark; write ? for each parameter and pass the values as a sequence "
            "(tuple or list), e.g. execute('... WHERE age > ?', (30,))")


_TEXT_TYPES = {TokenType.TEXT, TokenType.VARCHAR, TokenType.NVARCHAR, TokenType.CHAR,
               TokenType.NCHAR, TokenType.BPCHAR}
_TEXT_NAMES = {"text", "varchar", "char", "character", "nchar", "nvarchar", "bpchar", "string",
               "character varying", "national character"}
_FIXED_NAMES = {"char", "character", "nchar", "bpchar", "national character"}
_CASTS = {"cast", "try_cast", "safe_cast"}


def _check_text_types(tokens: list) -> None:
    """Refuse a cast to a text type with a length (``VARCHAR(1)``, ``"varchar"(1)``) or to
    a fixed-length one (``CHAR``, which is ``CHAR(1)`` in PostgreSQL): DuckDB's reading
    drops both, and dpsql's text has no length (review 44, F3: ``CAST(educ AS VARCHAR(1)) =
    '1'`` answered as ``educ = '1'``). A type stands after ``::`` or after the AS of a
    CAST's own brackets (not a column's alias)."""
    casts: list = []
    for i, tok in enumerate(tokens[1:], 1):
        kind, before = tok.token_type, tokens[i - 1]
        if kind in _OPEN:
            casts.append(kind == TokenType.L_PAREN and before.text.lower() in _CASTS)
        elif kind in _CLOSE and casts:
            casts.pop()
        name = tok.text.lower()
        if not (kind in _TEXT_TYPES or name in _TEXT_NAMES) or not (
                before.token_type == TokenType.DCOLON or (
                    before.token_type == TokenType.ALIAS and casts and casts[-1])):
            continue
        sized = i + 1 < len(tokens) and tokens[i + 1].token_type == TokenType.L_PAREN
        if sized or " ".join(name.split()) in _FIXED_NAMES:
            raise QueryError(
                f"a cast to {tok.text.upper()}{'(...)' if sized else ''} (line {tok.line}, "
                f"column {tok.col}) is not supported: dpsql's text has no length, where "
                "PostgreSQL would cut or pad it to a number of characters (CHAR alone is "
                "one); cast to VARCHAR, and cut with LEFT(x, n)")


def _check_tokens(tokens: list) -> None:
    """Refuse pyformat placeholders and too deep nesting, on tokens (no recursion)."""
    depth = 0
    for i, tok in enumerate(tokens):
        kind = tok.token_type
        if kind == TokenType.MOD and (i == 0 or tokens[i - 1].token_type in _VALUE_EXPECTED) \
                and _pyformat_at(tokens, i):
            raise QueryError(_pyformat_message(tokens, i))
        if kind in _OPEN:
            depth += 1
            if depth > MAX_NESTING:
                raise QueryError(
                    f"the query nests brackets or CASE expressions more than {MAX_NESTING} "
                    f"levels deep (line {tok.line}, column {tok.col}); this is dpsql's limit, "
                    "to keep parsing and planning within Python's stack: remove redundant "
                    "parentheses or split the expression")
        elif kind in _CLOSE:
            depth = max(depth - 1, 0)


def _token_error(err: TokenError, sql: str) -> QueryError:
    cause = str(err.__cause__ or err)
    missing = re.match(r"Missing (.+) from \d+:(\d+)", cause)
    if missing:
        quote, offset = missing.group(1), int(missing.group(2))  # 0-based offset in the text
        line = sql.count("\n", 0, offset) + 1
        col = offset - (sql.rfind("\n", 0, offset) + 1) + 1
        return QueryError(f"cannot read the query: the {quote} opened at line {line}, "
                          f"column {col} is never closed (an unterminated string or quoted "
                          f"name); close it with {quote}, and write a {quote} inside it twice")
    if not isinstance(err.__cause__, (TokenError, type(None))):    # the tokenizer's own
        return QueryError("cannot read the query: it ends inside a comment, a string or a "    # failure
                          "quoted name, or with a lone $; close what it opens. Write one "
                          "SELECT statement in standard SQL.")
    return QueryError(f"cannot read the query: {' '.join(cause.split())[:200]}. "
                      "Write one SELECT statement in standard SQL.")


def _statement_kind(tree) -> str:
    """The statement's SQL keyword (INSERT, VACUUM, ...), or "not a SELECT"."""
    if isinstance(tree, exp.Command):             # a statement sqlglot keeps as text
        word = str(tree.this or "").split()[:1]
        return word[0].upper() if word and word[0].isalpha() and len(word[0]) < 30 \
            else "not a SELECT"
    return tree.key.upper() if tree.key in ("insert", "update", "delete", "create", "drop",
                                            "alter", "merge", "union", "intersect", "except",
                                            "pragma", "set", "copy") else "not a SELECT"


def _too_deep_to_parse() -> QueryError:
    return QueryError("the query is nested too deeply to parse; simplify it: remove "
                      "redundant parentheses, NOT or "
                      f"unary minus chains (dpsql allows {MAX_NESTING} levels of brackets)")


def _tokenize(sql: str, dialect: str) -> list:
    return sqlglot.Dialect.get_or_raise(dialect).tokenize(sql)


def _parse_tokens(tokens: list, sql: str, dialect: str) -> list:
    if dialect == ANALYST_DIALECT:
        return analyst_parser().parse(tokens, sql)
    return sqlglot.Dialect.get_or_raise(dialect).parser().parse(tokens, sql)


def _parse_all(sql: str) -> tuple:
    """(statements, BigQuery's DIFFERENTIAL_PRIVACY clause or None: dpsql.frontend.bigquery)."""
    try:
        tokens = _tokenize(sql, ANALYST_DIALECT)
    except TokenError as err:
        raise _token_error(err, sql) from None
    except RecursionError:
        raise _too_deep_to_parse() from None
    except MemoryError:
        raise
    except Exception as err:  # noqa: BLE001 - whatever sqlglot raises is a refusal
        raise QueryError("cannot read the query: it is not SQL this server can read; "
                         "write one SELECT statement in standard SQL") from None
    _check_tokens(tokens)
    _check_text_types(tokens)
    tokens, clause = bigquery.extract(tokens)
    try:
        return _parse_tokens(tokens, sql, ANALYST_DIALECT), clause
    except ParseError as first:
        # SmartNoise accepts T-SQL's ``SELECT TOP n``; DuckDB's grammar does not.
        if "top" in sql.lower() and clause is None:
            try:
                return sqlglot.parse(sql, read="tsql"), None
            except MemoryError:
                raise
            except Exception:  # noqa: BLE001 - report the DuckDB error below
                pass
        for i, tok in enumerate(tokens):
            if tok.token_type == TokenType.MOD and _pyformat_at(tokens, i):
                raise QueryError(_pyformat_message(tokens, i)) from None
        raise QueryError(parse_error((first.errors or [{}])[0], sql)) from None
    except RecursionError:
        raise _too_deep_to_parse() from None
    except MemoryError:
        raise
    except Exception as err:  # noqa: BLE001 - TokenError, ValueError, ...: all refusals
        raise QueryError(f"cannot parse the query ({' '.join(str(err).split())[:200]}); "
                         "write one SELECT statement in standard SQL") from None


# ----------------------------------------------------------------- tree limits

def _balance_connectors(tree: exp.Expression) -> exp.Expression:
    """Rebuild each chain of AND (or of OR) as a balanced tree; iterative.

    sqlglot parses ``a OR b OR c`` left-deep, one level per term. AND and OR are
    associative (also in SQL's three-valued logic), so the balanced tree means
    the same, in the same left-to-right order, with depth log2(terms). Only
    chains of one connector are regrouped: an OR under an AND keeps its Paren.
    """
    roots, stack = [], [tree]
    while stack:
        node = stack.pop()
        if type(node) in (exp.And, exp.Or) and type(node.parent) is not type(node):
            roots.append(node)
        stack.extend(_children(node))
    for root in roots:
        kind, operands, todo = type(root), [], [root]
        while todo:
            node = todo.pop()
            if type(node) is kind:
                todo.append(node.expression)
                todo.append(node.this)
            else:
                operands.append(node)
        if len(operands) <= 2:
            continue
        while len(operands) > 1:
            paired = [kind(this=operands[i], expression=operands[i + 1])
                      for i in range(0, len(operands) - 1, 2)]
            if len(operands) % 2:
                paired.append(operands[-1])
            operands = paired
        if root is tree:
            tree = operands[0]
        else:
            root.replace(operands[0])
    return tree


RESERVED_PREFIX = "_dpsql"
"""Names of dpsql's own plan columns and relations (row identities, hidden keys)."""


def check_reserved_names(tree: exp.Expression) -> None:
    """Refuse any name starting with ``_dpsql`` anywhere in the query (columns, aliases,
    tables, CTEs): the plan's internal columns must be unreachable from the analyst's SQL
    at every level, so none of them can be read, shadowed or forged."""
    for node in tree.find_all(exp.Identifier):
        if str(node.this).lower().startswith(RESERVED_PREFIX):
            meta = node.meta or {}
            where = f" (line {meta['line']}, column {meta['col']})" if "line" in meta else ""
            raise QueryError(f"the name {node.this!r}{where} starts with {RESERVED_PREFIX}, "
                             "which is reserved for dpsql's own plan columns; choose another "
                             "name")


def check_size(tree: exp.Expression) -> None:
    """Refuse a tree over MAX_DEPTH, MAX_NODES or MAX_CONNECTIVES (iteratively)."""
    nodes, deepest, connectives, stack = 0, 0, 0, [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        nodes += weight(node)
        count = condition_count(node)       # AND, OR, a WHEN, GREATEST's operands, ...
        if count:
            connectives += count
            if connectives > MAX_CONNECTIVES:
                raise QueryError(
                    f"the query has more than {MAX_CONNECTIVES} conditions joined by AND, OR "
                    "and CASE WHEN, or operands of GREATEST, LEAST and COALESCE (dpsql's "
                    "limit): write alternatives as x IN (...), bins as "
                    "arithmetic (FLOOR(x / 10) * 10), or split the query")
        deepest = max(deepest, depth)
        if depth > MAX_DEPTH:
            raise QueryError(
                f"the query's expression tree is more than {MAX_DEPTH} levels deep; this is "
                "dpsql's limit, to keep planning within Python's stack: simplify nested "
                "expressions (long chains of + - * / or unary minus, nested function calls), "
                "and write long lists of alternatives as IN (...)")
        if nodes > MAX_NODES:
            raise QueryError(
                f"the query has more than {MAX_NODES} syntax nodes; this is dpsql's limit on "
                "query size: write long lists of alternatives as IN (...), or split the query")
        stack.extend((child, depth + 1) for child in _children(node))


def parse_query(sql: str, params: Sequence | None = None) -> exp.Select:
    """Parse exactly one SELECT statement (with parameters bound)."""
    if not isinstance(sql, str) or not sql.strip():
        raise QueryError("the query is empty; pass one SELECT statement")
    sql = str.__str__(sql)  # a plain str, whatever subclass was passed
    if len(sql) > MAX_SQL_LENGTH:
        raise QueryError(f"the query is {len(sql):,} characters long, more than dpsql's limit "
                         f"of {MAX_SQL_LENGTH:,}; write long lists of values as IN (...) or "
                         "split the query")
    if "\x00" in sql:
        raise QueryError("the query contains a NUL character (\\x00); remove it")
    try:
        sql.encode("utf-8")
    except UnicodeEncodeError:
        raise QueryError("the query is not valid Unicode (it holds a lone surrogate)") from None
    statements, clause = parsed(sql, _parse_all)
    statements = [s for s in statements if s is not None]
    if len(statements) != 1:
        raise QueryError(f"expected one SQL statement, got {len(statements)}; "
                         "send each query separately")
    tree = bigquery.attach(statements[0], clause)
    if isinstance(tree, exp.Union) and not isinstance(tree, (exp.Intersect, exp.Except)):
        _union_of_queries(tree)
        tree = _balance_connectors(tree)
        check_size(tree)
        check_relation_depth(tree)
        check_reserved_names(tree)
        _keep_written_names(tree, sql)
        return date_spellings(bind_params(tree, params))
    if not isinstance(tree, exp.Select):
        raise QueryError(f"only SELECT queries are answered, this statement is "
                         f"{_statement_kind(tree)}; "
                         "dpsql is read-only and releases aggregates only")
    tree = _balance_connectors(tree)
    check_size(tree)
    check_relation_depth(tree)
    check_reserved_names(tree)
    _keep_written_names(tree, sql)
    return date_spellings(bind_params(tree, params))


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _keep_written_names(tree: exp.Expression, sql: str) -> None:
    """Each function's name as written (LIST_CONTAINS, where sqlglot's node is
    ARRAY_CONTAINS), in its meta for messages (``dpsql.frontend.allowed.name_of``; review
    40, F2). Only a name at the node's recorded place, followed by its bracket, is kept."""
    for node in tree.find_all(exp.Func):
        meta = node._meta
        if not meta or "start" not in meta:
            continue
        name = sql[meta["start"]:meta["end"] + 1]
        if _NAME.fullmatch(name) and sql[meta["end"] + 1:].lstrip().startswith("("):
            meta[WRITTEN_NAME] = name.upper()


def _union_of_queries(tree: exp.Union) -> None:
    """``q1 UNION ALL q2 ...``: each part a whole query, released on its own."""
    if tree.args.get("distinct"):
        raise QueryError("UNION (without ALL) of queries is not supported: it would merge equal "
                         "noisy rows; write UNION ALL")
    if any(tree.args.get(k) for k in ("order", "limit", "offset", "with_", "with")):
        raise QueryError("ORDER BY, LIMIT or WITH around a UNION ALL of queries is not "
                         "supported; put them inside each part")
    for side in (tree.this, tree.expression):
        side = side.this if isinstance(side, exp.Subquery) else side
        if isinstance(side, exp.Union) and not isinstance(side, (exp.Intersect, exp.Except)):
            _union_of_queries(side)
        elif not isinstance(side, exp.Select):
            raise QueryError(f"each part of a UNION ALL must be a SELECT, not "
                             f"{side.key.upper()}")


def union_parts(tree: exp.Expression) -> list:
    """The SELECTs of a UNION ALL of queries, in order (one item for a plain SELECT)."""
    if isinstance(tree, exp.Union):
        return [p for side in (tree.this, tree.expression)
                for p in union_parts(side.this if isinstance(side, exp.Subquery) else side)]
    return [tree]
