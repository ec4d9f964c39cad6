"""Hostile column lists: a name given by ``AS t(a, b)`` or ``WITH t(a, b) AS`` must never make a
column the person's id, or a referencing column, that it is not (docs/sql.md, Joins:
References). A rename changes names only; the metadata's identity follows the column.

The attacker swaps names: ``shop.orders``' ``(customer_id, order_id)`` read as
``(order_id, customer_id)``, so ``t.customer_id`` holds order ids and ``t.order_id`` holds the
person's id. Every join, semi-join, GROUP BY and per-person aggregation above must be planned
with the real identity: refused, charged or thresholded as the real column requires. All
refusals are free (checked when planning).
"""
from __future__ import annotations

import pytest

import dpsql

pytestmark = pytest.mark.filterwarnings("ignore:dpsql. no budget set")

# Three ways to read shop.orders with swapped names: t.order_id is the person (the real
# customer_id), t.customer_id the real order_id.
SWAPPED = {
    "subquery": ("", "(SELECT customer_id, order_id FROM shop.orders) AS t (order_id, customer_id)"),
    "cte": ("WITH t (order_id, customer_id) AS (SELECT customer_id, order_id FROM shop.orders) ",
            "t"),
    "table": ("", "shop.orders AS t (customer_id, order_id)"),
    "cte-read-with-list": ("WITH w AS (SELECT * FROM shop.orders) ",
                           "w AS t (customer_id, order_id)"),
}
FORMS = list(SWAPPED)


@pytest.fixture(scope="module")
def reader(shop_tables):
    from tests.paths import DATA
    return dpsql.from_df(dict(shop_tables), DATA / "shop.yaml",
                         privacy=dpsql.Privacy(epsilon=1.0, delta=1e-6))


def _sql(form: str, select: str, rest: str = "") -> str:
    with_, source = SWAPPED[form]
    return f"{with_}SELECT {select} FROM {source} {rest}".strip()


def _refused(reader, sql: str, message: str) -> None:
    before = reader.spent
    with pytest.raises(dpsql.QueryError, match=message):
        reader.explain(sql)
    with pytest.raises(dpsql.QueryError, match=message):
        reader.execute_df(sql)
    assert reader.spent == before


def _l1(reader, sql: str) -> list:
    return [s.l1 for s in reader._plan(sql).statistics]


@pytest.mark.parametrize("form", FORMS)
def test_a_renamed_order_id_is_not_the_person(reader, form):
    _refused(reader, _sql(form, "COUNT(*) AS n", "JOIN shop.customers c ON c.customer_id = "
                          "t.customer_id"), "must equate their privacy units")
    _refused(reader, _sql(form, "COUNT(*) AS n", "WHERE t.customer_id IN (SELECT customer_id "
                          "FROM shop.customers)"), "both sides must be the privacy unit's id")
    # a per-person aggregation must group by the real id, whatever it is called
    _refused(reader, f"{SWAPPED[form][0]}SELECT COUNT(*) AS n FROM (SELECT customer_id, "
             f"COUNT(*) AS k FROM {SWAPPED[form][1]} GROUP BY customer_id) s",
             "does not include the privacy unit's id")


@pytest.mark.parametrize("form", FORMS)
def test_the_renamed_person_id_is_still_the_person(reader, form):
    # joined, semi-joined and aggregated per person on the real id, under its new name
    assert _l1(reader, _sql(form, "COUNT(*) AS n", "JOIN shop.customers c ON c.customer_id = "
                            "t.order_id")) == [20]
    assert _l1(reader, _sql(form, "COUNT(*) AS n", "WHERE t.order_id IN (SELECT customer_id "
                            "FROM shop.customers)")) == [20]
    assert _l1(reader, f"{SWAPPED[form][0]}SELECT COUNT(*) AS n FROM (SELECT order_id, "
               f"COUNT(*) AS k FROM {SWAPPED[form][1]} GROUP BY order_id) s") == [1]
    # never a released key, whatever it is called
    _refused(reader, _sql(form, "order_id, COUNT(*) AS n", "GROUP BY order_id"),
             "uses the privacy unit's id")


@pytest.mark.parametrize("form", FORMS)
def test_count_distinct_counts_persons_only_on_the_real_id(reader, form):
    # t.order_id: persons, 1 each; t.customer_id: order ids, up to max_ids = 20 per person
    assert _l1(reader, _sql(form, "COUNT(DISTINCT order_id) AS p")) == [1]
    assert _l1(reader, _sql(form, "COUNT(DISTINCT customer_id) AS o")) == [20]


@pytest.mark.parametrize("form", FORMS)
def test_a_key_named_customer_id_holding_order_ids_is_thresholded(reader, form):
    plan = reader._plan(_sql(form, "customer_id, COUNT(*) AS n", "GROUP BY customer_id"))
    assert plan.threshold and plan.tau is not None


@pytest.mark.parametrize("form", FORMS)
def test_order_items_reach_their_person_through_the_real_order_id_only(reader, form):
    _refused(reader, _sql(form, "COUNT(*) AS n", "JOIN shop.order_items i ON i.order_id = "
                          "t.order_id"), "join them on exactly that")
    assert _l1(reader, _sql(form, "COUNT(*) AS n", "JOIN shop.order_items i ON i.order_id = "
                            "t.customer_id")) == [50]


@pytest.mark.parametrize("items", [
    "(SELECT level, order_id FROM shop.order_items) AS i (order_id, level)",
    "shop.order_items AS i (level, amount, order_id)",
    "(SELECT order_id + 1, level FROM shop.order_items) AS i (order_id, level)",
], ids=["swapped", "table", "computed"])
def test_a_column_named_order_id_is_not_the_reference(reader, items):
    """On the referencing side: only the real order_items.order_id reaches a person."""
    _refused(reader, f"SELECT COUNT(*) AS n FROM {items} JOIN shop.orders o ON "
             "i.order_id = o.order_id", "join them on exactly that")


@pytest.mark.parametrize("items, key", [
    ("(SELECT level, order_id FROM shop.order_items) AS i (order_id, level)", "i.level"),
    ("shop.order_items AS i (oid)", "i.oid"),
    ("(SELECT order_id, amount FROM shop.order_items) AS i (x)", "i.x"),
])
def test_the_renamed_reference_still_reaches_the_person(reader, items, key):
    assert _l1(reader, f"SELECT COUNT(*) AS n FROM {items} JOIN shop.orders o ON "
               f"{key} = o.order_id") == [50]


def test_renamed_to_pid_is_not_the_person(reader):
    """Renaming order_id to pid (or to the hidden id's name) makes nothing the person."""
    assert _l1(reader, "SELECT COUNT(DISTINCT pid) AS n FROM shop.orders AS o (pid)") == [20]
    assert _l1(reader, "SELECT COUNT(DISTINCT pid) AS n FROM shop.orders AS o (oid, pid)") == [1]
    _refused(reader, "SELECT pid, COUNT(*) AS n FROM shop.orders AS o (oid, pid) GROUP BY pid",
             "uses the privacy unit's id")
    _refused(reader, "SELECT COUNT(*) AS n FROM shop.orders AS o (_dpsql_pid)", "reserved")


def test_one_cte_read_under_two_lists(reader):
    """The same CTE twice, the names swapped in one reading: joined on the persons only."""
    cte = "WITH w AS (SELECT customer_id, order_id FROM shop.orders) "
    _refused(reader, cte + "SELECT COUNT(*) AS n FROM w AS a (x, y) JOIN w AS b (y, x) "
             "ON a.x = b.x", "must equate their privacy units")
    assert _l1(reader, cte + "SELECT COUNT(*) AS n FROM w AS a (x, y) JOIN w AS b (y, x) "
               "ON a.x = b.y") == [400]


def test_retail_swapped_names(retail_reader):
    reader = retail_reader(privacy=dpsql.Privacy(epsilon=1.0, delta=1e-6))
    swapped = "(SELECT customer_id, order_id FROM retail.orders) AS o (order_id, customer_id)"
    _refused(reader, f"SELECT COUNT(*) AS n FROM retail.lineitems l JOIN {swapped} ON "
             "l.order_id = o.order_id", "join them on exactly that")
    assert _l1(reader, f"SELECT COUNT(*) AS n FROM retail.lineitems l JOIN {swapped} ON "
               "l.order_id = o.customer_id") == [210]
    _refused(reader, f"SELECT COUNT(*) AS n FROM retail.customers c JOIN {swapped} ON "
             "c.customer_id = o.customer_id", "must equate their privacy units")
    _refused(reader, f"SELECT order_id, COUNT(*) AS n FROM {swapped} GROUP BY order_id",
             "uses the privacy unit's id")
    lines = "(SELECT part_id, order_id FROM retail.lineitems) AS l (order_id, part_id)"
    _refused(reader, f"SELECT COUNT(*) AS n FROM {lines} JOIN retail.orders o ON "
             "l.order_id = o.order_id", "join them on exactly that")
    assert _l1(reader, f"SELECT COUNT(*) AS n FROM {lines} JOIN retail.orders o ON "
               "l.part_id = o.order_id") == [210]
