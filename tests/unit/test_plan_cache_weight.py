"""A session's kept plans are bounded by what the collector must walk (issue 33's
thirty-third review). Each full pass of Python's collector walks every tracked object and
holds the interpreter lock meanwhile; in ``dpsql serve`` a full pass came every two seconds
of large plans, and an analyst's kept plans were weighed by their SQL alone: 32 plans of 256
SUMs (5.6 kB of SQL each, 33,600 objects each) kept over a million objects, and every
analyst's ``select 1`` waited behind passes of seconds. Plans are now weighed by their SQL
and what it compiled to (0.2-0.9 objects per character)."""
import gc
import warnings

import pandas as pd

import dpsql
from dpsql.api import collector
from dpsql.api.collector import serving
from dpsql.api.reader import _PLAN_CACHE_CHARS
from tests.paths import DATA


def tracked() -> int:
    gc.collect()
    return len(gc.get_objects())


def test_kept_plans_of_large_statements_keep_a_bounded_number_of_objects():
    reader = dpsql.from_df({"PUMS.PUMS": pd.read_csv(DATA / "PUMS.csv")}, str(DATA / "PUMS.yaml"),
                           privacy=dpsql.Privacy(epsilon=1.0))
    reader.explain("SELECT COUNT(*) AS n FROM PUMS.PUMS")
    before = tracked()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for k in range(12):              # 12 distinct statements of 256 SUMs, all explained
            reader.explain("SELECT " + ", ".join(f"SUM(age + {k * 1000 + j}) AS v{j}"
                                                 for j in range(256)) + " FROM PUMS.PUMS")
    kept = tracked() - before
    # Before: 12 x 33,600 = 403,000 objects (all twelve kept). Now at most the characters'
    # limit's worth (under 0.9 objects per character), whatever the count of plans.
    assert kept < 0.9 * _PLAN_CACHE_CHARS, kept
    assert 1 <= len(reader._plans) < 12
    again = "SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE age > 1"
    reader.explain(again)
    assert reader._plans.get(next(reversed(reader._plans._items))) is not None   # still keeps


def test_a_server_freezes_what_the_process_holds_when_it_starts():
    """Modules, metadata and engines are out of every full pass's sight while a server runs."""
    running = collector._servers       # a test server of this worker may be running
    assert (gc.get_freeze_count() > 1000) == (running > 0)
    serving(True)
    try:
        assert gc.get_freeze_count() > 1000
    finally:
        serving(False)
    assert (gc.get_freeze_count() > 1000) == (running > 0)
