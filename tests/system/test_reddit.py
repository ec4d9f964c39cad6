"""A real unknown, huge key domain: reddit (author, ngram) pairs, up to 500 rows per author."""
import pandas as pd
import pytest

import dpsql


@pytest.fixture(scope="module")
def reddit(data_dir):
    return pd.read_csv(data_dir / "reddit.csv.gz", index_col=0)


def test_group_by_ngram_releases_only_common_keys(reddit, data_dir):
    meta = dpsql.Metadata.load(data_dir / "reddit.yaml").to_dict()
    meta["reddit"]["reddit"]["reddit"]["max_ids"] = 5          # a tighter, owner-chosen bound
    r = dpsql.from_df(reddit, meta, privacy=dpsql.Privacy(epsilon=3.0, delta=1e-6))
    sql = "SELECT ngram, COUNT(DISTINCT author) AS n FROM reddit.reddit GROUP BY ngram"
    plan = r._plan(sql)
    assert plan.threshold is plan.statistics[0]          # persons counted once, no shift
    out = r.execute_df(sql)
    authors = reddit.groupby("ngram").author.nunique()
    assert "('n', 't')" in set(out.ngram)                 # 558 authors, far above tau
    # tau = 26 at noise scale 5/3. Over the ~54,600 keys with at most 10 authors the expected
    # number released is 0.027 (sum of their exact tails), so 4 or more has probability < 1e-7.
    assert (authors[out.ngram] <= 10).sum() <= 3
    assert len(out) < 100 and len(authors) > 30000


def test_max_ids_500_is_honest_about_its_cost(reddit, data_dir):
    r = dpsql.from_df(reddit, data_dir / "reddit.yaml", privacy=dpsql.Privacy(epsilon=3.0, delta=1e-6))
    plan = r._plan("SELECT ngram, COUNT(*) AS n FROM reddit.reddit GROUP BY ngram")
    # one author may add 500 rows to a key and create 500 keys: tau is in the thousands
    assert plan.tau > 500
    assert r.execute_df("SELECT COUNT(*) AS n FROM reddit.reddit").shape == (1, 1)
