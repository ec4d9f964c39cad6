"""A private session on a PostgreSQL server: the data stays where it lives.

Usage: python examples/postgres.py postgresql://user@host/dbname
(the password, if any, from PGPASSWORD or ~/.pgpass). The server must hold the table
"PUMS"."PUMS" with the columns of examples/data/PUMS_pid.yaml (the tests load
examples/data/PUMS_pid.csv there). Only exact aggregates leave the server; noise,
budget and ledger stay here.
"""
import sys
import tempfile
from pathlib import Path

import psycopg

import dpsql

DATA = Path(__file__).parent / "data"

if len(sys.argv) != 2:
    sys.exit(__doc__)
with psycopg.connect(sys.argv[1]) as con, tempfile.TemporaryDirectory() as tmp:
    reader = dpsql.from_connection(con, DATA / "PUMS_pid.yaml",
                                   privacy=dpsql.Privacy(epsilon=1.0),
                                   budget=dpsql.Budget(epsilon=3.0),
                                   ledger=Path(tmp) / "pums.ledger")
    sql = "SELECT sex, COUNT(*) AS n, AVG(income) AS mean_income FROM PUMS.PUMS GROUP BY sex"
    print(reader.explain(sql).split("\n\n")[0])            # tables, privacy unit, cost
    print(reader.execute_df(sql))
    print(reader.execute_df("SELECT MEDIAN(age) AS median_age FROM PUMS.PUMS"))
    print("spent so far:", reader.spent)
