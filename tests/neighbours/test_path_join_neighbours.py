"""The joins the plan adds along ``references`` (and the reference-join rules they share),
checked on neighbouring data sets.

The method and helpers are tests/neighbours/test_join_neighbours.py's: each pair differs
in one person X and every row of X in every table, including every item reached through
one of X's orders (the items of an order that two customers claim belong to both). X sits
far beyond every bound, and each query runs many times on both sides; the harness fails
if an outcome bucket is seen more often on one side than the charge allows.

- shop: X has 180 orders with 5 items of amount 500 each (900 items, max_ids 50), queried
  as ``shop.order_items`` alone: the plan joins shop.orders to find each item's person,
  and the bound charged (50 items, 25,000) must hold.
- shop, hostile: X's orders reuse the order_ids of 30 other customers Y (10 items of 500
  on each): the plan must drop those order_ids, or each Y's items would change with X.
- shop, repeated keys: X also holds 20 order_ids five times each, with 10 items on each:
  plain SQL counts each such item five times; the plan drops keys held in more than one
  orders row.
- retail: X has 40 orders with 25 lineitems at price 10,000 each (1,000 lines, max_ids
  210), queried alone and through customers x orders x lineitems, which the work bound
  now allows (30 rows per private row); and (issue 34) through a join condition common to
  every branch of an OR (lineitems x parts), and through a FROM list written with its public
  tables first, which is joined along its equalities.

Power was checked by hand-made mutations of a copy of dpsql, each failing the tests named:
the reference join's relation marked bounded (no truncation): every test here but the
hostile one, where X contributes nothing once its order_ids are dropped; the filter of
keys held by one row removed: the hostile test (and, for keys repeated by one customer,
tests/system/test_star_joins.py::test_a_key_held_twice_by_the_referenced_table_is_dropped).
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tests.neighbours.test_join_neighbours import (  # noqa: F401 (the shop fixtures)
    X, Pair, _add, _check, _dup_ids, _l1, _shop_base, _shop_with, _without_customer, shop,
    shop_duplicates)
from tests.paths import DATA, RETAIL_TABLES

pytestmark = pytest.mark.filterwarnings("ignore:dpsql. no budget set")

ITEMS_SUM = "SELECT SUM(amount) AS s FROM shop.order_items"
ITEMS_SUM_EXACT = ("SELECT SUM(LEAST(GREATEST(i.amount, 0), 500)) AS s FROM shop.order_items i "
                   "JOIN shop.orders o ON i.order_id = o.order_id")


def _shop_with_repeated_keys(frames: dict) -> dict:
    """``_shop_with``'s X, who also holds 20 order_ids five times each, 10 items on each."""
    out = _shop_with(frames)
    ids = np.arange(200001, 200021)
    _add(out, "shop.orders", pd.DataFrame({"order_id": np.repeat(ids, 5), "customer_id": X,
                                           "channel": "web"}))
    _add(out, "shop.order_items", pd.DataFrame({"order_id": np.repeat(ids, 10),
                                                "amount": 500.0, "level": 3}))
    return out


@pytest.fixture(scope="module")
def shop_repeated():
    with_x = _shop_with_repeated_keys(_shop_base())
    return Pair(with_x, _without_customer(with_x, X), DATA / "shop.yaml")


def test_items_alone(shop):
    # 50 items per customer (order_items.max_ids) x 500
    assert _l1(shop, ITEMS_SUM) == pytest.approx([25000], rel=1e-3)
    _check(shop, ITEMS_SUM, {"s": 25000}, exact_sql=ITEMS_SUM_EXACT)


def test_items_alone_counted(shop):
    sql = "SELECT COUNT(*) AS n FROM shop.order_items WHERE amount >= 500"
    exact = ("SELECT COUNT(*) AS n FROM shop.order_items i JOIN shop.orders o "
             "ON i.order_id = o.order_id WHERE i.amount >= 500")
    assert _l1(shop, sql) == [50]
    _check(shop, sql, {"n": 50}, exact_sql=exact)


def test_items_alone_with_order_ids_of_other_customers(shop_duplicates):
    """Were X's duplicated order_ids kept, each Y would gain its order's items:
    30 x (10 x 500 + Y's own) against 25000."""
    pair = shop_duplicates
    ids = _dup_ids(_shop_base())
    items = pair.frames["with X"]["shop.order_items"]
    gained = float(items.amount[items.order_id.isin(ids)].clip(0, 500).sum())
    assert gained > 150000
    _check(pair, ITEMS_SUM, {"s": 25000}, exact_sql=ITEMS_SUM_EXACT,
           alternative={((), "s"): gained})


def test_items_alone_with_order_ids_held_five_times(shop_repeated):
    assert _l1(shop_repeated, ITEMS_SUM) == pytest.approx([25000], rel=1e-3)
    _check(shop_repeated, ITEMS_SUM, {"s": 25000}, exact_sql=ITEMS_SUM_EXACT)


# ------------------------------------------------------------------ retail

def _retail_with() -> dict:
    frames = {t: pd.read_csv(p) for t, p in RETAIL_TABLES.items()}
    _add(frames, "retail.customers", pd.DataFrame({"customer_id": [X], "nation_key": [0],
                                                   "segment": ["BUILDING"]}))
    ids = np.arange(900001, 900041)
    _add(frames, "retail.orders", pd.DataFrame({"order_id": ids, "customer_id": X,
                                                "order_date": "1995-01-01",
                                                "priority": "1-URGENT"}))
    _add(frames, "retail.lineitems", pd.DataFrame({
        "order_id": np.repeat(ids, 25), "line_no": 1, "part_id": 1, "quantity": 50,
        "price": 10000.0, "discount": 0.0, "ship_date": "1995-02-01", "return_flag": "R"}))
    return frames


@pytest.fixture(scope="module")
def retail():
    with_x = _retail_with()
    return Pair(with_x, _without_customer(with_x, X, schema="retail", items="lineitems"),
                DATA / "retail.yaml")


def test_lineitems_alone(retail):
    sql = "SELECT SUM(price) AS s FROM retail.lineitems WHERE return_flag = 'R'"
    exact = ("SELECT SUM(LEAST(GREATEST(l.price, 0), 10000)) AS s FROM retail.lineitems l "
             "JOIN retail.orders o ON l.order_id = o.order_id WHERE l.return_flag = 'R'")
    assert _l1(retail, sql) == pytest.approx([2.1e6], rel=1e-3)
    _check(retail, sql, {"s": 2.1e6}, exact_sql=exact)


def test_three_levels(retail):
    # X's 40 orders are cut to 30 before the join with customers; their 750 lines to 210
    sql = ("SELECT c.segment, COUNT(*) AS n FROM retail.customers c, retail.orders o, "
           "retail.lineitems l WHERE c.customer_id = o.customer_id AND o.order_id = l.order_id "
           "GROUP BY c.segment")
    assert _l1(retail, sql) == [210]
    _check(retail, sql, {"n": 210}, keys=["segment"])


# -- FROM lists in any order, and a join condition common to every branch of an OR (issue 34)

def test_a_join_condition_common_to_every_branch_of_an_or(retail):
    """The equality both branches repeat is planned as the join (lineitems x parts on a
    key unique in parts); X's 1,000 lines all match both branches, 210 are charged."""
    sql = ("SELECT COUNT(*) AS n FROM retail.lineitems l, retail.parts p WHERE "
           "(p.part_id = l.part_id AND p.brand = 'Brand#12' AND l.quantity > 40) OR "
           "(l.part_id = p.part_id AND p.size < 10 AND l.quantity BETWEEN 45 AND 50)")
    text = retail.readers["without"].explain(sql)
    assert "join (INNER) l.part_id = p.part_id" in text and "join (CROSS)" not in text
    assert _l1(retail, sql) == [210]
    _check(retail, sql, {"n": 210})


def test_a_from_list_written_out_of_join_order(retail):
    """Public tables first, as the issue wrote it: joined along the equalities instead
    (parts x lineitems x orders x customers x nations); X's 40 orders are cut to 30 and
    their 750 lines to 210."""
    sql = ("SELECT c.segment, COUNT(*) AS n FROM retail.parts p, retail.nations n, "
           "retail.lineitems l, retail.orders o, retail.customers c WHERE p.part_id = l.part_id "
           "AND l.order_id = o.order_id AND o.customer_id = c.customer_id "
           "AND c.nation_key = n.nation_key GROUP BY c.segment")
    assert "join (CROSS)" not in retail.readers["without"].explain(sql)
    assert _l1(retail, sql) == [210]
    _check(retail, sql, {"n": 210}, keys=["segment"])
