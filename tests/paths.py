"""Where the tests find the repository and its data sets, wherever a test file sits."""
from pathlib import Path

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent                 # the repository: dpsql/, docs/, examples/, README.md
DATA = TESTS / "data"               # the data sets and their metadata
SQL = TESTS / "sql"                 # the accept_*.sql / refuse_*.sql fixture files

SHOP_TABLES = {f"shop.{t}": DATA / f"shop_{t}.csv" for t in ("customers", "orders", "order_items",
                                                              "levels")}
"""The shop data set (metadata tests/data/shop.yaml): table name -> CSV file."""
