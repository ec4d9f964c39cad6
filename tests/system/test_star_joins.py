"""Star-schema joins: comma joins, the joins the plan adds along ``references``, and the
work bound of a join through a reference (dpsql/plan/comma.py, paths.py, references.py).

Answers at epsilon = 1e5 are compared with plain DuckDB (the ``plain`` fixture) on the
shop and the retail star schema, whose persons all stay within their bounds (at most
38 items per shop customer against 50, 145 lineitems per retail customer against 210),
so the bounded answer is the exact one; where the plan's bounded semantics differ from
plain SQL (a key repeated in the referenced table), the test states them.
"""
from __future__ import annotations

import duckdb
import numpy as np
import pandas as pd
import pytest

import dpsql

pytestmark = pytest.mark.filterwarnings("ignore:dpsql. no budget set",
                                        "ignore:dpsql. epsilon=")

PRIVACY = dpsql.Privacy(epsilon=1e5, delta=1e-6)


@pytest.fixture(scope="module")
def shop(shop_reader):
    return shop_reader(privacy=PRIVACY)


@pytest.fixture(scope="module")
def retail(retail_reader):
    return retail_reader(privacy=PRIVACY)


def _same(got: pd.DataFrame, want: pd.DataFrame, rel: float = 1e-4) -> None:
    """Equal up to the noise of epsilon = 1e5 (a relative 1e-4, at least 0.5 absolute)."""
    assert list(got.columns) == list(want.columns)
    assert len(got) == len(want), (got, want)
    for col in got.columns:
        for a, b in zip(got[col], want[col]):
            if isinstance(b, str):
                assert a == b
            else:
                assert float(a) == pytest.approx(float(b), rel=rel, abs=0.5), (col, got, want)


# ------------------------------------------------------------------ comma joins

SHOP_COMMA = [
    # (comma form, the explicit JOIN form it stands for)
    ("SELECT c.region, SUM(i.amount) AS s FROM shop.customers c, shop.orders o, "
     "shop.order_items i WHERE c.customer_id = o.customer_id AND o.order_id = i.order_id "
     "GROUP BY c.region ORDER BY c.region",
     "SELECT c.region, SUM(i.amount) AS s FROM shop.customers c JOIN shop.orders o ON "
     "c.customer_id = o.customer_id JOIN shop.order_items i ON o.order_id = i.order_id "
     "GROUP BY c.region ORDER BY c.region"),
    ("SELECT o.channel, COUNT(*) AS n FROM shop.order_items i, shop.orders o "
     "WHERE i.amount > 100 AND i.order_id = o.order_id GROUP BY o.channel ORDER BY o.channel",
     "SELECT o.channel, COUNT(*) AS n FROM shop.order_items i JOIN shop.orders o "
     "ON i.order_id = o.order_id WHERE i.amount > 100 GROUP BY o.channel ORDER BY o.channel"),
    # mixed with an explicit JOIN and a public table
    ("SELECT l.name, SUM(i.amount) AS s FROM shop.order_items i JOIN shop.orders o "
     "ON i.order_id = o.order_id, shop.levels l WHERE (l.level = i.level) GROUP BY l.name "
     "ORDER BY l.name",
     "SELECT l.name, SUM(i.amount) AS s FROM shop.order_items i JOIN shop.orders o "
     "ON i.order_id = o.order_id JOIN shop.levels l ON l.level = i.level GROUP BY l.name "
     "ORDER BY l.name"),
    # unqualified names that only one table has, and a filter that stays in WHERE
    ("SELECT COUNT(*) AS n FROM shop.orders, shop.customers WHERE "
     "orders.customer_id = customers.customer_id AND (region = 'west' OR channel = 'web')",
     "SELECT COUNT(*) AS n FROM shop.orders JOIN shop.customers ON "
     "orders.customer_id = customers.customer_id WHERE (region = 'west' OR channel = 'web')"),
]

RETAIL_COMMA = [
    ("SELECT p.brand, COUNT(*) AS n, SUM(l.quantity) AS q FROM retail.lineitems l, "
     "retail.orders o, retail.parts p WHERE l.order_id = o.order_id AND p.part_id = l.part_id "
     "GROUP BY p.brand ORDER BY p.brand",
     "SELECT p.brand, COUNT(*) AS n, SUM(l.quantity) AS q FROM retail.lineitems l JOIN "
     "retail.orders o ON l.order_id = o.order_id JOIN retail.parts p ON p.part_id = l.part_id "
     "GROUP BY p.brand ORDER BY p.brand"),
    ("SELECT c.segment, COUNT(*) AS n, SUM(l.price) AS s FROM retail.customers c, "
     "retail.orders o, retail.lineitems l WHERE c.customer_id = o.customer_id AND "
     "o.order_id = l.order_id GROUP BY c.segment ORDER BY c.segment",
     "SELECT c.segment, COUNT(*) AS n, SUM(l.price) AS s FROM retail.customers c JOIN "
     "retail.orders o ON c.customer_id = o.customer_id JOIN retail.lineitems l ON "
     "o.order_id = l.order_id GROUP BY c.segment ORDER BY c.segment"),
    ("SELECT n.region, SUM(l.quantity) AS q FROM retail.customers c JOIN retail.nations n "
     "ON c.nation_key = n.nation_key, retail.orders o, retail.lineitems l WHERE "
     "o.customer_id = c.customer_id AND l.order_id = o.order_id AND l.return_flag = 'R' "
     "GROUP BY n.region ORDER BY n.region",
     "SELECT n.region, SUM(l.quantity) AS q FROM retail.customers c JOIN retail.nations n "
     "ON c.nation_key = n.nation_key JOIN retail.orders o ON o.customer_id = c.customer_id "
     "JOIN retail.lineitems l ON l.order_id = o.order_id WHERE l.return_flag = 'R' "
     "GROUP BY n.region ORDER BY n.region"),
]


def _bounded_plan(reader, sql: str) -> str:
    return "\n".join(reader._sql(reader._plan(sql)))


@pytest.mark.parametrize("comma, explicit", SHOP_COMMA, ids=range(len(SHOP_COMMA)))
def test_shop_comma_joins_plan_as_the_inner_joins(shop, plain, comma, explicit):
    assert _bounded_plan(shop, comma) == _bounded_plan(shop, explicit)
    _same(shop.execute_df(comma), plain.sql(comma).df())


@pytest.mark.parametrize("comma, explicit", RETAIL_COMMA, ids=range(len(RETAIL_COMMA)))
def test_retail_comma_joins_plan_as_the_inner_joins(retail, plain, comma, explicit):
    assert _bounded_plan(retail, comma) == _bounded_plan(retail, explicit)
    _same(retail.execute_df(comma), plain.sql(comma).df())


@pytest.mark.parametrize("sql, message", [
    ("SELECT COUNT(*) AS n FROM shop.customers c, shop.orders o", "must equate"),
    ("SELECT COUNT(*) AS n FROM shop.customers c, shop.orders o WHERE "
     "c.customer_id = o.customer_id OR c.region = o.channel", "must equate"),
    ("SELECT COUNT(*) AS n FROM shop.customers c, shop.orders o WHERE "
     "c.customer_id = o.order_id", "must equate"),
    ("SELECT COUNT(*) AS n FROM shop.orders o, shop.order_items i WHERE "
     "i.order_id + 0 = o.order_id", "join them on exactly that"),
])
def test_comma_join_without_an_equality_on_the_person_is_refused_for_free(shop_reader, sql,
                                                                          message):
    shop = shop_reader(privacy=PRIVACY)
    with pytest.raises(dpsql.QueryError, match=message):
        shop.explain(sql)
    with pytest.raises(dpsql.QueryError, match=message):
        shop.execute_df(sql)
    assert shop.spent == (0.0, 0.0)


def test_what_stays_in_where(shop):
    """An equality of one table's columns, an OR, a comparison other than = and an
    equality with an item joined by an explicit JOIN stay in WHERE (as DuckDB filters)."""
    from dpsql.frontend.parse import parse_query
    from dpsql.plan.comma import comma_joins
    items = [({"a"}, {"x", "y"}), ({"b"}, {"x", "z"}), ({"c"}, {"w"})]
    tree = parse_query("SELECT COUNT(*) FROM a, b JOIN c ON c.w = b.z WHERE a.x = a.y "
                       "AND (a.x = b.x OR a.y = b.z) AND a.y < b.z AND a.y = c.w AND x = z "
                       "AND y = b.z")
    out, order = comma_joins(tree, items)
    assert order == [0, 1, 2]
    assert out.sql() == ("SELECT COUNT(*) FROM a JOIN b ON y = b.z JOIN c ON c.w = b.z "
                         "WHERE a.x = a.y AND (a.x = b.x OR a.y = b.z) AND a.y < b.z "
                         "AND a.y = c.w AND x = z")
    # x is ambiguous (a and b both have it); nothing moves below a RIGHT JOIN
    tree = parse_query("SELECT COUNT(*) FROM a, b RIGHT JOIN c ON c.w = b.z WHERE a.y = b.z")
    assert comma_joins(tree, items) == (tree, [0, 1, 2])


def test_right_join_after_a_comma_join_keeps_the_where(plain):
    """DuckDB reads FROM a, b RIGHT JOIN c as a x (b RIGHT JOIN c): the WHERE equality of a
    and b drops c's unmatched rows, which an ON below the RIGHT JOIN would keep."""
    sql = ("SELECT COUNT(*) AS n FROM (VALUES (1), (2)) AS a(x), (VALUES (1), (3)) AS b(x) "
           "RIGHT JOIN (VALUES (1), (5)) AS c(x) ON c.x = b.x WHERE a.x = b.x")
    assert int(plain.sql(sql).fetchall()[0][0]) == 1
    from dpsql.frontend.parse import parse_query
    from dpsql.plan.comma import comma_joins
    tree = parse_query(sql)
    items = [({"a"}, {"x"}), ({"b"}, {"x"}), ({"c"}, {"x"})]
    assert comma_joins(tree, items)[0].sql() == tree.sql()



# FROM lists in any order: joined along the WHERE equalities (issue 34)
FIVE = ("SELECT n.region, p.brand, COUNT(*) AS n, SUM(l.quantity) AS q FROM {} WHERE "
        "p.part_id = l.part_id AND l.order_id = o.order_id AND o.customer_id = c.customer_id "
        "AND c.nation_key = n.nation_key GROUP BY n.region, p.brand ORDER BY n.region, p.brand")
FIVE_ITEMS = ["retail.parts p", "retail.nations n", "retail.lineitems l", "retail.orders o",
              "retail.customers c"]


def test_a_from_list_in_any_order_joins_along_its_equalities(retail, plain):
    """Written orders of the five tables (every fifth of the 120) plan the same joins (no
    CROSS JOIN: the public tables are not crossed first) at the same cost, and answer as
    DuckDB does."""
    import itertools
    orders = list(itertools.permutations(FIVE_ITEMS))[::5]
    want = plain.sql(FIVE.format(", ".join(FIVE_ITEMS))).df()
    costs = set()
    for i, written in enumerate(orders):
        sql = FIVE.format(", ".join(written))
        text = retail.explain(sql)
        assert "join (CROSS)" not in text, (written, text)
        costs.add(retail.get_privacy_cost(sql))
        if i % 8 == 0:
            _same(retail.execute_df(sql), want)
    assert len(costs) == 1


def test_written_order_stays_when_it_is_already_joined_and_columns_keep_it(retail, plain):
    """An item joined to none stays a CROSS JOIN, after those that are joined; ``SELECT *``
    of a reordered FROM list lists the columns in written order."""
    text = retail.explain("SELECT COUNT(*) AS n FROM retail.nations n, retail.lineitems l, "
                          "retail.parts p WHERE p.part_id = l.part_id")
    assert "join (INNER) l.part_id = p.part_id" in text
    assert "join (CROSS)" in text and text.index("(INNER)") < text.index("(CROSS)")
    sql = ("SELECT a, b, COUNT(*) AS n FROM (SELECT * FROM retail.parts p, retail.nations n, "
           "retail.lineitems l WHERE p.part_id = l.part_id AND l.part_id < 3) AS t(a, b) "
           "GROUP BY a, b ORDER BY a, b")
    got = retail.execute_df(sql)       # every public (a, b) is a group; the rows are in two
    _same(got[got.n > 0.5].reset_index(drop=True), plain.sql(sql).df())


def test_an_equality_common_to_every_branch_of_an_or_joins(retail, plain):
    """(TPC-H Q19's form) The equality each branch repeats is the join; the OR stays in
    WHERE whole. Written in either column order."""
    sql = ("SELECT COUNT(*) AS n, SUM(l.price) AS s FROM retail.lineitems l, retail.parts p "
           "WHERE (p.part_id = l.part_id AND p.brand = 'Brand#12' AND l.quantity < 10) OR "
           "(l.part_id = p.part_id AND p.brand = 'Brand#23' AND l.quantity BETWEEN 10 AND 20)")
    text = retail.explain(sql)
    assert "join (INNER) l.part_id = p.part_id" in text and "join (CROSS)" not in text
    _same(retail.execute_df(sql), plain.sql(sql).df())


def test_an_or_without_a_common_equality_stays_a_cross_join(shop_reader):
    shop = shop_reader(privacy=PRIVACY)
    sql = ("SELECT COUNT(*) AS n FROM shop.customers c, shop.orders o WHERE "
           "(c.customer_id = o.customer_id AND c.region = 'west') OR "
           "(c.customer_id = o.customer_id + 1 AND o.channel = 'web')")
    with pytest.raises(dpsql.QueryError, match="must equate"):
        shop.execute_df(sql)
    assert shop.spent == (0.0, 0.0)

# ------------------------------------------------------------------ joins the plan adds

SHOP_ALONE = [
    "SELECT SUM(amount) AS s FROM shop.order_items WHERE amount > 100",
    "SELECT COUNT(*) AS n FROM shop.order_items",
    "SELECT level, COUNT(*) AS n, SUM(amount) AS s FROM shop.order_items GROUP BY level "
    "ORDER BY level",
    "SELECT l.name, COUNT(*) AS n FROM shop.order_items i JOIN shop.levels l "
    "ON i.level = l.level GROUP BY l.name ORDER BY l.name",
    "SELECT COUNT(*) AS n, SUM(amount) AS s FROM (SELECT order_id, amount FROM "
    "shop.order_items WHERE amount > 10) i",
    "WITH big AS (SELECT * FROM shop.order_items WHERE amount > 100) SELECT COUNT(*) AS n FROM big",
]

RETAIL_ALONE = [
    "SELECT return_flag, COUNT(*) AS n, SUM(price) AS s FROM retail.lineitems "
    "GROUP BY return_flag ORDER BY return_flag",
    "SELECT p.brand, COUNT(*) AS n FROM retail.lineitems l, retail.parts p "
    "WHERE p.part_id = l.part_id GROUP BY p.brand ORDER BY p.brand",
    "SELECT AVG(discount) AS d, SUM(quantity) AS q FROM retail.lineitems "
    "WHERE ship_date >= DATE '1996-01-01' AND return_flag = 'R'",
]


@pytest.mark.parametrize("sql", SHOP_ALONE, ids=range(len(SHOP_ALONE)))
def test_order_items_alone_reach_their_person_through_orders(shop, plain, sql):
    _same(shop.execute_df(sql), plain.sql(sql).df())
    text = shop.explain(sql)
    assert ("join (INNER, added by dpsql) shop.order_items reaches its person through "
            "shop.orders (joined on order_id)") in text
    assert "shop.orders" in text.splitlines()[0]               # tables: ...


@pytest.mark.parametrize("sql", RETAIL_ALONE, ids=range(len(RETAIL_ALONE)))
def test_lineitems_alone_reach_their_person_through_orders(retail, plain, sql):
    _same(retail.execute_df(sql), plain.sql(sql).df())
    assert "retail.lineitems reaches its person through retail.orders (joined on order_id)" \
        in retail.explain(sql)


def test_the_added_join_is_the_one_the_analyst_could_write(shop):
    alone = shop._plan("SELECT COUNT(*) AS n, SUM(amount) AS s FROM shop.order_items")
    joined = shop._plan("SELECT COUNT(*) AS n, SUM(i.amount) AS s FROM shop.order_items i "
                        "JOIN shop.orders o ON i.order_id = o.order_id")
    assert [s.l1 for s in alone.statistics] == [s.l1 for s in joined.statistics]
    assert alone.query.relation.k == joined.query.relation.k == 50
    # only the person's id comes along (hidden), no column of orders
    names = {f.name.lower() for f in alone.query.relation.visible()}
    assert names == {"order_id", "amount", "level"}
    for sql in ("SELECT COUNT(*) FROM shop.order_items WHERE channel = 'web'",
                "SELECT COUNT(*) FROM shop.order_items WHERE customer_id = 1",
                "SELECT COUNT(*) FROM shop.order_items WHERE _dpsql_path1.customer_id = 1"):
        with pytest.raises(dpsql.QueryError):
            shop.explain(sql)


def test_nothing_is_added_when_the_query_joins_the_referenced_table(shop, retail):
    text = shop.explain("SELECT SUM(i.amount) AS s FROM shop.order_items i JOIN shop.orders o "
                        "ON i.order_id = o.order_id")
    assert "added by dpsql" not in text
    text = retail.explain("SELECT c.segment, COUNT(*) AS n FROM retail.customers c, "
                          "retail.orders o, retail.lineitems l WHERE c.customer_id = "
                          "o.customer_id AND o.order_id = l.order_id GROUP BY c.segment")
    assert "added by dpsql" not in text


def test_a_subquery_stays_referencing_for_the_outer_join(shop, plain):
    """Only the released aggregation's relation gets the join: the outer query may still
    join the subquery of order_items with orders itself."""
    sql = ("SELECT o.channel, COUNT(*) AS n FROM (SELECT order_id, amount FROM shop.order_items "
           "WHERE amount > 10) i JOIN shop.orders o ON i.order_id = o.order_id "
           "GROUP BY o.channel ORDER BY o.channel")
    assert "added by dpsql" not in shop.explain(sql)
    _same(shop.execute_df(sql), plain.sql(sql).df())


# ------------------------------------------------------------------ two hops

CHAIN = {"chain": {"chain": {
    "persons": {"max_ids": 1, "pid": {"type": "int", "private_id": True},
                "city": {"type": "string", "values": ["a", "b"]}},
    "accounts": {"max_ids": 3, "account_id": {"type": "int"},
                 "pid": {"type": "int", "references": "chain.persons.pid"}},
    "cards": {"max_ids": 6, "card_id": {"type": "int"},
              "account_id": {"type": "int", "references": "chain.accounts.account_id"}},
    "payments": {"max_ids": 40, "card_id": {"type": "int", "references": "chain.cards.card_id"},
                 "amount": {"type": "float", "lower": 0, "upper": 100}},
}}}


@pytest.fixture(scope="module")
def chain():
    rng = np.random.default_rng(7)
    persons = pd.DataFrame({"pid": range(200), "city": rng.choice(["a", "b"], 200)})
    accounts = pd.DataFrame({"account_id": range(400), "pid": np.repeat(range(200), 2)})
    cards = pd.DataFrame({"card_id": range(800), "account_id": np.repeat(range(400), 2)})
    payments = pd.DataFrame({"card_id": rng.integers(0, 800, 5000),
                             "amount": rng.uniform(0, 100, 5000).round(2)})
    payments = payments[payments.groupby(payments.card_id.map(lambda c: c // 4))
                        .cumcount() < 40]                       # at most 40 per person
    frames = {"chain.persons": persons, "chain.accounts": accounts, "chain.cards": cards,
              "chain.payments": payments}
    con = duckdb.connect()
    con.execute("CREATE SCHEMA chain")
    for name, frame in frames.items():
        con.register("_f", frame)
        con.execute(f"CREATE TABLE {name} AS SELECT * FROM _f")
        con.unregister("_f")
    return dpsql.from_df(frames, CHAIN, privacy=PRIVACY), con


def test_a_path_of_two_hops(chain):
    reader, con = chain
    sql = "SELECT COUNT(*) AS n, SUM(amount) AS s FROM chain.payments WHERE amount > 50"
    _same(reader.execute_df(sql), con.sql(sql).df())
    text = reader.explain(sql)
    assert "chain.payments reaches its person through chain.cards (joined on card_id)" in text
    assert "chain.cards reaches its person through chain.accounts (joined on account_id)" in text
    assert "at most 40 row(s) per person" in text
    # the same with the first hop written: only the second is added
    sql = ("SELECT COUNT(*) AS n FROM chain.payments p, chain.cards c WHERE p.card_id = c.card_id")
    text = reader.explain(sql)
    assert text.count("added by dpsql") == 1
    _same(reader.execute_df(sql), con.sql(sql).df())


# ------------------------------------------------------------------ the work bound

THREE_LEVELS = ("SELECT c.segment, COUNT(*) AS n, SUM(l.price) AS s FROM retail.customers c "
                "JOIN retail.orders o ON c.customer_id = o.customer_id JOIN retail.lineitems l "
                "ON o.order_id = l.order_id GROUP BY c.segment ORDER BY c.segment")


def test_three_levels_within_the_work_limit(retail, plain):
    """customers x orders holds 30 copies of a customer row, but each lineitem meets one
    order row: 30 rows per private row, not 30 x 210 = 6,300."""
    plan = retail._plan(THREE_LEVELS)
    assert plan.query.relation.fanout == 30
    assert plan.query.relation.k == 210
    assert "each lineitems row meets at most 1 row(s) of the other side" in retail.explain(THREE_LEVELS)
    _same(retail.execute_df(THREE_LEVELS), plain.sql(THREE_LEVELS).df())


def test_fanout_counts_the_copies_of_the_referenced_row(shop):
    # orders copied 20 times by a self-join on the person: each item meets 20 order rows
    sql = ("SELECT COUNT(*) AS n FROM shop.orders a JOIN shop.orders b ON a.customer_id = "
           "b.customer_id JOIN shop.order_items i ON i.order_id = a.order_id")
    # a x b holds 20 x 20 rows of a person's 20 orders: 20 per order row, and as many
    # copies of the order row a.order_id names, so an item meets 20 rows
    assert shop._plan(sql).query.relation.fanout == 20
    sql = ("SELECT COUNT(*) AS n FROM shop.order_items i JOIN shop.orders o ON "
           "i.order_id = o.order_id JOIN shop.levels l ON i.level = l.level")
    assert shop._plan(sql).query.relation.fanout == 1


def test_two_tables_through_the_same_referenced_rows_are_refused(shop):
    sql = ("SELECT COUNT(*) AS n FROM shop.orders o JOIN shop.order_items i ON "
           "i.order_id = o.order_id JOIN shop.order_items j ON j.order_id = o.order_id")
    with pytest.raises(dpsql.QueryError, match="earlier joins already match each row of "
                                               "shop.orders"):
        shop.explain(sql)


def test_a_key_held_twice_by_the_referenced_table_is_dropped(shop_tables):
    """The bounded semantics: an order_id in two rows of orders (one customer's, or two
    customers') reaches no one, so a referencing row meets one order row at most."""
    frames = {t: pd.read_csv(p) for t, p in shop_tables.items()}
    orders = frames["shop.orders"]
    twice = orders.order_id.head(50).tolist()
    repeated = orders[orders.order_id.isin(twice)].copy()
    repeated.loc[repeated.index[25:], "customer_id"] += 1      # half to another customer
    frames["shop.orders"] = pd.concat([orders, repeated], ignore_index=True)
    reader = dpsql.from_df(frames, "tests/data/shop.yaml", privacy=PRIVACY)
    items = frames["shop.order_items"]
    kept = items[~items.order_id.isin(twice) & items.order_id.isin(orders.order_id)]
    for sql in ("SELECT COUNT(*) AS n FROM shop.order_items",
                "SELECT COUNT(*) AS n FROM shop.order_items i JOIN shop.orders o "
                "ON i.order_id = o.order_id"):
        assert reader.execute_df(sql).n[0] == pytest.approx(len(kept), abs=0.5)
