"""The allow-list on PostgreSQL, entry by entry: every sample expression of
``tests/unit/test_allowed.py`` over values that make PostgreSQL raise (64-bit ends, 1e308,
NaN, infinities, infinite timestamps, text that is no number) is answered or refused
before it runs, never failed on the data; and what is refused matches the PostgreSQL
column of docs/sql.md (``dpsql.engines.postgres.dialect.SUPPORT``)."""
from __future__ import annotations

import re

import duckdb
import pytest

import dpsql
from dpsql.engines.postgres.dialect import SUPPORT
from dpsql.frontend.allowed import ENTRIES
from tests.engines.compare import docs_column
from tests.servers import reader_over_rows
from tests.unit.test_allowed import EXTREMES, METADATA, SAMPLES

pytestmark = pytest.mark.filterwarnings("ignore:dpsql. no budget set")

ROWS = """
  (-9223372036854775808, 1e308, '', TRUE, 'infinity'),
  (9223372036854775807, 'nan', 'abc%_\\', FALSE, '-infinity'),
  (0, 'inf', 'ÿ日本', NULL, '2020-02-29 12:34:56'),
  (-1, '-inf', NULL, TRUE, NULL),
  (NULL, '-0.0', '  padded  ', FALSE, '1970-01-01'),
  (1, NULL, '9223372036854775808', TRUE, '0001-01-01')"""


@pytest.fixture(scope="module")
def reader(postgres):
    reader, con = reader_over_rows(postgres, "x.t", "i bigint, f double precision, s text, "
                                   "b boolean, t timestamp", ROWS, METADATA,
                                   dpsql.Privacy(epsilon=1.0))
    yield reader
    con.close()


def _refused(reader, expression: str) -> bool:
    """Run ``expression`` in WHERE, as a key and as a COUNT argument; True if refused."""
    refused = False
    for sql in (f"SELECT COUNT(*) AS n FROM x.t WHERE ({expression}) IS NOT NULL",
                f"SELECT {expression} AS k, COUNT(*) AS n FROM x.t GROUP BY {expression}",
                f"SELECT COUNT({expression}) AS n FROM x.t"):
        try:
            reader.execute_df(sql)
        except dpsql.QueryError:
            refused = True
    return refused


@pytest.fixture(scope="module")
def duckdb_reader():
    con = duckdb.connect()
    con.execute("CREATE SCHEMA x")
    con.execute(EXTREMES)
    return dpsql.from_connection(con, METADATA, privacy=dpsql.Privacy(epsilon=1.0))


MORE_SAMPLES = {"//, %, MOD": ["f % 2", "f // 1e-306", "i % 0.5"],
                "ROUND(x [, n])": ["ROUND(f * 1e300, 30)", "ROUND(f, -1)"],
                "EXTRACT(part FROM t), DATE_PART('part', t)": [
                    "EXTRACT(dayofweek FROM t)", "DATE_PART('dayofyear', CAST(t AS DATE))",
                    "EXTRACT(hour FROM CAST(t AS DATE))"]}
"""Samples of issue 33's findings, beyond tests/unit/test_allowed.py's."""

# A sample refused on PostgreSQL for another entry's documented reason.
OTHER_ENTRY = re.compile(r"CAST\(s AS (DATE|TIMESTAMP)\)")


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e.sql)
def test_entry_never_fails_on_postgres_and_its_support_is_documented(reader, duckdb_reader,
                                                                      entry):
    only_postgres = [e for e in SAMPLES[entry.sql] + MORE_SAMPLES.get(entry.sql, [])
                     if _refused(reader, e) and not _refused(duckdb_reader, e)]
    support = SUPPORT[entry.sql]
    if support == "yes":
        assert [e for e in only_postgres if not OTHER_ENTRY.search(e)] == []
    else:
        assert only_postgres, f"{entry.sql}: documented as {support!r} but answered as on DuckDB"


def test_the_postgresql_column_of_docs_sql_md():
    column = docs_column("PostgreSQL")
    for entry in ENTRIES:
        assert column[entry.sql] == SUPPORT[entry.sql], entry.sql


# Row by row: DuckDB's value on PostgreSQL, for the entries whose PostgreSQL rules compute
# values (not only guards): dates moved by intervals, DATE_DIFF and exact literal arithmetic.
VALUE_ROWS = """
  (1, -9223372036854775808, 1e308, '', TRUE, CAST('9999-12-31 23:59:59.999999' AS TIMESTAMP)),
  (2, 9223372036854775807, CAST('nan' AS DOUBLE PRECISION), 'abc', FALSE, CAST('0001-01-01' AS TIMESTAMP)),
  (3, 0, CAST('inf' AS DOUBLE PRECISION), 'x', NULL, CAST('2020-02-29 12:34:56' AS TIMESTAMP)),
  (4, -1, CAST('-inf' AS DOUBLE PRECISION), NULL, TRUE, NULL),
  (5, NULL, -0.0, ' 3.5 ', FALSE, CAST('1970-01-01' AS TIMESTAMP)),
  (6, 1, NULL, '1e3', TRUE, CAST('1969-12-31 23:59:59.5' AS TIMESTAMP)),
  (7, 7, 2.5, 'inf', TRUE, CAST('2021-01-31' AS TIMESTAMP)),
  (8, -7, -2.5, '', FALSE, CAST('2024-12-30 01:02:03' AS TIMESTAMP)),
  (9, 3, 0.07, 'y', NULL, CAST('infinity' AS TIMESTAMP)),
  (10, 4, 0.06999999999999999, 'z', TRUE, CAST('-infinity' AS TIMESTAMP))"""
ROW_BY_ROW = ("literal", "t + INTERVAL 'n' unit, t - INTERVAL 'n' unit, DATE_ADD(t, INTERVAL ...), "
              "DATE_SUB(t, INTERVAL ...), DATE_ADD(t, n), DATE_SUB(t, n)",
              "DATE_DIFF('part', a, b), DATEDIFF, DATE_DIFF(a, b, PART)")
EXTRA = ["f = 0.06 + 0.01", "f BETWEEN 0.06 - 0.01 AND 0.06 + 0.01", "f * (1 - 0.05)",
         "i + 0.5 * 3", "CAST(t AS DATE) - INTERVAL 1 DAY",
         "t + INTERVAL '1 month 1 day' < TIMESTAMP '2021-03-02'"]


@pytest.fixture(scope="module")
def value_engines(postgres):
    columns = "r bigint, i bigint, f double precision, s text, b boolean, t timestamp"
    con = postgres.connect()
    with con.cursor() as cur:
        cur.execute(f"DROP TABLE IF EXISTS v; CREATE TABLE v ({columns}); "
                    f"INSERT INTO v VALUES {VALUE_ROWS}")
    con.commit()
    duck = duckdb.connect()
    duck.execute(f"CREATE TABLE v ({columns.replace('double precision', 'DOUBLE')})")
    duck.execute(f"INSERT INTO v VALUES {VALUE_ROWS.replace('DOUBLE PRECISION', 'DOUBLE')}")
    yield duck, con
    con.close()


def _same(a, b) -> bool:
    """Equal values; a number PostgreSQL returns as NUMERIC (a literal it reads so) is
    compared as the DOUBLE it stands for."""
    if isinstance(a, float) and b is not None and not isinstance(b, (bool, str)):
        b = float(b)
        return (a != a and b != b) or a == b
    return a == b


def test_dates_intervals_and_decimals_have_duckdbs_values_on_postgres(value_engines):
    import sqlglot
    from sqlglot import exp
    from dpsql.engines.duckdb.dialect import DuckDB
    from dpsql.engines.postgres.dialect import Postgres
    from dpsql.frontend.typecheck import check
    duck, con = value_engines
    columns = {"r": "int", "i": "int", "f": "float", "s": "string", "b": "boolean", "t": "datetime"}
    differ = []
    for expression in [e for entry in ROW_BY_ROW for e in SAMPLES[entry]] + EXTRA:
        try:
            typed, _ = check(sqlglot.parse_one(expression, read="duckdb"), dict(columns))
        except dpsql.QueryError:
            continue                               # refused by the typecheck on every engine
        select = exp.select(exp.column("r"), exp.alias_(typed, "x", quoted=True)).from_("v").order_by("r")
        expected = [row[1] for row in duck.execute(DuckDB().render(select)).fetchall()]
        with con.cursor() as cur:
            cur.execute(Postgres().render(select))
            got = [row[1] for row in cur.fetchall()]
        rows = [(k + 1, x, y) for k, (x, y) in enumerate(zip(expected, got)) if not _same(x, y)]
        if rows:
            differ.append((expression, rows))
    assert differ == [], differ
