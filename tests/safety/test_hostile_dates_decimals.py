"""A hostile analyst at the ends of dates, intervals and decimals (docs/sql.md, "Dates and
intervals" and "Exact decimals").

Huge intervals, dates at the ends of DuckDB's range and past the years 1 to 9999, infinite
timestamps, decimals of 40 and of 300 digits, values near 1e308: every query is answered
(out-of-range results are NULL) or refused while planning, for free; and the outcome is the
same on the table with the extreme rows, on the table without them, and on an empty table,
so no error can depend on the data.
"""
from __future__ import annotations

import warnings

import duckdb
import pytest

import dpsql

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

METADATA = {"": {"x": {"t": {"row_privacy": True, "censor_dims": False,
                             "i": {"type": "int", "lower": -9223372036854775807, "upper": 9223372036854775807},
                             "f": {"type": "float", "lower": -1e300, "upper": 1e300},
                             "t": {"type": "datetime"}}}}}
ORDINARY = """(1, 0.07, TIMESTAMP '2020-02-29 12:34:56'), (2, 0.06999999999999999, TIMESTAMP '1970-01-01'),
  (NULL, NULL, NULL), (-1, 2.5, TIMESTAMP '1999-12-31 23:59:59.999999')"""
EXTREME = """(-9223372036854775808, 1.7976931348623157e308, make_timestamp(9223372036854775806::BIGINT)),
  (9223372036854775807, -1.7976931348623157e308, make_timestamp(-9223372022400000000::BIGINT)),
  (0, 'nan'::DOUBLE, 'infinity'::TIMESTAMP), (7, 'inf'::DOUBLE, '-infinity'::TIMESTAMP),
  (8, 5e-324, TIMESTAMP '0001-01-01'), (9, '-inf'::DOUBLE, TIMESTAMP '9999-12-31 23:59:59.999999'),
  (10, -0.0, TIMESTAMP '0001-01-01' - INTERVAL 1 MICROSECOND),
  (11, 1e300, TIMESTAMP '10000-01-01')"""
TABLES = {"extreme": f"{ORDINARY}, {EXTREME}", "ordinary": ORDINARY, "empty": None}

EXPRESSIONS = [
    # intervals: huge, at the ends, with months and days of opposite signs
    "t + INTERVAL '9223372036854775807' MICROSECOND", "t - INTERVAL '2147483648' DAY",
    "t + INTERVAL '99999999999999999999999999999999999999999999' YEAR",
    "t - INTERVAL '-300000' YEAR", "INTERVAL '1000000 months -30000000 days' + t",
    "t + INTERVAL 1 DAY", "t - INTERVAL 1 MICROSECOND", "DATE_ADD(t, INTERVAL '-9999' YEAR)",
    "DATE_ADD(CAST(t AS DATE), INTERVAL '5877641' YEAR)", "CAST(t AS DATE) - INTERVAL '1 month 1 day'",
    "DATE '9999-12-31' + INTERVAL 1 DAY", "TIMESTAMP '0001-01-01 00:00:00' - INTERVAL 1 MICROSECOND",
    "DATE_TRUNC('month', t + INTERVAL 1 MONTH) - INTERVAL 1 DAY",
    "EXTRACT(year FROM t - INTERVAL '1' YEAR)", "t + INTERVAL '1.5' DAY", "t + INTERVAL (i) DAY",
    "t + INTERVAL '" + "9" * 5000 + "' DAY",
    # DATE_DIFF at the ends
    "DATE_DIFF('second', t, TIMESTAMP '9999-12-31 23:59:59')", "DATE_DIFF('year', t + INTERVAL 1 MONTH, t)",
    "DATE_DIFF('day', CAST(t AS DATE), TIMESTAMP '0001-01-01')", "DATE_DIFF('minute', TIMESTAMP '0001-01-01', t)",
    "DATEDIFF('week', t, t - INTERVAL '9998' YEAR)", "DATE_DIFF('quarter', DATE '0001-01-01', DATE '9999-12-31')",
    # decimals: 40 digits, 300 digits, 1e308-ish, division by zero, int64 ends
    "f BETWEEN 0.1234567890123456789012345678901234567890 - 1 AND 1.7976931348623157e308 * 1",
    "f * (1e308 * 10)", "f + 0.0000000000000000000000000000000000001",
    "i + 99999999999999999999999999999999999999.9 * 99999999999999999999999999999999999999.9",
    "f = 1e308 + 1e308", "f < 1.7976931348623157e308 * 10 / 10", "i / (0.5 - 0.5)",
    "1 / (0.1 - 0.1) + i", "i * 0.1 + 9223372036854775807", "(9223372036854775807 + 1) - 0.5 + i",
    "f = " + "9" * 308 + ".5", "f > 0." + "0" * 400 + "1", "i > 1" + "0" * 400,
    "-0.0 * 1e308 + f", "ROUND(f, 30) = 0.1 + 0.2", "f = -(-(-9223372036854775808 * 1.5))",
    "i = " + "1" * 5000, "0.1 + 0.2 = 0.3 OR f = 0.3 / 0.1",
]


@pytest.fixture(scope="module")
def readers():
    out = {}
    for name, rows in TABLES.items():
        con = duckdb.connect()
        con.execute("CREATE SCHEMA x; CREATE TABLE x.t (i BIGINT, f DOUBLE, t TIMESTAMP)")
        if rows is not None:
            con.execute(f"INSERT INTO x.t VALUES {rows}")
        warnings.simplefilter("ignore")
        out[name] = dpsql.from_connection(con, METADATA, privacy=dpsql.Privacy(epsilon=1e5))
    return out


def _outcome(reader, sql: str) -> tuple:
    """('ok',) or ('refused', message); any other exception escapes and fails the test."""
    before = reader.spent
    try:
        reader.execute_df(sql)
    except dpsql.QueryError as err:
        assert reader.spent == before, sql          # a refusal is free
        return "refused", str(err)
    return ("ok",)


@pytest.mark.parametrize("expression", EXPRESSIONS, ids=lambda e: e[:60])
def test_extremes_are_null_or_a_free_refusal_that_does_not_depend_on_the_data(readers, expression):
    for sql in (f"SELECT COUNT(*) AS n FROM x.t WHERE ({expression}) IS NOT NULL",
                f"SELECT COUNT({expression}) AS n FROM x.t",
                f"SELECT {expression} AS k, COUNT(*) AS n FROM x.t GROUP BY 1"):
        outcomes = {name: _outcome(reader, sql) for name, reader in readers.items()}
        assert len(set(outcomes.values())) == 1, (sql, outcomes)


@pytest.mark.parametrize("expression, rows", [
    # five timestamps lie in the years 1 to 9999: the three ordinary ones, 0001-01-01 and
    # 9999-12-31 23:59:59.999999; the others (BC, past 9999, infinite) and results moved
    # out of those years are NULL
    ("t + INTERVAL 0 DAY", 5), ("t + INTERVAL 1 MICROSECOND", 4), ("t - INTERVAL 1 MICROSECOND", 4),
    ("t + INTERVAL '9998' YEAR", 1), ("t - INTERVAL '9999' YEAR", 0),
    ("t + INTERVAL '9223372036854775807' MICROSECOND", 0), ("DATE '9999-12-31' + INTERVAL 1 DAY", 0),
    ("DATE_DIFF('day', t, TIMESTAMP '2000-01-01')", 9),      # all but NULL and the infinities
])
def test_results_outside_the_years_1_to_9999_are_null(readers, expression, rows):
    counted = readers["extreme"].execute_df(f"SELECT COUNT({expression}) AS n FROM x.t").n[0]
    assert abs(counted - rows) < 0.5, (expression, counted)
