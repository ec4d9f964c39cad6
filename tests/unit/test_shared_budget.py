"""Issue 11 (in part): one Budget object is one pool for every session given it, under
threads; a query's privacy can be given per call, and is charged as given."""
from __future__ import annotations

import threading

import pytest

import dpsql

from tests.paths import DATA

SQL = "SELECT COUNT(*) AS n FROM PUMS.PUMS"


def test_readers_given_one_budget_spend_from_one_pool(pums):
    budget = dpsql.Budget(epsilon=1.0)
    readers = [dpsql.from_df(pums, DATA / "PUMS.yaml", privacy=dpsql.Privacy(epsilon=0.5),
                             budget=budget) for _ in range(3)]
    readers[0].execute_df(SQL)
    readers[1].execute_df(SQL)
    with pytest.raises(dpsql.BudgetExceededError):
        readers[2].execute_df(SQL)
    assert readers[0].execute_df(SQL).n[0] > 0          # a replay in its own session: free
    assert budget.spent == pytest.approx((1.0, 0.0))
    assert all(r.spent == budget.spent for r in readers)
    conn = dpsql.connect(metadata=DATA / "PUMS.yaml", tables={"PUMS.PUMS": pums},
                         privacy=dpsql.Privacy(epsilon=0.1), budget=budget)
    with pytest.raises(dpsql.Error):
        conn.cursor().execute(SQL)


@pytest.mark.parametrize("epsilon", [0.1, 0.07])
def test_eight_threads_and_four_readers_never_overspend(pums, epsilon):
    budget = dpsql.Budget(epsilon=1.0)
    readers = [dpsql.from_df(pums, DATA / "PUMS.yaml", privacy=dpsql.Privacy(epsilon=epsilon),
                             budget=budget) for _ in range(4)]
    answered, refused, errors = [], [], []
    start = threading.Barrier(8)

    def work(i):
        start.wait()
        for _ in range(10):
            try:
                readers[i % 4].execute_df(SQL, replay=False)
                answered.append(1)
            except dpsql.BudgetExceededError:
                refused.append(1)
            except Exception as err:  # noqa: BLE001
                errors.append(err)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(answered) == int(1.0 / epsilon + 1e-9)          # never one more
    assert budget.spent[0] == pytest.approx(len(answered) * epsilon)
    assert budget.spent[0] <= 1.0 * (1 + 1e-12)
    assert len(answered) + len(refused) == 80


def test_per_query_privacy_is_charged_as_given(pums):
    reader = dpsql.from_df(pums, DATA / "PUMS.yaml", privacy=dpsql.Privacy(epsilon=1.0),
                           budget=dpsql.Budget(epsilon=10.0, delta=1e-5))
    small = dpsql.Privacy(epsilon=0.25, delta=1e-7)
    assert reader.get_privacy_cost(SQL, privacy=small) == pytest.approx((0.25, 0.0))
    assert "epsilon=0.25" in reader.explain(SQL, privacy=small)
    reader.execute_df(SQL, privacy=small)
    assert reader.spent == pytest.approx((0.25, 0.0))
    reader.execute(SQL)                                        # the default, reader.privacy
    assert reader.spent == pytest.approx((1.25, 0.0))
    grouped = "SELECT educ, COUNT(*) AS n FROM PUMS.PUMS GROUP BY educ"
    reader.execute_df(grouped, privacy=small)                   # threshold: delta as given
    assert reader.spent == pytest.approx((1.5, 1e-7))
    with pytest.raises(dpsql.ProgrammingError, match="must be a dpsql.Privacy"):
        reader.execute_df(SQL, privacy=0.5)
    assert reader.spent == pytest.approx((1.5, 1e-7))


# -- issue 20: one Budget object is one pool, with ledgers too -------------------------

QUERIES = ["SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE age > {}".format(a) for a in range(30)]


def _answered(reader, queries) -> int:
    done = 0
    for sql in queries:
        try:
            reader.execute_df(sql)
            done += 1
        except dpsql.BudgetExceededError:
            pass
    return done


@pytest.mark.parametrize("ledgers", [1, 3])
def test_one_budget_given_to_readers_with_and_without_ledgers_is_one_pool(pums, tmp_path,
                                                                          ledgers):
    """On the earlier main, Budget(epsilon=1) given to a plain reader and to k readers
    with ledger files released k + 1 while Budget.spent said 1."""
    budget = dpsql.Budget(epsilon=1.0)
    privacy = dpsql.Privacy(epsilon=0.25)
    readers = [dpsql.from_df(pums, DATA / "PUMS.yaml", privacy=privacy, budget=budget)]
    readers += [dpsql.from_df(pums, DATA / "PUMS.yaml", privacy=privacy, budget=budget,
                              ledger=tmp_path / f"l{i}.jsonl") for i in range(ledgers)]
    answered = sum(_answered(r, QUERIES[8 * i:8 * i + 8]) for i, r in enumerate(readers))
    assert answered == 4                                   # 4 x 0.25 = the budget, in all
    assert budget.spent[0] == pytest.approx(1.0, rel=1e-6)
    files = [dpsql.privacy.ledger.Ledger(tmp_path / f"l{i}.jsonl", None) for i in range(ledgers)]
    assert sum(f.spent()[0] for f in files) <= 1.0 + 1e-9


def test_a_ledger_and_a_budget_each_bound_what_is_released(pums, tmp_path):
    """The ledger file's total is its own pool (shared across processes), and the Budget
    object's is another: a query must fit both and is charged to both."""
    path = tmp_path / "shared.jsonl"
    dpsql.privacy.ledger.Ledger(path, dpsql.Budget(epsilon=0.5))          # the file's pool: 0.5
    budget = dpsql.Budget(epsilon=0.5)
    privacy = dpsql.Privacy(epsilon=0.25)
    first = dpsql.from_df(pums, DATA / "PUMS.yaml", privacy=privacy, budget=budget, ledger=path)
    assert _answered(first, QUERIES[:4]) == 2
    # A new Budget object with the same ledger: the file is spent.
    other = dpsql.from_df(pums, DATA / "PUMS.yaml", privacy=privacy,
                          budget=dpsql.Budget(epsilon=0.5), ledger=path)
    assert _answered(other, QUERIES[4:8]) == 0
    # The first Budget object without a ledger: its own pool is spent too.
    plain = dpsql.from_df(pums, DATA / "PUMS.yaml", privacy=privacy, budget=budget)
    assert _answered(plain, QUERIES[8:12]) == 0
    assert budget.spent[0] == pytest.approx(0.5, rel=1e-6)


def test_dbapi_connections_with_a_ledger_share_the_budget_object(pums, tmp_path):
    budget = dpsql.Budget(epsilon=0.5)
    privacy = dpsql.Privacy(epsilon=0.25)
    conns = [dpsql.connect(metadata=DATA / "PUMS.yaml", tables={"PUMS.PUMS": pums},
                           privacy=privacy, budget=budget, ledger=tmp_path / f"c{i}.jsonl")
             for i in range(2)]
    done = 0
    for i, sql in enumerate(QUERIES[:6]):
        try:
            conns[i % 2].cursor().execute(sql)
            done += 1
        except dpsql.Error:
            pass
    assert done == 2 and budget.spent[0] == pytest.approx(0.5, rel=1e-6)
