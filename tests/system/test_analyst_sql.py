"""SQL as analysts write it (issue 34), against plain DuckDB at a large epsilon.

Each query runs through dpsql at epsilon = 1e5 (the noise is far below the answers' units)
and on plain DuckDB over the same CSV files (the ``plain`` fixture), as written or, where
plain DuckDB spells it otherwise, as DuckDB's equivalent (the second column): unqualified
columns in correlated subqueries, several conditions on the outer row, and the date
functions of other dialects (docs/sql.md). The fixture files accept_tpch.sql and
refuse_tpch.sql hold the same forms and their refused neighbours, on every engine.
"""
from __future__ import annotations

import math

import pytest

import dpsql
from tests.paths import DATA_SETS

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

PRIVACY = dpsql.Privacy(epsilon=1e5, delta=1e-6)
OUTER_DATES = ("SELECT o_priority, COUNT(*) AS n FROM tpch.orders WHERE {not_}EXISTS (SELECT * "
               "FROM tpch.lineitems WHERE l_order_id = o_order_id AND l_ship_date > o_order_date"
               " + INTERVAL 100 DAY) GROUP BY o_priority ORDER BY o_priority")
PAIRS = "tpch.lineitems l1 WHERE {not_}EXISTS (SELECT * FROM tpch.lineitems l2 WHERE " \
        "l2.l_order_id = l1.l_order_id AND l2.l_part_id <> l1.l_part_id{more})"
ITEMS = "FROM tpch.lineitems JOIN tpch.orders ON l_order_id = o_order_id"

GROUPED = [   # (dpsql, plain DuckDB or None: the same text)
    ("SELECT o_priority, COUNT(*) AS n FROM orders WHERE EXISTS (SELECT * FROM lineitems WHERE "
     "l_order_id = o_order_id AND l_ship_date > o_order_date) GROUP BY o_priority ORDER BY o_priority",
     "SELECT o_priority, COUNT(*) AS n FROM tpch.orders WHERE EXISTS (SELECT * FROM tpch.lineitems "
     "WHERE l_order_id = o_order_id AND l_ship_date > o_order_date) GROUP BY o_priority "
     "ORDER BY o_priority"),
    (OUTER_DATES.format(not_=""), None),
    (OUTER_DATES.format(not_="NOT "), None),
    ("SELECT c_segment, COUNT(*) AS n FROM tpch.customers WHERE EXISTS (SELECT * FROM tpch.orders "
     "WHERE o_customer_id = c_customer_id AND o_priority = '1-URGENT') GROUP BY c_segment "
     "ORDER BY c_segment", None),
    (f"SELECT l1.l_return_flag AS f, COUNT(*) AS n FROM "
     f"{PAIRS.format(not_='', more=' AND l2.l_ship_date > l1.l_ship_date')} GROUP BY f ORDER BY f",
     None),
    ("SELECT DATE_DIFF(DATE '1999-01-01', o_order_date, YEAR) AS y, COUNT(*) AS n FROM tpch.orders "
     "GROUP BY y ORDER BY y",
     "SELECT DATE_DIFF('year', o_order_date, DATE '1999-01-01') AS y, COUNT(*) AS n "
     "FROM tpch.orders GROUP BY y ORDER BY y"),
]
COUNTS = [
    ("SELECT COUNT(*) AS n FROM tpch.orders WHERE o_order_id IN (SELECT l_order_id FROM "
     "tpch.lineitems WHERE l_ship_date > o_order_date + INTERVAL 100 DAY)", None),
    (f"SELECT COUNT(*) AS n FROM {PAIRS.format(not_='', more='')}", None),
    (f"SELECT COUNT(*) AS n FROM {PAIRS.format(not_='NOT ', more='')}", None),
    (f"SELECT COUNT(*) AS n FROM {PAIRS.format(not_='NOT ', more=' AND l2.l_quantity > l1.l_quantity')}",
     None),
    ("SELECT COUNT(*) AS n FROM tpch.customers c WHERE EXISTS (SELECT * FROM tpch.orders o WHERE "
     "o.o_customer_id = c.c_customer_id AND o.o_order_date > DATE '1997-01-01' AND "
     "o.o_priority <> c.c_segment)", None),
    # the same forms over retail, whose tables share the name order_id
    ("SELECT COUNT(*) AS n FROM retail.orders o WHERE EXISTS (SELECT * FROM retail.lineitems l "
     "WHERE order_id = o.order_id AND ship_date > order_date + INTERVAL 100 DAY)", None),
    ("SELECT COUNT(*) AS n FROM retail.lineitems l1 WHERE NOT EXISTS (SELECT * FROM "
     "retail.lineitems l2 WHERE l2.order_id = l1.order_id AND l2.part_id <> l1.part_id)", None),
    # dates as other dialects spell them, and DuckDB's spelling
    ("SELECT COUNT(*) AS n FROM tpch.orders WHERE DATE_SUB(o_order_date, INTERVAL 30 DAY) > "
     "DATE '1995-01-01'", "SELECT COUNT(*) AS n FROM tpch.orders WHERE o_order_date - "
     "INTERVAL 30 DAY > DATE '1995-01-01'"),
    ("SELECT COUNT(*) AS n FROM tpch.orders WHERE DATE_SUB(o_order_date, INTERVAL '1' MONTH) < "
     "DATE '1993-02-28'", "SELECT COUNT(*) AS n FROM tpch.orders WHERE o_order_date - "
     "INTERVAL 1 MONTH < DATE '1993-02-28'"),
    ("SELECT COUNT(*) AS n FROM tpch.orders WHERE DATE_ADD(o_order_date, 30) > DATE '1998-01-01'",
     None),
    ("SELECT COUNT(*) AS n FROM tpch.orders WHERE DATE_ADD(o_order_date, -45) > DATE '1995-01-01'",
     None),
    ("SELECT COUNT(*) AS n FROM tpch.orders WHERE DATE_SUB(o_order_date, 30) > DATE '1995-01-01'",
     "SELECT COUNT(*) AS n FROM tpch.orders WHERE o_order_date - 30 > DATE '1995-01-01'"),
    (f"SELECT COUNT(*) AS n {ITEMS} WHERE DATE_DIFF(l_ship_date, o_order_date, DAY) > 30",
     f"SELECT COUNT(*) AS n {ITEMS} WHERE DATE_DIFF('day', o_order_date, l_ship_date) > 30"),
    (f"SELECT COUNT(*) AS n {ITEMS} WHERE DATE_DIFF(l_ship_date, o_order_date, MONTH) >= 2",
     f"SELECT COUNT(*) AS n {ITEMS} WHERE DATE_DIFF('month', o_order_date, l_ship_date) >= 2"),
    (f"SELECT COUNT(*) AS n {ITEMS} WHERE DATE_DIFF(o_order_date, l_ship_date, QUARTER) = 0",
     f"SELECT COUNT(*) AS n {ITEMS} WHERE DATE_DIFF('quarter', l_ship_date, o_order_date) = 0"),
]


@pytest.fixture(scope="module")
def readers():
    return {name: dpsql.from_df(dict(DATA_SETS[name][1]), DATA_SETS[name][0], privacy=PRIVACY)
            for name in ("tpch", "retail")}


def _released(readers, sql):
    return readers["retail" if "retail." in sql else "tpch"].execute_df(sql)


def _close(released, exact) -> bool:
    return math.isclose(float(released), float(exact), rel_tol=1e-4, abs_tol=0.5)


@pytest.mark.parametrize("sql, duckdb_sql", COUNTS)
def test_count_matches_plain_duckdb(readers, plain, sql, duckdb_sql):
    released = _released(readers, sql).n[0]
    exact = plain.sql(duckdb_sql or sql).fetchall()[0][0]
    assert exact > 0, sql                       # a query that selects rows tells something
    assert _close(released, exact), (sql, released, exact)


@pytest.mark.parametrize("sql, duckdb_sql", GROUPED)
def test_grouped_matches_plain_duckdb(readers, plain, sql, duckdb_sql):
    released = _released(readers, sql)
    exact = plain.sql(duckdb_sql or sql).fetchall()
    assert [str(k) for k in released.iloc[:, 0]] == [str(row[0]) for row in exact], sql
    for got, (_, want) in zip(released.n, exact):
        assert _close(got, want), (sql, got, want)


def test_the_average_of_bigquery_date_diff_matches_plain_duckdb(readers, plain):
    sql = (f"SELECT AVG(LEAST(GREATEST(DATE_DIFF(l_ship_date, o_order_date, DAY), 0), 200)) AS d "
           f"{ITEMS}")
    exact = plain.sql(sql.replace("DATE_DIFF(l_ship_date, o_order_date, DAY)",
                                  "DATE_DIFF('day', o_order_date, l_ship_date)")).fetchall()[0][0]
    assert math.isclose(_released(readers, sql).d[0], exact, abs_tol=0.05)


def test_a_refused_correlation_costs_nothing(readers):
    reader = dpsql.from_df(dict(DATA_SETS["tpch"][1]), DATA_SETS["tpch"][0],
                           privacy=dpsql.Privacy(epsilon=1.0), budget=dpsql.Budget(epsilon=1.0))
    with pytest.raises(dpsql.QueryError, match="l_line_no are neither"):
        reader.execute_df("SELECT COUNT(*) AS n FROM orders WHERE EXISTS (SELECT * FROM lineitems "
                          "WHERE l_line_no = o_order_id AND l_ship_date > o_order_date)")
    assert reader.spent[0] == 0


def test_unqualified_names_keep_their_place_in_messages(readers):
    with pytest.raises(dpsql.QueryError, match=r"unknown column nosuch in WHERE \(line 1, column"):
        readers["tpch"].explain("SELECT COUNT(*) AS n FROM orders WHERE EXISTS (SELECT * FROM "
                                "lineitems WHERE l_order_id = o_order_id AND nosuch > o_order_date)")
