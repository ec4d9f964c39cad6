"""Issue 11 (in part): the same query again in a session is a free, identical replay."""
from __future__ import annotations

import pytest

import dpsql

from tests.paths import DATA


@pytest.fixture
def reader(pums_reader):
    return pums_reader(privacy=dpsql.Privacy(epsilon=1.0), budget=dpsql.Budget(epsilon=10.0))


def test_the_same_query_again_is_free_and_identical(reader):
    sql = "SELECT sex, COUNT(*) AS n, AVG(income) AS a FROM PUMS.PUMS GROUP BY sex"
    first = reader.execute_df(sql)
    spent = reader.spent
    # keywords' case and spacing are not part of the canonical text
    again = reader.execute_df("select sex, count(*)   as n, AVG(income) as a\nfrom PUMS.PUMS group by sex")
    assert reader.spent == spent
    assert again.equals(first)
    assert reader.execute_df(sql).equals(first)                   # same text: same release
    again.iloc[0, 1] = -1                                          # the caller's copy only
    assert reader.execute_df(sql).equals(first)
    assert reader.spent == spent


def test_a_changed_parameter_privacy_or_replay_false_is_a_fresh_release(reader):
    sql = "SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE age > ?"
    reader.execute_df(sql, [30])
    one = reader.spent[0]
    reader.execute_df(sql, [30])
    assert reader.spent[0] == pytest.approx(one)                    # replay
    reader.execute_df(sql, [31])
    assert reader.spent[0] == pytest.approx(2 * one)                # another parameter
    reader.execute_df(sql, [30], privacy=dpsql.Privacy(epsilon=0.5))
    assert reader.spent[0] == pytest.approx(2.5 * one)              # another privacy
    # Six fresh draws at epsilon 0.1: discrete Laplace of scale 10, so all six are equal with
    # probability sum_x p(x)^6 = tanh(1/20)^6 coth(6/20) = 5.3e-8. (At the reader's epsilon 1,
    # scale 1, that is tanh(1/2)^6 coth(6/2) = 0.0098: this test failed about once in a
    # hundred runs, the flaky failure of full runs.)
    fresh = dpsql.Privacy(epsilon=0.1)
    draws = {reader.execute_df(sql, [30], replay=False, privacy=fresh).n[0] for _ in range(6)}
    assert reader.spent[0] == pytest.approx(2.5 * one + 6 * 0.1)   # each paid
    assert len(draws) > 1                                            # fresh noise


def test_queries_that_differ_only_in_a_semi_join_are_not_one_replay():
    files = {"clinic.persons": DATA / "persons.csv", "clinic.visits": DATA / "visits.csv"}
    r = dpsql.from_df(files, DATA / "clinic.yaml", privacy=dpsql.Privacy(epsilon=1e5))
    a = r.execute_df("SELECT COUNT(*) AS n FROM clinic.persons WHERE pid IN "
                     "(SELECT pid FROM clinic.visits WHERE cost > 500)").n[0]
    b = r.execute_df("SELECT COUNT(*) AS n FROM clinic.persons WHERE pid IN "
                     "(SELECT pid FROM clinic.visits WHERE cost > 900)").n[0]
    assert abs(a - 589) < 5 and b < a - 100


def test_identifier_case_is_not_part_of_a_release(tmp_path):
    """`PUMS.PUMS` and `pums.pums` name one table (metadata names match without case): the
    second spelling is a replay, in the session and through a ledger; text keeps its case."""
    import dpsql as _dpsql
    from tests.paths import DATA
    ledger = str(tmp_path / "l.jsonl")
    budget = _dpsql.Budget(epsilon=5)
    first = _dpsql.from_df({"PUMS.PUMS": str(DATA / "PUMS.csv")}, DATA / "PUMS.yaml",
                           budget=budget, ledger=ledger)
    a = first.execute_df("SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE sex = '1'")
    b = first.execute_df("select count(*) as N from pums.pums where SEX = '1'")
    assert first.spent[0] == 1.0 and a.iloc[0, 0] == b.iloc[0, 0] and list(b.columns) == ["N"]
    second = _dpsql.from_df({"PUMS.PUMS": str(DATA / "PUMS.csv")}, DATA / "PUMS.yaml",
                            budget=_dpsql.Budget(epsilon=5), ledger=ledger)
    c = second.execute_df('SELECT COUNT(*) AS n FROM "pums"."PUMS" WHERE "Sex" = \'1\'')
    assert c.iloc[0, 0] == a.iloc[0, 0] and second.spent[0] == 1.0
    second.execute_df("SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE sex = '0'")   # text case matters
    assert second.spent[0] == 2.0


def test_a_guarded_query_is_one_release_whatever_was_planned_before(tmp_path):
    """A guard binds its operand to a lambda variable named by the operand's content, not by a
    counter of the process: the engine SQL in a release's fingerprint was different after
    other guarded queries, and a second session on the same ledger charged the repeat again."""
    ledger = str(tmp_path / "l.jsonl")
    files = {"PUMS.PUMS": str(DATA / "PUMS.csv")}
    sql = "SELECT SUM(income * income / (age + 1)) AS s FROM PUMS.PUMS"
    first = dpsql.from_df(files, DATA / "PUMS.yaml", budget=dpsql.Budget(epsilon=5),
                          ledger=ledger)
    a = first.execute_df(sql).s[0]
    second = dpsql.from_df(files, DATA / "PUMS.yaml", budget=dpsql.Budget(epsilon=5),
                           ledger=ledger)
    second.get_privacy_cost("SELECT SUM(age * age / (income + 1)) AS s FROM PUMS.PUMS")
    assert second.execute_df(sql).s[0] == a
    assert second.spent[0] == first.spent[0] == 1.0
