"""The values inside PostgreSQL messages: type OIDs, text output, bound parameters.

Owns: how a dpsql result value is written in a DataRow (PostgreSQL's text output
format, so clients parse it as they would PostgreSQL's), which type OID a result
column announces, and how a bound parameter's bytes become a Python value (text
format for the common types, binary for numbers, booleans and text). A value
that cannot be read is a ``ParameterError`` carrying the SQLSTATE PostgreSQL
would report; nothing else escapes.
"""
from __future__ import annotations

import datetime as dt
import decimal
import math
import re
import struct

from ..errors import DataError
from .protocol import data_row


class ParameterError(DataError):
    """A bound parameter cannot be read as its type; ``sqlstate`` says why."""

    def __init__(self, message: str, sqlstate: str = "22P02") -> None:
        super().__init__(message)
        self.sqlstate = sqlstate


BOOL, BYTEA, INT8, INT2, INT4, TEXT = 16, 17, 20, 21, 23, 25
FLOAT4, FLOAT8, UNKNOWN = 700, 701, 0
BPCHAR, VARCHAR, DATE, TIME, TIMESTAMP, TIMESTAMPTZ, NUMERIC = (
    1042, 1043, 1082, 1083, 1114, 1184, 1700)
TYPE_SIZES = {BOOL: 1, BYTEA: -1, INT8: 8, INT2: 2, INT4: 4, TEXT: -1, FLOAT4: 4, FLOAT8: 8,
              BPCHAR: -1, VARCHAR: -1, DATE: 4, TIME: 8, TIMESTAMP: 8, TIMESTAMPTZ: 8,
              NUMERIC: -1}
"""pg_type.typlen of each type dpsql returns (-1: variable length)."""


def text_field(name: str, oid: int) -> tuple:
    """A RowDescription field of type ``oid`` in text format."""
    return (name, oid, TYPE_SIZES.get(oid, -1), -1, 0)


_TYPE_NAMES = [("bool", BOOL), ("uint64", NUMERIC), ("int", INT8), ("uint", INT8),
               ("float", FLOAT8), ("double", FLOAT8), ("decimal", NUMERIC),
               ("numeric", NUMERIC), ("datetime64", TIMESTAMP), ("datetime", TIMESTAMP),
               ("timestamp", TIMESTAMP), ("date", DATE), ("time", TIME), ("bytes", BYTEA)]


def type_oid(dtype) -> int:
    """The OID for a Python type, numpy/pandas dtype or their name (else text)."""
    name = dtype if isinstance(dtype, str) else (
        getattr(dtype, "__name__", None) or getattr(dtype, "name", None) or str(dtype))
    name = str(name).lower()
    if name.startswith(("datetime64", "timestamp")) and "," in name:
        return TIMESTAMPTZ
    for prefix, oid in _TYPE_NAMES:
        if name.startswith(prefix):
            return oid
    return TEXT


def text_value(value) -> bytes | None:
    """``value`` in PostgreSQL's text output format (None, NA and NaT: NULL)."""
    if value is None or type(value).__name__ in ("NAType", "NaTType"):
        return None
    if hasattr(value, "item") and not isinstance(value, (str, bytes, decimal.Decimal)):
        value = value.item()                     # numpy scalars to Python ones
    if isinstance(value, bool):
        return b"t" if value else b"f"
    if isinstance(value, int):
        return str(value).encode()
    if isinstance(value, float):
        return _float_text(value).encode()
    if isinstance(value, decimal.Decimal):
        return _decimal_text(value).encode()
    if isinstance(value, dt.datetime):
        return _datetime_text(value).encode()
    if isinstance(value, dt.date):
        return value.isoformat().encode()
    if isinstance(value, dt.time):
        return _seconds(value).encode()
    if isinstance(value, (bytes, bytearray, memoryview)):
        return b"\\x" + bytes(value).hex().encode()
    return str(value).encode("utf-8")


def _float_text(x: float) -> str:
    """As float8out: shortest round-trip digits, exponent form outside 1e-4 <= |x| < 1e15."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    sign = "-" if math.copysign(1.0, x) < 0 else ""
    if x == 0:
        return sign + "0"
    _, digits, exponent = decimal.Decimal(repr(abs(x))).as_tuple()
    text = "".join(map(str, digits)).rstrip("0") or "0"
    point = len(digits) + exponent - 1           # the exponent in d.ddd x 10^point
    if -4 <= point < 15:
        if point < 0:
            return sign + "0." + "0" * (-point - 1) + text
        whole = text.ljust(point + 1, "0")
        rest = text[point + 1:]
        return sign + whole[:point + 1] + ("." + rest if rest else "")
    mantissa = text[0] + ("." + text[1:] if len(text) > 1 else "")
    return f"{sign}{mantissa}e{'-' if point < 0 else '+'}{abs(point):02d}"


def _decimal_text(d: decimal.Decimal) -> str:
    if d.is_nan():
        return "NaN"
    if d.is_infinite():
        return "Infinity" if d > 0 else "-Infinity"
    return format(d, "f")


def _seconds(t) -> str:
    text = f"{t.hour:02d}:{t.minute:02d}:{t.second:02d}"
    return text + (f".{t.microsecond:06d}".rstrip("0") if t.microsecond else "")


def _datetime_text(t: dt.datetime) -> str:
    text = f"{t.year:04d}-{t.month:02d}-{t.day:02d} {_seconds(t)}"
    offset = t.utcoffset()
    if offset is None:
        return text
    minutes = int(offset.total_seconds()) // 60
    sign, minutes = ("-" if minutes < 0 else "+"), abs(minutes)
    return text + f"{sign}{minutes // 60:02d}" + (f":{minutes % 60:02d}" if minutes % 60 else "")


# ---------------------------------------------------------------- bound parameters

_INT_RANGE = {INT2: 1 << 15, INT4: 1 << 31, INT8: 1 << 63}
_INT_NAMES = {INT2: "smallint", INT4: "integer", INT8: "bigint"}
_INT_TEXT = re.compile(r"\s*[+-]?[0-9]+\s*", re.ASCII)
_FLOAT_TEXT = re.compile(r"\s*[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?\s*", re.ASCII)
_SPECIAL = {"nan": math.nan, "infinity": math.inf, "+infinity": math.inf, "-infinity": -math.inf,
            "inf": math.inf, "+inf": math.inf, "-inf": -math.inf}
_DATE_TEXT = re.compile(r"\s*[0-9]{4}-[0-9]{2}-[0-9]{2}\s*", re.ASCII)
_TRUE, _FALSE = ("true", "yes", "on", "1"), ("false", "no", "off", "0")
_BINARY = {INT2: "!h", INT4: "!i", INT8: "!q", FLOAT4: "!f", FLOAT8: "!d", BOOL: "!?"}
_TEXTUAL = (TEXT, VARCHAR, BPCHAR, UNKNOWN)


def decode_param(raw: bytes | None, oid: int, fmt: int):
    """A bound parameter's Python value from its bytes, type OID and format code."""
    if raw is None:
        return None
    if fmt == 0:
        return _decode_text(_param_text(raw), oid)
    if fmt != 1:
        raise ParameterError(f"unsupported format code: {fmt}", "22023")
    if oid in _BINARY:
        if len(raw) != struct.calcsize(_BINARY[oid]):
            raise ParameterError(f"incorrect binary data format for type {oid}", "22P03")
        value = struct.unpack(_BINARY[oid], raw)[0]
        return bool(raw[0]) if oid == BOOL else value
    if oid in (TEXT, VARCHAR, BPCHAR):
        return _param_text(raw)
    if oid in _BINARY_DECODERS:
        return _BINARY_DECODERS[oid](bytes(raw))
    raise ParameterError(f"binary format is not supported for parameter type {oid}", "0A000")


_EPOCH = dt.datetime(2000, 1, 1)        # PostgreSQL's binary dates and timestamps count from here


def _binary_date(raw: bytes) -> dt.date:
    """int4 days since 2000-01-01 (psycopg sends a ``date`` so)."""
    if len(raw) != 4:
        raise ParameterError("incorrect binary data format for type date", "22P03")
    try:
        return _EPOCH.date() + dt.timedelta(days=struct.unpack("!i", raw)[0])
    except OverflowError:
        raise ParameterError("date out of range", "22008") from None


def _binary_timestamp(raw: bytes) -> dt.datetime:
    """int8 microseconds since 2000-01-01 00:00 (psycopg sends a naive ``datetime`` so)."""
    if len(raw) != 8:
        raise ParameterError("incorrect binary data format for type timestamp", "22P03")
    try:
        return _EPOCH + dt.timedelta(microseconds=struct.unpack("!q", raw)[0])
    except OverflowError:
        raise ParameterError("timestamp out of range", "22008") from None


_NUMERIC_SIGNS = {0x0000: "", 0x4000: "-"}
_NUMERIC_SPECIAL = {0xC000: "nan", 0xD000: "inf", 0xF000: "-inf"}


def _binary_numeric(raw: bytes) -> decimal.Decimal:
    """PostgreSQL's binary numeric: ndigits, weight, sign, dscale (int16 each), then ndigits
    base-10,000 digits, the first of weight ``weight`` (psycopg sends a ``Decimal``, and an
    ``int`` beyond int8, so). The value is then read as its text would be."""
    if len(raw) < 8:
        raise ParameterError("incorrect binary data format for type numeric", "22P03")
    ndigits, weight, sign, dscale = struct.unpack("!hhHh", raw[:8])
    if sign in _NUMERIC_SPECIAL and ndigits == 0:
        return decimal.Decimal(_NUMERIC_SPECIAL[sign])
    if ndigits < 0 or dscale < 0 or sign not in _NUMERIC_SIGNS or len(raw) != 8 + 2 * ndigits:
        raise ParameterError("incorrect binary data format for type numeric", "22P03")
    digits = struct.unpack(f"!{ndigits}H", raw[8:])
    if any(d > 9999 for d in digits):
        raise ParameterError("incorrect binary data format for type numeric", "22P03")
    text = "".join(f"{d:04d}" for d in digits) or "0"
    # the first digit counts 10,000^weight: the point falls after (weight + 1) groups;
    # dscale digits after the point are shown (the rest are zeros), as in its text
    exponent = 4 * (weight + 1 - max(ndigits, 1))
    extra = min(-exponent - dscale, len(text) - 1)
    if extra > 0 and text.endswith("0" * extra):
        text, exponent = text[:-extra], exponent + extra
    return _decode_numeric(f"{_NUMERIC_SIGNS[sign]}{text}e{exponent}")


_BINARY_DECODERS = {DATE: _binary_date, TIMESTAMP: _binary_timestamp, NUMERIC: _binary_numeric}


def _param_text(raw: bytes) -> str:
    try:
        text = bytes(raw).decode("utf-8")
    except UnicodeDecodeError:
        raise ParameterError("a parameter is not valid UTF-8", "22021") from None
    if "\0" in text:
        raise ParameterError("a parameter holds a NUL character", "22021")
    return text


def _decode_text(text: str, oid: int):
    if oid in _TEXTUAL:
        return text
    if oid in _INT_RANGE:
        return _decode_int(text, oid)
    if oid in (FLOAT4, FLOAT8):
        return _decode_float(text, oid)
    if oid == NUMERIC:
        return _decode_numeric(text)
    if oid == BOOL:
        return _decode_bool(text)
    if oid == DATE:
        return _decode_date(text)
    if oid == TIMESTAMP:
        try:
            return dt.datetime.fromisoformat(text.strip())
        except ValueError:
            raise ParameterError(f"invalid input syntax for type timestamp: {shown(text)}") from None
    raise ParameterError(f"parameters of type {oid} are not supported", "0A000")


def _decode_int(text: str, oid: int) -> int:
    if not _INT_TEXT.fullmatch(text):
        raise ParameterError(f"invalid input syntax for type integer: {shown(text)}")
    sign, digits = re.fullmatch(r"\s*([+-]?)0*([0-9]*)\s*", text).groups()
    # counted before int(): Python refuses to read more than 4,300 digits
    value = int(sign + (digits or "0")) if len(digits) <= 19 else None
    if value is None or not -_INT_RANGE[oid] <= value < _INT_RANGE[oid]:
        raise ParameterError(f"value {shown(text.strip())} is out of range for type "
                             f"{_INT_NAMES[oid]}", "22003")
    return value


def placeholder_number(digits: str) -> int:
    """The n of a ``$n`` placeholder from its digits, refused past 9 digits as PostgreSQL
    does (42601), before int() reads them."""
    named = f"${digits[:12]}" + (f"... ({len(digits):,} digits)" if len(digits) > 12 else "")
    if not (digits.isascii() and digits.isdigit()):      # "$²": str.isdigit's digits
        raise ParameterError(f"syntax error at or near \"{named}\"", "42601")
    significant = digits.lstrip("0")
    if len(significant) > 9:
        raise ParameterError(f"parameter number too large: {named}", "42601")
    return int(significant or "0")


def shown(text: str, width: int = 40) -> str:
    """``text`` in double quotes for a message; past ``width`` characters, its ends only."""
    if len(text) <= width:
        return f'"{text}"'
    return f'"{text[:width - 10]}...{text[-7:]}" ({len(text):,} characters)'


def _decode_float(text: str, oid: int) -> float:
    key = text.strip().lower()
    if key in _SPECIAL:
        return _SPECIAL[key]
    if not _FLOAT_TEXT.fullmatch(text):
        raise ParameterError(f"invalid input syntax for type double precision: {shown(text)}")
    value = float(text)
    if oid == FLOAT4 and math.isfinite(value):
        try:
            value = struct.unpack("!f", struct.pack("!f", value))[0]
        except OverflowError:
            value = math.inf
    underflow = value == 0 and re.search("[1-9]", re.split("[eE]", text)[0])
    if math.isinf(value) or underflow:
        raise ParameterError(f"{shown(text.strip())} is out of range for its type", "22003")
    return value


def _decode_numeric(text: str) -> decimal.Decimal:
    key = text.strip().lower()
    if key in ("nan", "infinity", "+infinity", "-infinity", "inf", "+inf", "-inf"):
        return decimal.Decimal(key.replace("infinity", "inf"))
    if not _FLOAT_TEXT.fullmatch(text):
        raise ParameterError(f"invalid input syntax for type numeric: {shown(text)}")
    try:
        value = decimal.Decimal(text.strip())
    except decimal.InvalidOperation:
        value = None
    if value is None or abs(value.adjusted()) > 131072:
        raise ParameterError("a numeric parameter is out of range", "22003")
    return value


def _decode_bool(text: str) -> bool:
    key = text.strip().lower()
    if key in ("o", ""):
        raise ParameterError(f"invalid input syntax for type boolean: {shown(text)}")
    if any(word.startswith(key) for word in _TRUE):
        return True
    if any(word.startswith(key) for word in _FALSE):
        return False
    raise ParameterError(f"invalid input syntax for type boolean: {shown(text)}")


def _decode_date(text: str) -> dt.date:
    if _DATE_TEXT.fullmatch(text):
        try:
            return dt.date.fromisoformat(text.strip())
        except ValueError:
            raise ParameterError(f"date out of range: {shown(text)}", "22008") from None
    raise ParameterError(f"invalid input syntax for type date (use YYYY-MM-DD): {shown(text)}")


def cell(value) -> bytes | None:
    """One value in text format; a list (a quantile's several values) as a PostgreSQL array."""
    if isinstance(value, (list, tuple)) or type(value).__name__ == "ndarray":
        parts = [text_value(v) for v in value]
        return b"{" + b",".join(b"NULL" if v is None else v for v in parts) + b"}"
    return text_value(value)


def data_rows(rows) -> list:
    """``rows`` as DataRow messages: encoded in the worker that ran the statement, never
    in the event loop (ninth review of issue 33: a free catalog result of 10,000 rows of
    100 floats took the event loop 1-2.4 s), and measured exactly by their bytes."""
    return [data_row([cell(v) for v in row]) for row in rows]


def decode_bind(bind, types: tuple) -> list:
    """The values of a Bind's parameters (decoded in a worker when they are long:
    tenth review, 32,767 of them took the event loop 25-50 ms)."""
    return [decode_param(raw, types[i] if i < len(types) else UNKNOWN, bind.param_format(i))
            for i, raw in enumerate(bind.params)]
