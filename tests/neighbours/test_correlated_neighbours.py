"""Correlated filters through references (EXISTS, NOT EXISTS, IN on orders.order_id, and
per-key aggregates inside IN), checked on neighbouring data sets.

The pairs are those of ``test_join_neighbours.py``: the data sets differ in one customer
X and every row of X in every table, including every order_items row reached through one
of X's orders (the privacy model of docs/sql.md: the items of an order that two customers
claim belong to both).

- The extreme pair: X has 180 orders (max_ids 20) with 5 items of amount 500 on each, so
  every filter below keeps all of X's orders: truncation after the filter must hold X to
  20 rows.
- The hostile pair: X owns only orders whose order_id one of 100 other customers Y already
  has, each with 10 items of amount 500 (a broken foreign key). Without X those items are
  gone with X's orders; with X, the order_ids belong to two customers and must match
  nothing. Were they trusted, each Y's order would be kept (EXISTS, IN) or dropped
  (NOT EXISTS) by X's items: 100 rows of other persons moved by X, against a bound of 20.

Each query is run many times on both data sets; ``tests/neighbours/harness.py`` fails if an
outcome bucket is seen more often on one side than the charge allows (Clopper-Pearson,
family-wise false alarm < 1e-6). The bucket is how far the released count is from the
exact count without X, in the direction X moves it: within the bound (20), beyond it, or
beyond half of what X moves the exact answer (plain DuckDB, no truncation, broken keys
trusted).

The ``-multi`` queries add a second condition on the outer row (``i.level <=
LENGTH(o.channel)``), planned as a correlated EXISTS by ``dpsql.plan.correlated``.

Power, checked by hand on a copy of dpsql: with the filter that keeps only order_ids owned
by one customer left out of the semi-join (``setops.owned_once``), the three hostile tests
fail; with the semi-join's relation marked bounded (no truncation after it), the three
extreme tests fail. For the ``-multi`` queries: with ``owned_once`` left out of
``correlated.semi_join_on``, both hostile ``-multi`` tests fail.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tests.neighbours.harness import attack
from tests.neighbours.test_join_neighbours import (DELTA, EPSILON, RUNS, X, Pair, _add, _l1,
                                                   _level, _shop_base, _shop_with,
                                                   _without_customer)
from tests.paths import DATA

pytestmark = pytest.mark.filterwarnings("ignore:dpsql. no budget set")
BOUND = 20                  # shop.orders.max_ids: the most rows X may add to a count
HOSTILE_YS = 100


@pytest.fixture(scope="module")
def extreme():
    with_x = _shop_with(_shop_base())
    return Pair(with_x, _without_customer(with_x, X), DATA / "shop.yaml")


def _shop_hostile(frames: dict) -> dict:
    """X claims one order_id of each of 100 customers Y, with 10 items of 500 on each."""
    out = dict(frames)
    orders = frames["shop.orders"]
    ids = orders.drop_duplicates("customer_id").order_id.head(HOSTILE_YS).tolist()
    _add(out, "shop.customers", pd.DataFrame({"customer_id": [X], "region": ["rare"]}))
    _add(out, "shop.orders", pd.DataFrame({"order_id": ids, "customer_id": X, "channel": "web"}))
    _add(out, "shop.order_items", pd.DataFrame({"order_id": np.repeat(ids, 10), "amount": 500.0,
                                                "level": 3}))
    return out


@pytest.fixture(scope="module")
def hostile():
    with_x = _shop_hostile(_shop_base())
    return Pair(with_x, _without_customer(with_x, X), DATA / "shop.yaml")


def _check_count(pair: Pair, sql: str, exact_sql: str | None = None):
    """Attack a one-row ``COUNT(*) AS n`` query: X may move it by ``BOUND`` (charged
    L1 = BOUND) in either direction; the exact shift X causes must be at least 4 times
    that, so that a bound that does not hold can show."""
    exact_sql = exact_sql or sql
    assert _l1(pair, sql) == [BOUND]
    base = float(pair.exact("without", exact_sql).n[0])
    shift = float(pair.exact("with X", exact_sql).n[0]) - base
    assert abs(shift) >= 4 * BOUND, f"X moves the exact answer by {shift} only"
    sign = 1.0 if shift > 0 else -1.0
    steps = tuple(sorted({BOUND, abs(shift) / 2}))

    def bucket(df):
        return _level(sign * (float(df.n[0]) - base), 0.0, steps)
    a, b = attack(pair.readers, sql, bucket, runs=RUNS, buckets=5)
    for side in (a, b):
        assert side.epsilon == pytest.approx(EPSILON), (side.name, side.epsilon)
        assert side.delta <= DELTA
        assert all(label[0] == "answer" for label in side.counts), dict(side.counts)
    return a, b


EXISTS = ("SELECT COUNT(*) AS n FROM shop.orders o WHERE EXISTS (SELECT * FROM "
          "shop.order_items i WHERE i.order_id = o.order_id AND i.amount > 400)")
NOT_EXISTS = ("SELECT COUNT(*) AS n FROM shop.orders o WHERE NOT EXISTS (SELECT * FROM "
              "shop.order_items i WHERE i.order_id = o.order_id AND i.amount > 400)")
NOT_EXISTS_SMALL = ("SELECT COUNT(*) AS n FROM shop.orders o WHERE NOT EXISTS (SELECT * FROM "
                    "shop.order_items i WHERE i.order_id = o.order_id AND i.amount < 400)")
IN_PER_KEY = ("SELECT COUNT(*) AS n FROM shop.orders WHERE order_id IN (SELECT order_id FROM "
              "shop.order_items GROUP BY order_id HAVING SUM(amount) > 2000)")
IN_PER_KEY_EXACT = ("SELECT COUNT(*) AS n FROM shop.orders WHERE order_id IN (SELECT order_id "
                    "FROM shop.order_items GROUP BY order_id HAVING "
                    "SUM(LEAST(GREATEST(amount, 0), 500)) > 2000)")

# several conditions on the outer row, tied to its person by the order's key
# (dpsql.plan.correlated): the further condition reads the outer order's channel
EXISTS_MULTI = ("SELECT COUNT(*) AS n FROM shop.orders o WHERE EXISTS (SELECT * FROM "
                "shop.order_items i WHERE i.order_id = o.order_id AND i.amount > 400 "
                "AND i.level <= LENGTH(o.channel))")
NOT_EXISTS_MULTI = ("SELECT COUNT(*) AS n FROM shop.orders o WHERE NOT EXISTS (SELECT * FROM "
                    "shop.order_items i WHERE i.order_id = o.order_id AND i.amount {op} 400 "
                    "AND i.level <= LENGTH(o.channel))")


# -- the extreme customer: truncation after the filter ----------------------------------

@pytest.mark.parametrize("sql, exact", [(EXISTS, None), (NOT_EXISTS_SMALL, None),
                                        (IN_PER_KEY, IN_PER_KEY_EXACT), (EXISTS_MULTI, None),
                                        (NOT_EXISTS_MULTI.format(op="<"), None)],
                         ids=["exists", "not-exists", "in-per-key", "exists-multi",
                              "not-exists-multi"])
def test_correlated_filter_keeps_the_outer_bound(extreme, sql, exact):
    # X's 180 orders all pass each filter; the count is charged max_ids = 20
    _check_count(extreme, sql, exact)


# -- the hostile customer: another customer's order_id -----------------------------------

@pytest.mark.parametrize("sql, exact", [(EXISTS, None), (NOT_EXISTS, None),
                                        (IN_PER_KEY, IN_PER_KEY_EXACT), (EXISTS_MULTI, None),
                                        (NOT_EXISTS_MULTI.format(op=">"), None)],
                         ids=["exists", "not-exists", "in-per-key", "exists-multi",
                              "not-exists-multi"])
def test_an_order_id_of_another_customer_moves_no_one_else(hostile, sql, exact):
    """Trusting the broken keys would keep (EXISTS, IN) or drop (NOT EXISTS) 100 orders of
    other customers when X is there; the exact answer (which trusts them) moves by at
    least 100, the release by no more than X's own 20 rows allow."""
    a, b = _check_count(hostile, sql, exact)
    assert abs(float(hostile.exact("with X", exact or sql).n[0])
               - float(hostile.exact("without", exact or sql).n[0])) >= HOSTILE_YS
