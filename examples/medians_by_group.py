"""Medians by group: MEDIAN, quantiles, MIN and MAX by education level, with their cost.

Run from anywhere: python examples/medians_by_group.py
"""
from pathlib import Path

import pandas as pd

import dpsql

DATA = Path(__file__).parent / "data"

reader = dpsql.from_df(pd.read_csv(DATA / "PUMS.csv"), metadata=DATA / "PUMS.yaml",
                       privacy=dpsql.Privacy(epsilon=1.0, delta=1e-8),
                       budget=dpsql.Budget(epsilon=3.0))

sql = """SELECT sex, COUNT(*) AS n, MEDIAN(income) AS median_income,
                QUANTILE_CONT(age, [0.25, 0.5, 0.75]) AS age_quartiles
         FROM PUMS.PUMS GROUP BY sex"""
print("cost (epsilon, delta):", reader.get_privacy_cost(sql))
print(reader.execute_df(sql))
print(reader.execute_df("SELECT MIN(age) AS youngest, MAX(age) AS oldest, "
                        "PERCENTILE_DISC(0.9) WITHIN GROUP (ORDER BY income) AS p90 FROM PUMS.PUMS"))
print("spent so far:", reader.spent)
