"""Step 1b: query parameters (``?``) -> literals of the tree, rendered from their values.

Owns: which Python values a parameter may be (exact built-in types and numpy
scalars of them, never an object's ``str()``), and the literal each becomes, so a
parameter can never carry SQL. ``dpsql.frontend.parse`` binds them into the parsed tree.
"""
from __future__ import annotations

import datetime as _dt
import decimal
import math
import sys
from collections.abc import Mapping
from typing import Sequence

import numpy as np
from sqlglot import exp

from ..errors import QueryError
from .dialect import ANALYST_DIALECT



_ACCEPTED = ("accepted types: int, float (finite), str, bool, None, decimal.Decimal (finite), "
             "datetime.date, datetime.datetime (naive), and numpy bool_, integer, "
             "float16/32/64, str_ and datetime64 scalars; exactly these types, not subclasses")


# ----------------------------------------------------------------- parameters

_NP_SCALARS = tuple(dict.fromkeys(
    [np.bool_, np.float16, np.float32, np.float64, np.str_, np.datetime64]
    + [np.dtype(code).type for code in "bhilqpBHILQP"]))


def _type_name(value) -> str:
    # type.__name__ read through type's own descriptor: a metaclass cannot override it.
    name = type.__dict__["__name__"].__get__(type(value))
    return name if len(name) <= 60 else name[:57] + "..."


_INT64 = (-2 ** 63, 2 ** 63 - 1)
_DOUBLE_MAX = int(sys.float_info.max)
_BEYOND_DOUBLE = (f"it is out of range: an integer must fit in a bigint ({_INT64[0]} to "
                  f"{_INT64[1]}), and a larger integer or a numeric value is bound as a "
                  "double precision number, which must be finite (magnitude below about "
                  "1.8e308); pass a smaller number, or NULL")
_SQL_KINDS = {bool: "a boolean", int: "an integer", float: "a double precision number",
              decimal.Decimal: "a numeric value", str: "a text value",
              _dt.datetime: "a timestamp", _dt.date: "a date", np.datetime64: "a timestamp"}
"""What a value is, in SQL's words (an analyst on the wire never sees a Python type)."""


def _refuse(value, position: int | None, why: str) -> QueryError:
    what = f"parameter {position}" if position is not None else "a value"
    kind = next((name for t, name in _SQL_KINDS.items() if type(value) is t), None)
    if kind is None and any(type(value) is t for t in _NP_SCALARS):
        kind = _SQL_KINDS.get(type(type(value).item(value)))
    kind = kind or f"a {_type_name(value)} object"
    return QueryError(f"{what} ({kind}) cannot be bound: {why}")


def _number(text: str, negative: bool) -> exp.Expression:
    """An unsigned numeric literal, negated and parenthesised if negative."""
    node = exp.Literal(this=text, is_string=False)
    return exp.Paren(this=exp.Neg(this=node)) if negative else node


def _string(value: str, position, original) -> exp.Expression:
    if "\x00" in value:
        raise _refuse(original, position, "the string contains a NUL character (\\x00), "
                      "which SQL strings cannot hold; remove it")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise _refuse(original, position, "the string is not valid Unicode (it holds a lone "
                      "surrogate); pass valid text") from None
    return exp.Literal(this=value, is_string=True)


def _timestamp(value: _dt.datetime, position, original) -> exp.Expression:
    if value.tzinfo is not None:
        raise _refuse(original, position, "it has a time zone, and TIMESTAMP columns have "
                      "none; convert it to UTC and pass it without a time zone (e.g. "
                      "'2024-01-01 12:00:00', not '2024-01-01 14:00:00+02')")
    text = _dt.datetime.isoformat(value, " ")
    return exp.Cast(this=exp.Literal(this=text, is_string=True),
                    to=exp.DataType.build("TIMESTAMP"))


def _numpy(value, position):
    """An exact numpy scalar as the equivalent plain Python value (numpy's own API)."""
    kind = type(value)
    if kind is not np.datetime64:
        return kind.item(value)  # bool, int, float or str
    if np.isnat(value):
        raise _refuse(value, position, "it is not a time (NaT); pass NULL instead")
    unit = np.datetime_data(value.dtype)[0]
    if unit in ("Y", "M", "W", "D"):
        plain = value.astype("datetime64[D]").item()
    else:
        micro = value.astype("datetime64[us]")
        if micro != value:
            raise _refuse(value, position, "it has sub-microsecond precision; round it "
                          "to microseconds")
        plain = micro.item()
    if type(plain) is not _dt.date and type(plain) is not _dt.datetime:
        raise _refuse(value, position, "its date is outside years 1 to 9999")
    return plain


def literal(value, position: int | None = None) -> exp.Expression:
    """A Python value as a SQL literal node (parameters and public key values).

    ``position``: the parameter's 1-based position, for the error message.
    Only exact types are accepted (see the module docstring), each rendered
    from its value by the base type's own methods.
    """
    original, kind = value, type(value)
    if any(kind is t for t in _NP_SCALARS):  # identity: a metaclass cannot fake it
        value = _numpy(value, position)
        kind = type(value)
    if value is None:
        return exp.Null()
    if kind is bool:
        return exp.Boolean(this=bool.__bool__(value))
    if kind is int:
        if int.bit_length(value) > 3000:
            raise _refuse(original, position, "the integer has more than 900 digits")
        if not _INT64[0] <= value <= _INT64[1] and int.__abs__(value) > _DOUBLE_MAX:
            raise _refuse(original, position, _BEYOND_DOUBLE)
        return _number(int.__repr__(abs(value)), value < 0)
    if kind is float:
        if not math.isfinite(value):
            raise _refuse(original, position, f"it is {float.__repr__(value)}; pass a finite "
                          "number, or NULL")
        return _number(float.__repr__(abs(value)), math.copysign(1.0, value) < 0)
    if kind is decimal.Decimal:
        if not decimal.Decimal.is_finite(value):
            raise _refuse(original, position, "it is not finite (NaN or Infinity); pass a "
                          "finite number, or NULL")
        sign, digits, exponent = decimal.Decimal.as_tuple(value)
        if len(digits) > 1000 or not -1000 <= exponent <= 1000:
            raise _refuse(original, position, "the number has more than 1000 digits or an "
                          "exponent beyond +-1000; pass it rounded")
        if decimal.Decimal.copy_abs(value) > _DOUBLE_MAX:
            raise _refuse(original, position, _BEYOND_DOUBLE)
        text = decimal.Decimal.__format__(decimal.Decimal.copy_abs(value), "f")
        return _number(text, bool(sign))
    if kind is str:
        return _string(value, position, original)
    if kind is _dt.datetime:
        return _timestamp(value, position, original)
    if kind is _dt.date:
        return exp.Cast(this=exp.Literal(this=_dt.date.isoformat(value), is_string=True),
                        to=exp.DataType.build("DATE"))
    for base in (bool, int, float, str, decimal.Decimal, _dt.datetime, _dt.date):
        if issubclass(kind, base):
            raise _refuse(original, position, f"it is a subclass of {base.__name__}, whose "
                          f"text could be anything; convert it to a plain {base.__name__} "
                          f"first; {_ACCEPTED}")
    raise _refuse(original, position, _ACCEPTED)


def _param_values(params) -> tuple:
    """The parameters as a tuple, read once; refuses a str or a mapping."""
    if params is None:
        return ()
    if isinstance(params, Mapping):
        raise QueryError("parameters were given as a mapping (named, pyformat style); "
                         "dpsql's paramstyle is qmark: write ? for each parameter and pass "
                         "a sequence (tuple or list) of values")
    if isinstance(params, (str, bytes, bytearray)):
        raise QueryError("parameters must be a sequence (tuple or list) of values for the "
                         f"'?' placeholders (paramstyle qmark), not a {_type_name(params)}; "
                         "for one parameter write (value,)")
    try:
        return tuple(params)
    except TypeError:
        raise QueryError("parameters must be a sequence (tuple or list) of values for the "
                         f"'?' placeholders (paramstyle qmark), not {_type_name(params)}") \
            from None


def typed_params(params) -> tuple:
    """(params as a tuple or None, a cache key that tells their types apart).

    Every value is checked (``literal``) before anything else sees it, so a
    refused parameter is a QueryError here. The key holds each value's exact
    type and rendered SQL: 1, 1.0, True, Decimal(1) and numpy.int64(1) differ.
    """
    if params is None:
        return None, None
    values = _param_values(params)
    key = tuple((type(v), literal(v, i).sql(ANALYST_DIALECT)) for i, v in enumerate(values, 1))
    return values, key


def _grouping(holder: exp.Expression) -> bool:
    """Whether ``holder`` is a GROUP BY item, bare or in ROLLUP, CUBE, GROUPING SETS or a
    bracket of them (where an integer would be a position: fifteenth review of issue 33)."""
    node = holder.parent
    while isinstance(node, (exp.Rollup, exp.Cube, exp.GroupingSets, exp.Tuple, exp.Paren)):
        node = node.parent
    return isinstance(node, exp.Group)


def bind_params(tree: exp.Expression, params: Sequence | None) -> exp.Expression:
    """Replace each ``?`` with its parameter, in order of appearance."""
    # Pre-order (depth-first) traversal visits placeholders in textual order.
    holders = [p for p in tree.dfs() if isinstance(p, exp.Placeholder)]
    for holder in holders:
        if holder.this is not None:
            raise QueryError("named or numbered placeholders ($1, $name, :name) are not "
                             "supported: dpsql's paramstyle is qmark; write ? for each "
                             "parameter and pass the values as a sequence, in order")
    params = _param_values(params)
    if len(holders) != len(params):
        raise QueryError(f"the query has {len(holders)} '?' placeholder(s) but "
                         f"{len(params)} parameter(s) were given")
    for position, (holder, value) in enumerate(zip(holders, params), 1):
        parent = holder.parent
        if _grouping(holder) or (isinstance(parent, exp.Ordered) and parent.this is holder):
            raise QueryError("a '?' parameter cannot stand for a GROUP BY or ORDER BY position; "
                             "parameters are values, they never change the query's shape")
        holder.replace(literal(value, position))
    return tree
