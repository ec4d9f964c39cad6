"""A long list of integers (``x IN (1, 2, ...)``, ``(VALUES (1), (2), ...) AS v(x)``, and the
planner's key filter and key grid of such a column) is one typed unit
(dpsql.frontend.literal_lists, issue 34): the plan is the one its values give one by one, on
every engine's dialect, and whatever the list cannot be a unit for is planned value by value,
as before."""
from __future__ import annotations

import re

import duckdb
import pytest
from sqlglot import exp

import dpsql
from dpsql.engines.duckdb import dialect as duckdb_dialect
from dpsql.engines.postgres.dialect import Postgres
from dpsql.engines.spark.dialect import Spark
from dpsql.frontend import literal_lists
from dpsql.frontend.literals import int_literal
from dpsql.frontend.parse import parse_query
from dpsql.plan import aggregate
from tests.paths import DATA_SETS

pytestmark = pytest.mark.filterwarnings("ignore:dpsql. no budget set")

VALUES = ", ".join(str(v) for v in [*range(-100, 100, 3), 7, 7, 9_000_000_000, -2 ** 63 + 1, 0])
SPLIT = VALUES.replace(", 9", ",\n 9") + "\n"
NEVER = re.compile(r"(?!x)x")      # matches nothing: every list parsed value by value


@pytest.fixture(scope="module")
def reader():
    meta, tables = DATA_SETS["pums"]
    return dpsql.from_df(dict(tables), meta, privacy=dpsql.Privacy())


def _plan_texts(reader, sql: str) -> list:
    reader._plans.clear()
    reader._compiled.clear()
    try:
        plan = reader._plan(sql)
    except dpsql.Error as err:
        return [type(err).__name__, str(err)]
    parts = getattr(plan, "parts", [plan])           # a UnionPlan: each of its queries
    return [
        [reader._sql(p)[0] for p in parts], [reader._sql(p)[1] for p in parts], plan.cost,
        [(p.bound_sql, p.key_sql) for p in parts],
        [(Postgres().render(p.exact), Spark().render(p.exact)) for p in parts],
        [(s.name, s.l1, s.l2) for p in parts for s in p.statistics]]


@pytest.mark.parametrize("sql", [
    f"SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE income IN ({VALUES})",
    f"SELECT sex, SUM(income) AS s FROM PUMS.PUMS WHERE age NOT IN ({VALUES}) GROUP BY sex",
    f"SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE age * 2.5 IN ({VALUES}) AND married IN ({VALUES})",
    f"SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE age * 2.5 IN ({VALUES})",
    f"SELECT age IN ({VALUES}) AS k, COUNT(*) AS n FROM PUMS.PUMS GROUP BY age IN ({VALUES})",
    f"SELECT SUM(CASE WHEN age IN ({VALUES}) THEN income END) AS s FROM PUMS.PUMS",
    f"WITH c AS (SELECT pid, age FROM PUMS.PUMS WHERE income IN ({VALUES})) "
    f"SELECT COUNT(*) AS n FROM c JOIN PUMS.PUMS p ON c.pid = p.pid AND p.age IN ({VALUES})",
    f"SELECT sex, COUNT(*) AS n FROM PUMS.PUMS GROUP BY sex HAVING COUNT(*) IN ({VALUES})",
    f"SELECT TOP 5 sex, COUNT(*) AS n FROM PUMS.PUMS WHERE age IN ({VALUES}) GROUP BY sex",
    "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (privacy_unit_column = pid) COUNT(*) AS n "
    f"FROM PUMS.PUMS WHERE age IN ({VALUES})",
    f"SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE age IN ({VALUES}) UNION ALL "
    f"SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE age NOT IN ({VALUES})",
    f"SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE sex IN ({VALUES})",          # text: expanded
    f"SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE 7 IN ({VALUES})",            # a constant
    f"SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE NULL IN ({VALUES})",
    f"SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE age IN ({SPLIT}) AND nope = 1",  # refused: the same place in the text
    f"SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE sex = 'IN ({VALUES})' AND age IN ({VALUES})",
    f"SELECT COUNT(*) AS n FROM PUMS.PUMS /* IN ({VALUES}) */ WHERE age IN ({VALUES})",
    f"SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE age IN (\n{SPLIT}) AND nope = 1",
    f"SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE age IN ({VALUES}, 0.5)",
    f"SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE age IN ({VALUES}, 007)",
    f"SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE age IN ({VALUES}, 99999999999999999999)",
    f"SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE _dpsql_list_0 IN ({VALUES})",
])
def test_a_long_integer_list_plans_as_its_values_one_by_one(reader, sql, monkeypatch):
    """The same plan, its texts and cost on every engine; DuckDB's SQL differs only in the
    list, read there as one array constant (compiled and dry-run here; its meaning is the
    next test's)."""
    as_unit = _plan_texts(reader, sql)
    monkeypatch.setattr(duckdb_dialect, "as_array", lambda node: node)
    verbatim = _plan_texts(reader, sql)
    monkeypatch.setattr(literal_lists, "_LIST", NEVER)
    one_by_one = _plan_texts(reader, sql)
    assert verbatim == one_by_one
    assert as_unit[1:] == one_by_one[1:]


BOUNDARY = [0, 1, -1, 2 ** 31, -2 ** 31 - 1, 2 ** 53 + 1, -2 ** 53 - 1, 2 ** 63 - 1, -2 ** 63 + 1]


@pytest.mark.parametrize("kind", ["BIGINT", "DOUBLE"])
def test_duckdb_reads_a_list_as_an_array_with_the_meaning_of_its_values(kind):
    """``x [NOT] IN (SELECT UNNEST(CAST('[...]' AS BIGINT[])))`` is ``x [NOT] IN (...)`` for
    every value of x, NULL and the extremes of each type included."""
    values = tuple(range(-70, 70, 3)) + tuple(BOUNDARY)
    xs = list(BOUNDARY) + [5, 8, -7, 500, None, 2 ** 53, 2 ** 63 - 2, -2 ** 63]
    if kind == "DOUBLE":
        xs += [0.5, -0.0, 2.0 ** 63, -2.0 ** 63, float("inf"), float("-inf"), float("nan")]
    column = exp.column("x", quoted=True)
    as_array = duckdb_dialect.as_array(exp.In(this=column.copy(), expressions=[
        literal_lists.listed(values, typed=True)]))
    as_values = exp.In(this=column.copy(), expressions=[int_literal(v) for v in values])
    rows = ", ".join(f"(TRY_CAST({'NULL' if x is None else repr(str(x))} AS {kind}))"
                     for x in xs)
    a, b = as_array.sql("duckdb"), as_values.sql("duckdb")
    got = duckdb.connect().execute(f"SELECT x, {a}, {b}, NOT {a}, NOT {b} "
                                   f"FROM (VALUES {rows}) AS t(x)").fetchall()
    assert len(got) == len(xs)
    for x, array_in, values_in, array_out, values_out in got:
        assert (array_in, array_out) == (values_in, values_out), x


def test_the_list_is_one_node_and_counts_as_its_values_in_the_size_limit():
    tree = parse_query(f"SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE age IN ({VALUES})")
    assert len([n for n in tree.walk() if literal_lists.values_of(n) is not None]) == 1
    many = ", ".join(["1"] * 20_001)
    with pytest.raises(dpsql.QueryError, match="more than 20000 syntax nodes"):
        parse_query(f"SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE age IN ({many})")


ROWS = ", ".join(f"({v})" for v in VALUES.split(", "))
ROWS_SPLIT = ROWS.replace(", (9", ",\n (9") + "\n"
JOINED = "SELECT v.x, COUNT(*) AS n FROM PUMS.PUMS CROSS JOIN (VALUES {}) AS v(x) WHERE age > v.x "


@pytest.mark.parametrize("sql", [
    JOINED.format(ROWS) + "GROUP BY v.x",
    f"SELECT v.x, SUM(income) AS s FROM PUMS.PUMS JOIN (VALUES {ROWS}) AS v(x) ON age = v.x "
    "GROUP BY v.x",
    f"SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE age IN (SELECT x FROM (VALUES {ROWS}) AS v(x))",
    f"SELECT v.x, COUNT(*) AS n FROM PUMS.PUMS JOIN (SELECT * FROM (VALUES {ROWS}) AS w(x)) AS v "
    "ON age = v.x GROUP BY v.x",
    f"WITH v(x) AS (VALUES {ROWS}) SELECT v.x, COUNT(*) AS n FROM PUMS.PUMS JOIN v ON age = v.x "
    "GROUP BY v.x",
    JOINED.format(ROWS) + f"AND income IN ({VALUES}) GROUP BY v.x",
    JOINED.format(ROWS + ", (007)") + "GROUP BY v.x",               # as written: the planner's lists
    JOINED.format(ROWS + ", (1.5)") + "GROUP BY v.x",
    JOINED.format(ROWS + ", (1, 2)") + "GROUP BY v.x",
    JOINED.format(ROWS).replace("v(x)", "v(x, y)") + "GROUP BY v.x",
    JOINED.format(ROWS).replace("AS v(x)", "") + "GROUP BY v.x",
    JOINED.format(ROWS_SPLIT) + "AND nope = 1 GROUP BY v.x",
    JOINED.format("(1), (2)") + f"AND sex = 'VALUES {ROWS}' GROUP BY v.x",
    JOINED.format("(1), (2)") + f"/* VALUES {ROWS} */ GROUP BY v.x",
    JOINED.format(ROWS).replace("v.x", "_dpsql_rows_0"),
])
def test_a_values_list_of_integers_plans_as_its_rows_one_by_one(reader, sql, monkeypatch):
    """As the test above, for a VALUES list and the key filter and grid the planner writes
    of its column: the same plan, texts and cost; DuckDB's SQL differs only in the lists."""
    as_unit = _plan_texts(reader, sql)
    monkeypatch.setattr(duckdb_dialect, "as_array", lambda node: node)
    monkeypatch.setattr(duckdb_dialect, "as_rows", lambda node: node)
    verbatim = _plan_texts(reader, sql)
    monkeypatch.setattr(literal_lists, "_LIST", NEVER)
    monkeypatch.setattr(literal_lists, "_ROWS", NEVER)
    monkeypatch.setattr(aggregate, "_listed_key", lambda col: None)
    one_by_one = _plan_texts(reader, sql)
    assert verbatim == one_by_one
    assert as_unit[1:] == one_by_one[1:]


@pytest.mark.parametrize("cast", [None, "BIGINT"])
def test_duckdb_reads_a_values_list_as_an_array_with_its_rows(cast):
    """``(SELECT UNNEST(CAST('[...]' AS BIGINT[])) AS c) AS v`` holds the rows of ``(VALUES
    (1), ...) AS v(c)`` (of ``TRY_CAST(1 AS BIGINT)``, ...: a key grid), duplicates and the
    extremes included, as BIGINT."""
    values = tuple(range(-70, 70, 3)) + tuple(BOUNDARY) + (7, 7)
    node = exp.Values(expressions=[literal_lists.listed_rows(values, cast)],
                      alias=exp.TableAlias(this=exp.to_identifier("v"),
                                           columns=[exp.to_identifier("c", quoted=True)]))
    written = exp.select(exp.column("c", quoted=True)).from_(node.copy()).sql("duckdb")
    select = exp.select(exp.column("c", quoted=True)).from_(node)
    duckdb_dialect.as_rows(node)
    con = duckdb.connect()
    rows = [sorted(con.execute(f"SELECT CAST(c AS BIGINT), typeof(CAST(c AS BIGINT)) "
                               f"FROM ({text})").fetchall())
            for text in (written, select.sql("duckdb"))]
    assert rows[0] == rows[1] and len(rows[0]) == len(values)


@pytest.mark.parametrize("form", ["in", "values"])
def test_an_integer_of_thousands_of_digits_in_a_long_list_is_out_of_range(reader, form):
    """Eighteenth review of issue 33: 4,301 or more digits (Python's int() limit) in a list
    of 64+ values was an internal error (XX000 on the wire); it is the range refusal a short
    list gets."""
    big = "9" * 5000
    listed = ", ".join(str(i) for i in range(70))
    sql = (f"SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE age IN ({listed}, {big})" if form == "in"
           else "SELECT COUNT(*) AS n FROM PUMS.PUMS, (VALUES " + ", ".join(
               f"({i})" for i in range(70)) + f", ({big})) v(k) WHERE age = k")
    with pytest.raises(dpsql.QueryError, match="out of range"):
        reader.get_privacy_cost(sql)


def test_a_public_key_whose_every_value_leaves_64_bits_releases_no_row(reader):
    """Eighteenth review of issue 33: such a key grid was refused by PostgreSQL and wrapped by
    Spark; every value is NULL (not a key), so no group, not a NULL group, is released."""
    frame = reader.execute_df(
        "SELECT v.k * 4611686018427387904 AS z, COUNT(*) AS n FROM PUMS.PUMS p JOIN "
        "(VALUES (30), (40), (50)) v(k) ON p.age = v.k GROUP BY v.k * 4611686018427387904",
        privacy=dpsql.Privacy(epsilon=1e5, delta=1e-6))
    assert len(frame) == 0 and list(frame.columns) == ["z", "n"]
