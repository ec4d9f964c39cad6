"""Literals of the query: their types fixed by their text alone, and conversions.

Owns: how a number, string, date or timestamp written in the query becomes a
literal of a fixed engine type (``number_literal``, ``float_literal``,
``int_literal``), and how a literal compared with another type is converted at
plan time (``_convert_literal``), so that evaluating it can never raise on any
row. ``dpsql.frontend.typecheck`` applies these while typing an expression.
"""
from __future__ import annotations

import datetime as dt
import math
import sys

from sqlglot import exp

from ..errors import QueryError
from .allowed import NUMERIC, TEMPORAL
from .dialect import ANALYST_DIALECT

INT64 = (-2 ** 63, 2 ** 63 - 1)
_DOUBLE_MAX = int(sys.float_info.max)
Typed = tuple  # (expression, type name)


def _refuse(message: str) -> None:
    raise QueryError(message)


def float_literal(value: float) -> exp.Expression:
    """A DOUBLE literal: an exponent makes DuckDB type it DOUBLE, not DECIMAL."""
    if not math.isfinite(value):
        _refuse(f"the number {value!r} is out of range; use a finite number")
    text = repr(float(value))
    if "e" not in text:
        text += "e0"
    node = exp.Literal.number(text.lstrip("-"))
    return exp.Paren(this=exp.Neg(this=node)) if text.startswith("-") else node


def int_literal(value: int) -> exp.Expression:
    node = exp.Literal.number(str(abs(value)))
    return exp.Paren(this=exp.Neg(this=node)) if value < 0 else node


def _out_of_range(text: str, where: str) -> None:
    shown = text.strip() if len(text.strip()) <= 30 else \
        f"{text.strip()[:20]}... ({len(text.strip())} characters)"
    if text.strip().lstrip("+-").lower() in ("nan", "inf", "infinity"):
        _refuse(f"the value {shown}{where} is not a finite number: dpsql computes with finite "
                "numbers only (NaN and infinities are refused); write a number")
    _refuse(f"the number {shown}{where} is out of range: an integer must fit in a signed "
            f"64-bit integer ({INT64[0]} to {INT64[1]}); a larger one, or a number with a "
            "fraction or exponent, is a DOUBLE, which must be finite (magnitude below about "
            "1.8e308). Write a smaller number")


def number_literal(text: str, negative: bool = False, where: str = "") -> Typed:
    """A number written in the query, with its type fixed by its text alone.

    ``where``: the literal's place for messages, e.g. " (line 1, column 40, in WHERE)"."""
    clean = text.strip().replace("_", "")
    if clean.lstrip("+-").isdigit():
        if len(clean.lstrip("+-").lstrip("0")) > len(str(_DOUBLE_MAX)):
            # beyond any DOUBLE (and Python's limit on reading long integers)
            _out_of_range(("-" if negative else "") + text, where)
        value = -int(clean) if negative else int(clean)
        if INT64[0] <= value <= INT64[1]:
            return int_literal(value), "int"
        if abs(value) > _DOUBLE_MAX:       # float(value) would raise OverflowError
            _out_of_range(("-" if negative else "") + text, where)
        return float_literal(float(value)), "float"
    try:
        value = float(clean)
    except ValueError:
        _refuse(f"{text!r}{where} is not a number")
    if not math.isfinite(value):
        _out_of_range(("-" if negative else "") + text, where)
    return float_literal(-value if negative else value), "float"


def _literal_value(node: exp.Expression):
    """(kind, python value, text) of a bare literal operand, or None."""
    negative = False
    inner = node
    while isinstance(inner, exp.Paren):
        inner = inner.this
    if isinstance(inner, exp.Neg) and isinstance(inner.this, exp.Literal) and not inner.this.is_string:
        negative, inner = True, inner.this
    if isinstance(inner, exp.Literal):
        if inner.is_string:
            return "string", inner.this, inner.this
        return "number", None, ("-" if negative else "") + inner.this
    return None


def _temporal_literal(text: str, kind: str) -> exp.Expression:
    try:
        if kind == "date":
            value = dt.date.fromisoformat(text.strip())
            return exp.Cast(this=exp.Literal.string(value.isoformat()), to=exp.DataType.build("DATE"))
        value = dt.datetime.fromisoformat(text.strip())
    except ValueError:
        _refuse(f"'{text}' is not a {'date' if kind == 'date' else 'timestamp'} "
                "(write it as 'YYYY-MM-DD' or 'YYYY-MM-DD HH:MM:SS')")
    if value.tzinfo is not None:
        _refuse(f"'{text}' has a time zone; timestamps in dpsql have none")
    return exp.Cast(this=exp.Literal.string(value.isoformat(sep=" ")), to=exp.DataType.build("TIMESTAMP"))


def _convert_literal(original: exp.Expression, target: str, context: str) -> Typed:
    """A literal operand converted, at plan time, to the type it is compared with."""
    kind, value, text = _literal_value(original)
    if target == "string" and kind == "number":
        return exp.Literal.string(text.replace(" ", "")), "string"
    if target in NUMERIC and kind == "string":
        try:
            float(value)
        except ValueError:
            _refuse(f"{context}: '{value}' is not a number, but it is compared with a number "
                    "(the column is numeric in the metadata)")
        return number_literal(value, where=f" ({context})")
    if target in TEMPORAL and kind == "string":
        return _temporal_literal(value, target), target
    if target == "boolean" and kind == "string" and value.strip().lower() in ("true", "false"):
        return exp.Boolean(this=value.strip().lower() == "true"), "boolean"
    _refuse(f"{context}: cannot compare a {target} with the literal {original.sql(ANALYST_DIALECT)}")
