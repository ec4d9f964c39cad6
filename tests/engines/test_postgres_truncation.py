"""PostgreSQL's per-person truncation (the random-tag cut of dpsql.engines.truncation, as
the PostgreSQL dialect renders it), run on a real server: each person keeps exactly
min(n, k) of their own rows, a uniform k-subset of them, never more than k whatever the
tags (ties included), and rows that are themselves random are read once. Thresholds are
far in the tail (p < 1e-7), as in tests/system/test_truncation_sampling.py (DuckDB)."""
import collections
import itertools

import pytest
from scipy.stats import chi2
from sqlglot import exp

from dpsql.engines.postgres.dialect import Postgres
from dpsql.plan.nodes import truncated

P_TAIL = 1e-7


def kept(con, rows: exp.Select, k: int, tag=None) -> list:
    """(pid, v) of the rows kept; ``tag`` replaces the RANDOM() tags."""
    tree = Postgres().compile_nodes(truncated(rows, "pid", k, ["pid", "v"]))
    if tag is not None:
        tree = tree.transform(lambda n: exp.maybe_parse(tag, dialect="postgres")
                              if isinstance(n, exp.Rand) else n)
    with con.cursor() as cur:
        cur.execute(tree.sql("postgres"))
        return cur.fetchall()


@pytest.fixture
def con(postgres):
    with postgres.connect(autocommit=True) as c:
        c.execute("SET enable_nestloop = off")
        yield c


def _table(con, name: str, sql: str) -> exp.Select:
    con.execute(f"DROP TABLE IF EXISTS {name}")
    con.execute(f"CREATE TABLE {name} AS {sql}")
    con.execute(f"ANALYZE {name}")
    return exp.select("*").from_(name)


def test_each_person_keeps_min_n_k_of_their_own_rows(con):
    rows = _table(con, "trunc_sizes", "SELECT p AS pid, p * 1000 + i AS v FROM "
                  "generate_series(0, 399) p, generate_series(0, 39) i WHERE i < 1 + p % 40")
    for _ in range(3):
        per = collections.defaultdict(list)
        for pid, v in kept(con, rows, 5):
            per[pid].append(v)
        assert {p: len(vs) for p, vs in per.items()} == {p: min(1 + p % 40, 5) for p in range(400)}
        for pid, vs in per.items():
            assert len(set(vs)) == len(vs) and all(v // 1000 == pid for v in vs)


def test_a_heavy_persons_kept_rows_are_a_uniform_k_subset(con):
    """20,000 persons with 6 rows each keep 2: each of the 15 pairs about 1,333 times."""
    rows = _table(con, "trunc_uniform", "SELECT g / 6 AS pid, g % 6 AS v FROM "
                  "generate_series(0, 119999) g")
    per = collections.defaultdict(list)
    for pid, v in kept(con, rows, 2):
        per[pid].append(v)
    counts = collections.Counter(tuple(sorted(vs)) for vs in per.values())
    pairs = list(itertools.combinations(range(6), 2))
    assert set(counts) <= set(pairs) and sum(counts.values()) == 20000
    expected = 20000 / len(pairs)
    statistic = sum((counts[p] - expected) ** 2 / expected for p in pairs)
    assert statistic < chi2.isf(P_TAIL, len(pairs) - 1), counts


@pytest.mark.parametrize("k, expected", [(2, 2), (3, 2), (4, 4), (5, 4)])
def test_tied_tags_never_keep_more_than_k(con, k, expected):
    rows = _table(con, "trunc_ties", "SELECT g / 6 AS pid, g % 6 AS v FROM generate_series(0, 59) g")
    per = collections.Counter(pid for pid, _ in kept(con, rows, k, tag="CAST(v / 2 AS DOUBLE PRECISION)"))
    assert set(per.values()) == {expected}


def test_random_rows_are_read_once(con):
    """Rows that are themselves a random draw are stored (MATERIALIZED): drawn again for
    the heavy persons and for the others, a person could keep more than k rows."""
    _table(con, "trunc_random", "SELECT g / 8 AS pid, g % 8 AS v FROM generate_series(0, 79999) g")
    rows = exp.select("*").from_("trunc_random").where("random() < 0.5")
    sql = Postgres().compile_nodes(truncated(rows, "pid", 4, ["pid", "v"])).sql("postgres")
    assert "_rows AS MATERIALIZED" in sql
    with con.cursor() as cur:
        cur.execute(sql)
        per = collections.Counter(pid for pid, _ in cur.fetchall())
    assert max(per.values()) <= 4
