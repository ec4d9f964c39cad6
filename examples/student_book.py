"""The SmartNoise chapter of "Hands-On Differential Privacy", on dpsql, unchanged metadata.

The book's YAML (examples/data/student.yaml) and SmartNoise-style code work as they are;
what differs: epsilon is the cost of a whole query (not of each statistic), the session
has a budget that is enforced, and noise comes from exact samplers.
Run: python examples/student_book.py
"""
from pathlib import Path

import pandas as pd

import dpsql
from dpsql import Mechanism, Privacy, Stat

DATA = Path(__file__).parent / "data"
df = pd.read_csv(DATA / "student.csv")

privacy = Privacy(epsilon=1.0)
reader = dpsql.from_df(df, privacy=privacy, metadata=str(DATA / "student.yaml"),
                       budget=dpsql.Budget(epsilon=4.0))

# Example 1: a count with the Laplace mechanism (true value 649)
privacy.mechanisms.map[Stat.count] = Mechanism.laplace
print(reader.execute_df("SELECT COUNT(*) AS students FROM MySchema.MyTable"))

# Example 2: a sum (true value 2,255)
privacy.mechanisms.map[Stat.sum_int] = Mechanism.laplace
print(reader.execute_df("SELECT SUM(absences) AS sum_absences FROM MySchema.MyTable"))

# Example 3: averages over two partitions (true: GT3 11.812, LE3 12.130; GP 12.577, MS 10.650)
print(reader.execute_df("SELECT famsize AS Family_Size, AVG(G3) AS average_score "
                        "FROM MySchema.MyTable GROUP BY famsize"))
print(reader.execute_df("SELECT school, AVG(G3) AS average_score "
                        "FROM MySchema.MyTable GROUP BY school"))

# Four queries at epsilon = 1 each: the budget of 4 is spent, and a fifth is refused.
print("spent:", reader.spent)
try:
    reader.execute_df("SELECT COUNT(*) FROM MySchema.MyTable")
except dpsql.BudgetExceededError as err:
    print("refused:", err)
