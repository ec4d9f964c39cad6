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
