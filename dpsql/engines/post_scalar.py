"""Step 7, the short way: the post-processing of one released row, evaluated in Python.

An ungrouped query releases one row of noisy statistics, and its post-processing is most
often arithmetic on them (``AVG``: a sum over a count, clamped to the column's range;
``VARIANCE``; ``COUNT(*) * 2 + 1``). A round trip through the post-processing DuckDB costs
1.1-1.3 ms of a fresh release's 8-9 ms (docs/performance.md, "Fixed cost per query"); the
same arithmetic on one row costs microseconds here. ``scalar(post)`` compiles the post query
into a function of the noisy columns when every node has a rule below that computes exactly
what DuckDB computes; anything else (a node without a rule, grouping, ORDER BY, HAVING) is
left to DuckDB. At run time a value outside the region where the two agree by construction
(NaN, an infinity, a division by zero, an integer outside BIGINT, a math domain error, an
input that is not one plain int64 or float64 value) hands the row to DuckDB too, so the
answer is always DuckDB's: tests/unit/test_post_scalar.py compares both on every fixture
query's post-processing with random released values. Only released values are read: this
is post-processing, free of privacy cost whichever path answers.
"""
from __future__ import annotations

import math

import numpy as np
from sqlglot import exp

INT64 = (-2 ** 63, 2 ** 63 - 1)


class Outside(Exception):
    """A value outside the region where this evaluation is DuckDB's, exactly."""


def _checked(value):
    if type(value) is int:
        if not INT64[0] <= value <= INT64[1]:
            raise Outside
    elif not math.isfinite(value):
        raise Outside
    return value


def _arith(op):
    def rule(a, b):
        def run(row):
            x, y = a(row), b(row)
            if type(x) is int and type(y) is int:       # BIGINT arithmetic, checked
                return _checked(op(x, y))
            return _checked(op(float(x), float(y)))      # DOUBLE: both operands cast first
        return run
    return rule


def _divide(a, b):
    def run(row):
        x, y = float(a(row)), float(b(row))              # DuckDB's / is DOUBLE division
        if y == 0.0:
            raise Outside
        return _checked(x / y)
    return run


def _extreme(pick):
    def rule(*args):
        def run(row):
            values = [f(row) for f in args]
            if any(type(v) is float for v in values):      # the common type: DOUBLE
                values = [float(v) for v in values]
            return pick(values)
        return run
    return rule


def _math(fn):
    def rule(*args):
        def run(row):
            try:
                return _checked(fn(*(float(f(row)) for f in args)))
            except (ValueError, OverflowError):
                raise Outside from None
        return run
    return rule


_BINARY = {exp.Add: _arith(lambda x, y: x + y), exp.Sub: _arith(lambda x, y: x - y),
           exp.Mul: _arith(lambda x, y: x * y), exp.Div: _divide,
           exp.Pow: _math(math.pow)}
_NAMED = {"GREATEST": _extreme(max), "LEAST": _extreme(min)}


def compile_node(node: exp.Expression, columns: set):
    """A function of the row (name -> Python value) computing ``node``, or None."""
    if isinstance(node, (exp.Paren, exp.Try)):
        # TRY: NULL where its operand raises, which is outside the region evaluated here
        # (an integer out of BIGINT): DuckDB answers those rows.
        return compile_node(node.this, columns)
    if isinstance(node, exp.Column) and not node.table and node.name in columns:
        name = node.name
        return lambda row: row[name]
    if isinstance(node, exp.Literal) and not node.is_string:
        return _number(node.this)
    if isinstance(node, exp.Cast) and node.to.this == exp.DataType.Type.DOUBLE:
        inner = compile_node(node.this, columns)
        return None if inner is None else (lambda row: float(inner(row)))
    if isinstance(node, exp.Neg):
        inner = compile_node(node.this, columns)
        return None if inner is None else (lambda row: _checked(-inner(row)))
    if isinstance(node, exp.Sqrt):
        inner = compile_node(node.this, columns)
        return None if inner is None else _math(math.sqrt)(inner)
    rule = _BINARY.get(type(node))
    if rule is not None and not (node.args.get("typed") or node.args.get("safe")):
        a, b = compile_node(node.this, columns), compile_node(node.expression, columns)
        return None if a is None or b is None else rule(a, b)
    if isinstance(node, exp.Anonymous) and node.name.upper() in _NAMED and node.expressions:
        args = [compile_node(e, columns) for e in node.expressions]
        return None if any(a is None for a in args) else _NAMED[node.name.upper()](*args)
    return None


def _number(text: str):
    """A numeric literal as DuckDB reads it: digits an integer, digits with an exponent a
    DOUBLE (``1.5`` is a DECIMAL there: left to DuckDB)."""
    if text.isdigit():
        value = int(text)
        return None if value > INT64[1] else (lambda row: value)
    if "e" not in text.lower():
        return None
    try:
        value = float(text)
    except ValueError:
        return None
    return None if not math.isfinite(value) else (lambda row: value)


def kind_of(node: exp.Expression, kinds: dict):
    """("i" BIGINT or "f" DOUBLE, whether a column is read) of a node ``compile_node`` took, as
    DuckDB types it; None for integer arithmetic on literals alone (INTEGER there)."""
    if isinstance(node, (exp.Paren, exp.Try, exp.Neg)):
        return kind_of(node.this, kinds)
    if isinstance(node, exp.Column):
        return kinds[node.name], True
    if isinstance(node, exp.Literal):
        return ("i" if node.this.isdigit() else "f"), False
    parts = ([node.this] if isinstance(node, (exp.Cast, exp.Sqrt)) else node.expressions
             if isinstance(node, exp.Anonymous) else [node.this, node.expression])
    found = [kind_of(p, kinds) for p in parts]
    if any(f is None for f in found):
        return None
    read = any(r for _, r in found)
    if isinstance(node, (exp.Cast, exp.Sqrt, exp.Div, exp.Pow)):
        return "f", read
    if all(k == "i" for k, _ in found):
        return ("i", True) if read else None
    return "f", read


def scalar(post: exp.Select, noisy_table: str, columns: dict):
    """A function ``noisy -> {output: array}`` that evaluates ``post`` on a one-row noisy
    table and returns None where DuckDB must answer; or None when ``post`` is not of the
    shape evaluated here. ``columns``: the noisy table's columns and their numpy dtypes
    (each output's dtype is the one DuckDB gives it, which the test compares)."""
    source = post.args.get("from_")
    if (source is None or not isinstance(source.this, exp.Table) or source.this.name != noisy_table
            or source.this.args.get("db")
            or any(post.args.get(k) for k in ("where", "group", "having", "order", "limit",
                                              "offset", "joins", "distinct", "with_", "qualify"))):
        return None
    kinds = {name: np.dtype(t).kind for name, t in columns.items()
             if np.dtype(t) in (np.dtype(np.int64), np.dtype(np.float64))}
    outputs = []
    for item in post.expressions:
        if not isinstance(item, exp.Alias):
            return None
        fn = compile_node(item.this, set(kinds))
        kind = None if fn is None else kind_of(item.this, kinds)
        if kind is None or not kind[1]:
            return None
        outputs.append((item.alias, fn, np.dtype(np.int64 if kind[0] == "i" else np.float64)))
    return lambda noisy: _run(outputs, noisy)


def _run(outputs, noisy: dict):
    row = {}
    for name, values in noisy.items():
        if (isinstance(values, np.ma.MaskedArray) or not isinstance(values, np.ndarray)
                or values.shape != (1,) or values.dtype.kind not in "if"):
            return None
        value = values[0].item()
        if type(value) is float and not math.isfinite(value):
            return None
        row[name] = value
    out = {}
    try:
        for name, fn, dtype in outputs:
            value = fn(row)
            if (dtype.kind == "i") != (type(value) is int):
                return None
            out[name] = np.array([value], dtype=dtype)
    except Outside:
        return None
    return out
