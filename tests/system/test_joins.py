"""Joins, semi-joins and UNION ALL: answers at large epsilon against plain DuckDB, the
contribution bounds read off the plan, and refusals that cost nothing.

Data: clinic.persons + clinic.visits + clinic.visits_archive (the same persons, by
pid), PUMS.PUMS with the public PUMS.EDUC_LEVELS, and the three-table shop whose
order_items reach their customer through orders (references).
"""
from __future__ import annotations

import math

import duckdb
import pandas as pd
import pytest

import dpsql

from tests.paths import DATA, SHOP_TABLES

pytestmark = pytest.mark.filterwarnings("ignore:dpsql. no budget set")

CLINIC = {"clinic.persons": "persons.csv", "clinic.visits": "visits.csv",
          "clinic.visits_archive": "visits_archive.csv"}
SHOP = SHOP_TABLES          # table -> CSV path (DATA / path is the path itself)
PUMS = {"PUMS.PUMS": "PUMS.csv", "PUMS.EDUC_LEVELS": "educ_levels.csv"}
SETS = {"clinic": (CLINIC, "clinic.yaml"), "shop": (SHOP, "shop.yaml"),
        "pums": (PUMS, "PUMS_lookup.yaml")}


def _reader(name, epsilon=1e5, **kw):
    files, meta = SETS[name]
    return dpsql.from_df({t: DATA / f for t, f in files.items()}, DATA / meta,
                         privacy=dpsql.Privacy(epsilon=epsilon, delta=1e-9), **kw)


@pytest.fixture(scope="module")
def truth():
    con = duckdb.connect()
    for files, _ in SETS.values():
        for table, f in files.items():
            schema, name = table.split(".")
            con.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
            con.execute(f"CREATE TABLE \"{schema}\".\"{name}\" AS SELECT * FROM read_csv('{DATA / f}', "
                        "all_varchar = true)")
    # The metadata's types: ints and floats as numbers, the rest as text.
    for stmt in ["ALTER TABLE clinic.persons ALTER pid TYPE BIGINT",
                 "ALTER TABLE clinic.persons ALTER birth_year TYPE BIGINT",
                 "ALTER TABLE clinic.visits ALTER pid TYPE BIGINT",
                 "ALTER TABLE clinic.visits ALTER cost TYPE DOUBLE",
                 "ALTER TABLE clinic.visits_archive ALTER pid TYPE BIGINT",
                 "ALTER TABLE clinic.visits_archive ALTER cost TYPE DOUBLE",
                 "ALTER TABLE shop.customers ALTER customer_id TYPE BIGINT",
                 "ALTER TABLE shop.orders ALTER order_id TYPE BIGINT",
                 "ALTER TABLE shop.orders ALTER customer_id TYPE BIGINT",
                 "ALTER TABLE shop.order_items ALTER order_id TYPE BIGINT",
                 "ALTER TABLE shop.order_items ALTER amount TYPE DOUBLE",
                 "ALTER TABLE shop.order_items ALTER level TYPE BIGINT",
                 "ALTER TABLE shop.levels ALTER level TYPE BIGINT",
                 "ALTER TABLE PUMS.PUMS ALTER income TYPE BIGINT"]:
        con.execute(stmt)
    return con


def _close(got, want, rel=0.02, abs_=3.0):
    if isinstance(want, str) or want is None:
        return got == want
    return math.isclose(float(got), float(want), rel_tol=rel, abs_tol=abs_)


def _same(reader, con, sql, exact_sql=None, rel=0.02, abs_=3.0):
    df = reader.execute_df(sql)
    want = con.execute(exact_sql or sql).fetchall()
    got = [tuple(r) for r in df.itertuples(index=False, name=None)]
    want = sorted(want, key=lambda r: tuple(str(v) for v in r))
    got = sorted(got, key=lambda r: tuple(str(v) for v in r))
    assert len(got) == len(want), (got, want)
    for g, w in zip(got, want):
        assert all(_close(a, b, rel, abs_) for a, b in zip(g, w)), (g, w)
    return df


# ------------------------------------------------------------------ the issue's queries

ISSUE_QUERIES = [
    ("pums", "SELECT l.level_name, COUNT(*) AS n, AVG(p.income) AS mean_income FROM PUMS.PUMS p "
             "JOIN PUMS.EDUC_LEVELS l ON p.educ = l.educ GROUP BY l.level_name", None),
    ("pums", "SELECT region, COUNT(*) FROM PUMS.PUMS p JOIN (VALUES ('1', 'north'), ('2', 'south')) "
             "AS r(race, region) USING (race) GROUP BY region", None),
    ("clinic", "SELECT p.sex, COUNT(*) AS visits, SUM(v.cost) AS cost FROM clinic.persons p "
               "JOIN clinic.visits v ON p.pid = v.pid GROUP BY p.sex",
     # cost is clamped to its bounds [0, 1000]: the bounded plan's answer
     "SELECT p.sex, COUNT(*), SUM(LEAST(v.cost, 1000)) FROM clinic.persons p "
     "JOIN clinic.visits v ON p.pid = v.pid GROUP BY p.sex"),
    ("clinic", "SELECT COUNT(*) FROM clinic.persons WHERE pid IN (SELECT pid FROM clinic.visits "
               "WHERE cost > 500)", None),
    ("clinic", "SELECT COUNT(*) FROM clinic.persons p LEFT JOIN clinic.visits v ON p.pid = v.pid "
               "WHERE v.pid IS NULL", None),
    ("shop", "SELECT o.channel, SUM(i.amount) FROM shop.order_items i JOIN shop.orders o "
             "ON i.order_id = o.order_id GROUP BY o.channel", None),
    ("clinic", "SELECT COUNT(*) AS n FROM (SELECT pid, cost FROM clinic.visits UNION ALL "
               "SELECT pid, cost FROM clinic.visits_archive)", None),
    ("clinic", "SELECT 'visits' AS what, COUNT(*) AS n FROM clinic.visits UNION ALL "
               "SELECT 'persons', COUNT(*) FROM clinic.persons", None),
]


@pytest.mark.parametrize("data, sql, exact", ISSUE_QUERIES, ids=[q[1][:60] for q in ISSUE_QUERIES])
def test_the_issue_queries_answer_within_noise(truth, data, sql, exact):
    _same(_reader(data), truth, sql, exact)


MORE = [
    ("clinic", "SELECT COUNT(*) FROM clinic.persons p WHERE EXISTS (SELECT 1 FROM clinic.visits v "
               "WHERE v.pid = p.pid AND v.cost > 500)",
     "SELECT COUNT(*) FROM clinic.persons WHERE pid IN (SELECT pid FROM clinic.visits WHERE cost > 500)"),
    ("clinic", "SELECT COUNT(*) FROM clinic.persons WHERE pid NOT IN (SELECT pid FROM clinic.visits)", None),
    ("clinic", "SELECT COUNT(*) FROM clinic.persons p WHERE NOT EXISTS (SELECT 1 FROM "
               "clinic.visits v WHERE v.pid = p.pid)",
     "SELECT COUNT(*) FROM clinic.persons WHERE pid NOT IN (SELECT pid FROM clinic.visits)"),
    ("clinic", "SELECT p.sex, COUNT(*) AS n FROM clinic.visits v RIGHT JOIN clinic.persons p "
               "ON p.pid = v.pid GROUP BY p.sex", None),
    ("clinic", "SELECT COUNT(*) AS n, SUM(v.cost) AS c FROM clinic.persons p JOIN clinic.visits v "
               "USING (pid) WHERE p.birth_year < 1970",
     "SELECT COUNT(*) AS n, SUM(LEAST(v.cost, 1000)) AS c FROM clinic.persons p JOIN "
     "clinic.visits v USING (pid) WHERE p.birth_year < 1970"),
    ("clinic", "SELECT AVG(n) AS a FROM (SELECT p.pid, COUNT(*) AS n FROM clinic.persons p "
               "JOIN clinic.visits v ON p.pid = v.pid GROUP BY p.pid)", None),
    ("clinic", "WITH v AS (SELECT pid, cost FROM clinic.visits WHERE cost > 100) "
               "SELECT p.sex, SUM(v.cost) AS s FROM clinic.persons p JOIN v ON v.pid = p.pid "
               "GROUP BY p.sex",
     "SELECT p.sex, SUM(LEAST(v.cost, 1000)) AS s FROM clinic.persons p JOIN clinic.visits v "
     "ON v.pid = p.pid WHERE v.cost > 100 GROUP BY p.sex"),
    ("shop", "SELECT c.region, SUM(i.amount) AS s FROM shop.order_items i JOIN shop.orders o "
             "ON i.order_id = o.order_id JOIN shop.customers c ON o.customer_id = c.customer_id "
             "GROUP BY c.region", None),
    ("shop", "SELECT l.name, COUNT(*) AS n FROM shop.order_items i JOIN shop.orders o "
             "ON i.order_id = o.order_id JOIN shop.levels l ON i.level = l.level GROUP BY l.name",
     None),
    ("shop", "SELECT region, COUNT(*) AS n FROM shop.customers c JOIN shop.orders o "
             "ON o.customer_id = c.customer_id GROUP BY region", None),
    ("shop", "SELECT COUNT(*) AS n, SUM(i.amount) AS s FROM (SELECT order_id, amount FROM "
             "shop.order_items WHERE amount > 10) i JOIN shop.orders o ON i.order_id = o.order_id",
     "SELECT COUNT(*), SUM(amount) FROM shop.order_items WHERE amount > 10"),
    ("clinic", "SELECT COUNT(*) AS n FROM clinic.persons p JOIN clinic.visits v USING (pid) "
               "JOIN clinic.visits_archive a USING (pid)", None),
    ("pums", "SELECT COUNT(*) AS n FROM (SELECT educ FROM PUMS.PUMS UNION ALL SELECT educ FROM "
             "PUMS.PUMS) u JOIN PUMS.EDUC_LEVELS e ON u.educ = e.educ", None),
    ("pums", "SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE educ IN (SELECT educ FROM PUMS.EDUC_LEVELS "
             "WHERE level_name = 'college')", None),
    ("pums", "SELECT COUNT(*) AS n FROM (SELECT age FROM PUMS.PUMS UNION ALL SELECT age FROM PUMS.PUMS)",
     None),
]


@pytest.mark.parametrize("data, sql, exact", MORE, ids=[q[1][:60] for q in MORE])
def test_more_joins_answer_within_noise(truth, data, sql, exact):
    _same(_reader(data), truth, sql, exact)


# ------------------------------------------------------------------ bounds on the plan

def _relation(reader, sql):
    return reader._plan(sql).query.relation


def test_contribution_bounds_of_joined_relations():
    c, s, p = _reader("clinic"), _reader("shop"), _reader("pums")
    rel = _relation(c, "SELECT COUNT(*) FROM clinic.persons p JOIN clinic.visits v ON p.pid = v.pid")
    assert rel.k == 1 * 6 and not rel.bounded                  # product, truncated
    rel = _relation(c, "SELECT COUNT(*) FROM clinic.visits a JOIN clinic.visits_archive b ON a.pid = b.pid")
    assert rel.k == 6 * 4
    rel = _relation(c, "SELECT COUNT(*) FROM (SELECT pid, cost FROM clinic.visits UNION ALL "
                       "SELECT pid, cost FROM clinic.visits_archive)")
    assert rel.k == 6 + 4                                       # sum
    rel = _relation(c, "SELECT COUNT(*) FROM clinic.persons WHERE pid IN (SELECT pid FROM clinic.visits)")
    assert rel.k == 1                                           # a filter
    rel = _relation(s, "SELECT SUM(i.amount) FROM shop.order_items i JOIN shop.orders o "
                       "ON i.order_id = o.order_id")
    assert rel.k == 50 and rel.pid is not None                  # the referencing table's bound
    rel = _relation(s, "SELECT COUNT(*) FROM shop.orders o LEFT JOIN shop.order_items i "
                       "ON i.order_id = o.order_id")
    assert rel.k == 50 + 20                                     # plus the kept side's rows
    rel = _relation(p, "SELECT COUNT(*) FROM PUMS.PUMS p JOIN PUMS.EDUC_LEVELS l ON p.educ = l.educ")
    assert rel.k == 1 and rel.pid is None      # unique public key: still one row per row
    rel = _relation(p, "SELECT COUNT(*) FROM PUMS.PUMS p JOIN PUMS.EDUC_LEVELS l "
                       "ON l.level_name = 'college'")
    assert rel.k == 1 and not rel.bounded and rel.pid is not None   # rows repeat: numbered, truncated


def test_public_key_sets_come_from_the_public_table():
    p = _reader("pums")
    plan = p._plan("SELECT l.level_name, COUNT(*) AS n FROM PUMS.PUMS p JOIN PUMS.EDUC_LEVELS l "
                   "ON p.educ = l.educ GROUP BY l.level_name")
    assert plan.public_keys and plan.threshold is None and plan.cost[1] == 0
    df = p.execute_df("SELECT l.description, COUNT(*) AS n FROM PUMS.PUMS p JOIN PUMS.EDUC_LEVELS l "
                      "ON p.educ = l.educ WHERE p.age > 200 GROUP BY l.description")
    assert len(df) == 16          # every value, absent ones as noisy zeros
    assert p.spent[1] == 0


def test_max_groups_and_rows_per_group_set_the_sensitivity():
    s = _reader("shop", epsilon=1.0)
    plan = s._plan("SELECT channel, COUNT(*) AS n FROM shop.orders GROUP BY channel")
    stat = plan.statistics[0]
    assert stat.l1 == 3 * 10 and stat.l2 == pytest.approx(math.sqrt(3) * 10)
    assert "max_groups=3" in s.explain("SELECT channel, COUNT(*) AS n FROM shop.orders GROUP BY channel")
    ungrouped = s._plan("SELECT COUNT(*) AS n FROM shop.orders").statistics[0]
    assert ungrouped.l1 == 20                                   # max_ids without GROUP BY
    gauss = _reader("shop", epsilon=1.0)
    gauss.privacy = dpsql.Privacy(epsilon=1.0, delta=1e-6, mechanisms=dpsql.Mechanisms(
        map={dpsql.Stat.count: dpsql.Mechanism.gaussian}))
    assert gauss._plan("SELECT channel, COUNT(*) AS n FROM shop.orders GROUP BY channel"
                       ).statistics[0].mechanism.mechanism == dpsql.Mechanism.gaussian


def test_truncation_to_groups_keeps_the_bound_on_the_engine(truth):
    # A customer with 40 orders in each channel: after truncation at most 3 x 10 rows.
    orders = pd.read_csv(DATA / "shop_orders.csv")
    big = pd.DataFrame({"order_id": range(10 ** 6, 10 ** 6 + 120), "customer_id": 1,
                        "channel": ["web", "store", "phone"] * 40})
    frames = {t: pd.read_csv(DATA / f) for t, f in SHOP.items()}
    frames["shop.orders"] = pd.concat([orders[orders.customer_id != 1], big])
    s = dpsql.from_df(frames, DATA / "shop.yaml", privacy=dpsql.Privacy(epsilon=1e6))
    plan = s._plan("SELECT channel, COUNT(*) AS n FROM shop.orders WHERE customer_id = 1 GROUP BY channel")
    exact = s.engine.run(s._sql(plan)[0])
    assert sorted(exact["_s0"].tolist()) == [10, 10, 10]
    plan = s._plan("SELECT channel, COUNT(*) AS n FROM shop.orders WHERE customer_id = 1 "
                   "AND channel <> 'phone' GROUP BY channel")
    assert sorted(s.engine.run(s._sql(plan)[0])["_s0"].tolist()) == [0, 10, 10]


def test_union_all_of_queries_costs_the_sum():
    c = _reader("clinic", epsilon=1.0)
    sql = ("SELECT 'visits' AS what, COUNT(*) AS n FROM clinic.visits UNION ALL "
           "SELECT 'persons', COUNT(*) FROM clinic.persons")
    assert c.get_privacy_cost(sql) == pytest.approx((2.0, 0.0), rel=1e-6)
    assert "each its own release" in c.explain(sql)
    c.execute_df(sql)
    assert c.spent == pytest.approx((2.0, 0.0), rel=1e-6)


def test_explain_shows_joins_and_truncation():
    text = _reader("shop").explain("SELECT o.channel, SUM(i.amount) FROM shop.order_items i "
                                   "JOIN shop.orders o ON i.order_id = o.order_id GROUP BY o.channel")
    assert "join (INNER) i.order_id = o.order_id" in text
    assert "more than one customer_id is dropped" in text
    assert "at most 50 row(s) per person kept" in text
    assert "tables: shop.order_items, shop.orders" in text


# ------------------------------------------------------------------ refusals

REFUSED = [
    ("clinic", "SELECT COUNT(*) FROM clinic.visits a JOIN clinic.visits_archive b ON a.cost = b.cost",
     "must equate their privacy units"),
    ("clinic", "SELECT COUNT(*) FROM clinic.persons p CROSS JOIN clinic.visits v", "must equate"),
    ("clinic", "SELECT COUNT(*) FROM clinic.persons p FULL JOIN clinic.visits v ON p.pid = v.pid",
     "FULL JOIN"),
    ("clinic", "SELECT COUNT(*) FROM clinic.persons p JOIN clinic.visits v ON p.pid = v.pid "
               "OR p.birth_year = v.age", "must equate"),
    ("clinic", "SELECT COUNT(*) FROM clinic.persons p JOIN clinic.visits v ON p.pid = v.pid WHERE "
               "pid > 3", "ambiguous"),
    ("clinic", "SELECT COUNT(*) FROM clinic.persons p JOIN clinic.visits p ON p.pid = p.pid",
     "two tables"),
    ("clinic", "SELECT COUNT(*) FROM clinic.persons WHERE birth_year IN (SELECT age FROM clinic.visits)",
     "privacy unit"),
    ("clinic", "SELECT COUNT(*) FROM clinic.persons p WHERE EXISTS (SELECT 1 FROM clinic.visits v "
               "WHERE v.cost > 900)", "tied to the outer rows"),
    ("clinic", "SELECT COUNT(*) FROM clinic.persons WHERE pid IN (SELECT pid FROM clinic.visits) "
               "OR birth_year > 1990", "AND"),
    ("clinic", "SELECT COUNT(*) FROM (SELECT pid FROM clinic.visits UNION SELECT pid FROM "
               "clinic.persons)", "UNION ALL"),
    ("clinic", "SELECT COUNT(*) FROM (SELECT pid FROM clinic.visits INTERSECT SELECT pid FROM "
               "clinic.persons)", "INTERSECT"),
    ("clinic", "SELECT COUNT(*) FROM (SELECT pid FROM clinic.visits EXCEPT SELECT pid FROM "
               "clinic.persons)", "EXCEPT"),
    ("clinic", "SELECT COUNT(*) FROM (SELECT pid, cost FROM clinic.visits UNION ALL SELECT pid FROM "
               "clinic.persons)", "column"),
    ("clinic", "SELECT COUNT(*) FROM clinic.visits UNION SELECT COUNT(*) FROM clinic.persons",
     "UNION ALL"),
    ("clinic", "SELECT COUNT(*) AS n FROM clinic.visits UNION ALL SELECT COUNT(*), SUM(cost) FROM "
               "clinic.visits", "same number of columns"),
    # order_items alone is joined with orders by the plan (tests/system/test_star_joins.py),
    # which needs the referencing column
    ("shop", "SELECT COUNT(*) FROM (SELECT amount FROM shop.order_items) i",
     "keep order_id among the columns"),
    ("shop", "SELECT COUNT(*) FROM shop.levels", "public tables only"),
    ("shop", "SELECT COUNT(*) FROM shop.levels a JOIN (VALUES (1)) AS v(level) USING (level)",
     "public tables only"),
    ("shop", "SELECT COUNT(*) FROM shop.order_items i JOIN shop.orders o ON i.amount = o.order_id",
     "join them on exactly that"),
    ("shop", "SELECT COUNT(*) FROM shop.levels l LEFT JOIN shop.orders o ON l.level = o.order_id",
     "LEFT JOIN that keeps a public table"),
    ("pums", "SELECT COUNT(*) FROM PUMS.PUMS a JOIN PUMS.PUMS b ON a.age = b.age", "row-privacy"),
    ("pums", "SELECT COUNT(*) FROM PUMS.PUMS p NATURAL JOIN PUMS.EDUC_LEVELS l", "not supported"),
    ("pums", "SELECT COUNT(*) FROM PUMS.PUMS p JOIN (VALUES (1, 'a'), ('x', 'b')) AS r(c, d) "
             "ON p.age = r.c", "mixes"),
]


@pytest.mark.parametrize("data, sql, message", REFUSED, ids=[q[1][:70] for q in REFUSED])
def test_refused_for_free(data, sql, message):
    r = _reader(data, epsilon=1.0)
    with pytest.raises(dpsql.QueryError, match=message):
        r.execute_df(sql)
    with pytest.raises(dpsql.QueryError):
        r.get_privacy_cost(sql)
    assert r.spent == (0.0, 0.0)


def test_a_public_key_found_unique_stays_unique_if_the_table_changes():
    # The plan (cached for the session) skips truncation because the key was unique when it
    # was planned; the plan itself keeps only keys that occur once, so a duplicate added to
    # the public table later cannot repeat a row-privacy row.
    con = duckdb.connect()
    con.execute("CREATE SCHEMA PUMS")
    con.execute(f"CREATE TABLE PUMS.PUMS AS SELECT * FROM read_csv('{DATA / 'PUMS.csv'}', all_varchar = true)")
    con.execute(f"CREATE TABLE PUMS.EDUC_LEVELS AS SELECT * FROM read_csv('{DATA / 'educ_levels.csv'}', all_varchar = true)")
    r = dpsql.from_connection(con, DATA / "PUMS_lookup.yaml", privacy=dpsql.Privacy(epsilon=1e6))
    sql = ("SELECT COUNT(*) AS n FROM PUMS.PUMS p JOIN PUMS.EDUC_LEVELS l ON p.educ = l.educ")
    plan = r._plan(sql)
    assert plan.query.relation.pid is None                       # no truncation possible
    before = int(r.engine.run(r._sql(plan)[0])["_s0"][0])
    assert before == 1000
    educ9 = con.execute("SELECT COUNT(*) FROM PUMS.PUMS WHERE educ = '9'").fetchone()[0]
    con.execute("INSERT INTO PUMS.EDUC_LEVELS SELECT * FROM PUMS.EDUC_LEVELS WHERE educ = '9'")
    after = int(r.engine.run(r._sql(r._plan(sql))[0])["_s0"][0])
    assert after == 1000 - educ9                                 # not 1000 + educ9


def test_threshold_with_group_bounds_uses_groups_and_rows_per_group():
    s = _reader("shop", epsilon=1.0)
    plan = s._plan("SELECT order_id, COUNT(*) AS n FROM shop.orders GROUP BY order_id")
    # The row count: a key that exists only because of one person holds at most 10 of
    # their rows, and they are in at most 3 keys.
    rows = plan.threshold_choice.other
    assert not rows.persons and rows.released and rows.statistic.l1 == 30
    assert rows.tau == pytest.approx(rows.mechanism.threshold(
        max_groups=3, delta=rows.delta) + 10 - 1)
    # The count of distinct persons: 1 per key, in at most 3 keys, no shift; its noise
    # needs fewer persons than the row count's needs rows, so it decides.
    assert plan.threshold is not None and plan.threshold.persons and plan.threshold.l1 == 3
    assert plan.tau == pytest.approx(plan.threshold.mechanism.threshold(
        max_groups=3, delta=plan.threshold_delta))
    assert plan.tau < rows.tau - (10 - 1)


def test_qualified_star_selects_that_table_only():
    """Second hostile review (a SQL bug, not a leak): p.* in a join also gave v's columns."""
    reader = _reader("clinic")
    inner = "FROM clinic.persons p JOIN clinic.visits v ON p.pid = v.pid"
    plan = reader._plan(f"SELECT COUNT(*) AS n FROM (SELECT p.* {inner}) q")
    names = [f.name for f in plan.query.relation.visible()]
    assert "department" not in names and "sex" in names, names
    with pytest.raises(dpsql.QueryError, match="unknown column department"):
        reader.execute_df(f"SELECT department, COUNT(*) AS n FROM (SELECT p.* {inner}) q "
                          "GROUP BY department")
    assert reader.execute_df(f"SELECT SUM(cost) AS s FROM (SELECT v.* {inner}) q").s[0] > 0
