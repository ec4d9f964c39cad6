"""Scale benchmark: peak memory against DuckDB, a first query on Parquet, and 10^8 rows.

Usage: python tests/benchmarks/bench_scale.py [--rows 10000000] [--big 100000000]
       [--memory-limit 2GB] [--dir /tmp/dpsql_bench]

- Peak memory: each query runs once in a fresh process (imports loaded first) over a Parquet file of ``rows``
  rows (the PUMS-like table with a person id, about two rows per person); the process's
  peak resident memory is read after the query, and the part the query added (the peak
  minus the resident memory before it) is compared with the same query without privacy.
- First query on Parquet: a new reader's first grouped query (parse, validate, plan, dry
  run and the scan) on ``rows`` rows with one row per person (``max_ids: 1``), against the
  same query in DuckDB.
- ``--big N``: the same Parquet layout with N rows (made here, never committed), queried
  under DuckDB's ``memory_limit`` (spilling to ``--dir``): time and peak memory, both ways.
Not part of the test suite. Called by bench_engine.py ``--scale``.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
import warnings
from pathlib import Path

import duckdb

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from bench_engine import COLUMNS  # noqa: E402

QUERIES = [
    # Row privacy (the same file, its pid column not described), against the same query.
    ("avg", "SELECT AVG(income) AS a FROM bench.pums", None),
    ("educ,race group", "SELECT educ, race, COUNT(*) AS n, SUM(income) AS s "
                        "FROM bench.pums GROUP BY educ, race", None),
    # User level (max_ids 2), against the query and its floor (grouped by the person too).
    ("user-level", "SELECT married, COUNT(*) AS n, AVG(income) AS a FROM bench.pums_pid "
                   "GROUP BY married", "SELECT COUNT(*) FROM (SELECT married, COUNT(*) AS n, "
                                       "AVG(income) AS a FROM bench.pums_pid GROUP BY married, pid)"),
]
FIRST = "SELECT sex, COUNT(*) AS n, AVG(age) AS a FROM bench.pums_pid GROUP BY sex"
FIRST_FLOOR = ("SELECT COUNT(*) FROM (SELECT sex, COUNT(*) AS n, AVG(age) AS a "
               "FROM bench.pums_pid GROUP BY sex, pid)")


def parquet(directory: Path, rows: int, unique: bool = False) -> Path:
    """The PUMS-like table with a person id as Parquet (made once per size): about two
    rows per person, or one (``unique``)."""
    path = directory / f"pums_pid_{rows}{'_unique' if unique else ''}.parquet"
    if not path.exists():
        directory.mkdir(parents=True, exist_ok=True)
        pid = "range" if unique else "range // 2 + (random() < 0.1)::BIGINT"
        body = ("(random() * 100)::BIGINT AS age, (random() < 0.5)::BIGINT AS sex, "
                "(1 + random() * 15)::BIGINT AS educ, (1 + random() * 5)::BIGINT AS race, "
                "(random() * random() * 300000)::BIGINT AS income, "
                f"(random() < 0.55)::BIGINT AS married, ({pid})::BIGINT AS pid")
        duckdb.connect().execute(
            f"COPY (SELECT {body} FROM range({rows})) TO '{path}' (FORMAT parquet)")
    return path


def child(path: str, sql: str, private: bool, max_ids: int, limit: str, spill: str) -> dict:
    """Run ``sql`` once in this process; its time and memory (the --child side)."""
    import dpsql
    warnings.simplefilter("ignore")
    con = duckdb.connect()
    if limit:
        con.execute(f"SET memory_limit = '{limit}'")
        con.execute(f"SET temp_directory = '{spill}'")
    con.execute("CREATE SCHEMA bench")
    con.execute(f"CREATE VIEW bench.pums_pid AS SELECT * FROM read_parquet('{path}')")
    con.execute(f"CREATE VIEW bench.pums AS SELECT * FROM read_parquet('{path}')")
    meta = {"": {"bench": {"pums_pid": {"max_ids": max_ids, "pid": {
        "type": "int", "private_id": True}, **COLUMNS}, "pums": {"row_privacy": True, **COLUMNS}}}}
    warm_up(meta)
    before = peak_mb()
    reader = dpsql.from_connection(con, meta, privacy=dpsql.Privacy(epsilon=1.0))
    times = []
    for _ in range(2):               # a first run, then the same query again (plan cached)
        start = time.perf_counter()
        reader.execute_df(sql, replay=False) if private else con.execute(sql).df()
        times.append(time.perf_counter() - start)
    peak = peak_mb()
    return {"seconds": times[0], "again": times[1], "peak_mb": peak, "added_mb": peak - before}


def peak_mb() -> float:
    """This process's peak resident memory (VmHWM: unlike getrusage's maxrss, it is not
    inherited from the parent across fork and exec)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def warm_up(meta: dict) -> None:
    """Load what both sides import on first use (pandas, sqlglot, numpy), on 10 rows, so
    that the measured memory and time are the query's (a new reader is still used)."""
    import dpsql
    con = duckdb.connect()
    con.execute("CREATE SCHEMA bench")
    con.execute("CREATE TABLE bench.pums_pid AS SELECT 1 AS age, 1 AS sex, 1 AS educ, "
                "1 AS race, 1 AS income, 1 AS married, range AS pid FROM range(10)")
    con.execute(FIRST).df()
    dpsql.from_connection(con, meta, privacy=dpsql.Privacy(epsilon=1.0)).execute_df(FIRST)
    con.close()


def measure(path: Path, sql: str, private: bool, max_ids: int = 2, limit: str = "",
            spill: str = "") -> dict:
    args = [sys.executable, __file__, "--child", str(path), sql, str(int(private)),
            str(max_ids), limit, spill]
    out = subprocess.run(args, capture_output=True, text=True)
    if out.returncode:
        error = next((line for line in out.stderr.splitlines() if "Error" in line), "failed")
        return {"error": error.split(":", 1)[-1].strip()[:90]}
    return json.loads(out.stdout.strip().splitlines()[-1])


def memory(directory: Path, rows: int) -> None:
    path = parquet(directory, rows)
    print(f"\npeak memory, {rows:,} rows of Parquet, one run each in a fresh process")
    print(f"{'query':18} {'duckdb MB':>10} {'dpsql MB':>10} {'ratio':>7}   (added by the query;"
          " peak resident in brackets; the floor's for user-level queries)")
    for name, sql, floor_sql in QUERIES:
        plain, private = measure(path, floor_sql or sql, False), measure(path, sql, True)
        print(f"{name:18} {plain['added_mb']:10.0f} {private['added_mb']:10.0f} "
              f"{private['added_mb'] / max(plain['added_mb'], 1):7.2f}   "
              f"({plain['peak_mb']:.0f} / {private['peak_mb']:.0f} MB; "
              f"{plain['again']:.2f} / {private['again']:.2f} s run again)")


def first_query(directory: Path, rows: int) -> None:
    path = parquet(directory, rows, unique=True)
    plain = measure(path, FIRST, False, max_ids=1)
    floor = measure(path, FIRST_FLOOR, False, max_ids=1)
    private = measure(path, FIRST, True, max_ids=1)
    print(f"\nfirst grouped query of a new reader on {rows:,} rows of Parquet (max_ids 1): "
          f"duckdb {plain['seconds']:.2f} s, its floor (grouped by the person too) "
          f"{floor['seconds']:.2f} s, dpsql {private['seconds']:.2f} s "
          f"({private['again']:.2f} s run again), dpsql/floor "
          f"{private['seconds'] / floor['seconds']:.2f}")


def big(directory: Path, rows: int, limit: str) -> None:
    start = time.perf_counter()
    path = parquet(directory, rows)
    made = time.perf_counter() - start
    spill = str(directory / "spill")
    print(f"\n{rows:,} rows of Parquet ({path.stat().st_size / 1e9:.1f} GB, made in {made:.0f} s), "
          f"memory_limit {limit}, one run each in a fresh process")
    for name, sql, floor_sql in QUERIES:
        plain = measure(path, floor_sql or sql, False, limit=limit, spill=spill)
        private = measure(path, sql, True, limit=limit, spill=spill)
        what = "floor" if floor_sql else "duckdb"
        print(f"{name:18} {what} {_run_text(plain)}; dpsql {_run_text(private)}"
              + (f"; ratio {private['again'] / plain['again']:.2f}"
                 if "error" not in plain and "error" not in private else ""))


def _run_text(run: dict) -> str:
    if "error" in run:
        return f"failed: {run['error']}"
    return (f"{run['again']:6.2f} s (first run {run['seconds']:.2f} s), "
            f"{run['peak_mb']:5.0f} MB peak")


def main() -> None:
    if sys.argv[1:2] == ["--child"]:
        path, sql, private, max_ids, limit, spill = sys.argv[2:8]
        print(json.dumps(child(path, sql, private == "1", int(max_ids), limit, spill)))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--big", type=int, default=0)
    parser.add_argument("--memory-limit", default="2GB")
    parser.add_argument("--dir", type=Path, default=Path("/tmp/dpsql_bench"))
    run(parser.parse_args())


def run(args) -> None:
    memory(args.dir, args.rows)
    first_query(args.dir, args.rows)
    if args.big:
        big(args.dir, args.big, args.memory_limit)


if __name__ == "__main__":
    main()
