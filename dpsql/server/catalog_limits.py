"""What one catalog statement may cost the server: sizes checked before and while it runs.

Owns: the bounds on a catalog statement beyond DuckDB's memory limit, and the engine's
errors as the analyst sees them. DuckDB counts sorts, joins, aggregates and results
against the catalog's ``MEMORY_LIMIT`` (``catalog_build``), but not the strings and lists
that scalar functions build, one chunk of up to 2,048 rows at a time, for every function
of the statement: eight nested ``replace`` calls built a 10^9-byte string outside any
limit. So:

- no string literal (parameters included: they are inlined as literals) is longer than
  ``MAX_VALUE_BYTES``; a statement is at most ``MAX_DEPTH`` deep and has at most
  ``MAX_COLUMNS`` output columns;
- every function that can build a value longer than its arguments (``||``, ``concat``,
  ``concat_ws``, ``replace``, ``array_to_string``, ``json_build_object``,
  ``ARRAY[...]``) first computes the size of its result from its arguments' sizes (each
  argument evaluated once: the check is a lambda over a struct of them) and fails past
  ``MAX_VALUE_BYTES`` instead of building it; ``generate_series`` fails past
  ``MAX_SERIES`` values; aggregates that build a value (``string_agg``, ``array_agg``,
  ``ARRAY(subquery)``: their state is in DuckDB's counted memory) are checked once built;
- the functions that build a value per row (those above, each counting twice for its
  check's copy, and ``lower``, ``substring``, ``trim`` and the like, which keep or shrink
  their argument's size) are at most ``MAX_BUILDERS`` in a statement, not counting those
  over constants only (computed once, not per row).

So every string or list is at most ``MAX_VALUE_BYTES`` (as text), and the values that
one chunk builds outside DuckDB's limit at most 2,048 x ``MAX_VALUE_BYTES`` x
``MAX_BUILDERS`` (80 MiB; 53 MB measured at 40: tests/server/test_catalog_limits.py). CASE, COALESCE
and casts of strings pass their argument on without building a value.
"""
from __future__ import annotations

import logging
import math

import duckdb
from sqlglot import exp

from ..errors import ProgrammingError
from .catalog_scope import function_name
from .pgcompat import TooLarge
from .values import placeholder_number

MAX_VALUE_BYTES = 1024
"""Longest string or list (as text) a catalog statement builds; PostgreSQL's names are at
most 63 bytes."""
MAX_BUILDERS = 40
MAX_SERIES = 1000
MAX_DEPTH = 120
MAX_COLUMNS = 400
MARKER = "dpsql catalog error "
"""How the errors a check raises in the engine begin: ``MARKER + sqlstate + ": " +
message`` (``engine_error`` turns one into that SQLSTATE and message)."""

log = logging.getLogger("dpsql.server.catalog")


class CatalogError(ProgrammingError):
    """A catalog statement the catalog's engine could not answer (the detail is in the
    server's log, never in the message)."""

    def __init__(self, message: str, sqlstate: str) -> None:
        super().__init__(message)
        self.sqlstate = sqlstate


# ---------------------------------------------------------------- before it runs


def inline(tree, params: list | None):
    """``tree`` with each ``$n`` replaced by its value as a literal (the checks then see
    it); 42P02 for a ``$n`` without a value."""
    params = list(params or [])
    for node in list(tree.find_all(exp.Parameter)):
        number = placeholder_number(node.name) if node.name.isdigit() else 0
        if not 1 <= number <= len(params):
            raise CatalogError(f"there is no parameter ${number}", "42P02")
        new = _literal(params[number - 1])
        if node is tree:
            return new
        node.replace(new)
    return tree


def _literal(value):
    if value is None:
        return exp.Null()
    if isinstance(value, bool):
        return exp.Boolean(this=value)
    if isinstance(value, int) or (isinstance(value, float) and math.isfinite(value)):
        return exp.Literal.number(repr(value))
    if isinstance(value, (bytes, bytearray, memoryview)):
        raise CatalogError("catalog queries take text parameters only", "0A000")
    return exp.Literal.string(str(value))


_STRINGS = tuple(getattr(exp, n) for n in ("ByteString", "HexString", "BitString",
                                           "RawString", "National", "UnicodeString")
                 if hasattr(exp, n))


def check(tree) -> None:
    """TooLarge (54000) for a statement past the static bounds of the module."""
    for node in tree.find_all(exp.Literal, *_STRINGS):
        if isinstance(node.this, str) and len(node.this.encode()) > MAX_VALUE_BYTES:
            raise TooLarge(f"a string in a catalog query has at most {MAX_VALUE_BYTES:,} "
                           "bytes")
    if _builders(tree) > MAX_BUILDERS:
        raise TooLarge(f"a catalog query has at most {MAX_BUILDERS} functions that build "
                       "strings or lists row by row (concatenations, replacements, arrays, "
                       "aggregates of text, lower, substring, ...)")
    if _depth(tree) > MAX_DEPTH:
        raise TooLarge(f"a catalog query nests at most {MAX_DEPTH} expressions")
    if any(len(s.expressions) > MAX_COLUMNS for s in tree.find_all(exp.Select)):
        raise TooLarge(f"a catalog query has at most {MAX_COLUMNS} columns")


_BUILDERS = frozenset("lower upper initcap btrim trim ltrim rtrim left right substr "
                      "substring split_part greatest least".split())
_ROW_DEPENDENT = (exp.Column, exp.Query, exp.AggFunc, exp.Window, exp.Table)


def _builders(tree) -> int:
    """The weight of the functions that build a value per row (see the module)."""
    total, constant = 0, {}
    for node in reversed(list(tree.walk(bfs=False))):   # children before their parent
        constant[id(node)] = not isinstance(node, _ROW_DEPENDENT) and all(
            constant.get(id(child), False) for child in node.iter_expressions())
        if constant[id(node)] or isinstance(node.parent, exp.Table):
            continue
        if _kind(node):
            total += 2
        elif isinstance(node, exp.Func) and function_name(node) in _BUILDERS:
            total += 1
    return total


def _depth(tree) -> int:
    deepest, stack = 0, [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        stack.extend((child, depth + 1) for child in node.iter_expressions())
    return deepest


# ---------------------------------------------------------------- while it runs


_PRE = frozenset("concat concat_ws replace array_to_string json_build_object json_object "
                 "generate_series exploding_generate_series".split())
_POST = frozenset("array_agg group_concat string_agg listagg".split())


def _kind(node) -> str | None:
    """``pre`` (size checked before it is built), ``post`` (checked once built) or None."""
    if isinstance(node, exp.Array):
        return "post" if any(isinstance(e, exp.Query) for e in node.expressions) else "pre"
    if isinstance(node, exp.DPipe):
        return "pre"
    name = function_name(node) if isinstance(node, exp.Func) else None
    return "pre" if name in _PRE else "post" if name in _POST else None


def guard(tree):
    """``tree`` with every value-building expression wrapped in its size check (inner
    ones first, so that an outer check receives checked arguments)."""
    for node in reversed(list(tree.walk(bfs=False))):
        if isinstance(node, exp.ExplodingGenerateSeries) and isinstance(node.parent, exp.Table):
            _bound_end(node)            # a FROM generate_series(...) stays a table function
            continue
        kind = _kind(node)
        if kind is None or node is tree:
            continue
        holder = exp.Null()
        node.replace(holder)
        if isinstance(node, exp.ExplodingGenerateSeries):   # UNNEST(a checked series)
            series = exp.GenerateSeries(**{k: v for k, v in node.args.items() if v})
            holder.replace(exp.Explode(this=_pre(series)))
            continue
        holder.replace(_post(node) if kind == "post" else _pre(node))
    return tree


def _bound_end(node) -> None:
    """``end`` of a table generate_series, failing past ``MAX_SERIES`` values."""
    end = node.args["end"]
    test = _series_size([node.args.get("start"), end, node.args.get("step")])
    node.set("end", exp.Case(ifs=[exp.If(this=test, true=_error(
        f"no series of more than {MAX_SERIES:,} values"))], default=end.copy()))


def _error(message: str):
    return exp.Anonymous(this="error", expressions=[exp.Literal.string(
        f"{MARKER}54000: a catalog query builds {message}")])


def _once(args: list, body, size, message: str):
    """``body`` over ``args`` evaluated once each: LIST_TRANSFORM([STRUCT_PACK(a0 := ...)],
    LAMBDA v : CASE WHEN size > limit THEN ERROR(...) ELSE body END)[1]; ``body`` and
    ``size`` are built from the references ``v.a0``, ``v.a1``, ..."""
    var = exp.to_identifier("dpsql_v")
    refs = [exp.Dot(this=exp.column(var.copy()), expression=exp.to_identifier(f"a{i}"))
            for i in range(len(args))]
    test = exp.Case(ifs=[exp.If(this=size(refs), true=_error(message))], default=body(refs))
    packed = exp.Anonymous(this="struct_pack", expressions=[
        exp.PropertyEQ(this=exp.to_identifier(f"a{i}"), expression=a)
        for i, a in enumerate(args)])
    mapped = exp.Anonymous(this="list_transform", expressions=[
        exp.Array(expressions=[packed]), exp.Lambda(this=test, expressions=[var])])
    return exp.Anonymous(this="list_extract", expressions=[mapped, exp.Literal.number(1)])


def _post(node):
    return _once([node], lambda r: r[0], lambda r: exp.GT(
        this=_bytes(r[0]), expression=exp.Literal.number(MAX_VALUE_BYTES)),
        f"no value longer than {MAX_VALUE_BYTES:,} bytes")


def _pre(node):
    """``node`` with its arguments moved into a struct and its result size checked first
    (array_to_string's separator stays: DuckDB wants it constant, so it must be one)."""
    series = isinstance(node, exp.GenerateSeries)
    if series:
        slots = [node.args.get(k) for k in ("start", "end", "step") if node.args.get(k)]
    else:
        slots = [item for value in node.args.values()
                 for item in (value if isinstance(value, list) else [value])
                 if isinstance(item, exp.Expression) and not isinstance(item, exp.DataType)]
    if function_name(node) == "array_to_string":
        if not all(isinstance(s, (exp.Literal, *_STRINGS)) for s in slots[1:]):
            raise CatalogError("array_to_string takes a constant separator in catalog "
                               "queries", "0A000")
        slots = slots[:1]

    def body(refs):
        for slot, ref in zip(slots, refs):
            slot.replace(ref)
        return node

    if series:
        return _once(slots, body, _series_size, f"no series of more than {MAX_SERIES:,} values")
    return _once(slots, body, lambda refs: exp.GT(this=_size(node, refs), expression=(
        exp.Literal.number(MAX_VALUE_BYTES))), f"no value longer than {MAX_VALUE_BYTES:,} bytes")


def _bytes(ref):
    """The size of a value's text form, 0 for NULL."""
    return exp.Coalesce(this=exp.Anonymous(this="strlen", expressions=[
        exp.Cast(this=ref.copy(), to=exp.DataType.build("VARCHAR"))]),
        expressions=[exp.Literal.number(0)])


def _count(ref):
    return exp.Coalesce(this=exp.Anonymous(this="len", expressions=[ref.copy()]),
                        expressions=[exp.Literal.number(0)])


def _size(node, refs):
    """An upper bound on the size of ``node``'s result from its arguments' sizes."""
    total = _bytes(refs[0])
    for ref in refs[1:]:
        total = exp.Add(this=total, expression=_bytes(ref))
    name = function_name(node) if isinstance(node, exp.Func) else None
    if name == "replace":                       # every match of the pattern replaced
        s, p, r = (_bytes(x) for x in refs[:3])
        matches = exp.IntDiv(this=s, expression=exp.Greatest(
            this=p, expressions=[exp.Literal.number(1)]))
        return exp.Add(this=s.copy(), expression=exp.Mul(this=matches, expression=r))
    if name == "array_to_string":               # the separator between every element
        separators = sum(len(str(a.this).encode()) for a in node.args.values()
                         if isinstance(a, (exp.Literal, *_STRINGS)))
        return exp.Add(this=total, expression=exp.Mul(
            this=_count(refs[0]), expression=exp.Literal.number(separators)))
    if name == "concat_ws":
        return exp.Mul(this=exp.Literal.number(len(refs)), expression=total)
    if name in ("json_build_object", "json_object"):   # quotes and escapes
        return exp.Add(this=exp.Mul(this=exp.Literal.number(6), expression=total),
                       expression=exp.Literal.number(8 * len(refs)))
    return total


def _series_size(refs):
    """True when a series from refs[0] to refs[1] by refs[2] (default 1) has too many
    values (or a zero step)."""
    start, end = (exp.Cast(this=r.copy(), to=exp.DataType.build("DOUBLE")) for r in refs[:2])
    step = exp.Cast(this=refs[2].copy(), to=exp.DataType.build("DOUBLE")) if len(
        refs) > 2 and refs[2] is not None else exp.Literal.number(1)
    count = exp.Div(this=exp.Paren(this=exp.Sub(this=end, expression=start)),
                    expression=exp.Abs(this=step))
    return exp.Or(this=exp.EQ(this=step.copy(), expression=exp.Literal.number(0)),
                  expression=exp.GT(this=exp.Abs(this=count), expression=(
                      exp.Literal.number(MAX_SERIES - 1))))


# ---------------------------------------------------------------- engine errors


def engine_error(error: Exception, sql: str) -> ProgrammingError:
    """The analyst's view of an engine error: a fixed message and a SQLSTATE; the engine's
    own text goes to the server's log only."""
    text = str(error)
    log.info("catalog query failed: %s: %s (query: %.300s)", type(error).__name__,
             text.replace("\n", " ")[:500], sql)
    if isinstance(error, duckdb.InvalidInputException) and text.startswith(
            "Invalid Input Error: " + MARKER):  # raised by one of our checks (error())
        code, _, message = text.split(MARKER, 1)[1].split("\n")[0].partition(": ")
        return TooLarge(message) if code == "54000" else CatalogError(message, code[:5])
    if isinstance(error, duckdb.OutOfMemoryException):
        out = CatalogError("the catalog query needs more memory than a catalog query may "
                           "use", "53200")
    elif isinstance(error, duckdb.InterruptException):
        out = CatalogError("the catalog query was interrupted", "57014")
    elif isinstance(error, (duckdb.BinderException, duckdb.CatalogException,
                            duckdb.ParserException)):
        out = CatalogError("the catalog cannot answer this query: it names a column, "
                           "function or type the catalog does not have, or mixes types",
                           "42703")
    elif "Division by zero" in text:
        out = CatalogError("division by zero", "22012")
    elif isinstance(error, (duckdb.ConversionException, duckdb.InvalidInputException,
                            duckdb.OutOfRangeException)):
        out = CatalogError("a value in the catalog query is not valid for its type",
                           "22000")
    else:
        out = CatalogError("the catalog could not answer this query", "XX000")
    return out
