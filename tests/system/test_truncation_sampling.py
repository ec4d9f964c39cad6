"""DuckDB's per-person truncation (dpsql.engines.duckdb.dialect.truncated), run on DuckDB.

It must keep exactly min(n, k) of a person's n rows, all their own, a uniform k-subset of
them, never more than k whatever the random tags (ties included), and draw the tags of one
set of rows once even when the rows themselves are random. Thresholds are far in the tail
(p < 1e-7): these tests do not flake, and each fails if the rule it checks is broken.
"""
import collections
import itertools

import duckdb
import pytest
from scipy.stats import chi2
from sqlglot import exp

from dpsql.engines.duckdb.dialect import truncated

P_TAIL = 1e-7


def kept(con, rows: exp.Select, k: int, fields=("pid", "v"), tag=None) -> list:
    """(pid, v) of the rows the truncation keeps; ``tag`` replaces its RANDOM() tags."""
    tree = truncated(rows, "pid", k, list(fields))
    if tag is not None:
        tree = tree.transform(lambda n: exp.maybe_parse(tag, dialect="duckdb") if isinstance(n, exp.Rand) else n)
    return con.execute(tree.sql("duckdb")).fetchall()


def table(con, sizes: dict) -> exp.Select:
    """Person p has sizes[p] rows, with values p * 1000 + 0, 1, ..."""
    values = ", ".join(f"({p}, {p * 1000 + i})" for p, n in sizes.items() for i in range(n))
    con.execute(f"CREATE OR REPLACE TABLE t AS SELECT * FROM (VALUES {values}) AS v(pid, v)")
    return exp.select("*").from_("t")


def test_each_person_keeps_min_n_k_of_their_own_rows():
    con = duckdb.connect()
    sizes = {p: 1 + p % 40 for p in range(400)}
    rows = table(con, sizes)
    for _ in range(5):
        per = collections.defaultdict(list)
        for pid, v in kept(con, rows, 5):
            per[pid].append(v)
        assert {p: len(vs) for p, vs in per.items()} == {p: min(n, 5) for p, n in sizes.items()}
        for pid, vs in per.items():
            assert len(set(vs)) == len(vs) and all(v // 1000 == pid for v in vs)


def test_a_heavy_persons_kept_rows_are_a_uniform_k_subset():
    """20,000 persons with 6 rows each keep 2: each of the 15 pairs about 1,333 times."""
    con = duckdb.connect()
    con.execute("CREATE TABLE t AS SELECT range // 6 AS pid, range % 6 AS v FROM range(120000)")
    assert_uniform_pairs(kept(con, exp.select("*").from_("t"), 2))


def assert_uniform_pairs(rows) -> None:
    """``rows`` (pid, v) kept of 20,000 persons with values 0-5 each, at k = 2: every
    person keeps a pair, and the 15 pairs are equally likely (chi-square, p < 1e-7)."""
    per = collections.defaultdict(list)
    for pid, v in rows:
        per[pid].append(v)
    counts = collections.Counter(tuple(sorted(vs)) for vs in per.values())
    pairs = list(itertools.combinations(range(6), 2))
    assert set(counts) <= set(pairs) and sum(counts.values()) == 20000
    expected = 20000 / len(pairs)
    statistic = sum((counts[p] - expected) ** 2 / expected for p in pairs)
    assert statistic < chi2.isf(P_TAIL, len(pairs) - 1), counts


@pytest.mark.parametrize("k, expected", [(2, 2), (3, 2), (4, 4), (5, 4)])
def test_tied_tags_never_keep_more_than_k(k, expected):
    """Tags v // 2 tie in pairs (0, 0, 1, 1, 2, 2): where the k-th and (k+1)-th tags tie,
    the person keeps only the rows below the k-th tag; otherwise exactly k."""
    con = duckdb.connect()
    con.execute("CREATE TABLE t AS SELECT range // 6 AS pid, range % 6 AS v FROM range(60)")
    per = collections.Counter(pid for pid, _ in kept(con, exp.select("*").from_("t"), k,
                                                      tag="(v // 2)::DOUBLE"))
    assert set(per.values()) == {expected}


def test_random_rows_are_read_once():
    """Rows that are themselves a random draw are stored: were they drawn again for the
    persons over the bound and for the others, a person could keep more than k rows."""
    con = duckdb.connect()
    con.execute("CREATE TABLE t AS SELECT range // 8 AS pid, range % 8 AS v FROM range(80000)")
    rows = exp.select("*").from_("t").where("random() < 0.5")
    tree = truncated(rows, "pid", 4, ["pid", "v"])
    assert "_rows AS MATERIALIZED" in tree.sql("duckdb")
    per = collections.Counter(pid for pid, _ in con.execute(tree.sql("duckdb")).fetchall())
    assert max(per.values()) <= 4


def test_deterministic_rows_are_recomputed_not_stored():
    tree = truncated(exp.select("*").from_("t"), "pid", 4, ["pid", "v"])
    assert "_rows AS NOT MATERIALIZED" in tree.sql("duckdb")
    assert "_tagged AS MATERIALIZED" in tree.sql("duckdb")


@pytest.mark.parametrize("where", [
    "pid IN (SELECT pid FROM t GROUP BY pid HAVING SUM(v * 0.1) > 1)",   # float sums
    "pid IN (SELECT pid FROM t GROUP BY pid HAVING 1 / MAX(v * 0.0) > 0)",  # +0 or -0
    "pid IN (SELECT pid FROM t LIMIT 10)", "random() < 0.5", "v < uuid()::VARCHAR::INT"])
def test_rows_that_may_differ_when_recomputed_are_stored(where):
    """A float sum's rounding depends on how threads combine it: a filter over it could
    keep a person's rows in one reading and not in another."""
    rows = exp.select("*").from_("t").where(where, dialect="duckdb")
    assert "_rows AS MATERIALIZED" in truncated(rows, "pid", 4, ["pid", "v"]).sql("duckdb")
