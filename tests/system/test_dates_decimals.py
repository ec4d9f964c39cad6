"""Dates moved by intervals, DATE_DIFF and exact decimal literals, against plain DuckDB.

Each query runs through dpsql at epsilon = 1e5 (the noise is far below the answers'
units) and, as written, on plain DuckDB over the same CSV files (the ``plain`` fixture);
the answers must agree. Where dpsql's semantics differ from plain DuckDB's on purpose
(docs/sql.md, "Exact decimals"), the test pins the documented answer.
"""
from __future__ import annotations

import math

import pytest

import dpsql

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

PRIVACY = dpsql.Privacy(epsilon=1e5, delta=1e-6)
ITEMS = "FROM retail.lineitems l JOIN retail.orders o ON o.order_id = l.order_id"
SHOP_ITEMS = "FROM shop.order_items i JOIN shop.orders o ON i.order_id = o.order_id"

DATE_COUNTS = [
    "SELECT COUNT(*) AS n FROM retail.orders WHERE order_date <= DATE '1998-12-01' - INTERVAL '90' DAY",
    "SELECT COUNT(*) AS n FROM retail.orders WHERE order_date < DATE '1994-01-01' + INTERVAL '1' YEAR",
    "SELECT COUNT(*) AS n FROM retail.orders WHERE order_date >= DATE '1994-01-01' "
    "AND order_date < DATE '1994-01-01' + INTERVAL '3 months'",
    "SELECT COUNT(*) AS n FROM retail.orders WHERE order_date + INTERVAL '1 month 15 days' > DATE '1998-06-01'",
    "SELECT COUNT(*) AS n FROM retail.orders WHERE DATE_ADD(order_date, INTERVAL 2 WEEK) < "
    "TIMESTAMP '1993-01-01 12:00:00'",
    "SELECT COUNT(*) AS n FROM retail.orders WHERE INTERVAL 1 YEAR + order_date < DATE '1994-01-01'",
    "SELECT COUNT(*) AS n FROM retail.orders WHERE order_date - INTERVAL 36 HOUR >= DATE '1995-03-01'",
    "SELECT COUNT(*) AS n FROM retail.orders WHERE order_date + INTERVAL 1 MONTH - INTERVAL 1 DAY "
    "< DATE '1993-02-28'",
    f"SELECT COUNT(*) AS n {ITEMS} WHERE o.order_date + INTERVAL 30 DAY < l.ship_date",
    f"SELECT COUNT(*) AS n {ITEMS} WHERE l.ship_date BETWEEN o.order_date + INTERVAL 1 WEEK "
    "AND o.order_date + INTERVAL '2' MONTH",
    f"SELECT COUNT(*) AS n {ITEMS} WHERE DATE_DIFF('day', o.order_date, l.ship_date) > 30",
    f"SELECT COUNT(*) AS n {ITEMS} WHERE DATEDIFF('month', o.order_date, l.ship_date) >= 2",
    f"SELECT COUNT(*) AS n {ITEMS} WHERE DATE_DIFF('week', o.order_date, l.ship_date) = 4",
    f"SELECT COUNT(*) AS n {ITEMS} WHERE date_diff('year', o.order_date, l.ship_date) = 1",
    f"SELECT COUNT(*) AS n {ITEMS} WHERE DATE_DIFF('quarter', o.order_date, l.ship_date) = 0",
    f"SELECT COUNT(*) AS n {ITEMS} WHERE DATE_DIFF('hour', o.order_date, l.ship_date) < 24 * 20",
]
DECIMAL_COUNTS = [
    f"SELECT COUNT(*) AS n {ITEMS} WHERE l.discount BETWEEN 0.06 - 0.01 AND 0.06 + 0.01",
    f"SELECT COUNT(*) AS n {ITEMS} WHERE l.discount = 0.06 + 0.01",
    f"SELECT COUNT(*) AS n {ITEMS} WHERE l.discount IN (0.01 + 0.02, 0.1 - 0.05, 0.3 * 0.1)",
    f"SELECT COUNT(*) AS n {ITEMS} WHERE l.discount <= 0.1 * 0.7",
    f"SELECT COUNT(*) AS n {ITEMS} WHERE l.discount >= -(0.01 - 0.08)",
    f"SELECT COUNT(*) AS n {ITEMS} WHERE l.discount BETWEEN 0.06 - 0.01 AND 0.06 + 0.01 "
    "AND l.quantity < 24",
    f"SELECT COUNT(*) AS n {ITEMS} WHERE l.price * (1 - l.discount) > 1000.50 + 0.25",
    f"SELECT COUNT(*) AS n {ITEMS} WHERE l.discount + 0.01 = 0.08",
    f"SELECT COUNT(*) AS n {SHOP_ITEMS} WHERE i.amount = 41.50 + 0.02",
    f"SELECT COUNT(*) AS n {SHOP_ITEMS} WHERE i.amount BETWEEN 10.005 * 2 AND 100.1 - 0.1",
    "SELECT COUNT(*) AS n FROM shop.orders WHERE 0.1 + 0.2 = 0.3",
    "SELECT COUNT(*) AS n FROM shop.orders WHERE 0.1 + 0.2 > 0.3",
]
AGGREGATES = [   # (sql, tolerance: about ten times the noise's scale at epsilon 1e5)
    # TPC-H Q6, both forms together: a row adds at most 10000 * 0.1, a person 210 rows
    (f"SELECT SUM(l.price * l.discount) AS revenue {ITEMS} WHERE o.order_date >= DATE '1994-01-01' "
     "AND o.order_date < DATE '1994-01-01' + INTERVAL '1' YEAR "
     "AND l.discount BETWEEN 0.06 - 0.01 AND 0.06 + 0.01 AND l.quantity < 24", 100.0),
    (f"SELECT AVG(LEAST(GREATEST(DATE_DIFF('day', o.order_date, l.ship_date), 0), 200)) AS d {ITEMS}",
     0.5),
    (f"SELECT SUM(l.quantity) AS q, COUNT(*) FILTER (WHERE l.ship_date > o.order_date + "
     f"INTERVAL 60 DAY) AS late {ITEMS}", 5.0),
    (f"SELECT SUM(i.amount * (1 - 0.15)) AS net {SHOP_ITEMS}", 5.0),
]
GROUPED = [
    "SELECT DATE_DIFF('year', DATE '1992-01-01', order_date) AS y, COUNT(*) AS n "
    "FROM retail.orders GROUP BY y ORDER BY y",
    "SELECT EXTRACT(month FROM order_date + INTERVAL 15 DAY) AS m, COUNT(*) AS n "
    "FROM retail.orders GROUP BY m ORDER BY m",
    f"SELECT l.discount AS d, COUNT(*) AS n {ITEMS} WHERE l.discount BETWEEN 0.1 - 0.05 AND 0.1 "
    "GROUP BY d ORDER BY d",
]


@pytest.fixture(scope="module")
def readers(retail_reader, shop_reader):
    return {"retail": retail_reader(privacy=PRIVACY), "shop": shop_reader(privacy=PRIVACY)}


def _reader(readers, sql):
    return readers["shop" if "shop." in sql else "retail"]


def _close(released, exact, tolerance: float) -> bool:
    return math.isclose(float(released), float(exact), rel_tol=1e-4, abs_tol=tolerance)


@pytest.mark.parametrize("sql", DATE_COUNTS + DECIMAL_COUNTS)
def test_count_matches_plain_duckdb(readers, plain, sql):
    released = _reader(readers, sql).execute_df(sql).n[0]
    exact = plain.sql(sql).fetchall()[0][0]
    assert exact > 0 or "0.3" in sql, sql       # a query that selects rows tells something
    assert _close(released, exact, 0.5), (sql, released, exact)


@pytest.mark.parametrize("sql, tolerance", AGGREGATES)
def test_aggregates_match_plain_duckdb(readers, plain, sql, tolerance):
    released = _reader(readers, sql).execute_df(sql)
    exact = plain.sql(sql).fetchall()[0]
    for value, want in zip(released.iloc[0], exact):
        assert _close(value, want, tolerance), (sql, list(released.iloc[0]), exact)


@pytest.mark.parametrize("sql", GROUPED)
def test_grouped_matches_plain_duckdb(readers, plain, sql):
    released = _reader(readers, sql).execute_df(sql)
    exact = plain.sql(sql).fetchall()
    assert [float(k) for k in released.iloc[:, 0]] == [float(row[0]) for row in exact], sql
    for got, (_, want) in zip(released.n, exact):
        assert _close(got, want, 0.5), (sql, got, want)


def test_the_tpch_q6_filter_keeps_the_rows_a_double_sum_would_lose(plain):
    """0.06 + 0.01 in DOUBLE is 0.06999999999999999: the rows with discount 0.07 would drop."""
    assert 0.06 + 0.01 < 0.07
    sevens = plain.sql(f"SELECT COUNT(*) {ITEMS} WHERE l.discount = 0.07").fetchall()[0][0]
    in_double = plain.sql(f"SELECT COUNT(*) {ITEMS} WHERE l.discount BETWEEN 0.06::DOUBLE - 0.01 "
                          "AND 0.06::DOUBLE + 0.01").fetchall()[0][0]
    exact = plain.sql(DECIMAL_COUNTS[0]).fetchall()[0][0]
    assert sevens > 0 and exact == in_double + sevens


def test_constants_are_folded_into_one_literal_at_plan_time(readers):
    plan = readers["retail"].explain(DATE_COUNTS[0] + " AND order_id > 1.5 * 2")
    assert "CAST('1998-09-02 00:00:00' AS TIMESTAMP)" in plan and "INTERVAL" not in plan
    assert "3.0e0" in plan
    plan = readers["retail"].explain(DECIMAL_COUNTS[0])
    assert "BETWEEN 0.05e0 AND 0.07e0" in plan


@pytest.mark.parametrize("documented, equivalent", [
    # / of literals is exact where its result ends (DuckDB divides in DOUBLE: 0.029999999999999995)
    (f"l.discount <= 0.3 / 0.1 / 100", "l.discount <= 0.03"),
    # an int column with a decimal computes in DOUBLE (DuckDB: DECIMAL): 3 * 0.1 <> 0.3
    (f"l.quantity * 0.1 = 0.3", "l.quantity::DOUBLE * 0.1::DOUBLE = 0.3::DOUBLE"),
])
def test_documented_differences_from_plain_duckdb(readers, plain, documented, equivalent):
    released = readers["retail"].execute_df(f"SELECT COUNT(*) AS n {ITEMS} WHERE {documented}").n[0]
    exact = plain.sql(f"SELECT COUNT(*) {ITEMS} WHERE {equivalent}").fetchall()[0][0]
    assert exact > 0 or "quantity" in documented
    assert _close(released, exact, 0.5)
    assert plain.sql(f"SELECT COUNT(*) {ITEMS} WHERE {documented}").fetchall()[0][0] != exact
