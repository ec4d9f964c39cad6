"""Tumult Analytics on the same data and machine: its time / the same non-private query's time
on its own Spark, measured in the same run (to set beside bench_spark.py's dpsql ratios).

Usage (in a virtual environment of its own: Tumult pins pyspark 3.5):
    python -m venv /tmp/tvenv && /tmp/tvenv/bin/pip install tmlt.analytics
    PYSPARK_PYTHON=/tmp/tvenv/bin/python \
        /tmp/tvenv/bin/python tests/benchmarks/bench_tumult.py --dir DIR [--rows 10000000]
(Tumult runs Python on Spark's workers, which must import it: hence PYSPARK_PYTHON.)

DIR holds the Parquet files bench_spark.py wrote (``--dir``), so both read the same data.
The queries are bench_spark's where Tumult has them: COUNT, AVG with the same bounds, a
grouped COUNT and AVG over public keys, and the user-level query with at most 2 rows per
person. Not part of the test suite.
"""
from __future__ import annotations

import argparse
import os
import time
import warnings


def best(fn, repeat: int) -> float:
    """bench_engine.best, repeated: this script runs where dpsql and DuckDB are not installed."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def error(spark, session, query, plain_sql: str, evaluations: int) -> str:
    """The median and mean absolute error of Tumult's released values (the last column, per
    group) against the plain query's (its last column: the average or count)."""
    import statistics
    exact = {tuple(r[:-2] if len(r) > 2 else r[:-1]): r[-1] for r in spark.sql(plain_sql).collect()}
    errors = []
    for _ in range(evaluations):
        from tmlt.analytics import PureDPBudget
        for row in session.evaluate(query, PureDPBudget(1.0)).collect():
            errors.append(abs(float(row[-1]) - exact[tuple(row[:-1])]))
    return f"median {statistics.median(errors):.4g} mean {statistics.fmean(errors):.4g}"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--dir", required=True)
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--accuracy", type=int, default=0, metavar="N",
                        help="also the median absolute error of N evaluations at epsilon 1")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    from pyspark.sql import SparkSession
    from tmlt.analytics import (AddOneRow, AddRowsWithID, KeySet, MaxRowsPerID, PureDPBudget,
                                QueryBuilder, Session)
    spark = (SparkSession.builder.master("local[2]").appName("tumult-bench")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.driver.memory", "4g")
             # Tumult keeps temporary tables in the warehouse: never in the working directory
             .config("spark.sql.warehouse.dir", os.path.join(args.dir, "spark-warehouse"))
             .getOrCreate())
    spark.sparkContext.setLogLevel("FATAL")
    pums = spark.read.parquet(os.path.join(args.dir, f"pums_{args.rows}.parquet"))
    pums_pid = spark.read.parquet(os.path.join(args.dir, f"pums_pid_{args.rows}.parquet"))
    pums.createOrReplaceTempView("plain_pums")
    pums_pid.createOrReplaceTempView("plain_pums_pid")
    big = PureDPBudget(float("inf"))
    rows = Session.from_dataframe(privacy_budget=big, source_id="pums", dataframe=pums,
                                  protected_change=AddOneRow())
    persons = Session.from_dataframe(privacy_budget=big, source_id="pums_pid", dataframe=pums_pid,
                                     protected_change=AddRowsWithID(id_column="pid"))
    sex, married = KeySet.from_dict({"sex": [0, 1]}), KeySet.from_dict({"married": [0, 1]})
    cases = [
        ("count", rows, QueryBuilder("pums").count(), "SELECT COUNT(*) FROM plain_pums"),
        ("avg", rows, QueryBuilder("pums").average("income", low=0, high=500000),
         "SELECT AVG(income) FROM plain_pums"),
        ("sex group", rows, QueryBuilder("pums").groupby(sex).average("age", low=0, high=100),
         "SELECT sex, COUNT(*), AVG(age) FROM plain_pums GROUP BY sex"),
        ("user-level", persons, QueryBuilder("pums_pid").enforce(MaxRowsPerID(2))
         .groupby(married).average("income", low=0, high=500000),
         "SELECT married, COUNT(*), AVG(income) FROM plain_pums_pid GROUP BY married"),
    ]
    print(f"\nTumult Analytics, {args.rows:,} rows (best of {args.repeat})")
    print(f"{'query':18} {'plain ms':>10} {'tumult ms':>10} {'ratio':>8}")
    for name, session, query, plain_sql in cases:
        def private():
            session.evaluate(query, PureDPBudget(1.0)).collect()

        def plain():
            spark.sql(plain_sql).collect()
        plain()
        private()
        p, t = best(plain, args.repeat), best(private, args.repeat)
        print(f"{name:18} {p * 1e3:10.0f} {t * 1e3:10.0f} {t / p:8.1f}", flush=True)
        if args.accuracy:
            print(f"{'':18} |error| {error(spark, session, query, plain_sql, args.accuracy)}"
                  f" ({args.accuracy} evaluations at epsilon 1)", flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
