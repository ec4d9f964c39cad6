"""The allow-listed row-level expression language, as data.

Owns: which SQL node types and functions may appear in a row-level expression
(WHERE, GROUP BY keys, aggregate arguments) and in post-processing (HAVING,
ORDER BY, the SELECT list over aggregates). Anything not listed here is refused
by name, at plan time, for free. ``dpsql.frontend.typecheck`` applies the list;
docs/sql.md publishes it (``tests/unit/test_allowed.py`` checks the two agree and
runs every entry against its failure modes).

Every entry states its type rule, the ways it can fail on some value, and how
the plan makes that failure impossible:

- ``total``: cannot raise once its operands have the types the rule demands
  (types come from the metadata, never from the data);
- ``try``: can raise on some values (integer overflow, an offset out of range);
  the plan marks it (``exp.Try``) and each engine's dialect compiles it to a form
  that computes NULL where it would raise, without raising (DuckDB: on HUGEINT, or with
  offsets checked: ``dpsql.engines.duckdb.guards``; never DuckDB's ``TRY``, whose
  retry of a whole vector is a timing channel);
- ``plan``: the operand that could fail (a pattern, a date part, a literal to
  convert) must be a literal, and is checked or converted when the query is
  planned.

Left out on purpose: functions whose cost or memory grows with a value
(``repeat``, ``range``, list builders, ``levenshtein`` and other edit
distances, ``lpad``/``rpad``), regular expressions and ``SIMILAR TO``/``GLOB``
(backtracking), file, catalog, random and hashing functions, and every type other
than the six below (an ``INTERVAL`` is only a literal added to a date: ``temporal``).
"""
from __future__ import annotations

from dataclasses import dataclass

import sqlglot
from sqlglot import exp

from ..metadata.model import DEFAULT_TEXT_LENGTH, MAX_TEXT_CELL, TEXT_UNIT  # noqa: F401
from .dialect import ANALYST_DIALECT

# The expression language's types: the metadata's five column types plus DATE
# (from CAST ... AS DATE) and the type of NULL. Each has exactly one engine type.
ENGINE_TYPES = {"int": "BIGINT", "float": "DOUBLE", "string": "VARCHAR", "boolean": "BOOLEAN",
                "datetime": "TIMESTAMP", "date": "DATE"}
NUMERIC = {"int", "float"}
MAX_TEXT_COPIES = 100
"""How many column values a CONCAT, ||, UPPER or LOWER may copy into the text it builds,
a reference counting one per TEXT_UNIT characters of its column's max_length, a derived
column counting the references it stands for (its weight, capped alike by
``dpsql.frontend.binding.MAX_WEIGHT``), and a column under UPPER or LOWER three times."""
TEMPORAL = {"datetime", "date"}

# CAST targets: the spelling's DataType -> the language type it produces.
CAST_TARGETS = {
    exp.DataType.Type.TINYINT: "int", exp.DataType.Type.SMALLINT: "int",
    exp.DataType.Type.INT: "int", exp.DataType.Type.BIGINT: "int",
    exp.DataType.Type.FLOAT: "float", exp.DataType.Type.DOUBLE: "float",
    exp.DataType.Type.DECIMAL: "float",
    exp.DataType.Type.VARCHAR: "string", exp.DataType.Type.TEXT: "string",
    exp.DataType.Type.CHAR: "string", exp.DataType.Type.NVARCHAR: "string",
    exp.DataType.Type.BOOLEAN: "boolean",
    exp.DataType.Type.TIMESTAMP: "datetime", exp.DataType.Type.TIMESTAMPNTZ: "datetime",
    exp.DataType.Type.DATETIME: "datetime",
    exp.DataType.Type.DATE: "date",
}
# Casts DuckDB cannot bind between these types (refused at plan time).
CAST_REFUSED = {("boolean", "datetime"), ("boolean", "date"), ("datetime", "boolean"),
                ("date", "boolean"), ("datetime", "float"), ("date", "float"),
                ("datetime", "int"), ("date", "int"), ("int", "date"), ("float", "date"),
                ("float", "datetime")}

DATE_PARTS = {"year", "quarter", "month", "week", "day", "dayofweek", "dow", "dayofyear",
              "doy", "hour", "minute", "second", "isodow", "isoyear"}
TRUNC_PARTS = {"year", "quarter", "month", "week", "day", "hour", "minute", "second"}


@dataclass(frozen=True)
class Entry:
    """One allowed construct: how it is spelled, typed, and kept from failing."""

    sql: str                 # as written in SQL (for the docs and refusals)
    nodes: tuple             # sqlglot node classes, or lower-case names of anonymous calls
    rule: str                # the typing rule, applied by typecheck (see RULES there)
    signature: str           # the type rule, for the docs
    failure: str             # "total", "try" or "plan" (see module doc)
    note: str                # the failure modes and how they are made impossible


E = Entry
ENTRIES: tuple[Entry, ...] = (
    # -- leaves -------------------------------------------------------------
    E("column", (exp.Column,), "column", "the column's metadata type", "total",
      "every column is read through the typed relation, cast once to its metadata type; "
      "a cell that does not convert is NULL"),
    E("literal", (exp.Literal, exp.Boolean, exp.Null), "literal",
      "integer (fits 64 bits) -> int; other numbers -> float; 'text' -> string", "plan",
      "numbers are re-written at plan time with a fixed type: integers beyond 64 bits and "
      "decimals become DOUBLE, so no literal can overflow when the query runs; arithmetic "
      "and comparisons of number literals alone are exact, computed at plan time into one "
      "literal (0.06 + 0.01 is 0.07, then its nearest DOUBLE)"),
    E("( )", (exp.Paren,), "paren", "T -> T", "total", "grouping only"),
    E("TRY(x)", (exp.Try,), "paren", "T -> T", "total",
      "read as (x): every expression is total already"),
    # -- logic and comparison -------------------------------------------------
    E("AND, OR, NOT", (exp.And, exp.Or, exp.Not), "logic", "boolean, ... -> boolean", "total",
      "operands must be boolean by type; a string is never cast to boolean at run time"),
    E("= <> < <= > >=, IS [NOT] DISTINCT FROM", (exp.EQ, exp.NEQ, exp.LT, exp.LTE, exp.GT,
                                                  exp.GTE, exp.NullSafeEQ, exp.NullSafeNEQ),
      "compare", "T, T -> boolean (int and float compare as numbers)", "plan",
      "operands must have one type; a literal of another type is converted at plan time "
      "(2 compared with a string column becomes '2'; a string compared with a number or a "
      "date must parse, or the query is refused)"),
    E("IN (list)", (exp.In,), "compare", "T, T... -> boolean", "plan", "as comparison"),
    E("BETWEEN", (exp.Between,), "compare", "T, T, T -> boolean", "plan", "as comparison"),
    E("IS NULL, IS TRUE, IS FALSE", (exp.Is,), "is", "T -> boolean (IS TRUE/FALSE: boolean)",
      "total", "IS TRUE/FALSE need a boolean operand by type"),
    E("LIKE, ILIKE [ESCAPE c]", (exp.Like, exp.ILike, exp.Escape), "like",
      "string, string literal -> boolean", "plan",
      "the pattern and the escape character must be literals (a row-dependent escape "
      "string raises an error no guard catches); the escape is one character"),
    # -- conditional ----------------------------------------------------------
    E("CASE, IF(c, a, b)", (exp.Case, exp.If), "case", "boolean -> T, ... -> T", "total",
      "conditions must be boolean; results must share one type (int and float give float)"),
    E("COALESCE, IFNULL, NULLIF, GREATEST, LEAST", (exp.Coalesce, exp.Nullif, exp.Greatest,
                                                    exp.Least), "same", "T, T... -> T", "total",
      "arguments must share one type, so no cast happens at run time"),
    E("CAST, TRY_CAST, ::", (exp.Cast, exp.TryCast), "cast",
      "to BIGINT/INTEGER/SMALLINT/TINYINT, DOUBLE/FLOAT/REAL/DECIMAL, VARCHAR/TEXT, BOOLEAN, "
      "DATE, TIMESTAMP", "plan",
      "always run as TRY_CAST (NULL when a value does not convert); integer targets are "
      "64-bit and DECIMAL is DOUBLE; a literal source is converted at plan time; other "
      "targets (HUGEINT, UHUGEINT, VARINT, INTERVAL, TIME WITH TIME ZONE, ...) are refused"),
    # -- arithmetic -----------------------------------------------------------
    E("+ - *", (exp.Add, exp.Sub, exp.Mul), "arith", "number, number -> int or float", "try",
      "64-bit integer overflow is NULL; DOUBLE overflows to infinity"),
    E("/", (exp.Div,), "div", "number, number -> float", "try", "DOUBLE division; x/0 is NULL"),
    E("//, %, MOD", (exp.IntDiv, exp.Mod), "arith", "number, number -> int or float", "try",
      "division by zero and overflow are NULL"),
    E("-x", (exp.Neg,), "neg", "number -> number", "try", "negating the smallest BIGINT is NULL"),
    E("ABS", (exp.Abs,), "numeric_same", "number -> number", "try", "overflow is NULL"),
    E("SIGN", (exp.Sign,), "numeric_int", "number -> int", "try", "none known; guarded anyway"),
    E("ROUND(x [, n])", (exp.Round,), "round", "number, integer literal -> number", "try",
      "n must be an integer literal in [-30, 30]"),
    E("FLOOR, CEIL, TRUNC", (exp.Floor, exp.Ceil, exp.Trunc), "numeric_same",
      "number -> number", "try", "none known; guarded anyway"),
    E("SQRT, CBRT, LN, LOG, LOG10, LOG2, EXP, POWER", (exp.Sqrt, exp.Cbrt, exp.Ln, exp.Log,
                                                      exp.Exp, exp.Pow),
      "numeric_float", "number... -> float", "try",
      "domain errors are NaN or NULL; overflow is infinity"),
    E("ISNAN, ISINF", (exp.IsNan, exp.IsInf), "float_bool", "number -> boolean", "total", ""),
    # -- strings ----------------------------------------------------------------
    E("LOWER, UPPER, TRIM, LTRIM, RTRIM, REVERSE", (exp.Lower, exp.Upper, exp.Trim, exp.Reverse),
      "string_same", "string -> string", "total",
      "output no longer than the input; TRIM takes no character list"),
    E("LENGTH", (exp.Length,), "string_int", "string -> int", "total", ""),
    E("SUBSTRING(s, start [, len]), LEFT, RIGHT", (exp.Substring, exp.Left, exp.Right),
      "substring", "string, int... -> string", "try",
      "an offset or length beyond DuckDB's range is NULL; output no longer than s"),
    E("STRPOS, POSITION", (exp.StrPosition,), "string_pair_int", "string, string -> int",
      "total", ""),
    E("STARTS_WITH, CONTAINS", (exp.StartsWith, exp.Contains), "string_pair_bool",
      "string, string -> boolean", "total", ""),
    E("CONCAT, ||", (exp.Concat, exp.DPipe), "concat", "T... -> string", "total",
      "output length is the sum of its inputs' (no value controls a repetition count)"),
    # -- dates and times -------------------------------------------------------
    E("EXTRACT(part FROM t), DATE_PART('part', t)", (exp.Extract, "date_part", "datepart"),
      "extract", "part literal, datetime or date -> int", "try",
      "the part must be a literal from a fixed list; infinite dates give NULL"),
    E("YEAR, QUARTER, MONTH, DAY, HOUR, MINUTE, SECOND, DAYOFWEEK, DAYOFYEAR",
      (exp.Year, exp.Quarter, exp.Month, exp.Day, exp.Hour, exp.Minute, exp.Second,
       exp.DayOfWeek, exp.DayOfYear), "date_int", "datetime or date -> int", "try",
      "infinite dates give NULL"),
    E("DATE_TRUNC('part', t)", (exp.TimestampTrunc, exp.DateTrunc), "trunc",
      "part literal, datetime or date -> datetime", "try",
      "the part must be a literal from a fixed list (NULL for infinite dates)"),
    E("t + INTERVAL 'n' unit, t - INTERVAL 'n' unit, DATE_ADD(t, INTERVAL ...), "
      "DATE_SUB(t, INTERVAL ...), DATE_ADD(t, n), DATE_SUB(t, n)",
      (exp.Interval, exp.DateAdd), "interval",
      "datetime or date, interval literal (n: whole days, an integer literal) -> datetime",
      "plan",
      "the interval is a literal of whole counts of year, quarter, month, week, day, hour, "
      "minute, second, millisecond or microsecond; NULL unless t and the result lie in "
      "years 1 to 9999: the plan computes which t qualify and adds only to those (a "
      "literal t is moved at plan time)"),
    E("DATE_DIFF('part', a, b), DATEDIFF, DATE_DIFF(a, b, PART)", (exp.DateDiff,), "date_diff",
      "part literal, datetime or date, datetime or date -> int", "try",
      "the part must be year, quarter, month, week, day, hour, minute or second, written "
      "literally; it counts the part's boundaries from a to b, as DuckDB (week: whole weeks); "
      "BigQuery's DATE_DIFF(a, b, PART) counts them from b to a (PART: YEAR, QUARTER, MONTH, "
      "DAY, HOUR, MINUTE or SECOND); infinite dates give NULL"),
)

_BY_NODE = {n: e for e in ENTRIES for n in e.nodes if isinstance(n, type)}
_BY_NAME = {n: e for e in ENTRIES for n in e.nodes if isinstance(n, str)}


def entry_for(node: exp.Expression) -> Entry | None:
    """The allow-list entry of ``node``, or None if it is not allowed."""
    if isinstance(node, exp.Anonymous):
        return _BY_NAME.get(str(node.this).lower())
    found = _BY_NODE.get(type(node))
    return found


WRITTEN_NAME = "dpsql_name"
"""The meta key of a function's name as the analyst wrote it (``dpsql.frontend.parse``)."""


def _written_name(node: exp.Expression) -> str | None:
    return (node._meta or {}).get(WRITTEN_NAME) if isinstance(node, exp.Func) else None


def name_of(node: exp.Expression) -> str:
    """How a refused node is named in messages."""
    if isinstance(node, exp.Anonymous):
        return f"function {str(node.this).upper()}()"
    if _written_name(node):
        return f"function {_written_name(node)}()"
    if type(node) in _SPELLED:
        return _SPELLED[type(node)]
    if isinstance(node, exp.Func) and _operator(type(node)) is None:
        return f"function {_function_name(node)}()"
    return spelled(node)


_CLAUSES = {"windows": "WINDOW", "sample": "TABLESAMPLE (USING SAMPLE)", "pivots": "PIVOT/UNPIVOT",
            "laterals": "LATERAL", "connect": "CONNECT BY", "locks": "FOR UPDATE/SHARE",
            "cluster": "CLUSTER BY", "distribute": "DISTRIBUTE BY", "sort": "SORT BY",
            "match": "MATCH_RECOGNIZE", "hint": "a hint", "into": "INTO",
            "when": "AT (...) (time travel)", "method": "a join method"}


def clause_name(key: str) -> str:
    """A clause of sqlglot's tree (``windows``) as SQL spells it (review 38, F3: WINDOWS)."""
    return _CLAUSES.get(key, key.upper().replace("_", " "))


def spelled(node: exp.Expression) -> str:
    """An operator as the analyst writes it (``||``, ``/``, ``IS DISTINCT FROM``; review 37,
    F1: messages said DPIPE, DIV, NULLSAFENEQ, sqlglot's class names), else the node's name."""
    return _operator(type(node)) or node.key.upper().replace("_", " ")


_OPERATORS: dict = {}


def _operator(kind: type) -> str | None:
    """The operator between ``a`` and ``b`` when the analyst's dialect writes ``kind`` as
    ``a <operator> b`` (None for a function or another form)."""
    if kind not in _OPERATORS:
        found = None
        if issubclass(kind, exp.Binary):
            try:
                text = kind(this=exp.column("a"), expression=exp.column("b")).sql(ANALYST_DIALECT)
            except Exception:          # noqa: BLE001 - a node sqlglot cannot render so
                text = ""
            if text.startswith("a ") and text.endswith(" b") and "(" not in text:
                found = text[2:-2].upper()
        _OPERATORS[kind] = found
    return _OPERATORS[kind]


def _function_name(node: exp.Func) -> str:
    """The function's name as the analyst's dialect writes it (STRPOS, not sqlglot's
    STR_POSITION; ISNAN, not IS_NAN)."""
    text = node.sql(ANALYST_DIALECT)
    head = text.split("(", 1)[0].strip()
    if not head or not head.replace("_", "").isalnum() or head.upper() == node.sql_name():
        return node.sql_name()
    try:            # the dialect's own name for it, not a rewrite (INITCAP is a CASE there)
        same = type(sqlglot.parse_one(text, read=ANALYST_DIALECT)) is type(node)
    except sqlglot.errors.SqlglotError:
        same = False
    return head.upper() if same else node.sql_name()


_SPELLED = {exp.Bracket: "a subscript (x[i])", exp.Dot: "a struct (x.field, {'a': 1})",
            exp.Lambda: "a lambda (x -> ...)", exp.PositionalColumn: "a column by position (#1)",
            exp.RawString: "a dollar-quoted string ($$...$$; write 'text')",
            exp.ByteString: "an escape string (E'...'; write 'text')",
            exp.National: "a national string (N'...'; write 'text')"}
_SPELLED.update({getattr(exp, k): v for k, v in {   # twentieth review: as the analyst wrote them
    "SimilarTo": "SIMILAR TO", "RegexpLike": "a regular-expression match (~, REGEXP_MATCHES)",
    "ArgMax": "function MAX_BY() (ARG_MAX)", "ArgMin": "function MIN_BY() (ARG_MIN)",
    "GroupConcat": "function STRING_AGG() (LISTAGG, GROUP_CONCAT)"}.items() if hasattr(exp, k)})
"""Nodes whose sqlglot name is not what the analyst wrote (thirteenth review)."""


_TYPE_NAMES = {"INT128": "HUGEINT", "UINT128": "UHUGEINT"}


def type_written(to: exp.DataType) -> str:
    """A type as DuckDB's SQL names it (review 39, F3: sqlglot's DuckDB SQL says INT128)."""
    text = to.sql(ANALYST_DIALECT)
    text = text.upper() if text.replace("_", "").isalnum() else text     # ::varint as VARINT
    return _TYPE_NAMES.get(text, text)


def as_written(node: exp.Expression) -> str:
    """``node`` as SQL the analyst would recognise: a function the analyst's dialect spells
    as another expression (DuckDB's INITCAP is a CASE over REGEXP_MATCHES: the twenty-first
    review) is shown under its own name; one it spells under another name of its own
    (MAKE_DATE, not sqlglot's DATE_FROM_PARTS: review 39, F3) as the dialect writes it."""
    text = node.sql(ANALYST_DIALECT)
    head = text.split("(", 1)[0]
    if _written_name(node) and head.replace("_", "").isalnum():
        again = _written_name(node) + text[len(head):]
        try:            # the written name for the same node (not a rewrite: LOG10 is LOG(10, x))
            if type(sqlglot.parse_one(again, read=ANALYST_DIALECT)) is type(node):
                return again
        except sqlglot.errors.SqlglotError:
            pass
    if isinstance(node, exp.Func) and not isinstance(node, exp.Anonymous) and \
            not text.upper().startswith(node.sql_name().upper()) and \
            _function_name(node) == node.sql_name():
        generic = node.sql()
        if generic.upper().startswith(node.sql_name().upper()):
            return generic
    return text


GUARD = "dpsql_guard"
"""The meta key of a node dpsql added to make an expression total (a divisor's NULLIF)."""


def written(node: exp.Expression, width: int = 80) -> str:
    """A typed expression as the analyst wrote it, at most ``width`` characters: without
    the guards the typecheck added (``TRY(...)``, a divisor's ``NULLIF(y, 0)``; review 39,
    F3: messages showed ``LENGTH(TRY(SUBSTRING(...)))`` and ``"income" / NULLIF("age", 0)``
    on every engine). An analyst's own ``TRY`` is brackets (``dpsql.frontend.parse``)."""
    if not any(isinstance(n, exp.Try) or n.meta.get(GUARD) for n in node.walk()):
        return node.sql(ANALYST_DIALECT)[:width]

    def bare(each):
        if isinstance(each, exp.Try) or each.meta.get(GUARD):
            inner = each.this
            return inner if isinstance(inner, (exp.Func, exp.Column, exp.Literal, exp.Paren)) \
                else exp.Paren(this=inner)
        return each
    return node.copy().transform(bare, copy=False).sql(ANALYST_DIALECT)[:width]
