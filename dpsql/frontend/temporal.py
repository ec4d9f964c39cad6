"""Dates and timestamps moved by an INTERVAL, and differences of dates, made total.

Owns: the allow-list rules of dates and times, applied by ``dpsql.frontend.typecheck``:
``extract``, ``date_int``, ``trunc`` (date parts and DATE_TRUNC, in TRY for infinite
timestamps), ``interval`` (``t + INTERVAL 'n' DAY``, ``t - INTERVAL '3 months'``,
``DATE_ADD(t, INTERVAL ...)``) and ``date_diff`` (``DATE_DIFF('day', a, b)``, ``DATEDIFF``),
and the exact calendar arithmetic behind the last two.

An interval must be a literal: whole counts of the units in ``UNITS``. It is read at plan
time into months and microseconds. Every engine adds an interval as DuckDB does: the months
first (a day past the end of the month is the month's last day: Jan 31 + 1 month is Feb 29
in 2020), then the days and the time. The result of ``t ± INTERVAL`` is a TIMESTAMP (also for
a DATE, as in DuckDB and PostgreSQL), and it is NULL unless ``t``, ``t`` moved by the
interval's months, and the result all lie in years 1 to 9999 (``FIRST`` .. ``LAST``, the range
DuckDB, PostgreSQL, Spark and Python share; an infinite timestamp is outside it). The plan
computes, here and exactly, the range of ``t`` for which that holds (one interval, since
adding months is monotone), and guards the addition by it:
``CASE WHEN t BETWEEN a AND b THEN t + INTERVAL .. MONTH + INTERVAL .. DAY + .. END``. No
engine can then raise, whatever the value of ``t`` or the size of the interval (one beyond
the range gives a constant NULL), and no engine sees a number it cannot hold. A literal
``t`` is moved here, exactly, into one literal.

``DATE_DIFF('part', a, b)`` counts the boundaries of ``part`` between ``a`` and ``b`` as DuckDB
does (``DIFF_PARTS``); the DuckDB engine runs it in ``TRY`` (NULL for infinite timestamps),
the other engines by rules with the same results (``dpsql.engines``). Two literals are
computed here.
"""
from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

from sqlglot import exp

from .allowed import DATE_PARTS, TEMPORAL, TRUNC_PARTS
from .dialect import ANALYST_DIALECT
from .literals import _refuse, int_literal

DAY = 86_400_000_000
"""Microseconds in a day."""
_EPOCH = dt.datetime(1970, 1, 1)
_MICROS = {"day": DAY, "hour": 3_600_000_000, "minute": 60_000_000, "second": 1_000_000,
           "millisecond": 1_000, "microsecond": 1}
UNITS = {"year": (12, 0), "quarter": (3, 0), "month": (1, 0), "week": (0, 7 * DAY),
         **{name: (0, micros) for name, micros in _MICROS.items()}}
"""An interval's units: name -> (months, microseconds) per unit; plurals are accepted."""
DIFF_PARTS = ("year", "quarter", "month", "week", "day", "hour", "minute", "second")
"""The parts DATE_DIFF counts (DuckDB's meaning for each is ``diff_value``)."""
MAX_COUNT_DIGITS = 30
"""A count with more digits moves any date out of the range: it is read as 10^30."""


def _days_from_civil(y: int, m: int, d: int) -> int:
    """Days since 1970-01-01 of a proleptic Gregorian date, for any year (H. Hinnant)."""
    y -= m <= 2
    era = y // 400
    yoe = y - era * 400
    doy = (153 * (m + (-3 if m > 2 else 9)) + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def _civil_from_days(z: int) -> tuple:
    z += 719468
    era = z // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    d = doy - (153 * mp + 2) // 5 + 1
    m = mp + (3 if mp < 10 else -9)
    return yoe + era * 400 + (m <= 2), m, d


def _month_days(y: int, m: int) -> int:
    if m == 2:
        return 29 if y % 4 == 0 and (y % 100 != 0 or y % 400 == 0) else 28
    return 30 if m in (4, 6, 9, 11) else 31


def micros_of(value: dt.datetime) -> int:
    """Microseconds since 1970 of a datetime (or date: its midnight), exactly."""
    if not isinstance(value, dt.datetime):
        value = dt.datetime(value.year, value.month, value.day)
    delta = value - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


FIRST = micros_of(dt.datetime(1, 1, 1))
LAST = micros_of(dt.datetime(9999, 12, 31, 23, 59, 59, 999999))


def datetime_of(micros: int) -> dt.datetime:
    """The datetime of microseconds since 1970 in FIRST..LAST."""
    return _EPOCH + dt.timedelta(microseconds=micros)


def add_months(micros: int, months: int) -> int:
    """``micros`` moved by whole months, a day past the month's end clamped to its last day
    (DuckDB, PostgreSQL and Spark alike); monotone in ``micros``."""
    days, time = divmod(micros, DAY)
    y, m, d = _civil_from_days(days)
    y2, m0 = divmod(y * 12 + m - 1 + months, 12)
    m2 = m0 + 1
    return _days_from_civil(y2, m2, min(d, _month_days(y2, m2))) * DAY + time


@dataclass(frozen=True)
class Interval:
    """An interval literal: months, then microseconds (days and time together: dpsql's
    timestamps have no time zone, so a day is always 24 hours)."""

    months: int
    micros: int

    def __neg__(self) -> "Interval":
        return Interval(-self.months, -self.micros)

    def moved(self, micros: int) -> int | None:
        """``micros`` moved by the interval, or None where the result is NULL (``micros``,
        it moved by the months, or the result outside FIRST..LAST)."""
        if not FIRST <= micros <= LAST:
            return None
        middle = add_months(micros, self.months)
        end = middle + self.micros
        return end if FIRST <= middle <= LAST and FIRST <= end <= LAST else None

    def domain(self) -> tuple | None:
        """(a, b): the microseconds whose ``moved`` is not None are exactly a..b; None if
        there are none. Adding months is monotone, so they are one range, found by
        bisection on FIRST..LAST."""
        low, high = max(FIRST, FIRST - self.micros), min(LAST, LAST - self.micros)
        if low > high:
            return None

        def first(predicate):      # the least t in FIRST..LAST with predicate(t), or None
            if not predicate(LAST):
                return None
            lo, hi = FIRST, LAST
            while lo < hi:
                mid = (lo + hi) // 2
                lo, hi = (lo, mid) if predicate(mid) else (mid + 1, hi)
            return lo
        a = first(lambda t: add_months(t, self.months) >= low)
        after = first(lambda t: add_months(t, self.months) > high)
        b = LAST if after is None else after - 1
        return (a, b) if a is not None and a <= b else None

    def parts(self) -> list:
        """The interval as literals each engine adds in this order: months, days, and the
        rest in seconds or microseconds (each of the interval's sign, so that every step
        lies between the start and the end)."""
        days = abs(self.micros) // DAY * (1 if self.micros >= 0 else -1)
        rest = self.micros - days * DAY
        found = [(self.months, "MONTH"), (days, "DAY")]
        found.append((rest // 1_000_000, "SECOND") if rest % 1_000_000 == 0 else (rest, "MICROSECOND"))
        return [exp.Interval(this=exp.Literal.string(str(n)), unit=exp.var(unit))
                for n, unit in found if n != 0]


_PAIR = re.compile(r"\s*([+-]?)\s*(\d+)\s+([a-z]+)\s*")


def _count(sign: str, digits: str) -> int:
    value = 10 ** MAX_COUNT_DIGITS if len(digits) > MAX_COUNT_DIGITS else int(digits)
    return -value if sign == "-" else value


def _unit(name: str, text: str) -> tuple:
    key = name.lower()
    key = key[:-1] if key.endswith("s") and key[:-1] in UNITS else key
    if key not in UNITS:
        _refuse(f"{text}: the unit {name!r} is not one of {', '.join(UNITS)} "
                "(or their plurals)")
    return UNITS[key]


def parse_interval(node: exp.Interval) -> Interval:
    """An INTERVAL literal: ``INTERVAL 'n' UNIT``, ``INTERVAL n UNIT`` or ``INTERVAL 'n unit
    [n unit ...]'``, whole counts only (DuckDB drops a fraction: '1.5' DAY is one day)."""
    text = node.sql(ANALYST_DIALECT)[:80]
    count, unit = node.this, node.args.get("unit")
    while isinstance(count, exp.Paren):
        count = count.this
    if not isinstance(count, exp.Literal):
        _refuse(f"{text}: the count of an INTERVAL must be a literal whole number "
                "(INTERVAL '30' DAY); an interval computed from a column is not supported")
    if unit is not None:
        if not isinstance(unit, exp.Var):
            _refuse(f"{text}: only intervals of one unit, e.g. INTERVAL '3' MONTH, are supported")
        found = re.fullmatch(r"\s*([+-]?)\s*(\d+)\s*", count.this)
        if found is None:
            _refuse(f"{text}: the count of an INTERVAL must be a whole number")
        months, micros = _unit(unit.name, text)
        n = _count(found.group(1), found.group(2))
        return Interval(n * months, n * micros)
    pairs, at, source = [], 0, count.this.lower()
    while at < len(source):
        found = _PAIR.match(source, at)
        if found is None or found.end() == at:
            _refuse(f"{text}: write an interval as whole counts and units, e.g. "
                    "INTERVAL '1 month 2 days' or INTERVAL '3' MONTH")
        pairs.append((_count(found.group(1), found.group(2)), _unit(found.group(3), text)))
        at = found.end()
    if not pairs:
        _refuse(f"{text}: an INTERVAL needs a count and a unit")
    return Interval(sum(n * u[0] for n, u in pairs), sum(n * u[1] for n, u in pairs))


def literal_micros(node: exp.Expression):
    """Microseconds of a typed date or timestamp literal (``CAST('..' AS DATE)``), "null" for
    a typed NULL, else None."""
    if not isinstance(node, (exp.Cast, exp.TryCast)):
        return None
    if isinstance(node.this, exp.Null):
        return "null"
    if not (isinstance(node.this, exp.Literal) and node.this.is_string):
        return None
    try:
        if node.to.is_type("date"):
            return micros_of(dt.date.fromisoformat(node.this.this.strip()))
        return micros_of(dt.datetime.fromisoformat(node.this.this.strip()))
    except ValueError:
        return None


def timestamp_literal(micros: int | None) -> exp.Expression:
    timestamp = exp.DataType.build("TIMESTAMP")
    if micros is None:
        return exp.Cast(this=exp.Null(), to=timestamp)
    return exp.Cast(this=exp.Literal.string(datetime_of(micros).isoformat(sep=" ")), to=timestamp)


def _date_literal(days: int) -> exp.Expression:
    text = datetime_of(days * DAY).date().isoformat()
    return exp.Cast(this=exp.Literal.string(text), to=exp.DataType.build("DATE"))


def _operands(node: exp.Expression) -> tuple:
    """(temporal operand, interval node, sign) of ``t ± INTERVAL``, ``INTERVAL + t`` or
    DATE_ADD(t, INTERVAL)."""
    def bare(n):
        while isinstance(n, exp.Paren):
            n = n.this
        return n
    left, right = bare(node.this), bare(node.expression)
    if isinstance(left, exp.Interval) and isinstance(right, exp.Interval):
        _refuse("INTERVAL + INTERVAL is not supported; add each interval to the date")
    if isinstance(node, exp.Add) and isinstance(left, exp.Interval):
        return node.expression, left, 1
    if not isinstance(right, exp.Interval):
        if isinstance(node, exp.DateAdd):
            _refuse("DATE_ADD takes a date or timestamp and an INTERVAL literal, e.g. "
                    "DATE_ADD(t, INTERVAL 3 DAY)")
        _refuse(f"{node.sql(ANALYST_DIALECT)[:80]}: an INTERVAL can only be subtracted from a "
                "date or timestamp")
    return node.this, right, -1 if isinstance(node, exp.Sub) else 1


def has_interval(node: exp.Expression) -> bool:
    """``node`` is ``+``/``-`` with an INTERVAL operand (the interval rule types it)."""
    def bare(n):
        while isinstance(n, exp.Paren):
            n = n.this
        return n
    return isinstance(node, (exp.Add, exp.Sub)) and any(
        isinstance(bare(node.args.get(k)), exp.Interval) for k in ("this", "expression"))


def interval_rule(checker, node: exp.Expression) -> tuple:
    """The ``interval`` rule: ``t ± INTERVAL`` and DATE_ADD typed as datetime and made
    total (module doc); a bare INTERVAL anywhere else is refused."""
    if isinstance(node, exp.Interval):
        _refuse(f"{node.sql(ANALYST_DIALECT)[:80]}: an INTERVAL can only be added to or "
                f"subtracted from a date or timestamp (in {checker.clause})")
    checker._only(node, {"this", "expression"})
    operand, interval_node, sign = _operands(node)
    interval = parse_interval(interval_node)
    interval = -interval if sign < 0 else interval
    value, kind = checker.check(operand)
    if kind == "string":
        _refuse(f"{operand.sql(ANALYST_DIALECT)[:80]} is text: an INTERVAL is added to a date or "
                "timestamp; write DATE '2020-01-01' or TIMESTAMP '2020-01-01 10:00:00'")
    checker._need(operand, kind, TEMPORAL, "+/- INTERVAL")
    constant = literal_micros(value) if kind != "null" else "null"
    if constant == "null":
        return timestamp_literal(None), "datetime"
    if constant is not None:
        return timestamp_literal(interval.moved(constant)), "datetime"
    span = interval.domain()
    if span is None:
        return timestamp_literal(None), "datetime"
    a, b = span
    if kind == "date":           # whole days: d BETWEEN the first and last day in a..b
        low, high = -(-a // DAY), b // DAY
        if low > high:
            return timestamp_literal(None), "datetime"
        within = exp.Between(this=value.copy(), low=_date_literal(low), high=_date_literal(high))
        value = exp.TryCast(this=value, to=exp.DataType.build("TIMESTAMP"))
        value.type = "TIMESTAMP"
    else:
        within = exp.Between(this=value.copy(), low=timestamp_literal(a), high=timestamp_literal(b))
    moved = value
    for part in interval.parts():
        moved = exp.Add(this=moved, expression=part)
    return exp.Case(ifs=[exp.If(this=within, true=moved)]), "datetime"


def part(checker, node, found, allowed: set, what: str) -> str:
    """The part of a date function (``EXTRACT(part FROM t)``): a literal from ``allowed``."""
    text = found.name if isinstance(found, (exp.Var, exp.Literal)) else None
    if text is None or text.lower() not in allowed:
        _refuse(f"the part of {what} must be one of {', '.join(sorted(allowed))}, "
                f"written literally (in {checker.clause})")
    return text.lower()


def extract_rule(checker, node):
    """``extract``: EXTRACT(part FROM t), DATE_PART('part', t) -> int, NULL for infinities."""
    if isinstance(node, exp.Anonymous):
        if len(node.expressions) != 2:
            _refuse("DATE_PART takes a part and a date")
        found, value = node.expressions
    else:
        found, value = node.this, node.expression
    name = part(checker, node, found, DATE_PARTS, "EXTRACT/DATE_PART")
    inner, kind = checker.check(value)
    checker._need(value, kind, TEMPORAL, "EXTRACT")
    return exp.Try(this=exp.Extract(this=exp.var(name.upper()), expression=inner)), "int"


def date_int_rule(checker, node):
    """``date_int``: YEAR(t) ... DAYOFYEAR(t) -> int, NULL for infinities."""
    out, _ = checker._unary(node, TEMPORAL, "int")
    return exp.Try(this=out), "int"


def trunc_rule(checker, node):
    """``trunc``: DATE_TRUNC('part', t) -> datetime, NULL for infinities."""
    checker._only(node, {"this", "unit"})
    name = part(checker, node, node.args.get("unit"), TRUNC_PARTS, "DATE_TRUNC")
    inner, kind = checker.check(node.this)
    checker._need(node.this, kind, TEMPORAL, "DATE_TRUNC")
    return exp.Try(this=exp.TimestampTrunc(this=inner, unit=exp.var(name.upper()))), "datetime"


def diff_value(part: str, a: int, b: int) -> int:
    """DATE_DIFF(part, a, b) of microseconds since 1970, as DuckDB counts it: the boundaries
    of ``part`` crossed from a to b (``week``: whole weeks between the two days)."""
    (ya, ma, _), (yb, mb, _) = _civil_from_days(a // DAY), _civil_from_days(b // DAY)
    if part == "year":
        return yb - ya
    if part == "quarter":
        return (yb * 4 + (mb - 1) // 3) - (ya * 4 + (ma - 1) // 3)
    if part == "month":
        return (yb * 12 + mb) - (ya * 12 + ma)
    if part == "week":
        days = b // DAY - a // DAY
        return abs(days) // 7 * (1 if days >= 0 else -1)
    unit = _MICROS[part]
    return b // unit - a // unit


def date_diff_rule(checker, node: exp.Expression) -> tuple:
    """The ``date_diff`` rule: DATE_DIFF('part', a, b) of two dates or timestamps -> int."""
    checker._only(node, {"this", "expression", "unit", "date_part_boundary"})
    unit = part(checker, node, node.args.get("unit"), {*DIFF_PARTS, *(p + "s" for p in DIFF_PARTS)},
                "DATE_DIFF")
    unit = unit[:-1] if unit.endswith("s") else unit           # 'days' is 'day', as in DuckDB
    (start, end), kind = checker._unify([node.expression, node.this],
                                         f"DATE_DIFF in {checker.clause}")
    checker._need(node.this, kind, TEMPORAL, "DATE_DIFF")
    if kind == "null":
        return exp.Cast(this=exp.Null(), to=exp.DataType.build("BIGINT")), "int"
    a, b = literal_micros(start), literal_micros(end)
    if "null" in (a, b):
        return exp.Cast(this=exp.Null(), to=exp.DataType.build("BIGINT")), "int"
    if a is not None and b is not None:
        return int_literal(diff_value(unit, a, b)), "int"
    diff = exp.DateDiff(this=end, expression=start, unit=exp.var(unit.upper()))
    return exp.Try(this=diff), "int"
