"""CASTs on PostgreSQL: the casts that cannot fail on any value of their source type, the
ones made total by a guard (text to a number by pattern), and the refused rest.

Owns: compiling ``TRY_CAST`` (every analyst cast is one) for PostgreSQL, which raises
where DuckDB's TRY_CAST gives NULL.
"""
from __future__ import annotations

from sqlglot import exp

from ...errors import QueryError
from ..intake import text_to_boolean
from .guards import (INT64, _and, _case, _float_fits, _fn, _not, _num, _type,
                     _within_int64, numeric_double)

_FAMILY = {"BIGINT": "int", "INT": "int", "INTEGER": "int", "SMALLINT": "int", "TINYINT": "int",
           "DOUBLE PRECISION": "float", "DOUBLE": "float", "FLOAT": "float", "REAL": "float",
           "TEXT": "string", "VARCHAR": "string", "BOOLEAN": "boolean", "TIMESTAMP": "datetime",
           "DATE": "date", "DECIMAL": "numeric", "NUMERIC": "numeric"}
# unambiguous (a run of digits splits one way only), as Spark's (PostgreSQL's regex engine
# does not backtrack, and reads at most MAX_NUMBER_TEXT characters here)
_SPACE = r"[ \t\n\r\f\v]"
r"""ASCII white space, which DuckDB's casts and PostgreSQL's number input both skip. Not
``\s``: in a UTF-8 database PostgreSQL's ``\s`` also matches U+3000 and the like, which
its casts then refuse with an error (tenth review of issue 33: one person's '\u30005'
made a query fail)."""
_NUMBER = rf"^{_SPACE}*[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]{{1,3}})?{_SPACE}*$"
_SPECIAL = rf"^{_SPACE}*[+-]?(inf|infinity|nan){_SPACE}*$"


def _family(type_name: str | None) -> str | None:
    return _FAMILY.get((type_name or "").split("(")[0].strip())


def try_cast(node):
    """TRY_CAST: PostgreSQL raises where DuckDB gives NULL, so every cast is either total on
    its source type or guarded; the rest are refused."""
    source, target = _family(_type(node.this)), _family(node.to.sql("postgres").upper())
    to = exp.DataType.build(_TARGETS[target]) if target in _TARGETS else node.to
    if source is None or source == target or target == "string":
        if source == "boolean" and target == "string":
            return _case_bool_text(node.this)
        if source == "float" and target == "string":
            return _float_text(node.this, to)
        return exp.Cast(this=node.this, to=to)
    if (source, target) in {("int", "float"), ("date", "datetime"), ("datetime", "date")}:
        return exp.Cast(this=node.this, to=to)
    if (source, target) == ("float", "int"):      # rounded half to even, as DuckDB's cast
        within = _and(exp.GTE(this=node.this.copy(), expression=_num("-9223372036854775808.0")),
                      exp.LT(this=node.this.copy(), expression=_num("9223372036854775808.0")))
        return _case(within, exp.Cast(this=_fn("ROUND", node.this), to=to))
    if (source, target) == ("int", "boolean"):
        return _case(_not(exp.Is(this=node.this.copy(), expression=exp.Null())),
                     exp.NEQ(this=node.this, expression=_num(0)))
    if (source, target) == ("string", "boolean"):
        return text_to_boolean(node.this)
    if (source, target) in {("boolean", "int"), ("boolean", "float")}:
        return exp.Cast(this=exp.Cast(this=node.this, to=exp.DataType.build("INT")), to=to)
    if source == "numeric" and target == "int":   # a SUM of BIGINTs (HUGEINT on DuckDB)
        return _case(_int64_exactly(_fn("ROUND", node.this.copy())), exp.Cast(this=node.this, to=to))
    if source == "numeric" and target == "float":
        return numeric_double(node.this)
    if source == "string" and target in ("int", "float"):
        return _string_to_number(node.this, target)
    raise QueryError(f"CAST from {source} to {target} is not supported on PostgreSQL (it "
                     "raises there on some values); use the DuckDB engine")


def _int64_exactly(whole: exp.Expression) -> exp.Expression:
    """A whole number within int64, decided exactly whether PostgreSQL computed it in NUMERIC
    or in float8: -2^63 and 2^63 are DOUBLEs, 2^63 - 1 is none (a BETWEEN ... AND
    9223372036854775807 compared in float8 reads it as 2^63 and let 2^63 pass to the cast,
    which raised: review 34b, F1)."""
    return _and(exp.GTE(this=whole.copy(), expression=_num(INT64[0])),
                exp.LT(this=whole, expression=_num(INT64[1] + 1)))


_TARGETS = {"int": "BIGINT", "float": "DOUBLE", "string": "TEXT", "boolean": "BOOLEAN",
            "datetime": "TIMESTAMP", "date": "DATE"}


MAX_NUMBER_TEXT = 1000
"""Longest text (characters) read as a number: PostgreSQL's NUMERIC raises on more than
16383 digits after the point (or an exponent past a number's digits), so a longer text,
which only a hostile cell holds, is NULL rather than an error that depends on one row."""


def _string_to_number(text: exp.Expression, target: str) -> exp.Expression:
    """Text in decimal or scientific notation (and, for floats, inf and nan) of at most
    MAX_NUMBER_TEXT characters, NULL otherwise; integers round half away from zero, as
    DuckDB's cast does. Each test is a CASE of its own: the NUMERIC cast runs only on text
    that passed the ones before it."""
    short = exp.LTE(this=exp.Length(this=text.copy()), expression=_num(MAX_NUMBER_TEXT))
    matches = exp.RegexpLike(this=text.copy(), expression=exp.Literal.string(_NUMBER))
    exact = exp.Cast(this=_fn("TRIM", text.copy()), to=exp.DataType.build("DECIMAL"))
    if target == "int":
        rounded = _fn("ROUND", exact)
        value = _case(_within_int64(rounded.copy()),
                      exp.Cast(this=rounded, to=exp.DataType.build("BIGINT")))
        return _case(short, _case(matches, value))
    special = exp.RegexpILike(this=text.copy(), expression=exp.Literal.string(_SPECIAL))
    double = exp.DataType.build("DOUBLE")
    return exp.Case(ifs=[
        exp.If(this=special, true=exp.Cast(this=_fn("TRIM", text.copy()), to=double)),
        exp.If(this=_and(short, matches), true=_exact_double(exact))])


def _two_to(power: int) -> exp.Expression:
    return exp.Pow(this=exp.Cast(this=_num(2), to=exp.DataType.build("DECIMAL")),
                   expression=_num(power))


def _exact_double(exact: exp.Expression) -> exp.Expression:
    """An exact NUMERIC as the nearest DOUBLE, as DuckDB reads its text: from 2^1024 - 2^970
    on (which rounds up past the largest DOUBLE) an infinity, as on DuckDB; a value too
    small for a DOUBLE (``_float_fits``) NULL; never PostgreSQL's error."""
    double = exp.DataType.build("DOUBLE")
    inf = exp.Cast(this=exp.Literal.string("Infinity"), to=double.copy())
    beyond = exp.GTE(this=exp.Abs(this=exact.copy()), expression=exp.Sub(
        this=_two_to(1024), expression=_two_to(970)))
    return exp.Case(ifs=[
        exp.If(this=beyond, true=exp.Case(ifs=[exp.If(
            this=exp.GT(this=exact.copy(), expression=_num(0)), true=inf.copy())],
            default=exp.Neg(this=inf))),
        exp.If(this=_float_fits(exact.copy()), true=exp.Cast(this=exact, to=double))])


def _case_bool_text(node):
    return exp.Case(ifs=[exp.If(this=node.copy(), true=exp.Literal.string("true")),
                         exp.If(this=_not(node.copy()), true=exp.Literal.string("false"))])


def _float_text(node, to):
    """A DOUBLE as text, spelled as DuckDB spells it (as Python's repr: the shortest digits
    that read back as the same DOUBLE, which PostgreSQL's text has too): ``nan``, ``inf``,
    ``-inf``; a whole number with ``.0`` (PostgreSQL: ``2000``); from 1e15 to 1e16 in plain
    digits (PostgreSQL: ``1e+15``); above, the shortest digits where PostgreSQL writes a
    whole number's 17 exact ones (``1.8464614531095048e+16``, DuckDB ``1.846461453109505e+16``).
    The value is cast once, in a scalar subquery (thirty-first
    review, F2: ``CAST(income / 1 AS VARCHAR) LIKE '%.0'`` counted 1001 rows on DuckDB, 0 here)."""
    t = exp.column("_dpsql_ft")
    digits = exp.Replace(this=exp.Replace(this=_fn("SPLIT_PART", t.copy(), exp.Literal.string("e"),
                                                   _num(1)),
                                          expression=exp.Literal.string("-"),
                                          replacement=exp.Literal.string("")),
                         expression=exp.Literal.string("."), replacement=exp.Literal.string(""))
    sign = exp.Case(ifs=[exp.If(this=exp.Like(this=t.copy(), expression=exp.Literal.string("-%")),
                                true=exp.Literal.string("-"))], default=exp.Literal.string(""))
    plain = exp.DPipe(this=exp.DPipe(this=exp.DPipe(
        this=sign, expression=_fn("RPAD", _fn("LEFT", digits.copy(), _num(16)), _num(16),
                                  exp.Literal.string("0"))), expression=exp.Literal.string(".")),
        expression=exp.Coalesce(this=exp.Nullif(this=_fn("SUBSTR", digits, _num(17)),
                                                expression=exp.Literal.string("")),
                                expressions=[exp.Literal.string("0")]))
    spelled = exp.Case(ifs=[
        exp.If(this=exp.EQ(this=t.copy(), expression=exp.Literal.string(word)),
               true=exp.Literal.string(duck))
        for word, duck in (("NaN", "nan"), ("Infinity", "inf"), ("-Infinity", "-inf"))] + [
        exp.If(this=exp.RegexpLike(this=t.copy(), expression=exp.Literal.string("^-?[0-9]+$")),
               true=exp.DPipe(this=t.copy(), expression=exp.Literal.string(".0"))),
        exp.If(this=exp.RegexpLike(this=t.copy(), expression=exp.Literal.string(r"e\+15$")),
               true=plain)] + [
        exp.If(this=_and(exp.RegexpLike(this=t.copy(), expression=exp.Literal.string(
            r"e\+1[6-9]$")), _reads_back(_fewer(t, n), t)),
            true=_fewer(t, n)) for n in (15, 16)], default=t.copy())
    once = exp.select(exp.alias_(exp.Cast(this=node, to=to), "_dpsql_ft", quoted=False))
    return exp.Subquery(this=exp.select(spelled).from_(exp.Subquery(
        this=once, alias=exp.TableAlias(this=exp.to_identifier("_dpsql_f")))))


def _fewer(t: exp.Expression, digits: int) -> exp.Expression:
    """The text ``t`` (``<mantissa>e<exponent>``) with its mantissa rounded to ``digits``
    significant digits, trailing zeros dropped."""
    mantissa = exp.Cast(this=_fn("SPLIT_PART", t.copy(), exp.Literal.string("e"), _num(1)),
                        to=exp.DataType.build("DECIMAL"))
    rounded = exp.Cast(this=_fn("ROUND", mantissa, _num(digits - 1)), to=exp.DataType.build("TEXT"))
    trimmed = _fn("RTRIM", _fn("RTRIM", rounded, exp.Literal.string("0")), exp.Literal.string("."))
    return exp.DPipe(this=exp.DPipe(this=trimmed, expression=exp.Literal.string("e")),
                     expression=_fn("SPLIT_PART", t.copy(), exp.Literal.string("e"), _num(2)))


def _reads_back(text: exp.Expression, t: exp.Expression) -> exp.Expression:
    double = exp.DataType.build("DOUBLE")
    return exp.EQ(this=exp.Cast(this=text, to=double), expression=exp.Cast(this=t.copy(), to=double))
