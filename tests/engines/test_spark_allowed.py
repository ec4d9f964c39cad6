"""The allow-list on Spark, entry by entry: every sample expression of
``tests/unit/test_allowed.py`` has, row by row, DuckDB's value on Spark, over values that
reach each entry's edge cases (64-bit ends, 1e308, NaN, infinities, -0.0, odd text, the
first and last timestamps), or is refused before it runs; and what is refused matches the
Spark column of docs/sql.md (``dpsql.engines.spark.dialect.SUPPORT``).

The expressions are typed and guarded by dpsql's typecheck and compiled by each engine's
dialect; the comparison runs them row by row, outside any private query, because it tests
the compilation (the private path is tested by test_spark.py and the neighbour tests).
"""
from __future__ import annotations

import datetime
import math

import duckdb
import pytest
import sqlglot
from sqlglot import exp

import dpsql
from dpsql.engines.duckdb.dialect import DuckDB
from dpsql.engines.spark.dialect import SUPPORT, Spark
from dpsql.engines.spark.engine import SETTINGS
from dpsql.frontend.allowed import ENTRIES
from dpsql.frontend.typecheck import check
from tests.engines.compare import docs_column
from tests.unit.test_allowed import SAMPLES

COLUMNS = {"r": "int", "i": "int", "f": "float", "s": "string", "b": "boolean", "t": "datetime"}
ROWS = [
    (1, -9223372036854775808, 1e308, "", True, datetime.datetime(9999, 12, 31, 23, 59, 59, 999999)),
    (2, 9223372036854775807, math.nan, "abc%_\\", False, datetime.datetime(1, 1, 1)),
    (3, 0, math.inf, "ÿ日本", None, datetime.datetime(2020, 2, 29, 12, 34, 56)),
    (4, -1, -math.inf, None, True, None),
    (5, None, -0.0, "  padded  ", False, datetime.datetime(1970, 1, 1)),
    (6, 1, None, "9223372036854775808", True, datetime.datetime(1969, 12, 31, 23, 59, 59, 500000)),
    (7, 7, 2.5, " 3.5 ", True, datetime.datetime(2021, 1, 3)),
    (8, -7, -2.5, "1e3", False, datetime.datetime(2024, 12, 30, 1, 2, 3)),
    (9, 3, 1e-310, "inf", None, datetime.datetime(2023, 1, 1)),
]
SCHEMA = "r bigint, i bigint, f double, s string, b boolean, t timestamp_ntz"


@pytest.fixture(scope="module")
def engines(spark):
    con = duckdb.connect()
    con.execute("CREATE TABLE t (r BIGINT, i BIGINT, f DOUBLE, s VARCHAR, b BOOLEAN, t TIMESTAMP)")
    con.executemany("INSERT INTO t VALUES (?, ?, ?, ?, ?, ?)", ROWS)
    own = spark.newSession()
    for key, value in SETTINGS.items():
        own.conf.set(key, value)
    own.createDataFrame(ROWS, SCHEMA).createOrReplaceTempView("t")
    return con, own


def _select(expression: str) -> exp.Select:
    typed, _ = check(sqlglot.parse_one(expression, read="duckdb"), dict(COLUMNS))
    return exp.select(exp.column("r"), exp.alias_(typed, "v", quoted=True)).from_("t")


def _values(expression: str, engines) -> tuple:
    """(DuckDB's values, Spark's values or the refusal's message), rows in order."""
    con, own = engines
    select = _select(expression)
    duck = [row[1] for row in sorted(con.execute(DuckDB().render(select)).fetchall())]
    try:
        sql = Spark().render(select)
    except dpsql.QueryError as err:
        return duck, str(err)
    return duck, [row[1] for row in sorted(own.sql(sql).collect(), key=lambda row: row[0])]


def _same(a, b) -> bool:
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, float) or isinstance(b, float):
        a, b = float(a), float(b)
        return (math.isnan(a) and math.isnan(b)) or a == b or abs(a - b) <= 1e-12 * abs(a)
    if isinstance(a, datetime.date) and isinstance(b, datetime.date):
        return str(a) == str(b)
    return a == b


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e.sql)
def test_entry_has_duckdbs_values_on_spark_or_is_refused_as_documented(engines, entry):
    refused, differ = [], []
    for expression in SAMPLES[entry.sql]:
        try:
            duck, spark = _values(expression, engines)
        except dpsql.QueryError:
            continue                          # refused by the typecheck on every engine
        if isinstance(spark, str):
            assert "Spark" in spark, spark
            refused.append(expression)
            continue
        rows = [(ROWS[k][0], x, y) for k, (x, y) in enumerate(zip(duck, spark)) if not _same(x, y)]
        if rows:
            differ.append((expression, rows))
    assert differ == []
    if SUPPORT[entry.sql] == "yes":
        assert refused == [] or all("CAST(s AS D" in e or "CAST(s AS T" in e for e in refused), refused
    else:
        assert refused, f"{entry.sql}: documented as {SUPPORT[entry.sql]!r} but all answered"


def test_the_spark_column_of_docs_sql_md():
    column = docs_column("Spark")
    for entry in ENTRIES:
        assert column[entry.sql] == SUPPORT[entry.sql], entry.sql
