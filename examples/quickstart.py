"""Quick start: three private answers about the 1,000-row PUMS sample shipped in examples/data.

Run from anywhere: python examples/quickstart.py
"""
from pathlib import Path

import pandas as pd

import dpsql

DATA = Path(__file__).parent / "data"

df = pd.read_csv(DATA / "PUMS.csv")
df["income"] = df["income"].astype("int64")   # '1e+05' in the file made it float; the metadata says int
reader = dpsql.from_df(df, metadata=DATA / "PUMS.yaml",
                       privacy=dpsql.Privacy(epsilon=1.0),      # the most one query may cost
                       budget=dpsql.Budget(epsilon=3.0))        # the session's total

sql = "SELECT sex, COUNT(*) AS n, AVG(age) AS mean_age FROM PUMS.PUMS GROUP BY sex"
print("cost of the query (epsilon, delta):", reader.get_privacy_cost(sql))
print(reader.execute_df(sql))
print(reader.execute_df("SELECT COUNT(*) AS n, SUM(income) AS income FROM PUMS.PUMS WHERE age >= 65"))
print("spent so far:", reader.spent)
