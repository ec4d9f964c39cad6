"""PostgreSQL benchmark: dpsql time / the same non-private query's time on the same server,
measured in the same run.

Usage: python tests/benchmarks/bench_postgres.py [--rows 1000000] [--repeat 5] [--url URL]
       [--no-joins]

Without ``--url`` a throwaway server is started (tests/servers.py) and stopped at the end.
The tables are the synthetic PUMS-like ones of bench_engine.py, generated on the server;
the queries are bench_engine's, transpiled by sqlglot for the plain runs. The user-level
query is also compared with its floor: the same query grouped additionally by the person
(the per-person pass any contribution bound needs). The joins of bench_engine.py
(JOIN_QUERIES, on its ``join_metadata()``) run on tables made the same way (``visits_ref``
a view of the visits), each compared with the plain join and with its floor: the plain join
plus a plain per-person pass over the joined relation, timed separately and added. Not part
of the test suite.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
import warnings

import sqlglot

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))

import dpsql  # noqa: E402
from tests.benchmarks.bench_engine import (  # noqa: E402
    LOOKUP_ROWS, QUERIES, USER_QUERIES, best, fresh_release, join_metadata, metadata,
    time_joins)

BODY = ("(random() * 100)::bigint AS age, (random() < 0.5)::int::bigint AS sex, "
        "(1 + random() * 15)::bigint AS educ, (1 + random() * 5)::bigint AS race, "
        "(random() * random() * 300000)::bigint AS income, "
        "(random() < 0.55)::int::bigint AS married")


def make_tables(con, rows: int) -> None:
    with con.cursor() as cur:
        cur.execute("CREATE SCHEMA IF NOT EXISTS bench")
        cur.execute("DROP TABLE IF EXISTS bench.pums, bench.pums_pid")
        cur.execute(f"CREATE TABLE bench.pums AS SELECT {BODY} FROM generate_series(1, {rows})")
        cur.execute(f"CREATE TABLE bench.pums_pid AS SELECT {BODY}, "
                    f"(g / 2 + (random() < 0.1)::int)::bigint AS pid "
                    f"FROM generate_series(1, {rows}) AS g")
        cur.execute("ANALYZE bench.pums; ANALYZE bench.pums_pid")
    con.commit()


def make_join_tables(con, rows: int) -> None:
    """bench_engine.make_join_tables on the server (g runs from 0 as DuckDB's range)."""
    persons = max(rows // 10, 1)
    one = "(random() < 0.1)::int"
    with con.cursor() as cur:
        cur.execute("CREATE SCHEMA IF NOT EXISTS bench")
        cur.execute("DROP VIEW IF EXISTS bench.visits_ref")
        cur.execute("DROP TABLE IF EXISTS bench.big, bench.lookup, bench.persons, bench.visits")
        cur.execute(f"CREATE TABLE bench.big AS SELECT (g / 6 + {one})::bigint AS pid, "
                    f"floor(random() * {LOOKUP_ROWS})::bigint AS code, "
                    f"(random() * 1000)::bigint AS x FROM generate_series(0, {rows - 1}) AS g")
        cur.execute(f"CREATE TABLE bench.lookup AS SELECT g::bigint AS code, "
                    f"'name_' || lpad(g::text, 2, '0') AS name "
                    f"FROM generate_series(0, {LOOKUP_ROWS - 1}) AS g")
        cur.execute(f"CREATE TABLE bench.persons AS SELECT g::bigint AS pid, "
                    f"(random() < 0.5)::int::bigint AS sex, floor(random() * 8)::bigint AS region "
                    f"FROM generate_series(0, {persons - 1}) AS g")
        cur.execute(f"CREATE TABLE bench.visits AS SELECT "
                    f"least(g / 10 + {one}, {persons - 1})::bigint AS pid, "
                    f"(random() * 500)::bigint AS cost FROM generate_series(0, {rows - 1}) AS g")
        cur.execute("CREATE VIEW bench.visits_ref AS SELECT * FROM bench.visits")
        cur.execute("ANALYZE bench.big; ANALYZE bench.lookup; ANALYZE bench.persons; "
                    "ANALYZE bench.visits")
    con.commit()


def plain_sql(sql: str) -> str:
    return _aliased(sqlglot.transpile(sql, read="duckdb", write="postgres")[0])


def timed_plain(con, sql: str, repeat: int) -> float:
    def go():
        with con.cursor() as cur:
            cur.execute(sql)
            cur.fetchall()
    go()
    return best(go, repeat)


def run(url: str, rows: int, repeat: int) -> None:
    import psycopg
    con = psycopg.connect(url, autocommit=True)
    make_tables(con, rows)
    reader = dpsql.from_connection(psycopg.connect(url), metadata(),
                                   privacy=dpsql.Privacy(epsilon=1.0))
    print(f"\nPostgreSQL, {rows:,} rows (best of {repeat})")
    print(f"{'query':18} {'plain ms':>10} {'dpsql ms':>10} {'ratio':>7}")
    for name, sql in QUERIES:
        fresh_release(reader, sql)
        plain = timed_plain(con, plain_sql(sql), repeat)
        private = best(lambda: fresh_release(reader, sql), repeat)
        print(f"{name:18} {plain * 1e3:10.1f} {private * 1e3:10.1f} {private / plain:7.2f}",
              flush=True)
    for name, sql, floor_sql in USER_QUERIES:
        fresh_release(reader, sql)
        floor = timed_plain(con, _aliased(plain_sql(floor_sql)), repeat)
        plain = timed_plain(con, plain_sql(sql), repeat)
        private = best(lambda: fresh_release(reader, sql), repeat)
        print(f"{name:18} {plain * 1e3:10.1f} {private * 1e3:10.1f} {private / plain:7.2f}"
              f"   floor {floor * 1e3:.1f} ms, dpsql/floor {private / floor:.2f}", flush=True)


def run_joins(url: str, rows: int, repeat: int) -> None:
    import psycopg
    con = psycopg.connect(url, autocommit=True)
    start = time.perf_counter()
    make_join_tables(con, rows)
    print(f"\nPostgreSQL joins, {rows:,} rows on the large side (tables ready in "
          f"{time.perf_counter() - start:.1f} s; best of {repeat})")
    reader = dpsql.from_connection(psycopg.connect(url), join_metadata(),
                                   privacy=dpsql.Privacy(epsilon=1.0))
    time_joins(reader, lambda sql: timed_plain(con, plain_sql(sql), repeat), repeat)


def _aliased(sql: str) -> str:
    """PostgreSQL 15 needs an alias on a subquery in FROM."""
    tree = sqlglot.parse_one(sql, read="postgres")
    for i, sub in enumerate(tree.find_all(sqlglot.exp.Subquery)):
        if not sub.alias:
            sub.set("alias", sqlglot.exp.TableAlias(this=sqlglot.exp.to_identifier(f"_f{i}")))
    return tree.sql("postgres")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, nargs="+", default=[1_000_000])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--url", default=None)
    parser.add_argument("--no-joins", action="store_true", help="skip the join queries")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    server = None
    if args.url is None:
        from tests.servers import PostgresServer
        server = PostgresServer()
        url = server.url()
    else:
        url = args.url
    try:
        for rows in args.rows:
            run(url, rows, args.repeat)
            if not args.no_joins:
                run_joins(url, rows, args.repeat)
    finally:
        if server is not None:
            server.stop()


if __name__ == "__main__":
    main()
