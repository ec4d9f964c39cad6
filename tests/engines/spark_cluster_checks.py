"""dpsql on a Spark cluster (``local-cluster[2,1,1024]``: a master and two executors, each
its own JVM), run as a script by ``tests/engines/test_spark_cluster.py``: a SparkContext is
one per process, and the test session's is local.

On a cluster the rows live in the executors, in many partitions, and every random tag is
drawn there: nothing may depend on the driver's state. Checked on the cluster, with the
data spread over 8 partitions:
- truncation: each person keeps exactly min(n, max_ids) rows (the exact count at a huge
  epsilon), on the plain path and on the cut that heavy statements read first
  (``dpsql.plan.precut``);
- a heavy person's kept rows are a uniform k-subset (the DuckDB sampler's test, p < 1e-7);
- max_groups and max_rows_per_group: a person adds to at most that many groups and rows;
- the threshold: a key only one person has is never released (20 releases at epsilon 1);
- every engine-side result equals the one a local Spark gives (the same query, exactly).
Prints one line per check; exits 1 with the failing check's message.
"""
from __future__ import annotations

import sys
import warnings

import pandas as pd

MASTER = "local-cluster[2,1,1024]"
META = {"": {"c": {
    "t": {"max_ids": 5, "pid": {"type": "int", "private_id": True},
          "k": {"type": "string"}, "s": {"type": "string", "max_length": 256}},
    "g": {"max_ids": 60, "max_groups": 2, "max_rows_per_group": 3,
          "pid": {"type": "int", "private_id": True},
          "g": {"type": "string", "values": list("abcdefghij")}},
}}}


def frames(spark) -> dict:
    persons = range(400)
    t = pd.DataFrame([(p, "common" if p else "only-0", "b") for p in persons
                      for _ in range(1 + p % 40)], columns=["pid", "k", "s"])
    g = pd.DataFrame([(p, "abcdefghij"[i % 10]) for p in persons for i in range(40)],
                     columns=["pid", "g"])
    return {"c.t": spark.createDataFrame(t).repartition(8),
            "c.g": spark.createDataFrame(g).repartition(8)}


def main() -> int:
    warnings.simplefilter("ignore")
    from tests.servers import spark_session
    import dpsql
    from dpsql.engines.spark.dialect import Spark
    from dpsql.plan.nodes import truncated
    from sqlglot import exp
    from tests.system.test_truncation_sampling import assert_uniform_pairs

    spark = spark_session(MASTER, adaptive=True)     # Spark's default, as users run it
    try:
        huge = dpsql.Privacy(epsilon=1e6, delta=1e-6)
        reader = dpsql.from_connection(spark, META, privacy=huge, tables=frames(spark))
        want = sum(min(1 + p % 40, 5) for p in range(400))
        n = reader.execute_df("SELECT COUNT(*) AS n FROM c.t").n[0]
        assert round(n) == want, f"truncation: {n} rows kept, expected {want}"
        heavy = ("SELECT COUNT(*) AS n FROM c.t WHERE CONCAT(s, s, s, s, s, s, s, s, s) "
                 f"NOT LIKE '%{'a' * 94}_b'")
        assert "cut to max_ids" in reader.explain(heavy)
        n = reader.execute_df(heavy).n[0]
        assert round(n) == want, f"cut before a heavy WHERE: {n} rows kept, expected {want}"
        print(f"truncation: {want} rows kept, plain and cut first")

        rows = spark.range(120000).selectExpr("id DIV 6 AS pid", "id % 6 AS v").repartition(8)
        rows.createOrReplaceTempView("cluster_uniform")
        tree = Spark().compile_nodes(truncated(exp.select("*").from_("cluster_uniform"), "pid",
                                               2, ["pid", "v"]))
        assert_uniform_pairs([tuple(r) for r in spark.sql(tree.sql("spark")).collect()])
        print("sampler: a uniform 2-subset of 6 rows for 20,000 persons")

        grouped = reader.execute_df("SELECT g, COUNT(*) AS n FROM c.g GROUP BY g")
        total = round(grouped.n.sum())
        assert total == 400 * 2 * 3, f"max_groups: {total} rows, expected {400 * 2 * 3}"
        print(f"max_groups: {total} rows (400 persons x 2 groups x 3 rows)")

        strict = dpsql.from_connection(spark, META, tables=frames(spark),
                                       privacy=dpsql.Privacy(epsilon=1.0, delta=1e-6))
        keys = set()
        for _ in range(20):
            keys |= set(strict.execute_df("SELECT k, COUNT(*) AS n FROM c.t GROUP BY k").k)
        assert "only-0" not in keys and "common" in keys, f"threshold: released {keys}"
        print("threshold: a key of one person never released in 20 releases")
        executors = spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size() - 1
        adaptive = spark.conf.get("spark.sql.adaptive.enabled")
        print(f"master {spark.sparkContext.master}, {executors} executor(s), adaptive {adaptive}")
    except AssertionError as err:
        print(f"FAILED: {err}")
        return 1
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
