"""Planning-time benchmark: how long dpsql takes to plan a query, whatever its SQL.

Usage: python tests/benchmarks/bench_plan.py [--repeat 3] [--top 15] [--limit 0.1]

Planning is everything before data is read: parse, validate, plan, calibrate, render and
the dry run on one row of NULLs (``reader.get_privacy_cost(sql)``, on a reader over the
CSV files of tests/data). Each query is planned ``repeat`` times with the session's plan
cache emptied before each run; the best wall time and its CPU time are printed.

Planned: the shapes of issue 34 (below, each on the data set its SQL reads) and every line
of the SQL fixture files tests/sql/*.sql (refused lines are timed up to their refusal).
Prints the shapes, then the ``top`` slowest fixture lines, then how many plans took more
than ``limit`` seconds (the target is none over 0.1 s). Not part of the test suite;
tests/system/test_plan_time.py bounds the shapes generously so that a regression fails.
"""
from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import dpsql  # noqa: E402

from tests.paths import DATA_SETS, FIXTURE_FILES, SQL, data_set_of  # noqa: E402


def cte_chain(levels: int) -> str:
    """A CTE that joins the previous one with itself on the person, ``levels`` times
    (2^levels reads of the table)."""
    ctes = ["c0 AS (SELECT pid, age FROM PUMS.PUMS)"]
    for i in range(1, levels + 1):
        ctes.append(f"c{i} AS (SELECT a.pid, a.age FROM c{i - 1} a JOIN c{i - 1} b "
                    "ON a.pid = b.pid)")
    return "WITH " + ", ".join(ctes) + f" SELECT COUNT(*) AS n FROM c{levels}"


SHAPES = [
    # (name, data set, SQL)
    ("4-way self-join on the person", "pums",
     "SELECT COUNT(*) AS n, AVG(a.income) AS a FROM PUMS.PUMS a JOIN PUMS.PUMS b ON a.pid = b.pid "
     "JOIN PUMS.PUMS c ON a.pid = c.pid JOIN PUMS.PUMS d ON a.pid = d.pid"),
    ("self-join chain, 4 levels (16 reads)", "pums", cte_chain(4)),
    ("CROSS JOIN (VALUES ...) of 1,000 rows", "pums",
     "SELECT v.x, COUNT(*) AS n FROM PUMS.PUMS CROSS JOIN (VALUES "
     + ", ".join(f"({i})" for i in range(1000)) + ") AS v(x) WHERE age > v.x GROUP BY v.x"),
    ("IN list of 15,000 values", "pums",
     "SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE income IN ("
     + ", ".join(str(i) for i in range(15000)) + ")"),
    ("FROM list of 5 tables, public ones first", "retail",
     "SELECT n.region, COUNT(*) AS n FROM retail.parts p, retail.nations n, retail.lineitems l, "
     "retail.orders o, retail.customers c WHERE p.part_id = l.part_id AND l.order_id = o.order_id "
     "AND o.customer_id = c.customer_id AND c.nation_key = n.nation_key GROUP BY n.region"),
    ("join condition in every branch of an OR", "retail",
     "SELECT SUM(l.price) AS s FROM retail.lineitems l, retail.parts p WHERE "
     "(p.part_id = l.part_id AND p.brand = 'Brand#12' AND l.quantity < 10) OR "
     "(p.part_id = l.part_id AND p.brand = 'Brand#23' AND l.quantity BETWEEN 10 AND 20)"),
]


def readers() -> dict:
    """One reader per data set (no budget: nothing is refused for budget)."""
    out = {}
    for name, (meta, tables) in DATA_SETS.items():
        out[name] = dpsql.from_df(dict(tables), meta, privacy=dpsql.Privacy())
    return out


def plan_time(reader, sql: str, repeat: int) -> tuple:
    """(best wall seconds, CPU seconds of that run, outcome) of planning ``sql``."""
    best = None
    outcome = "planned"
    for _ in range(repeat):
        reader._plans.clear()          # a new plan each time, as for a new query
        reader._compiled.clear()
        wall, cpu = time.perf_counter(), time.process_time()
        try:
            reader.get_privacy_cost(sql)
        except dpsql.Error as err:
            outcome = f"refused: {type(err).__name__}"
        run = (time.perf_counter() - wall, time.process_time() - cpu)
        if best is None or run[0] < best[0]:
            best = run
    return best + (outcome,)


def fixture_lines() -> list:
    """(file:line, data set, SQL) of every query line of tests/sql/*.sql."""
    lines = []
    for name in FIXTURE_FILES:
        for number, line in enumerate((SQL / name).read_text(encoding="utf-8").splitlines(), 1):
            text = line.strip()
            if text and not text.startswith("#") and " -- " in text:
                lines.append((f"{name}:{number}", data_set_of(name), text.rsplit(" -- ", 1)[0]))
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--top", type=int, default=15)
    parser.add_argument("--limit", type=float, default=0.1)
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    opened = readers()
    for reader in opened.values():                 # imports and first-use caches
        reader.get_privacy_cost("SELECT COUNT(*) AS n FROM " + next(
            t.full_name for t in reader.metadata.tables.values() if not t.public))
    print(f"{'shape':45} {'wall':>9} {'cpu':>9}  outcome")
    timings = []
    for name, data_set, sql in SHAPES:
        wall, cpu, outcome = plan_time(opened[data_set], sql, args.repeat)
        timings.append((wall, name))
        print(f"{name:45} {wall * 1000:7.1f}ms {cpu * 1000:7.1f}ms  {outcome}")
    rows = []
    for where, data_set, sql in fixture_lines():
        wall, cpu, outcome = plan_time(opened[data_set], sql, args.repeat)
        rows.append((wall, cpu, where, outcome, sql))
    rows.sort(reverse=True)
    print(f"\n{len(rows)} fixture queries; the {args.top} slowest plans:")
    for wall, cpu, where, outcome, sql in rows[:args.top]:
        print(f"{wall * 1000:7.1f}ms {cpu * 1000:7.1f}ms  {where:24} {outcome:9.9}  {sql[:70]}")
    over = [r for r in rows if r[0] > args.limit] + [t for t in timings if t[0] > args.limit]
    print(f"\nplans over {args.limit * 1000:.0f} ms: {len(over)} of {len(rows) + len(timings)}"
          f"; fixture median {rows[len(rows) // 2][0] * 1000:.1f} ms")


if __name__ == "__main__":
    main()
