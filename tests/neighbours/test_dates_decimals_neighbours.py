"""Dates moved by intervals, DATE_DIFF and folded decimal constants, at the values where
DuckDB itself raises, for one person only (the richest row of PUMS).

Without the plan's guard, ``t + INTERVAL`` raises in DuckDB past year 294246 (and in
PostgreSQL past 294276), so a query could fail on the data set with the person and answer
on the one without; dpsql adds an interval only to dates whose result lies in years 1 to
9999 (docs/sql.md, "Dates and intervals"), which the plan computes from the interval alone.
The release must be as indistinguishable as its charge allows (tests/neighbours/harness.py).
"""
from __future__ import annotations

import pytest

from tests.neighbours.harness import PERSON, attack
from tests.neighbours.test_attacks_neighbours import RUNS, _FAR_DATE, _TS, _neighbours, count_bucket

pytestmark = pytest.mark.filterwarnings("ignore:dpsql. no budget set")

_FAR_TIMESTAMP = f"CAST(CONCAT(CASE WHEN {PERSON} THEN '294247' ELSE '2000' END, '-01-01') AS TIMESTAMP)"
"""The person's timestamp is in year 294247, the last year DuckDB holds; the others' in 2000."""


@pytest.mark.parametrize("sql", [
    f"SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE ({_FAR_TIMESTAMP} + INTERVAL '1' YEAR) IS NULL",
    f"SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE ({_FAR_DATE} + INTERVAL '1' YEAR) IS NULL",
    f"SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE DATE_ADD({_FAR_DATE}, INTERVAL '1000 years -3 days') > {_TS}",
    f"SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE ({_FAR_TIMESTAMP} - INTERVAL '-9223372036854775807' "
    "MICROSECOND) IS NULL",
    f"SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE DATE_DIFF('second', {_FAR_DATE}, {_TS}) IS NULL",
    f"SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE DATE_DIFF('month', {_FAR_TIMESTAMP}, {_TS}) < 0",
    f"SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE EXTRACT(year FROM {_FAR_TIMESTAMP} + INTERVAL 1 DAY) > 0",
    f"SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE (CASE WHEN {PERSON} THEN income / (0.5 - 0.5) "
    "ELSE 0.1 + 0.2 END) IS NULL",
], ids=["timestamp_plus_year", "date_plus_year", "date_add_mixed", "timestamp_minus_micros",
        "date_diff", "date_diff_month", "extract", "folded_zero_divisor"])
def test_intervals_and_decimals_at_the_ends_for_one_person(pums, sql):
    attack(_neighbours(pums), sql, count_bucket, runs=RUNS)
