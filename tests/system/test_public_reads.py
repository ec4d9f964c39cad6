"""A session's reads of public tables (``dpsql.api.caches.PublicReads``): planning reads a
lookup's statistics, values and key repetitions once per session and minute, and a lookup
changed meanwhile makes an answer miss rows, never count a person's row twice."""
import duckdb
import pytest

import dpsql
from dpsql.api import caches

META = {"": {"s": {
    "lk": {"public": True, "k": {"type": "int"}, "name": {"type": "string"}},
    "p": {"max_ids": 1, "pid": {"type": "int", "private_id": True}, "k": {"type": "int"},
          "x": {"type": "int", "lower": 0, "upper": 10}}}}}
QUERY = ("SELECT l.name, COUNT(*) AS n FROM s.p JOIN s.lk l ON p.k = l.k WHERE x >= {low} "
         "GROUP BY l.name ORDER BY l.name")
EXACT = dpsql.Privacy(epsilon=1e6)    # noise far below 0.5: the exact counts, rounded


@pytest.fixture
def owner():
    """The owner's connection: 3,000 persons, one row each, over a lookup of three keys."""
    con = duckdb.connect()
    con.execute("CREATE SCHEMA s; CREATE TABLE s.lk AS SELECT * FROM "
                "(VALUES (1, 'one'), (2, 'two'), (3, 'three')) v(k, name)")
    con.execute("CREATE TABLE s.p AS SELECT i AS pid, 1 + i % 3 AS k, i % 10 AS x "
                "FROM range(3000) t(i)")
    yield con
    con.close()


def _counting(reader) -> list:
    """The engine reads that ``reader``'s planning makes from now on (their SQL)."""
    calls, read = [], reader.public_rows.read
    reader.public_rows.read = lambda select, tables: calls.append(select.sql()) or read(
        select, tables)
    return calls


def _counts(reader, low: int) -> dict:
    frame = reader.execute_df(QUERY.format(low=low))
    return dict(zip(frame["name"], frame["n"].round().astype(int)))


def test_a_sessions_queries_over_one_lookup_read_it_once(owner):
    reader = dpsql.from_connection(owner, META, privacy=EXACT)
    calls = _counting(reader)
    assert _counts(reader, 0) == {"one": 1000, "three": 1000, "two": 1000}
    first = len(calls)
    assert first >= 2                 # statistics, values (and the key's repetitions)
    assert _counts(reader, 1) == {"one": 900, "three": 900, "two": 900}
    reader.get_privacy_cost(QUERY.format(low=2) + " LIMIT 2")
    assert len(calls) == first        # two more plans, no read of the lookup
    again = dpsql.from_connection(owner, META, privacy=EXACT)
    more = _counting(again)
    _counts(again, 0)
    assert len(more) == first         # a new session reads it anew


def test_a_lookup_changed_during_a_session_never_counts_a_row_twice(owner):
    """The owner repeats key 1 and adds key 4 after the session read the lookup: a new
    plan of the session still takes key 1 for unique and the key set for {one, two,
    three}, and the plan enforces both (rows of a repeated key dropped, a name outside the
    key set not released); a new session, or the same one a minute later, sees the change."""
    reader = dpsql.from_connection(owner, META, privacy=EXACT)
    assert _counts(reader, 0) == {"one": 1000, "three": 1000, "two": 1000}
    calls = _counting(reader)
    owner.execute("INSERT INTO s.lk VALUES (1, 'uno'), (4, 'four')")
    owner.execute("INSERT INTO s.p SELECT 10000 + i, 4, 1 FROM range(500) t(i)")
    assert _counts(reader, 1) == {"one": 0, "three": 900, "two": 900}
    total = reader.execute_df("SELECT COUNT(*) AS n FROM s.p JOIN s.lk l ON p.k = l.k "
                              "WHERE x >= 1")["n"][0]
    assert round(total) == 900 + 900 + 500     # not 4,100: key 1's persons twice each
    assert calls == []                          # both plans from the session's reads
    fresh = _counts(dpsql.from_connection(owner, META, privacy=EXACT), 1)
    # key 1 now repeats: each of its persons keeps one of their two joined rows (max_ids 1)
    assert fresh["four"] == 500 and fresh["one"] + fresh["uno"] == 900
    assert {k: fresh[k] for k in ("two", "three")} == {"two": 900, "three": 900}


def test_reads_are_dropped_after_a_minute(owner, monkeypatch):
    reader = dpsql.from_connection(owner, META, privacy=EXACT)
    calls = _counting(reader)
    _counts(reader, 0)
    first = len(calls)
    monkeypatch.setattr(caches, "PUBLIC_READ_S", 0.0)
    _counts(reader, 1)
    assert len(calls) == 2 * first


def test_a_read_larger_than_the_cache_is_not_kept(owner, monkeypatch):
    reader = dpsql.from_connection(owner, META, privacy=EXACT)
    calls = _counting(reader)
    monkeypatch.setattr(caches, "PUBLIC_CELLS", 5)
    _counts(reader, 0)
    _counts(reader, 1)
    assert len(calls) >= 4 and len(calls) % 2 == 0 and len(set(calls)) == len(calls) // 2
