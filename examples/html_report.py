"""A session with a ledger, then its DP release table as a standalone HTML page.

Run from anywhere: python examples/html_report.py [OUT.html]   (default: report.html here)
The page has no scripts and loads nothing: open it in a browser, or attach it to a report.
"""
import sys
import tempfile
from pathlib import Path

import pandas as pd

import dpsql

DATA = Path(__file__).parent / "data"
out = Path(sys.argv[1] if len(sys.argv) > 1 else "report.html")

with tempfile.TemporaryDirectory() as tmp:
    reader = dpsql.from_df(pd.read_csv(DATA / "PUMS.csv"), metadata=DATA / "PUMS.yaml",
                           privacy=dpsql.Privacy(epsilon=0.5, delta=1e-8),
                           budget=dpsql.Budget(epsilon=3.0), ledger=Path(tmp) / "session.ledger")
    reader.execute_df("SELECT sex, COUNT(*) AS n, AVG(income) AS mean_income "
                      "FROM PUMS.PUMS GROUP BY sex")
    reader.execute_df("SELECT educ, MEDIAN(age) AS median_age FROM PUMS.PUMS GROUP BY educ")
    reader.execute_df("SELECT VARIANCE(age) AS var_age FROM PUMS.PUMS",
                      privacy=dpsql.Privacy(epsilon=1.0))
    reader.execute_df("SELECT sex, COUNT(*) AS n, AVG(income) AS mean_income "
                      "FROM PUMS.PUMS GROUP BY sex")          # asked again: a free replay
    out.write_text(reader.report(format="html"), encoding="utf-8")
    print(reader.report(format="markdown").splitlines()[2])
print(f"wrote {out.resolve()}")
