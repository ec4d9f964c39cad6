"""Derived bounds: the interval and the public value set of a row-level expression.

Owns: the bounds rule of every allow-listed construct. Bounds come from the
metadata (a column's ``lower``/``upper``/``values``) and the query text (its
literals) only, never from the data. They are applied to the guarded tree the
engine runs (``dpsql.frontend.typecheck``), so they describe exactly what is
computed.

Privacy does not rest on these rules being tight: every statistic clamps its
input to the interval it is charged for (``dpsql.plan.statistics``), so a value
outside an interval is moved onto it, never released beyond it. The rules make
answers accurate and make refusals precise: an aggregate that needs bounds and
gets an infinite interval is refused, naming the part that is unbounded.

A *domain* is a finite set of values an expression can take (besides NULL,
whose rows a public key set does not count): a group key with a domain is
released over all of it, with no threshold. Domains come from a column's
``values``, booleans, literal CASE branches, date parts and integer buckets
(``x // 10``, ``FLOOR(x / 5)``) of bounded columns, and from literal arithmetic
on those; a domain larger than ``MAX_DOMAIN`` values is not used.
"""
from __future__ import annotations

import math

from sqlglot import exp

from ..frontend.allowed import written
from ..frontend.costs import CHARS, text_length
from ..frontend.ranges import int_range

INF = math.inf
MAX_DOMAIN = 1000
"""Most values one public group key may have (from a derived domain)."""

DATE_PART_RANGES = {"quarter": (1, 4), "month": (1, 12), "week": (1, 53), "day": (1, 31),
                    "dayofweek": (0, 6), "dow": (0, 6), "isodow": (1, 7), "dayofyear": (1, 366),
                    "doy": (1, 366), "hour": (0, 23), "minute": (0, 59), "second": (0, 59)}
_DATE_FUNCTIONS = {exp.Quarter: "quarter", exp.Month: "month", exp.Day: "day", exp.Hour: "hour",
                   exp.Minute: "minute", exp.Second: "second", exp.DayOfWeek: "dayofweek",
                   exp.DayOfYear: "dayofyear"}
_BOOLEAN_NODES = (exp.EQ, exp.NEQ, exp.LT, exp.LTE, exp.GT, exp.GTE, exp.NullSafeEQ,
                  exp.NullSafeNEQ, exp.In, exp.Between, exp.Is, exp.Like, exp.ILike, exp.Escape,
                  exp.And, exp.Or, exp.Not, exp.IsNan, exp.IsInf, exp.StartsWith, exp.Contains)
_INT_TYPES = {"BIGINT", "INT", "INTEGER", "SMALLINT", "TINYINT"}
_FLOAT_TYPES = {"DOUBLE", "FLOAT", "REAL", "DECIMAL"}


def _mul(a: float, b: float) -> float:
    return 0.0 if a == 0 or b == 0 else a * b


def _hull(intervals) -> tuple:
    intervals = list(intervals)
    return min(i[0] for i in intervals), max(i[1] for i in intervals)


def _monotone(f, lo, hi) -> tuple:
    try:
        return f(lo), f(hi)
    except (OverflowError, ValueError):
        return -INF, INF


def _outward(ends: tuple) -> tuple:
    """A floating-point result widened by a few ulps: DuckDB's SQRT, CBRT, LN, EXP and
    POWER may round differently from Python's (CBRT(64) is 4 there, 3.9999999999999996
    here), and a FLOOR of it must not lose the value the engine computes."""
    lo, hi = min(ends), max(ends)
    return lo - abs(lo) * 1e-12 - 1e-300, hi + abs(hi) * 1e-12 + 1e-300


def _number(node) -> float | None:
    """The value of a numeric literal (possibly negated, parenthesised), else None."""
    negative = False
    while isinstance(node, (exp.Paren, exp.Neg)):
        if isinstance(node, exp.Neg):
            negative = not negative
        node = node.this
    if isinstance(node, exp.Literal) and not node.is_string:
        text = node.this.replace("_", "")
        value = int(text) if text.lstrip("+-").isdigit() else float(text)
        return -value if negative else value
    return None


def _literal_value(node):
    """A literal's Python value (str, number, bool), or a sentinel if not a literal."""
    while isinstance(node, exp.Paren):
        node = node.this
    if isinstance(node, exp.Boolean):
        return node.this
    if isinstance(node, exp.Literal) and node.is_string:
        return node.this
    if isinstance(node, (exp.Cast, exp.TryCast)) and isinstance(node.this, exp.Literal) \
            and node.this.is_string:
        return _NOT_LITERAL            # a typed date literal: not a key value we enumerate
    number = _number(node)
    return number if number is not None else _NOT_LITERAL


_NOT_LITERAL = object()


def _bigint(values: set) -> set:
    """The values a BIGINT expression takes: one beyond 64 bits is NULL on every engine
    (TRY), so not a key value (eighteenth review of issue 33: a public key grid of
    ``k * 2^62`` held values beyond 64 bits, which PostgreSQL refused and Spark wrapped)."""
    return {v for v in values if -(1 << 63) <= v < (1 << 63)}


def field_chars(fields: dict):
    """The most characters of a text column of ``fields`` (``text_length`` in ``CHARS``;
    a field's bytes where its characters are not known, never fewer)."""
    def chars(c):
        f = fields.get(c.name.lower())
        if f is None or f.kind != "string":
            return None
        return f.chars if f.chars is not None else f.text_bytes()
    return chars


class Deriver:
    """Bounds and domains over the fields of one relation.

    ``fields``: lower-case name -> an object with ``kind``, ``lower``, ``upper``
    and ``domain`` (see ``dpsql.plan.relations.Field``)."""

    def __init__(self, fields: dict):
        self.fields = fields
        self.unbounded: list = []    # the parts that made an interval infinite, for messages

    # -- intervals ------------------------------------------------------------
    def interval(self, node: exp.Expression) -> tuple:
        lo, hi = self._interval(node)
        if math.isnan(lo) or math.isnan(hi):
            return -INF, INF
        return lo, hi

    def _lost(self, node, why: str) -> tuple:
        self.unbounded.append(f"{written(node)} ({why})")
        return -INF, INF

    def _interval(self, node) -> tuple:
        if isinstance(node, (exp.Paren, exp.Try)):
            return self.interval(node.this)
        value = _number(node)
        if value is not None:
            return value, value
        if isinstance(node, exp.Column):
            return self._column(node)
        if isinstance(node, exp.Boolean) or isinstance(node, _BOOLEAN_NODES):
            return 0, 1
        if isinstance(node, exp.Null):
            return INF, -INF          # empty: contributes nothing to a hull
        if isinstance(node, (exp.Cast, exp.TryCast)):
            return self._cast(node)
        if isinstance(node, exp.Neg):
            lo, hi = self.interval(node.this)
            return -hi, -lo
        if isinstance(node, (exp.Add, exp.Sub, exp.Mul, exp.Div, exp.IntDiv, exp.Mod)):
            return self._arith(node)
        if isinstance(node, exp.Abs):
            return self._abs(node)
        if isinstance(node, exp.Sign):
            return -1, 1
        if isinstance(node, exp.Anonymous):
            return self._anonymous(node)
        if isinstance(node, exp.Nullif):
            return self.interval(node.this)
        if isinstance(node, exp.Case):
            return self._case(node)
        if isinstance(node, (exp.Floor, exp.Ceil, exp.Trunc)):
            return self._to_integer(node)
        if isinstance(node, exp.Round):
            return self._round(node)
        if isinstance(node, exp.Pow):
            return self._power(node)
        if isinstance(node, (exp.Sqrt, exp.Cbrt, exp.Ln, exp.Log, exp.Exp)):
            return self._monotone_function(node)
        if isinstance(node, exp.Extract):
            part = node.this.name.lower()
            if part in DATE_PART_RANGES:
                return DATE_PART_RANGES[part]
            return self._lost(node, f"the {part} of a date has no fixed range")
        for cls, part in _DATE_FUNCTIONS.items():
            if isinstance(node, cls):
                return DATE_PART_RANGES[part]
        if isinstance(node, exp.Length):
            return self._length(node)
        if isinstance(node, exp.DateDiff):    # two literals were folded into a literal
            return self._lost(node, "a difference of dates: datetime columns have no bounds")
        return self._lost(node, "no bounds rule for this expression")

    def _column(self, node) -> tuple:
        f = self.fields.get(node.name.lower())
        if f is None:
            return self._lost(node, "not a column of the relation")
        if f.kind == "boolean":
            return 0, 1
        if f.lower is None or f.upper is None:
            return self._lost(node, "the column has no lower and upper bound in the metadata")
        return f.lower, f.upper

    def _length(self, node) -> tuple:
        """LENGTH of text: a stored column's cells are at most its max_length characters
        (longer ones read as NULL, with the same LENGTH on every engine)."""
        most = text_length(node.this, field_chars(self.fields), CHARS)
        if most is None:
            return self._lost(node, "no bounds rule for the length of this text")
        return 0, most

    def _abs(self, node) -> tuple:
        lo, hi = self.interval(node.this)
        if lo >= 0:
            return lo, hi
        if hi <= 0:
            return -hi, -lo
        return 0, max(-lo, hi)

    def _case(self, node) -> tuple:
        branches = [i.args.get("true") for i in node.args.get("ifs") or []]
        if node.args.get("default") is not None:
            branches.append(node.args["default"])
        return _hull(self.interval(b) for b in branches)

    def _to_integer(self, node) -> tuple:
        """FLOOR / CEIL / TRUNC: monotone, so the ends map to the ends."""
        lo, hi = self.interval(node.this)
        f = {exp.Floor: math.floor, exp.Ceil: math.ceil, exp.Trunc: math.trunc}[type(node)]
        return _outward(_monotone(f, lo, hi)) if math.isfinite(lo) and math.isfinite(hi) else (lo, hi)

    def _round(self, node) -> tuple:
        lo, hi = self.interval(node.this)
        digits = _number(node.args.get("decimals")) or 0
        if abs(digits) > 300:
            return (-INF, INF)
        step = 10.0 ** -digits
        try:     # |x / step| beyond the doubles: the rounded interval is not computable
            return (math.floor(lo / step) * step if math.isfinite(lo) else lo,
                    math.ceil(hi / step) * step if math.isfinite(hi) else hi)
        except OverflowError:
            return (-INF, INF)

    def _cast(self, node) -> tuple:
        target = node.to.this.value
        inner = node.this
        lo, hi = self.interval(inner)
        if target in _INT_TYPES:
            # DuckDB rounds a DOUBLE to the nearest integer when casting.
            return (math.floor(lo) if math.isfinite(lo) else lo,
                    math.ceil(hi) if math.isfinite(hi) else hi)
        if target in _FLOAT_TYPES:
            return lo, hi
        return self._lost(node, f"a cast to {target} is not a number")

    def _arith(self, node) -> tuple:
        a_lo, a_hi = self.interval(node.this)
        b_lo, b_hi = self.interval(node.expression)
        if isinstance(node, exp.Add):
            return a_lo + b_lo, a_hi + b_hi
        if isinstance(node, exp.Sub):
            return a_lo - b_hi, a_hi - b_lo
        if isinstance(node, exp.Mul):
            products = [_mul(x, y) for x in (a_lo, a_hi) for y in (b_lo, b_hi)]
            return min(products), max(products)
        if b_lo <= 0 <= b_hi:
            if isinstance(node, exp.Mod) and math.isfinite(b_lo) and math.isfinite(b_hi):
                m = max(abs(b_lo), abs(b_hi))
                return (0 if a_lo >= 0 else -m), (0 if a_hi <= 0 else m)
            return self._lost(node, "the divisor can be 0 or its interval contains 0")
        if isinstance(node, exp.Mod):
            m = max(abs(b_lo), abs(b_hi))
            return (0 if a_lo >= 0 else -m), (0 if a_hi <= 0 else m)
        quotients = [x / y if math.isfinite(y) else 0.0 for x in (a_lo, a_hi) for y in (b_lo, b_hi)]
        lo, hi = min(quotients), max(quotients)
        if isinstance(node, exp.IntDiv):
            # DuckDB truncates integers and floors doubles: the hull of both rules is
            # [floor(lowest quotient), trunc(highest quotient)].
            return (math.floor(lo) if math.isfinite(lo) else lo,
                    math.trunc(hi) if math.isfinite(hi) else hi)
        return lo, hi

    def _anonymous(self, node) -> tuple:
        name = str(node.this).lower()
        args = [self.interval(a) for a in node.expressions]
        if name == "greatest":
            return max(a[0] for a in args), max(a[1] for a in args)
        if name == "least":
            return min(a[0] for a in args), min(a[1] for a in args)
        if name == "coalesce":
            return _hull(args)
        return self._lost(node, "no bounds rule for this function")

    def _power(self, node) -> tuple:
        p = _number(node.expression)
        lo, hi = self.interval(node.this)
        if p is None:
            return self._lost(node, "the exponent of POWER must be a literal for bounds")
        if float(p).is_integer() and p >= 0:
            p = int(p)
            a, b = _outward(_monotone(lambda v: float(v) ** p, lo, hi))
            if p % 2 == 0 and lo < 0 < hi:
                return 0, max(a, b)
            return min(a, b), max(a, b)
        if lo > 0:
            a, b = _outward(_monotone(lambda v: float(v) ** p, lo, hi))
            return min(a, b), max(a, b)
        return self._lost(node, "POWER with a negative or fractional exponent of a value "
                                "that can be 0 or negative")

    def _monotone_function(self, node) -> tuple:
        if isinstance(node, exp.Log) and node.expression is not None:
            base = _number(node.this)
            if base is None or base <= 1:
                return self._lost(node, "LOG(b, x) needs a literal base above 1 for bounds")
            lo, hi = self.interval(node.expression)
            f = (lambda v: math.log(v, base))
        else:
            lo, hi = self.interval(node.this)
            f = {exp.Sqrt: math.sqrt, exp.Cbrt: lambda v: math.copysign(abs(v) ** (1 / 3), v),
                 exp.Ln: math.log, exp.Exp: math.exp}.get(type(node))
            if f is None:        # LOG(x): base 10 in DuckDB
                f = math.log10
        if isinstance(node, (exp.Sqrt,)) and lo < 0:
            return self._lost(node, "SQRT of a value that can be negative")
        if isinstance(node, (exp.Ln, exp.Log)) and lo <= 0:
            return self._lost(node, "a logarithm of a value that can be 0 or negative")
        return _outward(_monotone(f, lo, hi))

    def guaranteed(self, node: exp.Expression, kind: str) -> tuple | None:
        """The interval of an integer ``node`` that holds whatever the data are, or None.

        Only for trees of integer literals and columns (taken as unbounded: the data
        need not respect the metadata), integer ``+ - * // %``, unary minus, ``ABS``,
        ``SIGN``, ``CASE``/``IF``, ``COALESCE``, ``NULLIF``, ``GREATEST``/``LEAST``,
        computed exactly in integers: ``CASE ... THEN 1 ELSE 0 END`` is ``[0, 1]``,
        ``LEAST(GREATEST(x, 0), 120)`` is ``[0, 120]``. A sum over such a column
        needs no clamp. Nothing evaluated in floating point qualifies."""
        if kind != "int":
            return None

        def unbounded(name):
            f = self.fields.get(name)
            return (-INF, INF, 64) if f is not None and f.kind == "int" else None
        found = int_range(node, unbounded)
        if found is None or not all(isinstance(v, int) for v in found[:2]):
            return None
        return found[0], found[1]

    # -- domains --------------------------------------------------------------
    def domain(self, node: exp.Expression, kind: str):
        """The finite set of non-NULL values ``node`` can take, or None."""
        values = self._domain(node, kind)
        if values is None or len(values) > MAX_DOMAIN:
            return None
        return values

    def _domain(self, node, kind):
        if kind == "boolean":
            return {False, True}
        if isinstance(node, (exp.Paren, exp.Try)):
            return self._domain(node.this, kind)
        if isinstance(node, exp.Column):
            f = self.fields.get(node.name.lower())
            return set(f.domain) if f is not None and f.domain is not None else None
        value = _literal_value(node)
        if value is not _NOT_LITERAL:
            if kind == "float" and isinstance(value, int):
                value = float(value)
            return {value}
        if isinstance(node, exp.Null):
            return set()
        if isinstance(node, exp.Case):
            out = set()
            for branch in [i.args.get("true") for i in node.args.get("ifs") or []] + (
                    [node.args["default"]] if node.args.get("default") is not None else []):
                values = self._domain(branch, kind)
                if values is None:
                    return None
                out |= values
            return out
        if isinstance(node, exp.Anonymous) and str(node.this).lower() == "coalesce":
            out = set()
            for arg in node.expressions:
                values = self._domain(arg, kind)
                if values is None:
                    return None
                out |= values
            return out
        if kind not in ("int", "float"):
            return None
        if isinstance(node, exp.Extract) or type(node) in _DATE_FUNCTIONS:
            return self._range(node, kind)
        if isinstance(node, (exp.IntDiv, exp.Mod, exp.Floor, exp.Ceil, exp.Round, exp.Trunc)):
            if isinstance(node, exp.Round) and (_number(node.args.get("decimals")) or 0) > 0:
                return None
            return self._range(node, kind)
        if isinstance(node, (exp.Add, exp.Sub, exp.Mul)):
            left, right = _number(node.this), _number(node.expression)
            if (left is None) == (right is None):
                return None
            const = left if left is not None else right
            values = self._domain(node.expression if left is not None else node.this, kind)
            if values is None:
                return None
            if isinstance(node, exp.Add):
                out = {v + const for v in values}
            elif isinstance(node, exp.Mul):
                out = {v * const for v in values}
            else:
                out = {const - v for v in values} if left is not None else {v - const for v in values}
            return {float(v) for v in out} if kind == "float" else _bigint(out)
        if isinstance(node, exp.Neg):
            values = self._domain(node.this, kind)
            return None if values is None else (_bigint({-v for v in values}) if kind == "int"
                                                else {-v for v in values})
        return None

    def _range(self, node, kind):
        lo, hi = self.interval(node)
        if not (math.isfinite(lo) and math.isfinite(hi)) or hi - lo + 1 > MAX_DOMAIN:
            return None
        values = range(math.ceil(lo), math.floor(hi) + 1)
        return {float(v) for v in values} if kind == "float" else set(values)
