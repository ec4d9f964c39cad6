"""BigQuery's differential-privacy syntax (docs/sql.md, "BigQuery's differential-privacy
syntax"): ``SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (...)`` and the per-aggregate
``contribution_bounds_per_group`` / ``contribution_bounds_per_row``.

Answers at epsilon 1e5 are compared with the exact answer of BigQuery's meaning, written
by hand in plain DuckDB over the same CSV files: on BigQuery's own professors table
(tests/data/professors.csv, whose un-noised answers BigQuery's documentation prints) and
on a larger table of the same shape (tests/data/requests.csv), where the metadata's bounds
[0, 100] still clamp each row first and each person has at most max_ids = 6 rows (so
nothing is truncated). Costs, refusals (free, with what to do) and the analyst's
inability to widen anything are checked on PUMS (tests/data/PUMS_pid.*)."""
from __future__ import annotations

import re

import duckdb
import pandas as pd
import pytest

import dpsql
from tests.paths import DATA

pytestmark = pytest.mark.filterwarnings("ignore:dpsql. no budget set",
                                        "ignore:dpsql. epsilon=")
SCHOOL = {"school.professors": DATA / "professors.csv", "school.requests": DATA / "requests.csv"}
SCHOOL_META = DATA / "professors.yaml"
PUMS = {"PUMS.PUMS": DATA / "PUMS_pid.csv"}
PUMS_META = DATA / "PUMS_pid.yaml"
EXACT = dpsql.Privacy(epsilon=1e5, delta=1e-6)
DP = "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS ({}) "


def school(**kw):
    kw.setdefault("privacy", EXACT)
    return dpsql.from_df(dict(SCHOOL), SCHOOL_META, **kw)


def pums(**kw):
    kw.setdefault("privacy", EXACT)
    return dpsql.from_df(dict(PUMS), PUMS_META, **kw)


@pytest.fixture(scope="module")
def plain():
    """Plain DuckDB over the same files, with the metadata's bounds applied by hand."""
    con = duckdb.connect()
    for name, path in {**SCHOOL, **PUMS}.items():
        schema, table = name.split(".")
        con.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
        con.execute(f'CREATE TABLE "{schema}"."{table}" AS SELECT * FROM read_csv_auto(?)',
                    [str(path)])
    return con


def rows(df: pd.DataFrame) -> dict:
    """First column -> the rest, as floats."""
    return {str(r[0]): [float(v) for v in r[1:]] for r in df.itertuples(index=False)}


def close(got: dict, want: dict, tol: float = 0.01):
    assert got.keys() == want.keys(), (got, want)
    for key in want:
        assert got[key] == pytest.approx(want[key], abs=tol, rel=1e-6), (key, got, want)


def sensitivities(reader, sql: str) -> list:
    """(label, L1) of every noisy statistic, from explain."""
    return [(m.group(1), float(m.group(2))) for m in re.finditer(
        r"^  _s\d+ = (.*?): \w+, sensitivity L1=([0-9.e+]+)", reader.explain(sql), re.M)]


# ------------------------------------------------------------------ BigQuery's examples

PROFESSORS = DP.format("epsilon = 1e6, delta = .01, max_groups_contributed = 3, "
                       "privacy_unit_column = id") + "item, {} FROM school.professors GROUP BY item"
"""At epsilon 1e6 the largest noise is the AVG's centred sum, Laplace of scale 2.7e-4
(explain), so an average of two or more rows misses BigQuery's by 0.01 with probability
below exp(-0.02 / 2.7e-4) = 6e-33; the sums and counts are integers with discrete noise of
scale 3e-4 or less, never off by 1 in practice. (At epsilon 1e5 the AVG's scale was 2.7e-3,
exp(-3.7) per average: it failed now and then, 0.0116 against the 0.01 tolerance.)"""


@pytest.mark.parametrize("aggregate, answers", [
    # BigQuery's documented answers "without noise" (aggregate-dp-functions)
    ("COUNT(*, contribution_bounds_per_group => (0, 100)) times_requested",
     {"scissors": 1, "pencil": 4, "pen": 3}),
    ("COUNT(item, contribution_bounds_per_group => (0,100)) times_requested",
     {"scissors": 1, "pencil": 4, "pen": 3}),
    ("SUM(quantity) quantity", {"scissors": 8, "pencil": 144, "pen": 58}),
    ("SUM(quantity, contribution_bounds_per_group => (0,100)) quantity",
     {"scissors": 8, "pencil": 144, "pen": 58}),
    # the average of each professor's average: pencil (24 + (10 + 38) / 2 + 72) / 3 = 40
    ("AVG(quantity) average_quantity", {"scissors": 8, "pencil": 40, "pen": 18.5}),
    ("AVG(quantity, contribution_bounds_per_group => (0,100)) average_quantity",
     {"scissors": 8, "pencil": 40, "pen": 18.5}),
])
def test_bigquerys_documented_answers_without_noise(aggregate, answers):
    got = rows(school().execute_df(PROFESSORS.format(aggregate)))
    close(got, {k: [v] for k, v in answers.items()})


def test_bigquerys_per_row_examples(plain):
    reader = school()
    for aggregate in ("VAR_POP", "STDDEV_POP"):
        got = rows(reader.execute_df(PROFESSORS.format(
            f"{aggregate}(quantity, contribution_bounds_per_row => (0, 50)) v")))
        want = rows(plain.execute(f"SELECT item, {aggregate}(LEAST(GREATEST(quantity, 0), 50)) "
                              "FROM school.professors GROUP BY item").df())
        close(got, want, tol=1.0)
    median = rows(reader.execute_df(PROFESSORS.format(
        "PERCENTILE_CONT(quantity, 0.5, contribution_bounds_per_row => (0,100)) p")))
    # the released median is a data value between the two middle ones (pencil: 24 or 38)
    assert 19 <= median["pen"][0] <= 23 and 24 <= median["pencil"][0] <= 38
    assert median["scissors"] == [8.0]


# ------------------------------------------------------------------ exact answers

PER_UNIT = ("SELECT item, {outer} FROM (SELECT id, item, {inner} FROM school.requests "
            "{where} GROUP BY id, item) GROUP BY item ORDER BY item")
Q = "LEAST(GREATEST(quantity, 0), 100)"          # the metadata's bounds, per row


def test_per_group_bounds_give_the_per_unit_clamped_answer(plain):
    sql = (DP.format("epsilon = 100000, delta = 1e-6") + "item, "
           "COUNT(*, contribution_bounds_per_group => (1, 3)) AS n, "
           "SUM(quantity, contribution_bounds_per_group => (10, 150)) AS s, "
           "AVG(quantity, contribution_bounds_per_group => (20, 60)) AS a, "
           "COUNT(quantity) AS c FROM school.requests WHERE quantity > 5 GROUP BY item")
    exact = PER_UNIT.format(
        outer="SUM(LEAST(GREATEST(n, 1), 3)), SUM(LEAST(GREATEST(s, 10), 150)), "
              "AVG(LEAST(GREATEST(a, 20), 60)), SUM(c)",
        inner=f"COUNT(*) AS n, SUM({Q}) AS s, AVG({Q}) AS a, COUNT(quantity) AS c",
        where="WHERE quantity > 5")
    close(rows(school().execute_df(sql)), rows(plain.execute(exact).df()), tol=0.5)


def test_an_avg_without_bounds_averages_per_unit_averages(plain):
    sql = DP.format("") + "AVG(quantity) AS a FROM school.requests"
    exact = f"SELECT AVG(a) FROM (SELECT id, AVG({Q}) AS a FROM school.requests GROUP BY id)"
    row_level = plain.execute(f"SELECT AVG({Q}) FROM school.requests").fetchone()[0]
    got = school().execute_df(sql).a[0]
    assert got == pytest.approx(plain.execute(exact).fetchone()[0], abs=0.01)
    assert abs(got - row_level) > 0.5          # not dpsql's row-level AVG


def test_per_row_bounds_clamp_each_row_within_the_metadata(plain):
    sql = (DP.format("epsilon = 100000") + "item, VAR_POP(quantity, "
           "contribution_bounds_per_row => (-1e300, 40)) AS v, STDDEV_POP(quantity, "
           "contribution_bounds_per_row => (5, 1e6)) AS sd FROM school.requests GROUP BY item")
    exact = (f"SELECT item, VAR_POP(LEAST({Q}, 40)), STDDEV_POP(GREATEST({Q}, 5)) "
             "FROM school.requests GROUP BY item ORDER BY item")
    close(rows(school().execute_df(sql)), rows(plain.execute(exact).df()), tol=0.5)


def test_the_brief_example_on_pums(plain):
    sql = (DP.format("epsilon = 1e5, delta = 1e-5, max_groups_contributed = 1, "
                     "privacy_unit_column = pid")
           + "sex, AVG(income, contribution_bounds_per_group => (0, 100000)) AS avg_income, "
             "COUNT(*, contribution_bounds_per_group => (0, 1)) AS n FROM PUMS.PUMS GROUP BY sex")
    exact = ("SELECT CAST(sex AS VARCHAR), AVG(LEAST(GREATEST(income, 0), 100000)), COUNT(*) "
             "FROM PUMS.PUMS GROUP BY sex ORDER BY 1")
    close(rows(pums().execute_df(sql)), rows(plain.execute(exact).df()), tol=0.5)


def test_row_level_forms_need_no_privacy_unit_column(plain):
    # COUNT and SUM without bounds (and without AVG) stay row-level: a CTE without the id is
    # fine, as is a row-privacy table
    sql = ("WITH t AS (SELECT age FROM PUMS.PUMS WHERE age > 30) " + DP.format("epsilon = 1e5")
           + "COUNT(*) AS n, SUM(age) AS s FROM t")
    got = pums().execute_df(sql)
    n, s = plain.execute("SELECT COUNT(*), SUM(age) FROM PUMS.PUMS WHERE age > 30").fetchone()
    assert (got.n[0], got.s[0]) == pytest.approx((n, s), abs=0.5)


def test_max_groups_contributed_keeps_m_groups_per_person():
    reader = school()
    sql = (DP.format("max_groups_contributed = {}") + "item, COUNT(*, "
           "contribution_bounds_per_group => (1, 1)) AS persons, SUM(quantity, "
           "contribution_bounds_per_group => (0, 50)) AS s FROM school.requests GROUP BY item")
    one = sql.format(1)
    assert [l1 for _, l1 in sensitivities(reader, one)] == [1.0, 50.0]
    assert "max_groups_contributed = 1: each person adds to at most 1 group" in reader.explain(one)
    # each of the 300 professors is counted in exactly one (random) item
    assert reader.execute_df(one).persons.sum() == 300
    assert [l1 for _, l1 in sensitivities(reader, sql.format(2))] == [2.0, 100.0]
    # without the option: the metadata's bound, one per-person row per item, up to 6 items
    assert [l1 for _, l1 in sensitivities(reader, DP.format("") + sql.split(") ", 1)[1])] == \
        [6.0, 300.0]


def test_max_groups_contributed_on_rows_and_with_metadata_groups():
    reader = school()
    sql = DP.format("max_groups_contributed = {}") + \
        "item, COUNT(*) AS n FROM school.requests GROUP BY item"
    assert "at most 1 group(s) per person and 6 row(s)" in reader.explain(sql.format(1))
    assert "does not tighten the metadata's bound of 6 row(s)" in reader.explain(sql.format(3))
    shop = dpsql.from_df({"shop.customers": DATA / "shop_customers.csv",
                          "shop.orders": DATA / "shop_orders.csv",
                          "shop.order_items": DATA / "shop_order_items.csv",
                          "shop.levels": DATA / "shop_levels.csv"}, DATA / "shop.yaml",
                         privacy=EXACT)
    orders = DP.format("max_groups_contributed = {}") + \
        "channel, COUNT(*) AS n FROM shop.orders GROUP BY channel"
    assert sensitivities(shop, orders.format(2)) == [("COUNT(*)", 20.0)]   # 2 x 10 rows
    assert "does not tighten the metadata's max_groups = 3" in shop.explain(orders.format(5))
    assert sensitivities(shop, orders.format(5)) == [("COUNT(*)", 30.0)]


# ------------------------------------------------------------------ through references

SHOP_PER_CUSTOMER = ("SELECT k, {outer} FROM (SELECT o.customer_id, {key} AS k, {inner} FROM "
                     "shop.order_items i JOIN shop.orders o ON i.order_id = o.order_id{more} "
                     "{where} GROUP BY 1, 2) GROUP BY 1 ORDER BY 1")


@pytest.fixture(scope="module")
def star():
    """The shop and retail star schemas, in dpsql and in plain DuckDB; every person stays
    within the metadata's bounds, so the bounded answer is the exact one."""
    from tests.paths import RETAIL_TABLES, SHOP_TABLES
    con = duckdb.connect()
    for name, path in {**SHOP_TABLES, **RETAIL_TABLES}.items():
        con.execute(f"CREATE SCHEMA IF NOT EXISTS {name.split('.')[0]}")
        con.execute(f"CREATE TABLE {name} AS SELECT * FROM read_csv_auto(?)", [str(path)])
    readers = {"shop": dpsql.from_df(dict(SHOP_TABLES), DATA / "shop.yaml", privacy=EXACT),
               "retail": dpsql.from_df(dict(RETAIL_TABLES), DATA / "retail.yaml", privacy=EXACT)}
    return readers, con


@pytest.mark.parametrize("sql, exact", [
    # order_items reaches its customer through order_id -> shop.orders: per customer
    (DP.format("") + "level, SUM(amount, contribution_bounds_per_group => (0, 300)) AS s, "
     "COUNT(*, contribution_bounds_per_group => (0, 5)) AS n, AVG(amount) AS a "
     "FROM shop.order_items GROUP BY level",
     SHOP_PER_CUSTOMER.format(key="i.level", outer="SUM(LEAST(s, 300)), SUM(LEAST(n, 5)), "
                              "AVG(a)", inner="SUM(i.amount) AS s, COUNT(*) AS n, "
                              "AVG(i.amount) AS a", more="", where="")),
    # the same through a subquery that keeps order_id, and with privacy_unit_column
    (DP.format("privacy_unit_column = customer_id") + "level, SUM(amount, "
     "contribution_bounds_per_group => (0, 300)) AS s FROM (SELECT order_id, level, amount "
     "FROM shop.order_items WHERE amount > 20) t GROUP BY level",
     SHOP_PER_CUSTOMER.format(key="i.level", outer="SUM(LEAST(s, 300))",
                              inner="SUM(i.amount) AS s", more="", where="WHERE i.amount > 20")),
    # joined with a public table
    (DP.format("") + "l.name, SUM(i.amount, contribution_bounds_per_group => (0, 300)) AS s "
     "FROM shop.order_items i JOIN shop.levels l ON i.level = l.level GROUP BY l.name",
     SHOP_PER_CUSTOMER.format(key="l.name", outer="SUM(LEAST(s, 300))", inner="SUM(i.amount) "
                              "AS s", more=" JOIN shop.levels l ON i.level = l.level", where="")),
    # retail: lineitems reach their customer through order_id -> retail.orders
    (DP.format("") + "return_flag, SUM(quantity, contribution_bounds_per_group => (0, 500)) "
     "AS q FROM retail.lineitems GROUP BY return_flag",
     "SELECT return_flag, SUM(LEAST(q, 500)) FROM (SELECT o.customer_id, l.return_flag, "
     "SUM(l.quantity) AS q FROM retail.lineitems l JOIN retail.orders o ON l.order_id = "
     "o.order_id GROUP BY 1, 2) GROUP BY 1 ORDER BY 1"),
])
def test_per_group_bounds_through_references_are_per_person(star, sql, exact):
    readers, con = star
    reader = readers["retail" if "retail." in sql else "shop"]
    got, want = rows(reader.execute_df(sql)), rows(con.execute(exact).df())
    assert got.keys() == want.keys(), (got, want)
    for key in want:      # the noise of epsilon = 1e5 at L1 = 50 x 300: a few units
        assert got[key] == pytest.approx(want[key], abs=0.5, rel=1e-4), (key, got, want)


def test_per_group_bounds_through_references_bound_the_person():
    from tests.paths import SHOP_TABLES
    shop = dpsql.from_df(dict(SHOP_TABLES), DATA / "shop.yaml", privacy=EXACT)
    sql = (DP.format("{}") + "level, SUM(amount, contribution_bounds_per_group => (0, 300)) AS s "
           "FROM shop.order_items GROUP BY level")
    # a customer has at most 50 items (order_items' max_ids), so at most 50 per-person rows
    # (one per level), each clamped to 300; max_groups_contributed = 1 keeps one
    assert sensitivities(shop, sql.format(""))[0][1] == pytest.approx(50 * 300, rel=1e-3)
    assert sensitivities(shop, sql.format("max_groups_contributed = 1"))[0][1] == \
        pytest.approx(300, rel=1e-3)
    assert "per-person aggregation by" in shop.explain(sql.format(""))
    with pytest.raises(dpsql.QueryError, match="select order_id in the CTE or subquery"):
        shop.explain(DP.format("") + "AVG(amount) AS a FROM (SELECT amount FROM "
                     "shop.order_items) t")


# ------------------------------------------------------------------ privacy and cost

def test_options_set_this_querys_privacy_and_are_charged_exactly(tmp_path):
    ledger = tmp_path / "ledger.jsonl"
    reader = pums(privacy=dpsql.Privacy(epsilon=1.0), budget=dpsql.Budget(epsilon=2.0),
                  ledger=str(ledger))
    body = "sex, COUNT(*) AS n, AVG(age) AS a FROM PUMS.PUMS GROUP BY sex"
    sql = DP.format("epsilon = 0.25, delta = 1e-7") + body
    cost = reader.get_privacy_cost(sql)
    assert cost == reader.get_privacy_cost(
        f"SELECT {body}", privacy=dpsql.Privacy(epsilon=0.25, delta=1e-7))
    assert cost[0] == 0.25 and 0 < cost[1] <= 1e-7
    reader.execute_df(sql)
    assert reader.spent == pytest.approx(cost)
    assert reader.privacy.epsilon == 1.0                  # the session's default is unchanged
    reader.execute_df(sql)                                # a replay: free
    assert reader.spent == pytest.approx(cost)
    reader.execute_df(sql.replace("0.25", "0.5"))         # other options: a new release
    assert reader.spent[0] == pytest.approx(0.75)
    table = reader.report()
    assert list(table.epsilon) == pytest.approx([0.25, 0.0, 0.5])
    assert table["query"][0].startswith("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS "
                                        "(epsilon = 0.25, delta = 1e-07) sex")
    with pytest.raises(dpsql.BudgetExceededError):        # the budget holds
        reader.execute_df(DP.format("epsilon = 5") + body)
    assert reader.spent[0] == pytest.approx(0.75)


def test_options_in_a_zcdp_session_are_refused():
    reader = pums(privacy=dpsql.Privacy(rho=0.01))
    with pytest.raises(dpsql.QueryError, match="sizes queries in rho"):
        reader.execute_df(DP.format("epsilon = 1") + "COUNT(*) FROM PUMS.PUMS")
    reader.explain(DP.format("privacy_unit_column = pid") + "COUNT(*) FROM PUMS.PUMS")
    assert reader.spent == (0.0, 0.0)


def test_dbapi_and_cli_read_the_options(tmp_path):
    import subprocess
    import sys
    con = dpsql.connect(metadata=str(PUMS_META), tables={"PUMS.PUMS": str(DATA / "PUMS_pid.csv")},
                        privacy=dpsql.Privacy(epsilon=1.0), budget=dpsql.Budget(epsilon=5.0))
    con.cursor().execute(DP.format("epsilon = 0.3") + "COUNT(*) AS n FROM PUMS.PUMS")
    assert con.reader.spent[0] == pytest.approx(0.3)
    ledger = tmp_path / "l.jsonl"
    done = subprocess.run([sys.executable, "-m", "dpsql", "query", "--metadata", str(PUMS_META),
                           "--table", f"PUMS.PUMS={DATA / 'PUMS_pid.csv'}", "--epsilon", "1",
                           "--ledger", str(ledger), "--budget", "1", "--format", "csv",
                           DP.format("epsilon = 0.4") + "COUNT(*) AS n FROM PUMS.PUMS"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert dpsql.privacy.ledger.Ledger(str(ledger)).spent()[0] == pytest.approx(0.4)


def test_the_servers_per_query_cap_applies_to_the_options(tmp_path):
    import psycopg                      # in the test extra: missing fails, never skips
    from tests.server.serving import Served, spent, write_deployment
    served = Served(write_deployment(tmp_path / "serve"))       # alice: at most 1.0 a query
    try:
        with psycopg.connect(served.dsn(), autocommit=True) as con:
            for sql in (DP.format("epsilon = 2") + "COUNT(*) FROM PUMS.PUMS",
                        "EXPLAIN " + DP.format("epsilon = 2") + "COUNT(*) FROM PUMS.PUMS"):
                with pytest.raises(psycopg.Error) as err:
                    con.execute(sql)
                assert err.value.sqlstate == "42501" and "OPTIONS" in str(err.value)
            assert spent(served.deployment, "alice") == 0.0
            con.execute(DP.format("epsilon = 0.75") + "COUNT(*) FROM PUMS.PUMS")
            assert spent(served.deployment, "alice") == pytest.approx(0.75)
    finally:
        served.stop()


# ------------------------------------------------------------------ refusals

REFUSALS = [
    (DP.format("epsilon = 1, epsilon = 2") + "COUNT(*) FROM PUMS.PUMS", "epsilon is given twice"),
    (DP.format("epsilon = 1, noise = 2") + "COUNT(*) FROM PUMS.PUMS", "unknown option 'noise'"),
    (DP.format("epsilon = 'one'") + "COUNT(*) FROM PUMS.PUMS", "epsilon must be a number"),
    (DP.format("epsilon = NULL") + "COUNT(*) FROM PUMS.PUMS", "epsilon must be a number"),
    (DP.format("epsilon = 1e999") + "COUNT(*) FROM PUMS.PUMS", "must be a finite number"),
    (DP.format("epsilon = -1") + "COUNT(*) FROM PUMS.PUMS", "outside dpsql's per-query range"),
    (DP.format("epsilon = 1e20") + "COUNT(*) FROM PUMS.PUMS", "outside dpsql's per-query range"),
    (DP.format("epsilon = 1 + 1") + "COUNT(*) FROM PUMS.PUMS", "must be a single literal"),
    (DP.format("epsilon = (1)") + "COUNT(*) FROM PUMS.PUMS", "epsilon must be a number"),
    (DP.format("delta = 1") + "COUNT(*) FROM PUMS.PUMS", "delta = 1"),
    (DP.format("max_groups_contributed = 0") + "COUNT(*) FROM PUMS.PUMS", "whole number from 1"),
    (DP.format("max_groups_contributed = 1.5") + "COUNT(*) FROM PUMS.PUMS", "whole number"),
    (DP.format("max_groups_contributed = -2") + "COUNT(*) FROM PUMS.PUMS", "whole number"),
    (DP.format("max_groups_contributed = 99999999999999999999") + "COUNT(*) FROM PUMS.PUMS",
     "whole number"),
    (DP.format("privacy_unit_column = sex") + "COUNT(*) FROM PUMS.PUMS",
     "dpsql's privacy unit is set by the metadata: pid"),
    (DP.format("privacy_unit_column = other.pid") + "COUNT(*) FROM PUMS.PUMS",
     "dpsql's privacy unit is set by the metadata: pid"),
    (DP.format("privacy_unit_column = 'pid'") + "COUNT(*) FROM PUMS.PUMS", "must name a column"),
    ("SELECT COUNT(*) FROM (" + DP.format("epsilon = 1") + "pid FROM PUMS.PUMS) t",
     "only right after the outer SELECT"),
    ("WITH t AS (" + DP.format("epsilon = 1") + "pid FROM PUMS.PUMS) SELECT COUNT(*) FROM t",
     "only right after the outer SELECT"),
    (DP.format("epsilon = 1") + "COUNT(*) FROM PUMS.PUMS UNION ALL SELECT COUNT(*) FROM PUMS.PUMS",
     "not on a UNION ALL"),
    ("SELECT WITH ANONYMIZATION OPTIONS (epsilon = 1) COUNT(*) FROM PUMS.PUMS", "legacy"),
    (DP.format("") + "SUM(income, contribution_bounds_per_group => (10, 1)) FROM PUMS.PUMS",
     "the lower bound is above the upper bound"),
    (DP.format("") + "SUM(income, contribution_bounds_per_group => (0, 'a')) FROM PUMS.PUMS",
     "upper bound of contribution_bounds_per_group must be a number"),
    (DP.format("") + "SUM(income, contribution_bounds_per_group => (0, age)) FROM PUMS.PUMS",
     "must be a number"),
    (DP.format("") + "SUM(income, contribution_bounds_per_group => (0, 1), 2) FROM PUMS.PUMS",
     "must be the last argument"),
    (DP.format("") + "SUM(income, contribution_bounds_per_row => (0, 1)) FROM PUMS.PUMS",
     "takes contribution_bounds_per_group"),
    (DP.format("") + "VAR_POP(income, contribution_bounds_per_group => (0, 1)) FROM PUMS.PUMS",
     "contribution_bounds_per_row"),
    ("SELECT SUM(income, contribution_bounds_per_group => (0, 1)) FROM PUMS.PUMS",
     "write SELECT WITH DIFFERENTIAL_PRIVACY"),
    (DP.format("") + "COUNT(*) FROM PUMS.PUMS HAVING SUM(income, contribution_bounds_per_group "
     "=> (0, 1)) > 0", "only on an aggregate of the outer SELECT list"),
    (DP.format("") + "AVG(income, contribution_bounds_per_group => (0, 1)), "
     "VAR_POP(age, contribution_bounds_per_row => (0, 1)) FROM PUMS.PUMS",
     "ask the per-row aggregates in a query of their own"),
    (DP.format("") + "AVG(income), MEDIAN(age) FROM PUMS.PUMS", "in a query of its own"),
    (DP.format("") + "sex, AVG(income) FROM PUMS.PUMS GROUP BY educ",
     "column sex in SELECT is neither grouped nor aggregated"),
    ("WITH t AS (SELECT age FROM PUMS.PUMS) " + DP.format("") + "AVG(age) FROM t",
     "select pid in the CTE or subquery"),
]


@pytest.mark.parametrize("sql, fragment", REFUSALS)
def test_refusals_are_free_and_say_what_to_do(sql, fragment):
    reader = pums(budget=dpsql.Budget(epsilon=10.0))
    with pytest.raises(dpsql.QueryError, match=re.escape(fragment)):
        reader.execute_df(sql)
    assert reader.spent == (0.0, 0.0)


def test_an_analyst_cannot_widen_anything():
    reader = pums()
    base = sensitivities(reader, "SELECT sex, SUM(income) AS s, VAR_POP(age) AS v, COUNT(*) AS n "
                                 "FROM PUMS.PUMS GROUP BY sex")
    wide = sensitivities(reader, DP.format("max_groups_contributed = 9223372036854775807") +
                         "sex, VAR_POP(age, contribution_bounds_per_row => (-1e300, 1e300)) AS v, "
                         "COUNT(*) AS n FROM PUMS.PUMS GROUP BY sex")
    assert [l1 for _, l1 in wide] == [l1 for label, l1 in base if "income" not in label]
    per_unit = sensitivities(reader, DP.format("max_groups_contributed = 1000000") +
                             "sex, SUM(income, contribution_bounds_per_group => "
                             "(-99999999999999999999, 1e300)) AS s FROM PUMS.PUMS GROUP BY sex")
    assert per_unit[0][1] == dict(base)["SUM(\"income\")"] == 500000
    # an option never loosens what the session allows: epsilon beyond dpsql's range is refused
    with pytest.raises(dpsql.QueryError):
        reader.explain(DP.format("epsilon = 1000001") + "COUNT(*) FROM PUMS.PUMS")
