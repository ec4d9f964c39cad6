"""DuckDB runs ``agg(x) FILTER (WHERE p)`` as its own FILTER (dpsql.engines.filters;
PostgreSQL's in tests/engines/test_postgres.py):
the exact aggregates must equal those of the plan as written (an aggregate of the column
``CASE WHEN p THEN x END``), with NULLs, values out of bounds and groups the filter empties."""
import duckdb
import numpy as np
import pandas as pd
import pytest
import sqlglot

import dpsql
from dpsql.engines.duckdb.dialect import DuckDB
from dpsql.plan.dialect import Dialect

META = {"": {"S": {"T": {"row_privacy": True,
                         "g": {"type": "int"}, "f": {"type": "int"},
                         "x": {"type": "float", "lower": -5, "upper": 50},
                         "i": {"type": "int", "lower": 0, "upper": 10}}}}}
QUERIES = [
    "SELECT SUM(x) FILTER (WHERE f = 1) AS s, AVG(i) FILTER (WHERE f = 0) AS a, "
    "COUNT(x) FILTER (WHERE f = 1) AS c FROM S.T",
    "SELECT g, SUM(x) FILTER (WHERE f = 1) AS s, AVG(x) FILTER (WHERE i > 3) AS a "
    "FROM S.T GROUP BY g",
    "SELECT g, COUNT(*) FILTER (WHERE f = 2) AS n, SUM(i) FILTER (WHERE f = 2) AS s "
    "FROM S.T GROUP BY g",
]


class AsWritten(DuckDB):
    """DuckDB's dialect without the rewrite: the plan's aggregates as they are."""

    def lowered(self, tree):
        return Dialect.lowered(self, tree)


def frame() -> pd.DataFrame:
    """5,000 rows: four groups, a filter flag, a float with NULLs and values out of bounds."""
    rng = np.random.default_rng(3)
    n = 5000
    x = rng.uniform(-20, 80, n)
    x[rng.random(n) < 0.1] = np.nan
    return pd.DataFrame({"g": rng.integers(0, 4, n), "f": rng.integers(0, 2, n),
                         "x": x, "i": rng.integers(-3, 15, n)})


@pytest.fixture(scope="module")
def table():
    return frame()


@pytest.mark.parametrize("sql", QUERIES)
def test_filter_rewrite_gives_the_plans_exact_aggregates(table, sql):
    reader = dpsql.from_df({"S.T": table}, META, privacy=dpsql.Privacy(epsilon=1.0))
    plan = reader._plan(sql)
    engine = reader.engine
    rewritten = engine.compile(plan)
    engine.dialect = AsWritten()
    written = engine.compile(plan)
    assert "FILTER" in rewritten and "FILTER" not in written
    con = engine.con
    got, want = (sorted(con.execute(q).fetchall(), key=lambda r: r[0]) for q in (rewritten, written))
    # Float sums may round differently in another evaluation order: 1e-9 relative.
    assert len(got) == len(want)
    for a, b in zip(got, want):
        assert [v is None for v in a] == [v is None for v in b]
        assert [v for v in a if v is not None] == pytest.approx([v for v in b if v is not None],
                                                                rel=1e-9)


@pytest.mark.parametrize("inner, counted", [
    ("age - 30 AS e", '"age"'),
    ("(CASE WHEN age < 0 THEN 0 WHEN age > 9 THEN 9 ELSE age END) + 1 AS e", '"age"'),
    ("5 - age AS e", '"age"'),
    # not NULL exactly where age is: kept
    ("age - income AS e", "e"),
    ("CASE WHEN age < 3 THEN -(m + 1) ELSE age END AS e", "e"),
    ("CASE WHEN age < 3 THEN NULL ELSE age END AS e", "e"),
    # the select also defines a column named age: the outer count would read that one
    ("x AS age, age - 30 AS e", "e"),
])
def test_counted_bases_counts_the_column_only_where_the_count_is_the_same(inner, counted):
    """engines.filters.counted_bases (PostgreSQL's dialect; its exact aggregates are checked
    on PostgreSQL in tests/engines/test_postgres.py): which counts it rewrites."""
    from dpsql.engines.filters import counted_bases
    tree = sqlglot.parse_one(f"SELECT COUNT(e) AS n, SUM(e) AS s FROM (SELECT *, {inner} "
                             "FROM t AS _l) AS s", read="postgres")
    assert counted_bases(tree).sql("postgres").startswith(f"SELECT COUNT({counted}) AS n")
