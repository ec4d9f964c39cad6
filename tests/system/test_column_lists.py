"""Column lists after an alias (``AS t(a, b)``, ``WITH t(a, b) AS``) and a SELECT alias in
a per-person subquery's HAVING, GROUP BY and ORDER BY: answers at epsilon = 1e5 against
plain DuckDB on the shop and the retail data sets, and the refusals (free, explained).

In both data sets no person is beyond a bound (at most 11 shop orders and 38 items per
customer against max_ids 20 and 50; at most 30 retail orders and 145 lineitems against 30
and 210), so truncation keeps every row and the exact answer is DuckDB's.
"""
from __future__ import annotations

import math

import pytest

import dpsql

pytestmark = pytest.mark.filterwarnings("ignore:dpsql. no budget set",
                                        "ignore:dpsql. epsilon=100000")

BIG = dict(privacy=dpsql.Privacy(epsilon=1e5, delta=1e-6))

SHOP_PER_CUSTOMER = ("(SELECT c.customer_id, COUNT(o.order_id) FROM shop.customers c LEFT JOIN "
                     "shop.orders o ON c.customer_id = o.customer_id GROUP BY c.customer_id)")
RETAIL_PER_CUSTOMER = SHOP_PER_CUSTOMER.replace("shop.", "retail.")

# (sql, the output columns that are keys, DuckDB's query when it differs)
ANSWERED = {
    "shop": [
        # the forms: a subquery and a CTE with a column list naming an aggregate
        (f"SELECT n_orders, COUNT(*) AS n FROM {SHOP_PER_CUSTOMER} AS per_customer "
         "(customer_id, n_orders) GROUP BY n_orders", ["n_orders"], None),
        ("WITH per_customer (customer_id, n_orders) AS (SELECT customer_id, COUNT(*) FROM "
         "shop.orders GROUP BY customer_id) SELECT n_orders, COUNT(*) AS n FROM per_customer "
         "GROUP BY n_orders", ["n_orders"], None),
        # shorter than the columns: the rest keep their names
        ("SELECT k, COUNT(*) AS n FROM (SELECT customer_id, COUNT(*) AS k FROM shop.orders "
         "GROUP BY customer_id) AS t (cid) GROUP BY k", ["k"], None),
        # a per-person SUM through references, named by the list
        ("WITH spent (customer_id, total) AS (SELECT o.customer_id, SUM(i.amount) FROM "
         "shop.orders o JOIN shop.order_items i ON o.order_id = i.order_id GROUP BY "
         "o.customer_id) SELECT COUNT(*) AS n, SUM(total) AS s FROM spent WHERE total > 1000",
         [], None),
        # a table and a CTE read under a column list
        ("SELECT ch, COUNT(*) AS n FROM shop.orders AS o (oid, cid, ch) GROUP BY ch", ["ch"],
         None),
        ("WITH w AS (SELECT customer_id, channel FROM shop.orders) SELECT ch, COUNT(*) AS n "
         "FROM w AS x (cid, ch) GROUP BY ch", ["ch"], None),
        # a renamed referencing column keeps its reference
        ("SELECT o.channel, SUM(i.amt) AS s FROM (SELECT order_id, amount FROM shop.order_items) "
         "AS i (oid, amt) JOIN shop.orders o ON i.oid = o.order_id GROUP BY o.channel",
         ["channel"], None),
        # swapped names: joined on the real order_id, whatever it is called
        ("SELECT COUNT(*) AS n FROM shop.order_items i JOIN (SELECT customer_id, order_id FROM "
         "shop.orders) AS o (order_id, customer_id) ON i.order_id = o.customer_id", [], None),
        # a column list after VALUES keeps working
        ("SELECT v.label, COUNT(*) AS n FROM shop.orders o JOIN (VALUES ('web', 'online'), "
         "('store', 'offline'), ('phone', 'offline')) AS v (channel, label) ON "
         "o.channel = v.channel GROUP BY v.label", ["label"], None),
        # HAVING, GROUP BY and ORDER BY by a SELECT alias inside the per-person subquery
        ("SELECT COUNT(*) AS n FROM (SELECT customer_id, COUNT(*) AS k FROM shop.orders "
         "GROUP BY customer_id HAVING k > 2) t", [], None),
        ("SELECT k > 5 AS big, COUNT(*) AS n FROM (SELECT customer_id, COUNT(*) AS k FROM "
         "shop.orders GROUP BY customer_id HAVING k > 2) t GROUP BY k > 5", ["big"], None),
        ("SELECT COUNT(*) AS n FROM (SELECT customer_id AS c, COUNT(*) AS k FROM shop.orders "
         "GROUP BY c HAVING c > 100 AND k + COUNT(*) > 4 ORDER BY k) t", [], None),
        ("SELECT COUNT(*) AS n FROM (SELECT o.customer_id, SUM(i.amount) AS spent FROM "
         "shop.orders o JOIN shop.order_items i ON o.order_id = i.order_id "
         "GROUP BY o.customer_id HAVING spent > 2000) t", [], None),
        # an alias that is also an ungrouped column's name means the alias (as DuckDB)
        ("SELECT COUNT(*) AS n FROM (SELECT customer_id, COUNT(*) AS order_id FROM shop.orders "
         "GROUP BY customer_id HAVING order_id > 3) t", [], None),
        # columns that only HAVING reads are no columns of the subquery (SELECT *, UNION ALL)
        ("SELECT COUNT(*) AS n, SUM(k) AS s FROM (SELECT * FROM (SELECT customer_id, COUNT(*) "
         "AS k FROM shop.orders GROUP BY customer_id HAVING MAX(order_id) > 8000) t) s", [], None),
        ("SELECT COUNT(*) AS n, SUM(k) AS s FROM (SELECT customer_id, COUNT(*) AS k FROM "
         "shop.orders GROUP BY customer_id HAVING MAX(order_id) > 8000 UNION ALL SELECT "
         "customer_id, COUNT(*) AS k FROM shop.orders GROUP BY customer_id) u", [], None),
        # ... and a grouped column's name means the column
        ("SELECT COUNT(*) AS n FROM (SELECT customer_id, channel, COUNT(*) AS channel_n FROM "
         "shop.orders GROUP BY customer_id, channel HAVING channel = 'web' AND channel_n > 1) t",
         [], None),
    ],
    "retail": [
        (f"SELECT n_orders, COUNT(*) AS n FROM {RETAIL_PER_CUSTOMER} AS per_customer "
         "(customer_id, n_orders) GROUP BY n_orders", ["n_orders"], None),
        ("WITH per_customer (customer_id, n_orders) AS (SELECT customer_id, COUNT(*) FROM "
         "retail.orders GROUP BY customer_id) SELECT n_orders, COUNT(*) AS n FROM per_customer "
         "GROUP BY n_orders", ["n_orders"], None),
        ("WITH lines (customer_id, n_lines, qty) AS (SELECT o.customer_id, COUNT(*), "
         "SUM(l.quantity) FROM retail.orders o JOIN retail.lineitems l ON o.order_id = "
         "l.order_id GROUP BY o.customer_id) SELECT n_lines > 50 AS many, COUNT(*) AS n, "
         "SUM(qty) AS q FROM lines GROUP BY n_lines > 50", ["many"], None),
        ("SELECT p, COUNT(*) AS n FROM retail.orders AS o (oid, cid, d, p) GROUP BY p", ["p"],
         None),
        ("SELECT l.flag, SUM(l.q) AS q FROM (SELECT order_id, quantity, return_flag FROM "
         "retail.lineitems) AS l (oid, q, flag) JOIN retail.orders o ON l.oid = o.order_id "
         "GROUP BY l.flag", ["flag"], None),
        ("SELECT COUNT(*) AS n FROM retail.lineitems l JOIN (SELECT customer_id, order_id FROM "
         "retail.orders) AS o (order_id, customer_id) ON l.order_id = o.customer_id", [], None),
        ("SELECT COUNT(*) AS n FROM (SELECT customer_id, COUNT(*) AS k FROM retail.orders "
         "GROUP BY customer_id HAVING k > 10) t", [], None),
        ("SELECT k > 20 AS big, COUNT(*) AS n FROM (SELECT customer_id, COUNT(*) AS k FROM "
         "retail.orders GROUP BY customer_id HAVING k > 5) t GROUP BY k > 20", ["big"], None),
        ("SELECT COUNT(*) AS n FROM (SELECT o.customer_id AS c, SUM(l.quantity) AS q FROM "
         "retail.orders o JOIN retail.lineitems l ON o.order_id = l.order_id GROUP BY c "
         "HAVING q > 1000 ORDER BY q) t", [], None),
    ],
}
CASES = [pytest.param(name, *case, id=f"{name}-{i}") for name, cases in ANSWERED.items()
         for i, case in enumerate(cases)]


def _reader(name, shop_reader, retail_reader):
    return (shop_reader if name == "shop" else retail_reader)(**BIG)


def _rows(df, keys):
    values = [c for c in df.columns if c not in keys]
    return {tuple(r[k] for k in keys): [r[v] for v in values] for _, r in df.iterrows()}


@pytest.mark.parametrize("name, sql, keys, exact", CASES)
def test_answers_match_duckdb(name, sql, keys, exact, shop_reader, retail_reader, plain):
    got = _rows(_reader(name, shop_reader, retail_reader).execute_df(sql), keys)
    want = _rows(plain.sql(exact or sql).df(), keys)
    assert want, "the exact answer is empty: the case tests nothing"
    for key, values in got.items():
        # a key of public values absent from the data is released as a noisy zero
        expected = want.get(key, [0] * len(values))
        for g, w in zip(values, expected):
            assert math.isclose(float(g), float(w), rel_tol=1e-3, abs_tol=0.5), (key, got, want)
    assert set(want) <= set(got), (want, got)


def test_having_alias_is_the_aggregate_written_out(shop_reader):
    """The same per-person rows, the same plan: an alias in HAVING means its aggregate."""
    reader = shop_reader(**BIG)
    alias = ("SELECT COUNT(*) AS n FROM (SELECT customer_id, COUNT(*) AS k FROM shop.orders "
             "GROUP BY customer_id HAVING k > 2) t")
    written = alias.replace("HAVING k > 2", "HAVING COUNT(*) > 2")
    assert reader._plan(alias).statistics[0].l1 == reader._plan(written).statistics[0].l1
    assert reader.execute_df(alias).n[0] == pytest.approx(reader.execute_df(written).n[0], abs=1)


@pytest.mark.parametrize("sql, message", [
    (f"SELECT COUNT(*) AS n FROM {SHOP_PER_CUSTOMER} AS per_customer (customer_id, n_orders, "
     "x)", "'per_customer' has 2 columns but 3 names are given"),
    ("WITH t (a, b, c, d) AS (SELECT * FROM shop.orders) SELECT COUNT(*) AS n FROM t",
     "'t' has 3 columns but 4 names are given"),
    ("SELECT COUNT(*) AS n FROM shop.customers AS c (a, b, x)", "'c' has 2 columns but 3"),
    ("SELECT COUNT(*) AS n FROM (SELECT customer_id, channel FROM shop.orders) AS t (a, a)",
     "two columns of 't' are named 'a'"),
    ("SELECT COUNT(*) AS n FROM (SELECT customer_id, channel FROM shop.orders) AS t (channel)",
     "two columns of 't' are named 'channel'"),
    ("SELECT COUNT(*) AS n FROM (SELECT order_id, channel FROM shop.orders) AS t (_dpsql_pid)",
     "reserved"),
    # a column the list does not reach still needs a name
    ("SELECT COUNT(*) AS n FROM (SELECT customer_id, COUNT(*) FROM shop.orders GROUP BY "
     "customer_id) AS t (c)", "needs a name"),
    # an alias inside an aggregate is not the alias (as DuckDB)
    ("SELECT COUNT(*) AS n FROM (SELECT customer_id, COUNT(*) AS k FROM shop.orders GROUP BY "
     "customer_id HAVING SUM(k) > 2) t", "unknown column k in HAVING"),
])
def test_refused_for_free(shop_reader, sql, message):
    reader = shop_reader(**BIG)
    with pytest.raises(dpsql.QueryError, match=message.replace("(", r"\(")):
        reader.execute_df(sql)
    assert reader.spent[0] == 0


REVENUE = {
    "shop": ("WITH revenue {cols}AS (SELECT c.region, SUM(i.amount){alias} FROM shop.customers c "
             "JOIN shop.orders o ON c.customer_id = o.customer_id JOIN shop.order_items i ON "
             "o.order_id = i.order_id GROUP BY c.region) SELECT region, total FROM revenue"),
    "retail": ("WITH revenue {cols}AS (SELECT o.priority AS region, SUM(l.price){alias} FROM "
               "retail.orders o JOIN retail.lineitems l ON o.order_id = l.order_id GROUP BY "
               "o.priority) SELECT region, total FROM revenue"),
}


@pytest.mark.parametrize("name", ["shop", "retail"])
def test_an_outer_select_of_an_aggregating_cte_is_its_release(name, shop_reader, retail_reader,
                                                               plain):
    """A CTE grouped by region is the release, with or without a column list; the outer
    SELECT only post-processes it (dpsql/plan/outer.py): the same answer as DuckDB's, and
    the same cost as the aggregation asked directly."""
    reader = _reader(name, shop_reader, retail_reader)
    with_list = REVENUE[name].format(cols="(region, total) ", alias="")
    without = REVENUE[name].format(cols="", alias=" AS total")
    want = _rows(plain.sql(without).df(), ["region"])
    for sql in (with_list, without):
        got = _rows(reader.execute_df(sql), ["region"])
        assert set(got) == set(want)
        for key, (value,) in got.items():
            assert math.isclose(value, want[key][0], rel_tol=1e-3), (key, got, want)
    direct = without[len("WITH revenue AS ("):without.index(") SELECT region, total")]
    assert reader.get_privacy_cost(with_list) == reader.get_privacy_cost(direct)
    assert reader.explain(with_list).split("bounded plan")[1] == \
        reader.explain(direct).split("bounded plan")[1]


def test_explain_shows_the_rename(shop_reader):
    text = shop_reader(**BIG).explain(
        "SELECT n_orders, COUNT(*) AS n FROM (SELECT customer_id, COUNT(*) FROM shop.orders "
        "GROUP BY customer_id) AS t (cid, n_orders) GROUP BY n_orders")
    assert "customer_id AS cid" in text and "n_orders [1, 20]" in text
