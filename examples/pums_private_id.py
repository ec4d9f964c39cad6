"""User-level privacy: PUMS with a person id, where one person may have several rows.

examples/data/PUMS_pid.yaml marks `pid` as the private id and allows max_ids: 1 row per
person. dpsql keeps a random subset of at most max_ids rows of each person (inside
DuckDB), so one person's influence on any answer is bounded, whatever the data holds.
Run: python examples/pums_private_id.py
"""
from pathlib import Path

import pandas as pd

import dpsql

DATA = Path(__file__).parent / "data"
df = pd.read_csv(DATA / "PUMS_pid.csv")
reader = dpsql.from_df(df, metadata=DATA / "PUMS_pid.yaml",
                       privacy=dpsql.Privacy(epsilon=1.0, delta=1e-9),
                       budget=dpsql.Budget(epsilon=2.0, delta=1e-8))

sql = ("SELECT married, COUNT(*) AS n, AVG(income) AS mean_income "
       "FROM PUMS.PUMS GROUP BY married")
print(reader.explain(sql))          # the bounded plan, per-statistic noise and budget share
print(reader.execute_df(sql))       # true counts: married 0 -> 451, 1 -> 549
print(reader.execute_df("SELECT COUNT(DISTINCT pid) AS persons FROM PUMS.PUMS"))
print("spent:", reader.spent)
