"""Issue 11 (in part): one Budget object is one pool for every session given it, under
threads; a query's privacy can be given per call, and is charged as given."""
from __future__ import annotations

import threading
from pathlib import Path

import pandas as pd
import pytest

import dpsql

DATA = Path(__file__).parent / "data"
SQL = "SELECT COUNT(*) AS n FROM PUMS.PUMS"


@pytest.fixture(scope="module")
def pums():
    return pd.read_csv(DATA / "PUMS.csv")


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
