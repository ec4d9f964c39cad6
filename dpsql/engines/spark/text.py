"""Spark SQL's compilation of strings, times and casts, with DuckDB's meaning.

Owns: the rules of ``dpsql.engines.spark.rules`` for text (CONCAT skips NULLs, LIKE has no
escape character unless one is given, literal SUBSTRING positions), time (date parts as
DuckDB numbers them, epoch microseconds) and ``TRY_CAST`` (NULL where DuckDB's would be:
Spark's non-ANSI cast truncates and saturates instead). What Spark cannot do as DuckDB does
is refused before anything runs, with a message that says so.
"""
from __future__ import annotations

from sqlglot import exp

from ...errors import QueryError
from ...plan.dialect import date_diff_tree
from ..intake import text_to_boolean
from .like import INT32_MAX, compile_like
from .rules import _and, _cases, _fn, _num, _or, _to_bigint, _type

_FAMILY = {"BIGINT": "int", "INT": "int", "INTEGER": "int", "SMALLINT": "int", "TINYINT": "int",
           "DOUBLE": "float", "FLOAT": "float", "REAL": "float", "TEXT": "string",
           "VARCHAR": "string", "BOOLEAN": "boolean", "TIMESTAMP": "datetime", "DATE": "date"}
_INT_RANGE = {"TINYINT": 7, "SMALLINT": 15, "INT": 31, "INTEGER": 31, "BIGINT": 63}
_TARGETS = {"int": "BIGINT", "float": "DOUBLE", "string": "STRING", "boolean": "BOOLEAN",
            "datetime": "TIMESTAMP", "date": "DATE"}
# Java's regex backtracks: every quantifier is possessive (it never gives back what it took;
# nothing after it could have matched it either), so a text costs its length, not its square
# ('[0-9]+\.?[0-9]*' split a run of digits every way before failing on a last letter).
_NUMBER = r"^\s*+[+-]?+(?:[0-9]++(?:\.[0-9]*+)?+|\.[0-9]++)(?:[eE][+-]?+[0-9]++)?+\s*+$"
_SPECIAL = r"^\s*+[+-]?+(?:inf|infinity|nan)\s*+$"


def _family(type_name: str | None) -> str | None:
    return _FAMILY.get((type_name or "").split("(")[0].strip())


def _refuse_float_text():
    raise QueryError("a float as text is not supported on Spark (it spells floats otherwise "
                     "than DuckDB: 1.0E308 for 1e+308); round or cast the value to an integer "
                     "first, or use the DuckDB engine")


def try_cast(node):
    """TRY_CAST with DuckDB's result: NULL where DuckDB's is, rounding half away from zero."""
    source = _family(_type(node.this))
    declared = node.to.sql("duckdb").upper().split("(")[0]
    target = _family(declared)
    to = exp.DataType.build(_TARGETS[target]) if target in _TARGETS else node.to
    value = node.this
    if source == "float" and target == "string":
        _refuse_float_text()
    if target == "int" and source in ("int", "float", "string"):
        return _to_int(value, source, _INT_RANGE.get(declared, 63))
    if source is None or source == target or target == "string":
        return exp.Cast(this=value, to=to)
    if (source, target) in {("int", "float"), ("date", "datetime"), ("datetime", "date"),
                            ("boolean", "float"), ("boolean", "int"), ("int", "boolean")}:
        return exp.Cast(this=value, to=to)
    if (source, target) == ("string", "float"):
        return _string_to_float(value)
    if (source, target) == ("string", "boolean"):
        return text_to_boolean(value)
    raise QueryError(f"CAST from {source} to {target} is not supported on Spark (it reads "
                     "some values otherwise than DuckDB); use the DuckDB engine")


def _to_int(value, source: str, bits: int) -> exp.Expression:
    """An integer of ``bits`` + 1 bits from an int, a float (rounded half away from zero) or
    text in decimal or scientific notation; NULL when out of range or not a number."""
    low, high = _num(-(2 ** bits)), _num(2 ** bits - 1)
    if source == "int":
        whole = value
    elif source == "float":
        whole = _to_bigint(value)
    else:
        # TRY_CAST: Spark computes this once for both uses, before the pattern is tested
        exact = exp.TryCast(this=_fn("trim", value.copy()), to=exp.DataType.build("DECIMAL(38, 0)"),
                            safe=True)
        matches = exp.RegexpLike(this=value.copy(), expression=exp.Literal.string(_NUMBER))
        whole = _cases((_and(matches, exp.Between(this=exact.copy(), low=_num(-(2 ** 63)),
                                                      high=_num(2 ** 63 - 1))),
                        exp.Cast(this=exact, to=exp.DataType.build("BIGINT"))))
    if bits == 63:
        return whole
    return _cases((exp.Between(this=whole.copy(), low=low, high=high), whole))


def _string_to_float(text):
    special = exp.RegexpLike(this=_fn("lower", text.copy()), expression=exp.Literal.string(_SPECIAL))
    matches = exp.RegexpLike(this=text.copy(), expression=exp.Literal.string(_NUMBER))
    double = exp.Cast(this=_fn("trim", text.copy()), to=exp.DataType.build("DOUBLE"))
    return _cases((_or(special, matches), double))


def concat(node):
    """CONCAT skips NULLs (Spark's ``concat`` is NULL if any part is): ``concat_ws('', ...)``."""
    parts = []
    for arg in node.expressions:
        kind = _type(arg)
        if _family(kind) == "float":
            _refuse_float_text()
        parts.append(arg if _family(kind) == "string" else exp.Cast(
            this=arg, to=exp.DataType.build("STRING")))
    return _fn("concat_ws", exp.Literal.string(""), *parts)


def like(node):
    """LIKE, ILIKE without ESCAPE (DuckDB has none; Spark's is a backslash), in time linear
    in the text (``dpsql.engines.spark.like``); under an ESCAPE, compiled by ``escape``."""
    if isinstance(node.parent, exp.Escape):
        return node
    return compile_like(node)


def escape(node):
    """LIKE ... ESCAPE c: DuckDB reads c before any character as that character (Spark
    raises, when it compiles the stage, which may depend on the data, unless c precedes %,
    _ or c): the pattern is read as DuckDB reads it and compiled as LIKE is."""
    like, esc = node.this, node.expression.name
    if isinstance(like, exp.ILike) and esc.lower() != esc.upper():
        raise QueryError("ILIKE with a letter as its ESCAPE character is not supported on "
                         "Spark (it lower-cases the pattern, escape included); escape with a "
                         "character that is not a letter, e.g. ESCAPE '!'")
    if not isinstance(like, (exp.Like, exp.ILike)) or len(esc) != 1:
        return node
    return compile_like(like, esc)


def literal_positions(node):
    """SUBSTRING, LEFT, RIGHT: positions and lengths must be literals (a start >= 1, a length
    >= 0): Spark reads position 0 and negative lengths otherwise than DuckDB; literals past
    2^31 - 1 (Spark's positions are 32-bit and would wrap) are 2^31 - 1, which is past any
    text (cells hold at most MAX_TEXT_CELL characters), and from 2^32 on, where DuckDB's
    TRY gives NULL, SUBSTRING and LEFT are NULL."""
    for key in ("start", "length", "expression"):
        arg = node.args.get(key)
        if arg is None:
            continue
        if isinstance(arg, exp.Literal) and arg.is_number and float(arg.name) > INT32_MAX:
            if float(arg.name) >= 2 ** 32 and not isinstance(node, exp.Right):
                # DuckDB's offsets are 32-bit: beyond, TRY gives NULL
                return exp.Cast(this=exp.Null(), to=exp.DataType.build("STRING"))
            arg = exp.Literal.number(INT32_MAX)
            node.set(key, arg)
        if not (isinstance(arg, exp.Literal) and arg.is_number and float(arg.name) >= 0):
            raise QueryError(f"{node.key.upper()} with a position or length that is not a "
                             "literal of at least 0 is not supported on Spark (it counts "
                             "other positions differently); use the DuckDB engine")
    start = node.args.get("start")
    if start is not None and int(float(start.name)) < 1:
        raise QueryError(f"{node.key.upper()} from position {start.name} is not supported on "
                         "Spark; start at 1 or later")
    return node


_PARTS = {exp.Year: "year", exp.Month: "month", exp.Day: "day", exp.Quarter: "quarter",
          exp.Hour: "hour", exp.Minute: "minute", exp.Second: "second",
          exp.DayOfWeek: "dow", exp.DayOfYear: "doy"}
_SPARK_PART = {"year": "year", "quarter": "quarter", "month": "month", "week": "weekofyear",
               "day": "day", "dayofyear": "dayofyear", "doy": "dayofyear", "hour": "hour",
               "minute": "minute", "second": "second"}


def date_part(node):
    """YEAR(x) ... EXTRACT, DATE_PART: whole numbers numbered as DuckDB numbers them
    (day of week 0 = Sunday, ISO day 7 = Sunday, seconds without fraction)."""
    if isinstance(node, exp.Extract):
        value, part = node.expression, node.this.name.lower()
    elif isinstance(node, exp.Anonymous):
        part, value = node.expressions[0].name.lower(), node.expressions[1]
    else:
        value, part = node.this, _PARTS[type(node)]
    if part in ("dow", "dayofweek"):
        out = exp.Sub(this=_fn("dayofweek", value), expression=_num(1))
    elif part == "isodow":
        out = exp.Add(this=exp.Mod(this=exp.Add(this=_fn("dayofweek", value), expression=_num(5)),
                                   expression=_num(7)), expression=_num(1))
    elif part == "isoyear":
        out = exp.Extract(this=exp.var("YEAROFWEEK"), expression=value)
    elif part in _SPARK_PART:
        out = _fn(_SPARK_PART[part], value)
    else:
        raise QueryError(f"the date part {part!r} is not supported on Spark")
    return exp.Cast(this=out, to=exp.DataType.build("BIGINT"))


def date_diff(node):
    """DATE_DIFF('part', a, b) as DuckDB counts it, from whole days (``datediff``) and the
    fields of the time of day (``dpsql.plan.dialect.date_diff_tree``): exact."""
    a, b = node.expression, node.this
    days = exp.Cast(this=_fn("datediff", b.copy(), a.copy()), to=exp.DataType.build("BIGINT"))
    value = date_diff_tree(node.unit.name.lower(), days, lambda name: exp.Paren(this=exp.Sub(
        this=exp.Cast(this=_fn(name.lower(), b.copy()), to=exp.DataType.build("BIGINT")),
        expression=_fn(name.lower(), a.copy()))))
    return exp.Cast(this=value, to=exp.DataType.build("BIGINT"))


def epoch_us(node):
    """Microseconds since 1970 (the session's time zone is UTC, so a TIMESTAMP_NTZ's wall time
    is read as UTC, as DuckDB's TIMESTAMP)."""
    return _fn("unix_micros", exp.Cast(this=node.this, to=exp.DataType.build("TIMESTAMPLTZ")))


def timestamp_trunc(node):
    """DATE_TRUNC: a TIMESTAMP_NTZ, as its operand (Spark's is a TIMESTAMP in the session's
    time zone, UTC here)."""
    return exp.Cast(this=node, to=exp.DataType.build("TIMESTAMPNTZ"))


def anonymous(node):
    name = node.name.upper()
    if name == "LIST":
        return _fn("collect_list", *node.expressions)
    if name == "DATE_PART":
        return date_part(node)
    if name == "CONCAT":
        return concat(node)
    return node


def is_nan(node):
    return _cases((exp.Is(this=node.this.copy(), expression=exp.Null()), exp.Null()),
                  default=_fn("isnan", node.this))


def contains(node):
    return exp.GT(this=_fn("locate", node.expression, node.this), expression=_num(0))


def starts_with(node):
    return _fn("startswith", node.this, node.expression)

