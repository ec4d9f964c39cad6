"""Issue 37: reader.epsilon_for(sql, accuracy=...), the count of such queries the budget
buys (explain's last line), and `dpsql query --accuracy-target`."""
from __future__ import annotations

import math

import duckdb
import pytest

import dpsql
from tests.paths import DATA

COUNT = "SELECT COUNT(*) AS n FROM PUMS.PUMS"


def reader_of(pums, **kw):
    return dpsql.from_df(pums, DATA / "PUMS.yaml", **kw)


def worst(reader, sql, epsilon, alpha=0.05):
    plan = reader._plan(sql, privacy=dpsql.Privacy(epsilon=epsilon, delta=reader.privacy.delta))
    return max(s.mechanism.accuracy(alpha) for s in plan.statistics)


def test_a_counts_epsilon_agrees_with_the_discrete_laplace_tail(pums):
    """P(|Z| > a) = 2 q^(a+1) / (1 + q), q = exp(-epsilon), for a count (sensitivity 1):
    the smallest epsilon with P(|Z| > 300) <= 0.05, solved here on its own."""
    reader = reader_of(pums)
    eps = reader.epsilon_for(COUNT, accuracy=300, alpha=0.05)

    def tail(e):
        q = math.exp(-e)
        return 2 * q ** 301 / (1 + q)

    low, high = 1e-4, 1.0
    for _ in range(100):
        mid = (low + high) / 2
        low, high = (low, mid) if tail(mid) <= 0.05 else (mid, high)
    assert high <= eps <= high * 1.01             # rounded up to 3 significant digits
    assert worst(reader, COUNT, eps) <= 300 < worst(reader, COUNT, eps / 1.01)
    assert reader.spent == (0.0, 0.0)


def test_every_statistic_meets_the_target_and_nothing_is_read_or_spent(pums):
    con = duckdb.connect()
    con.execute("CREATE SCHEMA PUMS")
    con.register("df", pums)
    con.execute("CREATE TABLE PUMS.PUMS AS SELECT * FROM df")
    reader = dpsql.from_connection(con, DATA / "PUMS.yaml", budget=dpsql.Budget(epsilon=1.0))
    sql = "SELECT COUNT(*) AS n, AVG(age) AS a FROM PUMS.PUMS"
    reader.get_privacy_cost(sql)
    con.execute("DROP TABLE PUMS.PUMS")              # any read would now fail
    eps = reader.epsilon_for(sql, accuracy=2000, alpha=0.01)
    assert worst(reader, sql, eps, 0.01) <= 2000 < worst(reader, sql, eps / 1.01, 0.01)
    assert reader.spent == (0.0, 0.0) and reader.remaining == (1.0, 1e-6)


def test_what_cannot_meet_a_target_is_refused_with_what_to_do(pums):
    reader = reader_of(pums)
    with pytest.raises(dpsql.QueryError, match="rank, not a value"):
        reader.epsilon_for("SELECT MEDIAN(age) AS m FROM PUMS.PUMS", accuracy=1)
    with pytest.raises(dpsql.ProgrammingError, match="accuracy must be a finite number"):
        reader.epsilon_for(COUNT, accuracy=0)
    with pytest.raises(dpsql.ProgrammingError, match="alpha must be"):
        reader.epsilon_for(COUNT, accuracy=10, alpha=1.5)


def test_explain_says_how_many_such_queries_the_budget_buys(pums):
    reader = reader_of(pums, privacy=dpsql.Privacy(epsilon=0.01), budget=dpsql.Budget(1.0))
    assert reader.explain(COUNT).splitlines()[-1] == (
        "budget: 100 more queries like this one fit in what remains (composed by basic "
        "composition)")
    for age in range(3):
        reader.execute_df(f"{COUNT} WHERE age > {age}")
    assert "budget: 97 more queries" in reader.explain(COUNT)
    pld = reader_of(pums, privacy=dpsql.Privacy(epsilon=0.01),
                    budget=dpsql.Budget(epsilon=1.0, delta=1e-6, accountant="pld"))
    line = pld.explain(COUNT).splitlines()[-1]
    assert line.startswith("budget: about ") and "PLD accountant" in line
    assert abs(int(line.split()[2].replace(",", "")) - 562) <= 1    # 562 answered one by one
    assert reader_of(pums).explain(COUNT).splitlines()[-1].startswith("budget: none set")

