"""Visits per person: row-level SQL before aggregation, on a table with several rows per person.

examples/data/clinic.yaml describes clinic.visits: `pid` is the person, a person may
have up to max_ids = 6 visits, `cost` is bounded in the metadata and `duration_min`
is not. The queries below group per person inside a subquery (the per-person
aggregation), bound an unbounded column in the query itself, and use a CTE whose
derived key is public (every decade is released, no threshold).
Run: python examples/visits_per_person.py
"""
from pathlib import Path

import pandas as pd

import dpsql

DATA = Path(__file__).parent / "data"
visits = pd.read_csv(DATA / "visits.csv", parse_dates=["visit_time"])
reader = dpsql.from_df({"clinic.visits": visits}, metadata=DATA / "clinic.yaml",
                       privacy=dpsql.Privacy(epsilon=0.5, delta=1e-7),
                       budget=dpsql.Budget(epsilon=3.0, delta=1e-6))

# How many visits does a person make? One row per person, so COUNT(*) counts persons.
per_person = """
    SELECT n AS visits, COUNT(*) AS persons
    FROM (SELECT pid, COUNT(*) AS n FROM clinic.visits GROUP BY pid) AS per_person
    GROUP BY n"""
print(reader.explain(per_person))    # the relational plan: truncation, per-person bounds
print(reader.execute_df(per_person))   # true: 1 -> 441, 2 -> 448, 3 -> 446, 4 -> 210, 5 -> 214, 6 -> 241

# The average person's yearly cost and minutes (duration_min is bounded by the query).
print(reader.execute_df("""
    SELECT AVG(cost) AS cost_per_person, AVG(minutes) AS minutes_per_person
    FROM (SELECT pid, SUM(cost) AS cost, SUM(LEAST(GREATEST(duration_min, 0), 120)) AS minutes
          FROM clinic.visits GROUP BY pid)"""))

# Frequent visitors (3 or more visits), and visits by age decade from a CTE.
print(reader.execute_df("""
    SELECT COUNT(*) AS frequent_visitors
    FROM (SELECT pid FROM clinic.visits GROUP BY pid HAVING COUNT(*) >= 3)"""))
print(reader.execute_df("""
    WITH v AS (SELECT *, age // 10 * 10 AS decade FROM clinic.visits)
    SELECT decade, COUNT(*) AS visits, COUNT(*) FILTER (WHERE cost > 500) AS expensive
    FROM v GROUP BY decade"""))
print("spent:", reader.spent)
