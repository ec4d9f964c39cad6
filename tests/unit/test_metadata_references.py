"""dpsql's metadata keys for several tables: public tables, references, max_groups.

The keys are validated in full (every path of references ends at a private_id, without a
cycle) and kept by the model; a query of a table that reaches its person through
another gets the join in its plan, and one of public tables only is refused for free.
"""
from __future__ import annotations

import copy

import pandas as pd
import pytest

import dpsql

from tests.paths import DATA

pytestmark = pytest.mark.filterwarnings("ignore:dpsql. no budget set")


def _doc():
    return dpsql.Metadata.load(DATA / "shop.yaml").to_dict()


def test_the_shop_loads_with_its_keys():
    meta = dpsql.Metadata.load(DATA / "shop.yaml")
    orders = meta.tables["shop.orders"]
    assert orders.column("customer_id").references == "shop.customers.customer_id"
    assert (orders.max_groups, orders.max_rows_per_group) == (3, 10)
    assert meta.tables["shop.levels"].public is True
    assert dpsql.Metadata.load(meta.to_dict()) == meta          # round trip keeps the keys
    assert dpsql.metadata.check(DATA / "shop.yaml") == []


def _problems(edit) -> str:
    doc = copy.deepcopy(_doc())
    edit(doc["shop"]["shop"])
    return "\n".join(dpsql.metadata.check(doc))


@pytest.mark.parametrize("edit, message", [
    (lambda s: s["orders"]["customer_id"].update(references="shop.nope.customer_id"),
     "no such table"),
    (lambda s: s["orders"]["customer_id"].update(references="shop.customers.nope"),
     "no column 'nope'"),
    (lambda s: s["orders"]["customer_id"].update(references="shop.customers.region"),
     "not the private_id"),
    (lambda s: s["orders"]["customer_id"].update(references="shop.order_items.order_id"),
     "cycle"),
    (lambda s: s["orders"]["customer_id"].update(references="shop.levels.level"),
     "public table"),
    (lambda s: s["orders"]["customer_id"].pop("references"), "ends at a table with no private_id"),
    (lambda s: s["levels"].update(max_groups=2), "has no persons"),
    (lambda s: s["levels"]["level"].update(private_id=True), "public table holds no private data"),
    (lambda s: s["customers"]["region"].update(references="shop.orders.order_id"),
     "cannot also reach one"),
    (lambda s: s["orders"]["channel"].update(references="shop.customers.customer_id"),
     "only one column"),
    (lambda s: s["orders"]["customer_id"].update(references="customers"), "does not match"),
    (lambda s: s["orders"].update(max_groups=0), "less than the minimum"),
])
def test_bad_references_are_reported_with_their_path(edit, message):
    problems = _problems(edit)
    assert message in problems, problems
    assert problems.startswith("shop.")            # each problem names its path


def test_a_two_part_reference_resolves_when_unambiguous():
    assert _problems(lambda s: s["orders"]["customer_id"].update(
        references="customers.customer_id")) == ""


def _tiny_shop():
    """A reader over a shop of one order with one item."""
    frames = {"shop.customers": pd.DataFrame({"customer_id": [1, 2], "region": ["n", "s"]}),
              "shop.orders": pd.DataFrame({"order_id": [1], "customer_id": [1], "channel": ["web"]}),
              "shop.order_items": pd.DataFrame({"order_id": [1], "amount": [3.0], "level": [1]}),
              "shop.levels": pd.DataFrame({"level": [1], "name": ["a"]})}
    return dpsql.from_df(frames, DATA / "shop.yaml", privacy=dpsql.Privacy(epsilon=1.0))


@pytest.mark.parametrize("table, message", [
    ("shop.levels", "public tables only"),
])
def test_queries_that_need_a_join_are_refused_for_free(table, message):
    r = _tiny_shop()
    with pytest.raises(dpsql.QueryError, match=message):
        r.execute_df(f"SELECT COUNT(*) AS n FROM {table}")
    assert r.spent == (0.0, 0.0)
    assert r.execute_df("SELECT COUNT(*) AS n FROM shop.customers").shape == (1, 1)


def test_a_table_that_reaches_its_person_through_another_gets_the_join_in_the_plan():
    # order_items.order_id references orders.order_id: the plan joins orders on it
    # (tests/system/test_star_joins.py has the full checks)
    r = _tiny_shop()
    plan = r._plan("SELECT COUNT(*) AS n FROM shop.order_items")
    assert plan.query.relation.k == 50 and plan.query.relation.unit == "person"
    assert "reaches its person through shop.orders (joined on order_id)" in r.explain(
        "SELECT COUNT(*) AS n FROM shop.order_items")


def test_a_table_that_references_the_private_id_is_queried_on_its_own():
    # orders.customer_id references customers.customer_id, the private id: it is the person.
    r = _tiny_shop()
    plan = r._plan("SELECT COUNT(*) AS n FROM shop.orders")
    assert plan.query.relation.pid == "customer_id" and plan.query.relation.k == 20
