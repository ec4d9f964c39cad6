"""Column lists (``AS t(a, b)``, ``WITH t(a, b) AS``) and HAVING by an alias per person,
checked on neighbouring data sets: the shop pairs of test_join_neighbours.py (customer X far
beyond every bound: 180 orders, 900 items of amount 500; in the adversarial pair X's orders
reuse the order_ids of 30 other customers Y, with 10 items of 500 each).

A column list renames only: the bound charged must be the bound of the real columns, and the
order_ids that two customers claim must still be dropped when the orders' columns are
renamed, or swapped. Each query runs many times on both data sets; the harness fails if an
outcome is seen more often on one side than the charge allows (Clopper-Pearson, family-wise
false alarm < 1e-6).
"""
from __future__ import annotations

import pytest

from tests.neighbours.test_join_neighbours import (  # noqa: F401 - shop, shop_duplicates: fixtures
    _cells, _check, _dup_ids, _l1, _shop_base, shop, shop_duplicates)

pytestmark = pytest.mark.filterwarnings("ignore:dpsql. no budget set")


def test_swapped_names_join_items_on_the_real_order_id(shop):
    # o.customer_id is the real order_id: 50 items per customer, X has 900
    sql = ("SELECT COUNT(*) AS n FROM shop.order_items i JOIN (SELECT customer_id, order_id "
           "FROM shop.orders) AS o (order_id, customer_id) ON i.order_id = o.customer_id")
    assert _l1(shop, sql) == [50]
    _check(shop, sql, {"n": 50})


def test_renamed_orders_still_drop_an_order_id_of_two_customers(shop_duplicates):
    """The orders read under a column list: the items on X's orders, whose order_ids
    the Ys own too, must be dropped as with the table's own names."""
    pair = shop_duplicates
    sql = ("SELECT o.ch, SUM(i.amount) AS s FROM shop.order_items i JOIN shop.orders AS "
           "o (oid, cid, ch) ON i.order_id = o.oid GROUP BY o.ch")
    exact = ("SELECT o.ch, SUM(LEAST(GREATEST(i.amount, 0), 500)) AS s FROM shop.order_items i "
             "JOIN shop.orders AS o (oid, cid, ch) ON i.order_id = o.oid GROUP BY o.ch")
    ids = _dup_ids(_shop_base())
    items = pair.frames["with X"]["shop.order_items"]
    gained = float(items.amount[items.order_id.isin(ids)].clip(0, 500).sum())
    assert (("phone",), "s") in _cells(pair.exact("without", exact), ["ch"], ["s"])
    assert _l1(pair, sql) == pytest.approx([25000], rel=1e-3)
    _check(pair, sql, {"s": 25000}, exact_sql=exact, keys=["ch"],
           alternative={(("phone",), "s"): gained})


def test_per_person_rows_named_by_a_list_and_filtered_by_an_alias(shop):
    # one row per person, n_orders in [1, 20]; X's 180 orders count 20
    sql = ("SELECT SUM(n_orders) AS s FROM (SELECT customer_id, COUNT(*) AS k FROM shop.orders "
           "GROUP BY customer_id HAVING k > 2) AS t (cid, n_orders)")
    assert _l1(shop, sql) == [20]
    _check(shop, sql, {"s": 20})
