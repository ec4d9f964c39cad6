"""DuckDB: a large disjunction of conjunctions where only its truth counts is written with
each conjunction ``IS TRUE`` (``dpsql/engines/duckdb/truth.py``), so that DuckDB's
optimiser, which no timeout or cancel reaches, prepares it in linear time (issue 33's
twenty-eighth review, F4: 1,700 OR-ed pairs, 61 kB, took 22 s to prepare inside a plan and
ran 4-13 s past a 20 s statement timeout). The rewrite must not change an answer: NULLs
under NOT and in values keep their three-valued meaning."""
from __future__ import annotations

import time

import duckdb
import pandas as pd
import pytest

import dpsql
from tests.paths import DATA

LARGE = dpsql.Privacy(epsilon=1e6, delta=1e-6)


@pytest.fixture(scope="module")
def frame():
    """PUMS_null's NULL ages and incomes, one row per person (max_ids 1 keeps them all)."""
    frame = pd.read_csv(DATA / "PUMS_null.csv")
    return frame.assign(pid=range(1, len(frame) + 1))


@pytest.fixture(scope="module")
def reader(frame):
    return dpsql.from_df(frame, DATA / "PUMS_pid.yaml", privacy=LARGE)


def _pairs(n: int, start: int = 0) -> str:
    return " OR ".join(f"(age > {i % 90} AND income < {1000 * (i + start)})" for i in range(n))


def test_1700_or_ed_pairs_prepare_in_seconds_not_tens(reader):
    sql = f"SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE {_pairs(1700)}"
    assert len(sql) > 50_000
    started = time.perf_counter()
    reader.explain(sql)
    took = time.perf_counter() - started
    assert took < 10, took          # 22-38 s before, at load 2-4; about 3 s after


@pytest.mark.parametrize("where", [
    _pairs(20),
    f"NOT ({_pairs(20)})",
    f"({_pairs(20)}) IS NULL",
    f"age > 30 AND ({_pairs(20, 7)})",
    f"COALESCE({_pairs(20)}, TRUE)",
])
def test_answers_as_plain_duckdb_with_nulls(reader, frame, where):
    """PUMS_null has NULL ages and incomes: a pair is NULL there, so ``IS TRUE`` in a value
    or under NOT would change the count."""
    con = duckdb.connect()
    con.register("p", frame)
    for sql in (f"SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE {where}",
                f"SELECT SUM(CASE WHEN {where} THEN 1 ELSE 0 END) AS n FROM PUMS.PUMS",
                f"SELECT COUNT(*) FILTER (WHERE {where}) AS n FROM PUMS.PUMS",
                f"SELECT SUM(CASE WHEN ({where}) IS NULL THEN 1 ELSE 0 END) AS n FROM PUMS.PUMS"):
        exact = con.execute(sql.replace("PUMS.PUMS", "p")).fetchone()[0]
        got = reader.execute_df(sql).n[0]
        assert abs(got - exact) < 1, (sql[:120], got, exact)
