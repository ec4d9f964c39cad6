"""Where the tests find the repository and its data sets, wherever a test file sits."""
from pathlib import Path

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent                 # the repository: dpsql/, docs/, examples/, README.md
DATA = TESTS / "data"               # the data sets and their metadata
SQL = TESTS / "sql"                 # the accept_*.sql / refuse_*.sql fixture files

SHOP_TABLES = {f"shop.{t}": DATA / f"shop_{t}.csv" for t in ("customers", "orders", "order_items",
                                                              "levels")}
"""The shop data set (metadata tests/data/shop.yaml): table name -> CSV file."""

RETAIL_TABLES = {f"retail.{t}": DATA / f"retail_{t}.csv"
                 for t in ("customers", "orders", "lineitems", "parts", "nations")}
"""The retail star schema (metadata tests/data/retail.yaml, written by make_retail.py)."""

TPCH_TABLES = {f"tpch.{t}": DATA / f"tpch_{t}.csv" for t in ("customers", "orders", "lineitems")}
"""Retail's first 150 customers under TPC-H-style prefixed column names (tests/data/tpch.yaml)."""

DATA_SETS = {"pums": (DATA / "PUMS_pid.yaml", {"PUMS.PUMS": DATA / "PUMS_pid.csv"}),
             "shop": (DATA / "shop.yaml", SHOP_TABLES),
             "retail": (DATA / "retail.yaml", RETAIL_TABLES),
             "tpch": (DATA / "tpch.yaml", TPCH_TABLES)}
"""The data sets of the fixture files tests/sql/{accept,refuse}_<name>.sql: name ->
(metadata, {table: CSV file}), loaded into every engine the tests compare."""


def data_set_of(file_name: str) -> str:
    """The data set a fixture file reads: ``accept_shop.sql`` -> ``shop``."""
    return file_name.rsplit(".", 1)[0].split("_", 1)[1]


FIXTURE_FILES = sorted(p.name for p in SQL.glob("*.sql"))
"""Every fixture file, accept_*.sql and refuse_*.sql."""
