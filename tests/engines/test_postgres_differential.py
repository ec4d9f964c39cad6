"""Issue 33 on PostgreSQL: random hostile queries on neighbouring databases, and the three
findings of the attack review, each as a test (``tests/engines/differential.py`` says how).

``DPSQL_PG_DIFFERENTIAL`` (default 300) sets the number of random queries.
"""
from __future__ import annotations

import math
import os

import duckdb
import pandas as pd
import pytest
import sqlglot
from sqlglot import exp

import dpsql
from dpsql.engines.duckdb.dialect import DuckDB
from dpsql.engines.postgres import dialect as postgres_dialect
from dpsql.frontend.typecheck import check as typecheck
from tests.engines.differential import (COLUMNS, META, REVIEW_SHIFTS, REVIEW_SUMS, ROWS, check,
                                       differential_test)
from tests.paths import DATA
from tests.servers import PG_TYPES, create_database, load_frame

EXAMPLES = int(os.environ.get("DPSQL_PG_DIFFERENTIAL", "300"))
pytestmark = pytest.mark.filterwarnings("ignore:dpsql. no budget set")


def _database(postgres, name: str, rows: list):
    con = create_database(postgres, name)
    with con.cursor() as cur:
        cur.execute("CREATE SCHEMA d")
        cur.execute("CREATE TABLE d.t (" + ", ".join(f"{c} {PG_TYPES[kind]}"
                                                    for c, kind in COLUMNS.items()) + ")")
        cur.executemany("INSERT INTO d.t VALUES (" + ", ".join(["%s"] * len(COLUMNS)) + ")", rows)
    con.commit()
    return con


@pytest.fixture(scope="module")
def neighbours(postgres):
    cons = {name: _database(postgres, f"differential_{name}", rows) for name, rows in ROWS.items()}
    yield {name: dpsql.from_connection(con, META, privacy=dpsql.Privacy(epsilon=1.0))
           for name, con in cons.items()}
    for con in cons.values():
        con.close()


test_hostile_queries_have_one_outcome_on_neighbouring_databases_on_postgres = \
    differential_test(EXAMPLES)


# -- the findings of the attack review (issue 33, items 11 to 13) ---------------------------

CLINIC = DATA / "clinic.yaml"
FINDING_11 = ("SELECT COUNT(*) AS n FROM clinic.visits WHERE "
              "(CASE WHEN pid = 4242 AND cost > 700 THEN cost ELSE 0 END) // 1e-306 > 0")


@pytest.fixture(scope="module")
def clinic(postgres):
    """visits.csv with and without person 4242, one visit of cost 730 (within [0, 1000])."""
    frame = pd.read_csv(DATA / "visits.csv")
    target = frame.iloc[:1].assign(pid=4242, cost=730.0)
    cons = {}
    for name, rows in (("with", pd.concat([frame, target])), ("without", frame)):
        cons[name] = create_database(postgres, f"clinic_{name}")
        load_frame(cons[name], CLINIC, "clinic.visits", rows)
    yield {name: dpsql.from_connection(con, CLINIC, privacy=dpsql.Privacy(epsilon=1.0))
           for name, con in cons.items()}
    for con in cons.values():
        con.close()


def test_finding_11_a_float_floor_division_is_no_error_oracle(clinic, postgres):
    """``//`` of a float was an unguarded FLOOR(x / c): PostgreSQL raised on the overflow
    of the target's 730 / 1e-306 and answered without them (10/10 each way). Through the
    reader and the DB-API, with the target and without: answered, and charged alike."""
    for sql in (FINDING_11, "SELECT (cost // 1e-306 > 0) AS k, COUNT(*) AS n FROM "
                "clinic.visits GROUP BY k"):
        assert check(clinic, sql, None)[0] == ("answered",)
    for name in ("with", "without"):
        with dpsql.connect(database=postgres.url(f"clinic_{name}"), metadata=CLINIC) as con:
            cursor = con.cursor()
            cursor.execute(FINDING_11)
            assert len(cursor.fetchall()) == 1


def test_finding_12_extract_dayofweek_is_answered_as_on_duckdb(clinic):
    """EXTRACT(dayofweek FROM t) failed on every data set on PostgreSQL (DAYOFWEEK is no
    field there), charged each time; DAYOFWEEK(t) worked. Every date part of the allow-list
    now has DuckDB's number, of a timestamp and of a date."""
    sql = "SELECT EXTRACT(dayofweek FROM visit_time) AS d, COUNT(*) AS n FROM clinic.visits GROUP BY d"
    assert check(clinic, sql, None)[0] == ("answered",)
    con = clinic["with"].engine.con
    expressions = [form.format(part=part, value=value) for part in PARTS
                   for form in ("EXTRACT({part} FROM {value})", "DATE_PART('{part}', {value})")
                   for value in ("t", "CAST(t AS DATE)")]
    assert _differ(con, expressions, "t", TIMES) == []


def test_finding_12_a_function_failing_on_every_data_set_is_refused_before_any_charge(
        clinic, monkeypatch):
    """What let finding 12 be charged: the dry run on a row of NULLs computed no EXTRACT.
    With a field PostgreSQL does not know put back (a stand-in for any function that fails
    on every value), the dry run, which now also runs on a row of ordinary values, refuses
    the query for free, with the target and without."""
    monkeypatch.setitem(postgres_dialect.FIELDS, "dayofweek", "DAYOFWEEK")
    for reader in clinic.values():
        before = reader.spent
        with pytest.raises(dpsql.QueryError, match="dayofweek"):
            reader.execute_df("SELECT COUNT(*) AS n FROM clinic.visits "
                              "WHERE EXTRACT(dayofweek FROM visit_time) = 0")
        assert reader.spent == before


def test_finding_13_round_of_a_double_near_its_largest_value(neighbours, postgres):
    """ROUND(x, 30) of 1.7976931348623157e308 failed when the target's row had it: PostgreSQL
    rounded it as a 15-digit NUMERIC, whose cast back overflowed. ROUND is now DuckDB's
    (round(x * 10^n) / 10^n, half away from zero, x where that is not finite), in DOUBLE
    arithmetic guarded where it could overflow: answered alike with and without the target,
    and with DuckDB's value for every n, row by row."""
    for n in (30, 1, 0, -1, -30):
        sql = f"SELECT COUNT(*) AS n FROM d.t WHERE ROUND(CASE WHEN pid = 7 THEN g END, {n}) > 0"
        assert check(neighbours, sql, None)[0] == ("answered",)
    con = neighbours["with"].engine.con
    expressions = [f"ROUND(f, {n})" for n in range(-30, 31)] + ["ROUND(f)"]
    assert _differ(con, expressions, "f", DOUBLES) == []


PARTS = ("year", "quarter", "month", "week", "day", "dayofweek", "dow", "dayofyear", "doy",
         "hour", "minute", "second", "isodow", "isoyear")
TIMES = ["2020-02-29 12:34:56.5", "2021-01-03 00:00:00", "1999-12-31 23:59:59.999999",
         "0001-01-01 00:00:00", "9999-12-31 23:59:59", "2024-12-30 01:02:03", None]
DOUBLES = [0.285, -0.285, 2.5, -2.5, 0.49999999999999994, 1.7976931348623157e308,
           -1.7976931348623157e308, 1e300, 1.5e300, 5e-324, -1e-320, 1e-300, 123.456, 0.0,
           -0.0, 4503599627370497.0, float("inf"), float("-inf"), float("nan"), None]


def _differ(con, expressions: list, column: str, values: list) -> list:
    """Expressions over ``column`` (timestamps or doubles ``values``) whose values on
    PostgreSQL differ from DuckDB's, row by row."""
    kind = {"t": ("datetime", "timestamp", "TIMESTAMP"), "f": ("float", "double precision",
                                                                "DOUBLE")}[column]
    duck = duckdb.connect()
    duck.execute(f"CREATE TABLE v (r BIGINT, {column} {kind[2]})")
    duck.executemany("INSERT INTO v VALUES (?, ?)", list(enumerate(values)))
    with con.cursor() as cur:
        cur.execute(f"CREATE TEMP TABLE v (r bigint, {column} {kind[1]})")
        cur.executemany("INSERT INTO v VALUES (%s, %s)", list(enumerate(values)))
    out = []
    for expression in expressions:
        typed, _ = typecheck(sqlglot.parse_one(expression, read="duckdb"), {column: kind[0]})
        select = exp.select(exp.column("r"), exp.alias_(typed, "x", quoted=True)).from_("v").order_by("r")
        expected = [row[1] for row in duck.execute(DuckDB().render(select)).fetchall()]
        with con.cursor() as cur:
            cur.execute(postgres_dialect.Postgres().render(select))
            got = [row[1] for row in cur.fetchall()]
        rows = [(values[k], x, y) for k, (x, y) in enumerate(zip(expected, got))
                if not (x == y or x != x and y != y)]
        if rows:
            out.append((expression, rows))
    con.rollback()
    return out


def test_the_plans_own_arithmetic_is_total_on_values_within_the_bounds(neighbours):
    """Found by the audit of issue 33: the plan's arithmetic, on values within the metadata's
    bounds, raised on PostgreSQL for one row: VARIANCE squares x - offset (1e-170 squared
    underflows), a quantile's cell is (x - lower) * scale (bounds of +-1e308 span more than
    a DOUBLE; 5e-324 times a scale of 1e-29 underflows). Each is answered alike with the
    target (whose rows hold those values) and without."""
    for sql in ("SELECT VARIANCE(f) AS v FROM d.t", "SELECT STDDEV(f) AS v FROM d.t",
                "SELECT MEDIAN(h) AS m FROM d.t", "SELECT MIN(g) AS m FROM d.t",
                "SELECT MAX(g) AS m FROM d.t", "SELECT QUANTILE_CONT(h, 0.9) AS q FROM d.t"):
        assert check(neighbours, sql, None)[0] == ("answered",), sql


@pytest.mark.parametrize("name", sorted(REVIEW_SUMS))
def test_review_33f_sums_are_answered_with_the_target_and_without(neighbours, name):
    """Review 33f, F1-F3: each query failed on PostgreSQL with the target (a fixed point's
    ABS(-2^63), a float8 sum or avg that overflowed, a per-person BIGINT sum past int64 cast
    back) and was answered without; DuckDB answers both. Now answered both ways."""
    assert check(neighbours, REVIEW_SUMS[name], None)[0] == ("answered",)



@pytest.mark.parametrize("name", sorted(REVIEW_SHIFTS))
def test_review_34b_per_person_sums_past_int64_are_answered_with_the_target_and_without(
        neighbours, name):
    """Review 34b, F1: a per-person SUM of an integer expression whose interval leaves int64
    was summed in float8 (its clamp's end a DOUBLE) and cast back to BIGINT after a check
    in float8, where 2^63 - 1 is 2^63: it raised with the target only. Now answered both
    ways."""
    assert check(neighbours, REVIEW_SHIFTS[name], None)[0] == ("answered",)

SUM_GROUPS = [[1.7e308, 1.7e308], [-1.7e308, -1.7e308], [1.7976931348623157e308],
              [-1.7976931348623157e308], [5e-324], [5e-324, -1e-323, 5e-324], [1e200, -1e200],
              [1.5, 2.25], [None], [1e-323, 1e-323, 1e-323], [0.1, 0.2, 0.3], [-0.0]]


def test_sums_and_averages_of_doubles_are_duckdbs_and_never_raise(neighbours):
    """The rules of a float8 SUM and AVG whose bounds do not prove they cannot overflow
    (``dpsql.engines.postgres.sums``): per group, DuckDB's value (an infinity where the sum
    leaves a DOUBLE, 0 for 1e200 - 1e200 where PostgreSQL's avg raised on its squares, the
    smallest DOUBLEs kept), never an error; the sum is exact where DuckDB's rounds each
    addition (0.1 + 0.2 + 0.3 is 0.6, not 0.6000000000000001)."""
    con = neighbours["with"].engine.con
    rows = [(g, x) for g, values in enumerate(SUM_GROUPS) for x in values]
    duck = duckdb.connect()
    duck.execute("CREATE TABLE v (g BIGINT, x DOUBLE)")
    duck.executemany("INSERT INTO v VALUES (?, ?)", rows)
    with con.cursor() as cur:
        cur.execute("CREATE TEMP TABLE v (g bigint, x double precision)")
        cur.executemany("INSERT INTO v VALUES (%s, %s)", rows)
    value = exp.column("x")
    value.type = exp.DataType.build("DOUBLE")
    select = exp.select(exp.column("g"), exp.Sum(this=value), exp.Avg(this=value.copy())).from_(
        "v").group_by("g").order_by("g")
    expected = duck.execute(DuckDB().render(select)).fetchall()
    with con.cursor() as cur:
        cur.execute(postgres_dialect.Postgres().render(select))
        got = cur.fetchall()
    con.rollback()
    assert [row[0] for row in got] == [row[0] for row in expected]
    assert [(g, a, b) for (g, *a), (_, *b) in zip(got, expected)
            if not all(x == y or x is y or math.isclose(x, y, rel_tol=1e-14) for x, y in zip(a, b))
            ] == []


# -- review 34b, F2: DATE_TRUNC in PostgreSQL's first Julian weeks ---------------------------

EARLY_META = {"": {"d": {"t": {"max_ids": 3, "pid": {"type": "int", "private_id": True},
                               "t": {"type": "datetime"}, "dd": {"type": "datetime"}}}}}
EARLY_ROWS = [f"({p}, '2020-0{1 + p % 9}-1{p} 0{p}:00:00', '2021-0{1 + p % 9}-0{p}')"
              for p in range(1, 7) for _ in range(2)]
EARLY_TARGET = ["(7, '4714-11-24 00:00:00 BC', '4714-11-24 BC')",
                "(7, '4714-12-31 23:59:59.999999 BC', '4714-12-31 BC')",
                "(7, '4713-01-01 00:00:00 BC', '4713-01-01 BC')"]
"""Six persons of ordinary timestamps, and the target's three rows at PostgreSQL's first
timestamp, the last instant of 4714 BC and the first of 4713 BC (legal timestamps, which
a datetime column without bounds may hold); ``dd`` is a stored DATE read as a datetime."""
EARLY_QUERIES = [
    "SELECT COUNT(*) AS n FROM d.t WHERE DATE_TRUNC('year', t) IS NULL",
    "SELECT COUNT(*) AS n FROM d.t WHERE DATE_TRUNC('month', t) > TIMESTAMP '2000-01-01'",
    "SELECT COUNT(*) AS n FROM d.t WHERE DATE_TRUNC('quarter', CAST(t AS DATE)) IS NULL",
    "SELECT DATE_TRUNC('year', t) AS k, COUNT(*) AS n FROM d.t GROUP BY k",
    "SELECT COUNT(*) AS n FROM (SELECT pid, MIN(t) AS v FROM d.t GROUP BY pid) AS p "
    "WHERE DATE_TRUNC('month', v) IS NULL",
    "SELECT COUNT(*) AS n FROM d.t WHERE DATE_TRUNC('year', dd) IS NULL",
    "SELECT COUNT(*) AS n FROM d.t WHERE DATE_TRUNC('month', CAST(dd AS DATE)) < TIMESTAMP '2000-01-01'",
    *[f"SELECT COUNT(*) AS n FROM d.t WHERE DATE_TRUNC('{unit}', t) < TIMESTAMP '2000-01-01'"
      for unit in ("week", "day", "hour", "minute", "second")],
    "SELECT COUNT(*) AS n FROM d.t WHERE EXTRACT(isoyear FROM t) < 0",
    "SELECT COUNT(*) AS n FROM d.t WHERE DAYOFWEEK(CAST(t AS DATE)) = 1",
    "SELECT COUNT(*) AS n FROM d.t WHERE DATE_DIFF('month', t, TIMESTAMP '2000-01-01') > 0",
    "SELECT COUNT(*) AS n FROM d.t WHERE CAST(t AS DATE) - INTERVAL 1 DAY IS NULL",
    "SELECT COUNT(*) AS n FROM d.t WHERE t - INTERVAL '1 month' IS NULL",
    "SELECT COUNT(*) AS n FROM d.t WHERE CAST(t AS VARCHAR) LIKE '%BC'"]


@pytest.fixture(scope="module")
def early(postgres):
    cons = {}
    for name, rows in (("with", EARLY_ROWS + EARLY_TARGET), ("without", EARLY_ROWS)):
        cons[name] = create_database(postgres, f"early_{name}")
        with cons[name].cursor() as cur:
            cur.execute("CREATE SCHEMA d; CREATE TABLE d.t (pid bigint, t timestamp, dd date)")
            cur.execute("INSERT INTO d.t VALUES " + ", ".join(rows))
        cons[name].commit()
    yield {name: dpsql.from_connection(con, EARLY_META, privacy=dpsql.Privacy(epsilon=1.0))
           for name, con in cons.items()}
    for con in cons.values():
        con.close()


@pytest.mark.parametrize("sql", EARLY_QUERIES)
def test_review_34b_date_functions_at_postgresqls_first_timestamps(early, sql):
    """Review 34b, F2: DATE_TRUNC('year' | 'quarter' | 'month', t) raised "timestamp out of
    range" for t in 4714-11-24 BC .. 4714-12-31 BC (the truncation falls before PostgreSQL's
    first timestamp), so the query failed with the target only; now NULL there. The other
    date functions over those values are answered too."""
    assert check(early, sql, None)[0] == ("answered",)
