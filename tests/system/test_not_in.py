"""``NOT IN (SELECT ...)`` and ``NOT EXISTS`` with NULLs (docs/sql.md, "NOT IN and NULLs").

SQL's ``x NOT IN (subquery)`` is true for no row once the subquery holds a NULL, and is
NULL (the row dropped) for a NULL x unless the subquery is empty; ``NOT EXISTS`` keeps a
row whose key is NULL, since a NULL matches nothing. Over public rows dpsql follows SQL
exactly. Over private rows it refuses NOT IN when the subquery's column may be NULL by the
metadata and the query text (one person's NULL would empty the answer), and never keeps a
NULL x (whether the subquery is empty is other persons' business); the privacy side is
tests/neighbours/test_not_in_neighbours.py. Answers at epsilon = 1e5 are compared with
plain DuckDB on the shop data with 40 orders whose order_id is NULL.
"""
from __future__ import annotations

import duckdb
import numpy as np
import pandas as pd
import pytest

import dpsql
from tests.paths import DATA, SHOP_TABLES

pytestmark = pytest.mark.filterwarnings("ignore:dpsql. no budget set", "ignore:dpsql. epsilon=")


@pytest.fixture(scope="module")
def shop():
    frames = {name: pd.read_csv(path) for name, path in SHOP_TABLES.items()}
    orders = frames["shop.orders"].astype({"order_id": "Int64"})
    nulls = pd.DataFrame({"order_id": pd.array([pd.NA] * 40, dtype="Int64"),
                          "customer_id": np.arange(1, 41), "channel": "store"})
    frames["shop.orders"] = pd.concat([orders, nulls], ignore_index=True)
    frames["shop.levels"] = pd.DataFrame({"level": pd.array([1, None], dtype="Int64"),
                                          "name": ["basic", "unknown"]})
    reader = dpsql.from_df(frames, DATA / "shop.yaml",
                           privacy=dpsql.Privacy(epsilon=1e5, delta=1e-6))
    con = duckdb.connect()
    con.execute("CREATE SCHEMA shop")
    for name, frame in frames.items():
        con.register("_f", frame)
        con.execute(f"CREATE TABLE {name} AS SELECT * FROM _f")
        con.unregister("_f")
    yield reader, con
    con.close()


def _same(shop, sql: str) -> None:
    reader, con = shop
    got, want = float(reader.execute_df(sql).n[0]), float(con.sql(sql).df().n[0])
    assert got == pytest.approx(want, abs=0.5), (sql, got, want)


@pytest.mark.parametrize("sql", [
    # a public subquery with a NULL: SQL's NOT IN keeps no row
    "SELECT COUNT(*) AS n FROM shop.order_items WHERE level NOT IN (SELECT level FROM shop.levels)",
    "SELECT COUNT(*) AS n FROM shop.order_items WHERE level NOT IN "
    "(SELECT v FROM (VALUES (3), (NULL)) AS t(v))",
    # NOT EXISTS keeps the orders whose order_id is NULL (they match nothing)
    "SELECT COUNT(*) AS n FROM shop.orders o WHERE NOT EXISTS (SELECT 1 FROM shop.order_items i "
    "WHERE i.order_id = o.order_id AND i.amount > 200)",
])
def test_nulls_count_as_in_sql(shop, sql):
    _same(shop, sql)


def test_not_in_over_a_nullable_private_column_is_refused_for_free(shop):
    reader, _ = shop
    sql = ("SELECT COUNT(*) AS n FROM shop.orders WHERE order_id NOT IN "
           "(SELECT order_id FROM shop.orders WHERE channel = 'web'{})")
    before = reader.spent
    with pytest.raises(dpsql.QueryError, match="may be NULL .* Write NOT EXISTS"):
        reader.execute_df(sql.format(""))
    assert reader.spent == before
    # the query text can say there is no NULL; the NULL order_ids are dropped, as in SQL
    _same(shop, sql.format(" AND order_id IS NOT NULL"))
    # so can the metadata
    meta = dpsql.Metadata.load(DATA / "shop.yaml").to_dict()
    meta["shop"]["shop"]["orders"]["order_id"]["nullable"] = False
    declared = dpsql.from_df(dict(SHOP_TABLES), meta, privacy=dpsql.Privacy(epsilon=1.0))
    declared.explain(sql.format(""))
