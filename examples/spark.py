"""A private session on Spark: the same SQL, run where a cluster can reach the data.

Usage: python examples/spark.py [MASTER]   (default local[2], this machine; on a cluster
give its master URL, e.g. spark://host:7077, and put the Parquet files on a file system
every executor can read). Spark reads the CSV typed by the metadata, writes it as Parquet
once, and dpsql binds the metadata table PUMS.PUMS to that Parquet path. Only exact
aggregates leave Spark; noise, budget and ledger stay here.
"""
import sys
import tempfile
import warnings
from pathlib import Path

import dpsql

DATA = Path(__file__).parent / "data"
SCHEMA = "age bigint, sex string, educ string, race string, income decimal(38, 9), " \
         "married string, pid bigint"

with warnings.catch_warnings():
    warnings.simplefilter("ignore")          # pyspark's remarks on the pandas version
    from pyspark.sql import SparkSession
    spark = (SparkSession.builder.master(sys.argv[1] if len(sys.argv) > 1 else "local[2]")
             .appName("dpsql-example").config("spark.ui.showConsoleProgress", "false")
             # Spark's own tables go to a temporary directory, not ./spark-warehouse
             .config("spark.sql.warehouse.dir", tempfile.mkdtemp(prefix="dpsql-spark-warehouse-"))
             .getOrCreate())
spark.sparkContext.setLogLevel("FATAL")
with tempfile.TemporaryDirectory() as tmp:
    parquet = str(Path(tmp) / "pums.parquet")
    (spark.read.csv(str(DATA / "PUMS_pid.csv"), header=True, schema=SCHEMA)
     .selectExpr("age", "sex", "educ", "race", "CAST(income AS bigint) AS income", "married",
                 "pid").write.parquet(parquet))
    reader = dpsql.from_connection(spark, DATA / "PUMS_pid.yaml",
                                   tables={"PUMS.PUMS": parquet},
                                   privacy=dpsql.Privacy(epsilon=1.0),
                                   budget=dpsql.Budget(epsilon=3.0),
                                   ledger=Path(tmp) / "pums.ledger")
    sql = "SELECT sex, COUNT(*) AS n, AVG(income) AS mean_income FROM PUMS.PUMS GROUP BY sex"
    print(reader.explain(sql).split("\n\n")[0])            # tables, privacy unit, cost
    print(reader.execute_df(sql))
    print(reader.execute_df("SELECT MEDIAN(age) AS median_age FROM PUMS.PUMS"))
    print("spent so far:", reader.spent)
spark.stop()
