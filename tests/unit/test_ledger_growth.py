"""The twelfth review of issue 33: free replays wrote their whole query (parameters bound)
to the ledger each time (1 MB a replay: 3 GB in three minutes for one analyst), and a
ledger was read into memory in one piece (a 1.4 GB ledger took 3 GB when the server opened
it after a restart). Replay records are abridged, and a ledger is read in blocks."""
import os
import tracemalloc
import warnings

import pandas as pd

import dpsql
from dpsql.privacy.ledger import Ledger
from tests.paths import DATA


def test_a_replay_record_is_abridged_and_the_report_completes_it(tmp_path):
    warnings.simplefilter("ignore")
    path = str(tmp_path / "l.jsonl")
    reader = dpsql.from_df({"PUMS.PUMS": pd.read_csv(DATA / "PUMS.csv")},
                           str(DATA / "PUMS.yaml"), privacy=dpsql.Privacy(epsilon=1.0),
                           ledger=Ledger(path, dpsql.Budget(epsilon=10.0)))
    sql = ("SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE age NOT IN ("
           + ", ".join(str(1000 + i) for i in range(2000)) + ")")        # 12,000 characters
    reader.execute_df(sql)
    size = os.path.getsize(path)
    for _ in range(50):
        reader.execute_df(sql)
    grown = os.path.getsize(path) - size
    assert grown < 50 * 700, grown                     # was 50 x 12 KB and more
    records = Ledger(path).records()
    assert len(records) == 51 and sum(r.replay for r in records) == 50
    assert all(r.query == records[0].query and r.details == records[0].details
               for r in records[1:])
    assert reader.spent[0] == 1.0


def test_a_ledger_is_read_in_blocks(tmp_path):
    path = str(tmp_path / "big.jsonl")
    ledger = Ledger(path, dpsql.Budget(epsilon=1e9))
    details = {"statistics": ["x" * 100_000]}
    for i in range(200):                                # about 20 MB of records
        ledger.charge(0.001, 0.0, f"SELECT {i}", key=f"k{i}", details=details)
    assert os.path.getsize(path) > 20_000_000
    tracemalloc.start()
    try:
        fresh = Ledger(path)
        spent = fresh.spent()[0]
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert abs(spent - 0.2) < 1e-9
    assert peak < 6_000_000, peak                      # was twice the file: 40 MB


def test_free_replays_stop_growing_the_ledger(tmp_path, monkeypatch):
    """The twelfth review's open point: every free replay still added a few hundred bytes,
    without a bound. A release's replays past REPLAY_RECORDS are not written, so a ledger's
    size is bounded by its paid releases; a replay stays free, and a new release is
    recorded as before."""
    from dpsql.privacy import ledger as ledger_module
    monkeypatch.setattr(ledger_module, "REPLAY_RECORDS", 5)
    warnings.simplefilter("ignore")
    path = str(tmp_path / "l.jsonl")
    reader = dpsql.from_df({"PUMS.PUMS": pd.read_csv(DATA / "PUMS.csv")},
                           str(DATA / "PUMS.yaml"), privacy=dpsql.Privacy(epsilon=1.0),
                           ledger=Ledger(path, dpsql.Budget(epsilon=10.0)))
    first = reader.execute_df("SELECT COUNT(*) AS n FROM PUMS.PUMS")
    for _ in range(5):
        reader.execute_df("SELECT COUNT(*) AS n FROM PUMS.PUMS")
    size = os.path.getsize(path)
    again = None
    for _ in range(30):
        again = reader.execute_df("SELECT COUNT(*) AS n FROM PUMS.PUMS")
    assert os.path.getsize(path) == size
    assert again.equals(first) and reader.spent[0] == 1.0
    reopened = dpsql.from_df({"PUMS.PUMS": pd.read_csv(DATA / "PUMS.csv")},
                             str(DATA / "PUMS.yaml"), privacy=dpsql.Privacy(epsilon=1.0),
                             ledger=Ledger(path))            # counted again from the file
    assert reopened.execute_df("SELECT COUNT(*) AS n FROM PUMS.PUMS").equals(first)
    assert os.path.getsize(path) == size
    reopened.execute_df("SELECT SUM(age) AS s FROM PUMS.PUMS")
    records = Ledger(path).records()
    assert [r.replay for r in records] == [False] + [True] * 5 + [False]
