"""The DB-API connector: a cursor with a `?` parameter, then pandas.read_sql on the same session.

A connection is one privacy session: every query through any of its cursors (and through
pandas) is charged to one budget, and a query that would pass it is refused before it runs.
Run from anywhere: python examples/dbapi_pandas.py
"""
import warnings
from pathlib import Path

import pandas as pd

import dpsql

DATA = Path(__file__).parent / "data"

con = dpsql.connect(metadata=DATA / "PUMS.yaml",
                    tables={"PUMS.PUMS": DATA / "PUMS.csv"},   # DuckDB reads the CSV in place
                    privacy=dpsql.Privacy(epsilon=1.0),         # the most one query may cost
                    budget=dpsql.Budget(epsilon=3.0))           # the session's total

cur = con.cursor()
# qmark parameters are bound as SQL literals into the parsed query, never pasted into text.
cur.execute("SELECT sex, COUNT(*) AS n, AVG(income) AS mean_income FROM PUMS.PUMS "
            "WHERE age >= ? GROUP BY sex", (40,))
print("columns:", [(d[0], d[1]) for d in cur.description])    # (name, type_code)
print("rows:", cur.rowcount)
for row in cur.fetchall():
    print(row)

# pandas speaks DB-API; it warns that it only tests SQLAlchemy and sqlite3 connections.
with warnings.catch_warnings():
    warnings.filterwarnings("ignore", message="pandas only supports SQLAlchemy")
    df = pd.read_sql("SELECT educ, COUNT(*) AS n FROM PUMS.PUMS WHERE age BETWEEN ? AND ? "
                     "GROUP BY educ ORDER BY n DESC LIMIT 5", con, params=(25, 64))
# Groups whose keys are not public appear only if their noisy count clears a threshold,
# so fewer than 5 rows may come back.
print(df)

epsilon, delta = con.spent
print(f"spent: epsilon={epsilon:.6g}, delta={delta:.3g} of the budget 3.0")
try:  # a released answer cannot be taken back
    con.rollback()
except dpsql.NotSupportedError as err:
    print("rollback:", err)
con.close()
