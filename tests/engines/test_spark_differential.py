"""Issue 33 on Spark: random hostile queries on neighbouring tables
(``tests/engines/differential.py`` says how), and ROUND as DuckDB rounds.

``DPSQL_SPARK_DIFFERENTIAL`` (default 25: each query is four Spark jobs, two dry runs and two
runs, about 2 s on two cores) sets the number of random queries; a query of the first shape
counts 8 hazards.
"""
from __future__ import annotations

import os

import pytest

import dpsql
from tests.engines.differential import META, REVIEW_SUMS, ROWS, check, differential_test

EXAMPLES = int(os.environ.get("DPSQL_SPARK_DIFFERENTIAL", "25"))
pytestmark = pytest.mark.filterwarnings("ignore:dpsql. no budget set")
SCHEMA = ("pid bigint, i bigint, f double, g double, h double, s string, t timestamp_ntz, "
          "b boolean, big bigint")


@pytest.fixture(scope="module")
def neighbours(spark):
    return {name: dpsql.from_connection(
        spark, META, tables={"d.t": spark.createDataFrame(rows, SCHEMA).cache()},
        privacy=dpsql.Privacy(epsilon=1.0)) for name, rows in ROWS.items()}


test_hostile_queries_have_one_outcome_on_neighbouring_tables_on_spark = \
    differential_test(EXAMPLES, width=8)


def test_no_rule_relies_on_ansi_mode_being_off(spark):
    """dpsql's Spark session runs with ANSI mode off, where Spark's operators give NULL
    instead of raising; the rules must not rely on it (a conf another session could set).
    With ANSI mode on, every allow-list sample and every hazard of the differential test,
    compiled by the rules, runs over values at every edge without an error. (Before: a
    zero divisor of //, SIGN of NaN and text that is no integer raised.)"""
    from tests.engines.test_spark_allowed import ROWS as EDGES, SCHEMA as EDGE_SCHEMA, _select
    from tests.unit.test_allowed import SAMPLES
    from dpsql.engines.spark.dialect import Spark
    from dpsql.engines.spark.engine import SETTINGS
    from tests.engines.differential import TEMPLATES
    own = spark.newSession()
    for key, value in {**SETTINGS, "spark.sql.ansi.enabled": "true"}.items():
        own.conf.set(key, value)
    own.createDataFrame(EDGES, EDGE_SCHEMA).createOrReplaceTempView("t")
    fields = [dict(n="f", i="i", s="s", t="t", part="dayofweek", diff="second", tiny="0",
                   digits="30", pos="2147483648"),
              dict(n="i", i="i", s="s", t="t", part="isoyear", diff="week", tiny="1e-306",
                   digits="5", pos="1")]
    expressions = [e for samples in SAMPLES.values() for e in samples] + [
        template.format(**f) for templates in TEMPLATES.values() for template in templates
        for f in fields]
    raised = []
    for expression in expressions:
        try:
            sql = Spark().render(_select(expression))
        except dpsql.QueryError:
            continue                      # refused before anything runs
        try:
            own.sql(sql).collect()
        except Exception as err:  # noqa: BLE001 - any error of Spark's is the finding
            raised.append((expression, str(err).splitlines()[0][:120]))
    assert raised == []


def test_review_33f_sums_are_answered_with_the_target_and_without(neighbours):
    """Review 33f's sums and averages (F1-F3, failures on PostgreSQL): answered on Spark too,
    with the target and without."""
    failed = [(name, check(neighbours, sql, None)[0]) for name, sql in REVIEW_SUMS.items()]
    assert [(name, result) for name, result in failed if result != ("answered",)] == []


# -- review 34b, F3: timestamps at the start of Spark's range --------------------------------

EARLY_META = {"": {"d": {"t": {"max_ids": 3, "pid": {"type": "int", "private_id": True},
                               "x": {"type": "int", "lower": 0, "upper": 2},
                               "t": {"type": "datetime"}, "lt": {"type": "datetime"},
                               "dd": {"type": "datetime"}}}}}
_LONG_MIN = "timestamp_micros(-9223372036854775808)"
_EARLY = {   # the target's three rows (x = 0, 1, 2): t, lt (a TIMESTAMP), dd (a DATE)
    "t": (f"CAST({_LONG_MIN} AS TIMESTAMP_NTZ)",
          f"CAST({_LONG_MIN} + INTERVAL 25 HOURS AS TIMESTAMP_NTZ)",
          "CAST(timestamp_micros(9223372036854775807) AS TIMESTAMP_NTZ)"),
    "lt": (_LONG_MIN, f"{_LONG_MIN} + INTERVAL 25 HOURS", "timestamp_micros(9223372036854775807)"),
    "dd": ("CAST('-5000000-01-01' AS DATE)", "CAST('5000000-01-01' AS DATE)",
           "date_add(CAST('-290308-12-21' AS DATE), 0)")}
EARLY_QUERIES = [
    *[f"SELECT COUNT(*) AS n FROM d.t WHERE DATE_TRUNC('{unit}', {col}) IS NULL"
      for col in ("t", "lt") for unit in ("year", "quarter", "month", "week", "day", "hour")],
    "SELECT COUNT(*) AS n FROM d.t WHERE DATE_TRUNC('second', dd) IS NULL",
    "SELECT DATE_TRUNC('year', t) AS k, COUNT(*) AS n FROM d.t GROUP BY k",
    "SELECT COUNT(*) AS n FROM (SELECT pid, MIN(t) AS v FROM d.t GROUP BY pid) AS p "
    "WHERE DATE_TRUNC('month', v) IS NULL",
    "SELECT COUNT(*) AS n FROM d.t WHERE CAST(CAST(t AS DATE) AS TIMESTAMP) IS NULL",
    "SELECT COUNT(*) AS n FROM d.t WHERE CAST(CAST(lt AS DATE) AS TIMESTAMP) IS NULL",
    "SELECT COUNT(*) AS n FROM d.t WHERE dd IS NULL",
    "SELECT COUNT(*) AS n FROM d.t WHERE DATE_ADD(CAST(t AS DATE), 1) IS NULL "
    "OR DATE_SUB(CAST(t AS DATE), 1) IS NULL",
    "SELECT COUNT(*) AS n FROM d.t WHERE DATE_DIFF('day', t, TIMESTAMP '2000-01-01') > 0 "
    "OR DATE_DIFF('month', dd, lt) > 0",
    "SELECT COUNT(*) AS n FROM d.t WHERE EXTRACT(isoyear FROM t) < 0 OR YEAR(dd) < 0 "
    "OR DAYOFWEEK(lt) = 1",
    "SELECT COUNT(*) AS n FROM d.t WHERE CAST(t AS VARCHAR) LIKE '-%' "
    "OR CAST(CAST(dd AS DATE) AS VARCHAR) LIKE '+%'",
    "SELECT COUNT(*) AS n FROM d.t WHERE t - INTERVAL 1 DAY IS NULL OR dd + INTERVAL 1 DAY IS NULL"]


@pytest.fixture(scope="module")
def early(spark):
    import datetime as dt
    from pyspark.sql import functions as F
    others = [(p, k, dt.datetime(2020, p, p, p), dt.datetime(2021, p, p), dt.date(2022, p, p))
              for p in range(1, 7) for k in range(2)]
    target = [(7, k, dt.datetime(2020, 1, 1), dt.datetime(2020, 1, 1), dt.date(2020, 1, 1))
              for k in range(3)]
    out = {}
    for name, rows in (("with", others + target), ("without", others)):
        frame = spark.createDataFrame(rows, "pid bigint, x bigint, t timestamp_ntz, "
                                      "lt timestamp, dd date")
        for col, values in _EARLY.items():
            frame = frame.withColumn(col, F.expr(f"CASE WHEN pid = 7 THEN CASE x WHEN 0 THEN "
                                                 f"{values[0]} WHEN 1 THEN {values[1]} ELSE "
                                                 f"{values[2]} END ELSE {col} END"))
        out[name] = dpsql.from_connection(spark, EARLY_META, tables={"d.t": frame.cache()},
                                          privacy=dpsql.Privacy(epsilon=1.0))
    return out


def test_review_34b_date_functions_at_the_start_of_sparks_range(early):
    """Review 34b, F3: DATE_TRUNC (every unit) and CAST(CAST(t AS DATE) AS TIMESTAMP) threw
    "long overflow" (ANSI mode off too) on a TIMESTAMP_NTZ at Long.MIN microseconds (and
    month, quarter, year 25 hours after it), and a DATE column's cast to TIMESTAMP on a
    date beyond +-290,000 years: the query failed with the target only. Such a stored value
    now reads as NULL; every date function over the range's ends is answered both ways."""
    outcomes = [(sql, check(early, sql, None)[0]) for sql in EARLY_QUERIES]
    assert [(sql, result) for sql, result in outcomes if result != ("answered",)] == []
