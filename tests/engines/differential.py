"""Differential test of the guarded engines: random hostile queries on neighbouring databases.

An error that depends on the data is a differential-privacy break at any epsilon: a query
that fails when one person is there and is answered when they are not tells who is there
(issue 33, finding 11: one ``//`` on PostgreSQL). The queries here are drawn from the
grammar of the property tests (``tests.properties.strategies.QueryGen``), with hazards
(huge and tiny literals, zero divisors, ``//``, ``%``, ROUND to many digits, POWER, EXP,
LN, casts, date arithmetic and parts, substrings) placed behind a predicate that picks one
person, ``CASE WHEN pid = 7 THEN <hazard> END``, whose rows hold values at every edge
(int64 ends, the largest DOUBLE, infinity, NaN, the first and last timestamps). Each query
runs on the database with that person and on the one without, and the two must agree on
the outcome (answered, or the same error class and message) and on the charge.

An engine's module binds the two databases (a fixture ``neighbours``: the two readers) and
takes the test from ``differential_test(examples)``; the examples are derandomized, so CI
runs the same queries every time (``DPSQL_HYPOTHESIS_DERANDOMIZE=0`` draws fresh ones).
"""
from __future__ import annotations

import datetime as dt
import os
import string
import warnings

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dpsql
from tests.properties.strategies import Col, QueryGen, Scenario

TARGET = 7
META = {"": {"d": {"t": {
    "max_ids": 4,
    "pid": {"type": "int", "private_id": True},
    "i": {"type": "int", "lower": -10, "upper": 10},
    "f": {"type": "float", "lower": -1000.0, "upper": 1000.0},
    "g": {"type": "float", "lower": -1e308, "upper": 1e308},
    "h": {"type": "float", "lower": 0.0, "upper": 1e30},
    "s": {"type": "string"},
    "t": {"type": "datetime"},
    "b": {"type": "boolean"},
    "big": {"type": "int", "lower": -2 ** 63, "upper": 2 ** 63 - 1}}}}}
COLUMNS = {"pid": "int", "i": "int", "f": "float", "g": "float", "h": "float", "s": "string",
           "t": "datetime", "b": "boolean", "big": "int"}
_OTHERS = [(p, p - 3, p * 111.5, p * 1e300, p * 1e20, f"v{p}", dt.datetime(2020, p, p, p),
            p % 2 == 0, p * 1000) for p in range(1, 7) for _ in range(3)]
_TARGET = [
    (TARGET, 5, 730.0, 1.7976931348623157e308, 5e-324, "abc",
     dt.datetime(2020, 2, 29, 12, 34, 56), True, 2 ** 63 - 1),
    (TARGET, 2 ** 63 - 1, 1e-170, float("inf"), 1e-300, "1e400",
     dt.datetime(9999, 12, 31, 23, 59, 59), False, -2 ** 63),
    (TARGET, -2 ** 63, 5e-324, float("nan"), 1e30, " 3.5 ", dt.datetime(1, 1, 1), None, 0),
    (TARGET, 0, -1e-300, -1.7976931348623157e308, 0.0, "0." + "1" * 17000,
     dt.datetime(1970, 1, 1), True, -2 ** 63)]
ROWS = {"with": _OTHERS + _TARGET, "without": _OTHERS}
"""The two neighbouring tables: six persons of ordinary values, and the target's four rows
(no more than max_ids, so that truncation keeps them all) at every edge: int64's ends, the
largest DOUBLE and infinities where the bounds span more than a DOUBLE (g), values so
small that a product or a square of them underflows (f, h), a text of 17,000 digits after
the point (more than PostgreSQL's NUMERIC holds), the first and last timestamps, int64's
ends in a column whose bounds are int64's (big; not in the random queries' grammar)."""

PER_PERSON = "SELECT COUNT(*) AS n FROM (SELECT pid, {agg} AS v FROM d.t GROUP BY pid) AS p WHERE v > 0"
BIGQUERY = ("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, delta = 1e-6) "
            "SUM({value}, contribution_bounds_per_group => (0, 1)) AS s FROM d.t")
HUGE = "CASE WHEN pid = 7 THEN 1.7e308 ELSE 0 END"     # four rows: the sum overflows
REVIEW_SUMS = {
    # F1: the fixed point of a sum beyond 2^53 guarded its product by ABS(<clamped BIGINT>),
    # which raises on -2^63 on PostgreSQL
    "F1 literal": "SELECT SUM(CASE WHEN pid = 7 AND i > 3 THEN -9223372036854775808 ELSE 0 END) AS s FROM d.t",
    "F1 literal minus one": "SELECT SUM(CASE WHEN pid = 7 AND i > 3 THEN -9223372036854775807 - 1 ELSE 0 END) AS s FROM d.t",
    "F1 AVG literal": "SELECT AVG(CASE WHEN pid = 7 AND i > 3 THEN -9223372036854775807 - 1 ELSE 0 END) AS s FROM d.t",
    "F1 column": "SELECT SUM(big) AS s, AVG(big) AS a FROM d.t",
    "F1 per-person MIN": "SELECT SUM(v) AS s FROM (SELECT pid, MIN(big) AS v FROM d.t GROUP BY pid) AS p",
    # F2: PostgreSQL's float8 sum and avg raise where a partial sum (or avg's sum of squares)
    # overflows
    "F2 SUM": PER_PERSON.format(agg=f"SUM({HUGE})"),
    "F2 AVG": PER_PERSON.format(agg=f"AVG({HUGE})"),
    "F2 SUM of a product": PER_PERSON.format(agg="SUM(ABS(g) * 0.9)"),   # the target's g: 1e308
    "F2 AVG of a product": PER_PERSON.format(agg="AVG(ABS(g) * 0.9)"),
    "F2 AVG of squares": PER_PERSON.format(agg="AVG(CASE WHEN pid = 7 THEN f * 1e200 END)"),
    "F2 BigQuery": BIGQUERY.format(value=HUGE),
    "F2 HAVING": f"SELECT COUNT(*) AS n FROM (SELECT pid FROM d.t GROUP BY pid HAVING SUM({HUGE}) > 0) AS p",
    # F3: a per-person sum of BIGINTs beyond int64 was cast back to BIGINT unguarded
    "F3 SUM": PER_PERSON.format(agg="SUM(CASE WHEN pid = 7 THEN 9223372036854775807 ELSE 0 END)"),
    "F3 column": PER_PERSON.format(agg="SUM(big)"),
    "F3 BigQuery": BIGQUERY.format(value="CASE WHEN pid = 7 THEN 9223372036854775807 ELSE 0 END"),
    "F3 outer AVG": ("SELECT AVG(LEAST(GREATEST(v, 0), 10)) AS a FROM (SELECT pid, SUM(CASE WHEN "
                     "pid = 7 THEN 9223372036854775807 ELSE 0 END) AS v FROM d.t GROUP BY pid) AS p"),
}
"""The review's (review 33f, F1-F3) sums and averages that failed on PostgreSQL with the target
and were answered without it; each must be answered on both (as on DuckDB)."""

SHIFT = "CASE WHEN i = 5 THEN {value} ELSE {other} END"   # the target's one row with i = 5
L = "9223372036854775802"             # 5 + L = 2^63 - 1: i + L in [L - 10, 2^63 + 4]
REVIEW_SHIFTS = {
    "per-person SUM": PER_PERSON.format(agg=f"SUM({SHIFT.format(value='i + ' + L, other=0)})"),
    "ELSE -1": PER_PERSON.format(agg=f"SUM({SHIFT.format(value='i + ' + L, other=-1)})"),
    "literal first": PER_PERSON.format(agg=f"SUM({SHIFT.format(value=L + ' + i', other=0)})"),
    "product": PER_PERSON.format(agg=f"SUM({SHIFT.format(value='i * 1844674407370955161', other=0)})"),
    "ABS": PER_PERSON.format(agg=f"SUM({SHIFT.format(value=f'ABS(i + {L})', other=0)})"),
    "// 1": PER_PERSON.format(agg=f"SUM({SHIFT.format(value=f'(i + {L}) // 1', other=0)})"),
    "CAST": PER_PERSON.format(agg=f"SUM({SHIFT.format(value=f'CAST(i AS BIGINT) + {L}', other=0)})"),
    "big - 1": PER_PERSON.format(agg="SUM(big - 1)"),
    "HAVING": "SELECT COUNT(*) AS n FROM (SELECT pid FROM d.t GROUP BY pid HAVING SUM(big - 1) > 0) AS p",
    "IN": "SELECT COUNT(*) AS n FROM d.t WHERE pid IN (SELECT pid FROM d.t GROUP BY pid HAVING SUM(big - 1) > 0)",
    "BigQuery": BIGQUERY.format(value=SHIFT.format(value="i + " + L, other=0)),
    "BigQuery big - 1": BIGQUERY.format(value="big - 1"),
    "outer SUM": ("SELECT SUM(LEAST(GREATEST(v, 0), 1)) AS s FROM (SELECT pid, SUM(big - 1) AS v "
                  "FROM d.t GROUP BY pid) AS p"),
}
"""Review 34b, F1: a per-person SUM of an integer expression whose derived interval leaves
int64 (``i + L`` reaches 2^63 + 4, ``big - 1`` -2^63 - 1). Its clamp's end was a DOUBLE, so
PostgreSQL summed in float8, where the target's sum of 2^63 - 1 (or 2^63 - 3) rounds to
2^63, passed the int64 check and raised in the cast back to BIGINT; answered without the
target. Each must be answered on both."""

HOSTILE = {
    "int": ("0", "-1", "9223372036854775807", "-9223372036854775808", "4611686018427387904",
            "2147483647"),
    "float": ("1e-306", "1e308", "-1e308", "5e-324", "0.0", "-0.0", "1e300", "1e-300",
              "1.7976931348623157e308")}
TEMPLATES = {
    "int": ("{n} // {tiny}", "{n} // 0", "{i} % 0", "{i} // -1", "{i} * {i}", "-{i}", "ABS({i})",
            "{i} + 9223372036854775807", "CAST({n} * 1e300 AS BIGINT)", "CAST({s} AS BIGINT)",
            "EXTRACT({part} FROM {t})", "DATE_PART('{part}', CAST({t} AS DATE))",
            "DATE_DIFF('{diff}', {t}, TIMESTAMP '0001-01-01')", "LENGTH(SUBSTRING({s}, {pos}))",
            "ROUND({i}, -{digits})", "SIGN({n} * 1e300)", "{n} // 1e-306 // 1e-306"),
    "float": ("{n} / {tiny}", "{n} * 1e300", "{n} // 1e-306", "ROUND({n}, {digits})",
              "ROUND({n} * 1e300, -{digits})", "POWER({n}, 1e3)", "POWER(1e-300, {n})",
              "EXP({n} * 1e3)", "LN({n})", "LOG({n}, {n})", "SQRT({n} - 1e308)",
              "CAST({s} AS DOUBLE)", "{n} * 1e300 * 1e300", "FLOOR({n} / 1e-310)",
              "CAST({n} AS DOUBLE) % {tiny}"),
    "datetime": ("{t} + INTERVAL '9999' YEAR", "{t} - INTERVAL '1000000 months'",
                 "DATE_TRUNC('week', {t}) + INTERVAL 1 DAY", "CAST({t} AS DATE) + INTERVAL 1 DAY"),
    "string": ("CAST({n} * 1e300 AS VARCHAR)", "LEFT({s}, {pos})", "RIGHT({s}, {pos})",
               "CONCAT({s}, {n} // 1e-306)"),
}
PARTS = ("year", "quarter", "month", "week", "day", "dayofweek", "dow", "dayofyear", "doy",
         "hour", "minute", "second", "isodow", "isoyear")


def scenario() -> Scenario:
    """The table as the property grammar sees it (its columns, for leaves)."""
    columns = [Col("pid", "int", "int64", private_id=True), Col("i", "int", "int64", lower=-10,
               upper=10), Col("f", "float", "float64", lower=-1000.0, upper=1000.0),
               Col("g", "float", "float64", lower=-1e308, upper=1e308),
               Col("h", "float", "float64", lower=0.0, upper=1e30),
               Col("s", "string", "object"), Col("t", "datetime", "datetime64[ns]"),
               Col("b", "boolean", "bool")]
    return Scenario("d", "t", columns, False, 4, True, "connection", None)


class HazardGen(QueryGen):
    """The property grammar with hostile literals and hazard templates, each behind the
    target's predicate."""

    def __init__(self, draw, width: int = 4):
        super().__init__(draw, scenario())
        self.bad = 0.0              # constructs dpsql refuses are refused alike: not drawn
        self.width = width          # hazards in one query of the first shape

    def literal(self, kind) -> str:
        if kind in HOSTILE and self.flag(0.4):
            return self.pick(HOSTILE[kind])
        return super().literal(kind)

    def hazard(self, kind: str, depth: int = 1) -> str:
        if kind not in TEMPLATES or self.flag(0.3):
            return self.expr(kind, depth)
        fill = {"n": lambda: self.expr(self.pick(("int", "float")), depth),
                "i": lambda: self.expr("int", depth), "s": lambda: self.expr("string", depth),
                "t": lambda: self.expr("datetime", depth), "part": lambda: self.pick(PARTS),
                "diff": lambda: self.pick(("year", "month", "day", "second", "week")),
                "tiny": lambda: self.pick(("1e-306", "0", "0.0", "-0.0", "5e-324", "1e-300")),
                "digits": lambda: str(self.ints(0, 30)),
                "pos": lambda: self.pick(("1", "2", "4294967296", "2147483648", "0"))}
        return string.Formatter().vformat(self.pick(TEMPLATES[kind]), (), _Fields(fill))

    def behind_target(self, kind: str, by_id: bool = True) -> str:
        """``CASE WHEN pid = 7 [AND ...] THEN <hazard> END``, or a condition only the target's
        values meet (a group key may not read the id): computed on the target's rows only."""
        conditions = ["f > 700", "i > 3", "t > TIMESTAMP '2021-01-01'", "s = 'abc'", "h < 1e-200",
                      "NOT g < 1e307"]
        condition = self.pick(conditions)
        if by_id:
            condition = f"pid = {TARGET}" + (f" AND {condition}" if self.flag(0.3) else "")
        return f"(CASE WHEN {condition} THEN {self.hazard(kind)} END)"

    def query(self) -> tuple:
        """(SQL, parameters) of one hostile query, in one of five shapes."""
        shape = self.pick(("counts", "where", "key", "sum", "aggregate"))
        kinds = ("int", "float", "string", "datetime", "boolean")
        if shape == "counts":
            items = [f"COUNT({self.behind_target(self.pick(kinds))}) AS c{n}"
                     for n in range(self.width)]
            sql = f"SELECT {', '.join(items)} FROM d.t"
        elif shape == "where":
            kind = self.pick(kinds)
            test = self.pick(("IS NULL", "IS NOT NULL")) if kind != "float" else "> 0"
            sql = f"SELECT COUNT(*) AS n FROM d.t WHERE {self.behind_target(kind)} {test}"
        elif shape == "key":
            sql = (f"SELECT {self.behind_target(self.pick(kinds), by_id=False)} AS k, COUNT(*) "
                   "AS n FROM d.t GROUP BY k")
        elif shape == "sum":
            value = self.behind_target(self.pick(("int", "float")))
            sql = f"SELECT SUM(LEAST(GREATEST({value}, -5), 5)) AS s FROM d.t"
        else:       # the plan's own arithmetic over the edges: cells, fixed point, squares
            column = self.pick(("f", "g", "h", "i"))
            function = self.pick(("VARIANCE", "STDDEV", "AVG", "SUM", "MEDIAN", "MIN", "MAX"))
            sql = f"SELECT {function}({column}) AS a, COUNT(*) AS n FROM d.t"
        return sql, (list(self.params) or None)


class _Fields(dict):
    def __init__(self, fill):
        super().__init__()
        self.fill = fill

    def __missing__(self, key):
        return self.fill[key]()


def outcome(reader, sql: str, params) -> tuple:
    """(what happened, the charge): ('answered',) or (error class, message)."""
    before = reader.spent
    try:
        reader.execute_df(sql, params)
        result = ("answered",)
    except dpsql.Error as err:
        result = (type(err).__name__, str(err))
    spent = reader.spent
    return result, (spent[0] - before[0], spent[1] - before[1])


def check(neighbours, sql: str, params) -> tuple:
    """Run one query on both neighbours; fail on any difference of outcome or charge."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        present = outcome(neighbours["with"], sql, params)
        absent = outcome(neighbours["without"], sql, params)
    assert present == absent, (f"neighbours differ on {sql!r} (parameters {params!r}):\n"
                               f"  with person {TARGET}: {present}\n  without: {absent}")
    return present


def differential_test(examples: int, width: int = 4):
    """The test: ``examples`` queries, the first of whose shapes counts ``width`` hazards."""
    @settings(max_examples=examples, deadline=None, database=None,
              derandomize=os.environ.get("DPSQL_HYPOTHESIS_DERANDOMIZE", "1") != "0",
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                     HealthCheck.filter_too_much,
                                     HealthCheck.function_scoped_fixture])
    @given(st.data())
    def test(neighbours, data):
        sql, params = HazardGen(data.draw, width).query()
        check(neighbours, sql, params)
    return test
