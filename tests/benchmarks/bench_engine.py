"""Engine benchmark: dpsql time / non-private DuckDB time, measured in the same run.

Usage: python tests/benchmarks/bench_engine.py [--rows 1000000 10000000] [--repeat 5] [--joins]
       [--scale [--big 100000000 --memory-limit 2GB]]

Synthetic PUMS-like tables are generated inside DuckDB. Each query runs
through dpsql (plan cached after the first call, as in a session) and as the
same SQL without privacy on the same connection; the best of ``repeat`` runs
of each is compared. Queries on the table with a person id (the user-level
query, and the per-person queries that aggregate a subquery grouped by the id)
are also compared with their floor: the same query grouped additionally by the
person id (the work any per-person bound needs), its result consumed inside
DuckDB. Not part of the test suite.

Joins (``--joins`` runs only these): a private table joined with a 20-row public lookup
table on a unique key, and persons joined with their visits on the person id
(``rows`` rows on the large side, ``rows // 10`` persons). Each is compared with
the same join without privacy, and with its floor: that plain join plus a plain
``GROUP BY pid`` of the joined relation (the per-person pass any bound needs),
its result consumed inside DuckDB; the two are timed separately and added.
"""
from __future__ import annotations

import argparse
import inspect
import sys
import time
import warnings

from pathlib import Path

import duckdb

import dpsql

sys.path.insert(0, str(Path(__file__).resolve().parent))

QUERIES = [
    ("count", "SELECT COUNT(*) AS n FROM bench.pums"),
    ("avg", "SELECT AVG(income) AS a FROM bench.pums"),
    ("sex group", "SELECT sex, COUNT(*) AS n, AVG(age) AS a FROM bench.pums GROUP BY sex"),
    ("educ,race group", "SELECT educ, race, COUNT(*) AS n, SUM(income) AS s FROM bench.pums "
                        "GROUP BY educ, race"),
    # A CTE with a derived key: the key's public values follow from the query.
    ("CTE decade group", "WITH adults AS (SELECT *, age // 10 * 10 AS decade FROM bench.pums "
                         "WHERE age BETWEEN 25 AND 64) "
                         "SELECT decade, COUNT(*) AS n, AVG(income) AS a FROM adults GROUP BY decade"),
    # Aggregates over expressions: their bounds are derived from the columns'.
    ("expr aggregates", "SELECT SUM(CASE WHEN married = 1 THEN 1 ELSE 0 END) AS m, "
                        "AVG(age - 30) AS a FROM bench.pums"),
    ("FILTER aggregates", "SELECT COUNT(*) FILTER (WHERE age > 40) AS n, "
                          "SUM(income) FILTER (WHERE sex = 1) AS s FROM bench.pums"),
    # Against DuckDB's exact quantile of the same groups.
    ("educ median", "SELECT educ, MEDIAN(income) AS m FROM bench.pums GROUP BY educ"),
]
USER_QUERY = "SELECT married, COUNT(*) AS n, AVG(income) AS a FROM bench.pums_pid GROUP BY married"
FLOOR_QUERY = ("SELECT COUNT(*) FROM (SELECT married, COUNT(*) AS n, AVG(income) AS a "
               "FROM bench.pums_pid GROUP BY married, pid)")
PER_PERSON = "(SELECT pid, COUNT(*) AS n FROM bench.pums_pid GROUP BY pid)"
# (name, query, floor): queries on the table with a person id, each with its floor.
USER_QUERIES = [
    ("user-level", USER_QUERY, FLOOR_QUERY),
    ("per-person avg", f"SELECT AVG(n) AS per_person FROM {PER_PERSON}",
     f"SELECT COUNT(*) FROM (SELECT AVG(n) AS per_person FROM {PER_PERSON} GROUP BY pid)"),
    ("per-person hist", f"SELECT n, COUNT(*) AS persons FROM {PER_PERSON} GROUP BY n",
     f"SELECT COUNT(*) FROM (SELECT n, COUNT(*) AS persons FROM {PER_PERSON} GROUP BY n, pid)"),
]

# Joins: (name, query, per-person pass over the same joined relation). The floor is the
# plain query's time plus the per-person pass's time.
JOIN_QUERIES = [
    ("private x public",
     "SELECT l.name, COUNT(*) AS n, AVG(b.x) AS a FROM bench.big b "
     "JOIN bench.lookup l ON b.code = l.code GROUP BY l.name",
     "SELECT COUNT(*) FROM (SELECT b.pid, COUNT(*) AS n FROM bench.big b "
     "JOIN bench.lookup l ON b.code = l.code GROUP BY b.pid)"),
    ("private x private",
     "SELECT p.region, COUNT(*) AS n, SUM(v.cost) AS s FROM bench.persons p "
     "JOIN bench.visits v ON p.pid = v.pid GROUP BY p.region",
     "SELECT COUNT(*) FROM (SELECT p.pid, COUNT(*) AS n FROM bench.persons p "
     "JOIN bench.visits v ON p.pid = v.pid GROUP BY p.pid)"),
    # The same visits, whose pid references persons instead of being a private_id.
    ("via references",
     "SELECT p.region, COUNT(*) AS n, SUM(v.cost) AS s FROM bench.persons p "
     "JOIN bench.visits_ref v ON p.pid = v.pid GROUP BY p.region",
     "SELECT COUNT(*) FROM (SELECT p.pid, COUNT(*) AS n FROM bench.persons p "
     "JOIN bench.visits_ref v ON p.pid = v.pid GROUP BY p.pid)"),
]
LOOKUP_ROWS = 20

COLUMNS = {
    "age": {"type": "int", "lower": 0, "upper": 100},
    "sex": {"type": "int"}, "educ": {"type": "int"}, "race": {"type": "int"},
    "income": {"type": "int", "lower": 0, "upper": 500000},
    "married": {"type": "int"},
}


def metadata() -> dict:
    pums = {"row_privacy": True, **COLUMNS}
    pums_pid = {"max_ids": 2, "pid": {"type": "int", "private_id": True}, **COLUMNS}
    return {"": {"bench": {"pums": pums, "pums_pid": pums_pid}}}


def join_metadata() -> dict:
    """big (about 6 rows per person, max_ids 6) with a public lookup; persons and visits."""
    pid = {"type": "int", "private_id": True}
    big = {"max_ids": 6, "pid": pid, "code": {"type": "int"},
           "x": {"type": "int", "lower": 0, "upper": 1000}}
    lookup = {"public": True, "code": {"type": "int"}, "name": {"type": "string"}}
    persons = {"max_ids": 1, "pid": pid, "sex": {"type": "int"}, "region": {"type": "int"}}
    visits = {"max_ids": 10, "pid": pid, "cost": {"type": "int", "lower": 0, "upper": 500}}
    visits_ref = {"max_ids": 10, "pid": {"type": "int", "references": "bench.persons.pid"},
                  "cost": {"type": "int", "lower": 0, "upper": 500}}
    return {"": {"bench": {"big": big, "lookup": lookup, "persons": persons,
                           "visits": visits, "visits_ref": visits_ref}}}


def make_join_tables(con, rows: int) -> None:
    """``rows`` rows in big and visits; ``rows // 10`` persons; a 20-row lookup."""
    con.execute("CREATE SCHEMA IF NOT EXISTS bench")
    # pid = row // 6, plus 1 for 10% of rows: most persons have 5-7 rows, some more than 6.
    con.execute(f"CREATE OR REPLACE TABLE bench.big AS SELECT "
                f"(range // 6 + (random() < 0.1)::BIGINT)::BIGINT AS pid, "
                f"floor(random() * {LOOKUP_ROWS})::BIGINT AS code, "
                f"(random() * 1000)::BIGINT AS x FROM range({rows})")
    con.execute(f"CREATE OR REPLACE TABLE bench.lookup AS SELECT range AS code, "
                f"'name_' || lpad(range::VARCHAR, 2, '0') AS name FROM range({LOOKUP_ROWS})")
    persons = max(rows // 10, 1)
    con.execute(f"CREATE OR REPLACE TABLE bench.persons AS SELECT range AS pid, "
                f"(random() < 0.5)::BIGINT AS sex, floor(random() * 8)::BIGINT AS region "
                f"FROM range({persons})")
    # pid = row // 10, plus 1 for 10% of rows: about 10 visits per person, some more.
    con.execute(f"CREATE OR REPLACE TABLE bench.visits AS SELECT "
                f"least(range // 10 + (random() < 0.1)::BIGINT, {persons - 1})::BIGINT AS pid, "
                f"(random() * 500)::BIGINT AS cost FROM range({rows})")
    con.execute("CREATE OR REPLACE VIEW bench.visits_ref AS SELECT * FROM bench.visits")


def make_tables(con, rows: int) -> None:
    con.execute("CREATE SCHEMA IF NOT EXISTS bench")
    body = (" (random() * 100)::BIGINT AS age, (random() < 0.5)::BIGINT AS sex,"
            " (1 + random() * 15)::BIGINT AS educ, (1 + random() * 5)::BIGINT AS race,"
            " (random() * random() * 300000)::BIGINT AS income, (random() < 0.55)::BIGINT AS married")
    con.execute(f"CREATE OR REPLACE TABLE bench.pums AS SELECT {body} FROM range({rows})")
    con.execute(f"CREATE OR REPLACE TABLE bench.pums_pid AS SELECT {body}, "
                f"(range // 2 + (random() < 0.1)::BIGINT)::BIGINT AS pid FROM range({rows})")


def fresh_release(reader, sql: str):
    """A fresh release each time: a reader that replays a repeated query's stored release
    (``replay=True``) would otherwise time a dictionary lookup."""
    if "replay" in inspect.signature(reader.execute_df).parameters:
        return reader.execute_df(sql, replay=False)
    return reader.execute_df(sql)


def best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def run(rows: int, repeat: int) -> None:
    con = duckdb.connect()
    make_tables(con, rows)
    reader = dpsql.from_connection(con, metadata(), privacy=dpsql.Privacy(epsilon=1.0))
    print(f"\n{rows:,} rows (best of {repeat})")
    print(f"{'query':18} {'duckdb ms':>10} {'dpsql ms':>10} {'ratio':>7}")
    for name, sql in QUERIES:
        reader.execute_df(sql)                       # plan once, as a session would
        plain = best(lambda: con.execute(sql).df(), repeat)
        private = best(lambda: fresh_release(reader, sql), repeat)
        print(f"{name:18} {plain * 1e3:10.1f} {private * 1e3:10.1f} {private / plain:7.2f}")
    for name, sql, floor_sql in USER_QUERIES:
        reader.execute_df(sql)
        floor = best(lambda: con.execute(floor_sql).fetchall(), repeat)
        plain = best(lambda: con.execute(sql).df(), repeat)
        private = best(lambda: fresh_release(reader, sql), repeat)
        print(f"{name:18} {plain * 1e3:10.1f} {private * 1e3:10.1f} {private / plain:7.2f}"
              f"   floor {floor * 1e3:.1f} ms, dpsql/floor {private / floor:.2f}")


def time_joins(reader, plain, repeat: int, only: set | None = None) -> None:
    """Print each of JOIN_QUERIES' times: ``plain(sql)`` (the engine's own, in seconds),
    dpsql's fresh release, and the floor (the plain join plus its per-person pass)."""
    print(f"{'query':18} {'plain ms':>10} {'dpsql ms':>10} {'ratio':>7}")
    for name, sql, per_person_sql in JOIN_QUERIES:
        if only and name not in only:
            continue
        fresh_release(reader, sql)
        base, per_person = plain(sql), plain(per_person_sql)
        private = best(lambda: fresh_release(reader, sql), repeat)
        print(f"{name:18} {base * 1e3:10.1f} {private * 1e3:10.1f} {private / base:7.2f}"
              f"   floor {base * 1e3:.1f} + {per_person * 1e3:.1f} ms,"
              f" dpsql/floor {private / (base + per_person):.2f}", flush=True)


def run_joins(rows: int, repeat: int) -> None:
    con = duckdb.connect()
    make_join_tables(con, rows)
    reader = dpsql.from_connection(con, join_metadata(), privacy=dpsql.Privacy(epsilon=1.0))
    print(f"\njoins, {rows:,} rows on the large side (best of {repeat})")
    time_joins(reader, lambda sql: best(lambda: con.execute(sql).df(), repeat), repeat)


def overhead(repeat: int) -> None:
    """Fixed cost per query on a 1,000-row table: dpsql time minus DuckDB time."""
    con = duckdb.connect()
    make_tables(con, 1000)
    make_join_tables(con, 1000)
    both = {"": {"bench": {**metadata()[""]["bench"], **join_metadata()[""]["bench"]}}}
    reader = dpsql.from_connection(con, both, privacy=dpsql.Privacy(epsilon=1.0))
    print(f"\nfixed overhead on 1,000 rows (best of {repeat}, plan cached)")
    queries = [(name, sql) for name, sql, *_ in QUERIES + USER_QUERIES + JOIN_QUERIES]
    for name, sql in queries:
        reader.execute_df(sql)
        plain = best(lambda: con.execute(sql).df(), repeat)
        private = best(lambda: fresh_release(reader, sql), repeat)
        fresh = best(lambda: dpsql.from_connection(con, both, privacy=dpsql.Privacy(
            epsilon=1.0)).execute_df(sql), max(2, repeat // 5))
        print(f"{name:18} overhead {1e3 * (private - plain):6.2f} ms"
              f"   (first run in a new session: {1e3 * (fresh - plain):6.2f} ms)")


TEXT_QUERIES = [   # on examples/data/PUMS.csv, whose keys are text in its metadata
    ("count", "SELECT COUNT(*) AS n FROM PUMS.PUMS"),
    ("sex group", "SELECT sex, COUNT(*) AS n, AVG(age) AS a FROM PUMS.PUMS GROUP BY sex"),
    ("educ group", "SELECT educ, COUNT(*) AS n FROM PUMS.PUMS GROUP BY educ"),
    ("educ, married", "SELECT educ, married, SUM(income) AS s FROM PUMS.PUMS "
                      "GROUP BY educ, married"),
]


def overhead_text(repeat: int) -> None:
    """Fixed cost per query on the 1,000-row PUMS DataFrame with text columns (from_df)."""
    import statistics

    import pandas as pd
    data = Path(__file__).resolve().parents[2] / "examples" / "data"
    df = pd.read_csv(data / "PUMS.csv", dtype={c: str for c in ("sex", "educ", "race",
                                                                  "married")})
    reader = dpsql.from_df(df, str(data / "PUMS.yaml"), privacy=dpsql.Privacy(epsilon=1.0))
    con = duckdb.connect()
    con.register("pums_df", df)

    def median(fn) -> float:
        times = []
        for _ in range(repeat):
            start = time.perf_counter()
            fn()
            times.append(time.perf_counter() - start)
        return statistics.median(times)
    print(f"\nfixed overhead, 1,000-row DataFrame with text keys (median of {repeat})")
    for name, sql in TEXT_QUERIES:
        fresh_release(reader, sql)
        plain_sql = sql.replace("PUMS.PUMS", "pums_df")
        plain = median(lambda: con.execute(plain_sql).df())
        private = median(lambda: fresh_release(reader, sql))
        print(f"{name:18} plain {1e3 * plain:5.2f} ms, dpsql {1e3 * private:5.2f} ms,"
              f" overhead {1e3 * (private - plain):5.2f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[1_000_000, 10_000_000])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--joins", action="store_true", help="only the join queries")
    parser.add_argument("--scale", action="store_true",
                        help="also peak memory and a first query on Parquet (bench_scale.py)")
    parser.add_argument("--big", type=int, default=0,
                        help="with --scale: also N rows of Parquet under --memory-limit")
    parser.add_argument("--memory-limit", default="2GB")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    if not args.joins:
        overhead(max(args.repeat, 20))
        overhead_text(max(args.repeat * 20, 100))
    for rows in args.rows:
        if not args.joins:
            run(rows, args.repeat)
        run_joins(rows, args.repeat)
    if args.scale:
        import bench_scale
        bench_scale.run(argparse.Namespace(rows=max(args.rows), big=args.big,
                                           memory_limit=args.memory_limit,
                                           dir=Path("/tmp/dpsql_bench")))


if __name__ == "__main__":
    main()
