"""The cut before a guarded or heavy statement stores only the columns the statement reads
(issue 33's twenty-eighth review, F1: storing every column, PostgreSQL took +0.23 s for a
person's 20,000 rows of 256-character text in a statement that read none of it), and the
statements whose plans read the cut through ``*`` still answer as without the cut."""
from __future__ import annotations

import re

import pandas as pd
import pytest

import dpsql
from tests.paths import DATA

LARGE = dpsql.Privacy(epsilon=1e5, delta=1e-6)


@pytest.fixture(scope="module")
def reader():
    frame = pd.read_csv(DATA / "PUMS_pid.csv")
    return dpsql.from_df(frame, DATA / "PUMS_pid.yaml", privacy=LARGE)


def _cut_columns(text: str) -> set:
    """The columns the first cut's CTE stores, read from explain's engine SQL."""
    body = text[text.index('"_dpsql_cut0" AS MATERIALIZED'):]
    body = body[:body.index("FROM")]
    return set(re.findall(r'END AS "(\w+)"', body))


@pytest.mark.parametrize("sql, stored", [
    ("SELECT AVG(income) AS m FROM PUMS.PUMS WHERE income + 1 > 3", {"income", "pid"}),
    ("SELECT sex, COUNT(*) AS n FROM PUMS.PUMS WHERE age + 1 > 3 GROUP BY sex",
     {"age", "sex", "pid"}),
    ("SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE NULLIF(age, 3) = 7", {"age", "pid"}),
])
def test_the_cut_stores_only_the_columns_read(reader, sql, stored):
    text = reader.explain(sql)
    assert "cut to max_ids" in text
    assert _cut_columns(text) == stored


@pytest.mark.parametrize("sql", [
    "SELECT COUNT(*) AS n FROM (SELECT pid, age FROM PUMS.PUMS WHERE age + 1 > 3 "
    "UNION ALL SELECT pid, age FROM PUMS.PUMS WHERE sex = '1') u",
    "SELECT COUNT(*) AS n FROM PUMS.PUMS p WHERE EXISTS (SELECT 1 FROM PUMS.PUMS q "
    "WHERE q.pid = p.pid AND q.age + 1 > p.age)",
    "SELECT educ, COUNT(*) AS n, SUM(income) AS s FROM PUMS.PUMS WHERE income * 2 > 10 "
    "GROUP BY educ",
])
def test_a_cut_statement_answers_as_the_exact_query(reader, sql):
    """At a huge epsilon (one row per person: the cut keeps every row) the answer is the
    plain query's, so no column the statement needs was left out of the cut."""
    import duckdb
    frame = pd.read_csv(DATA / "PUMS_pid.csv")
    assert "cut to max_ids" in reader.explain(sql)
    got = reader.execute_df(sql, privacy=LARGE)
    con = duckdb.connect()
    con.register("pums", frame)
    plain = con.sql(sql.replace("PUMS.PUMS", "pums")).df()
    key = list(got.columns[:1]) if "GROUP BY" in sql else []
    if key:
        got, plain = (f.assign(**{key[0]: f[key[0]].astype(str)}).sort_values(key)
                      .reset_index(drop=True) for f in (got, plain))
        assert list(got[key[0]]) == list(plain[key[0]])
    for name in got.columns:
        if name not in key:
            exact = plain[name].astype(float)
            # SUM(income): sensitivity 500,000 at epsilon 1e5, noise scale about 10
            assert ((got[name].astype(float) - exact).abs() <= 200).all(), name
