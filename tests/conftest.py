"""Shared fixtures: the real data sets shipped in tests/data, and readers over them.

The data frames are session-scoped and shared by every test: a test that changes one
works on a copy (``frame.copy()``, ``dict(frames)``).
"""
from pathlib import Path

import pandas as pd
import pytest

import dpsql

from tests.paths import DATA, RETAIL_TABLES, SHOP_TABLES


@pytest.fixture(scope="session")
def data_dir() -> Path:
    return DATA


@pytest.fixture(scope="session")
def pums() -> pd.DataFrame:
    return pd.read_csv(DATA / "PUMS.csv")


@pytest.fixture(scope="session")
def pums_pid() -> pd.DataFrame:
    return pd.read_csv(DATA / "PUMS_pid.csv")


@pytest.fixture(scope="session")
def pums_dup() -> pd.DataFrame:
    return pd.read_csv(DATA / "PUMS_dup.csv")


@pytest.fixture(scope="session")
def pums_null() -> pd.DataFrame:
    return pd.read_csv(DATA / "PUMS_null.csv")


@pytest.fixture(scope="session")
def student() -> pd.DataFrame:
    return pd.read_csv(DATA / "student.csv")


@pytest.fixture(scope="session")
def clinic_frames() -> dict:
    """The clinic data set (metadata tests/data/clinic.yaml) as frames, visit_time parsed."""
    visits = pd.read_csv(DATA / "visits.csv")
    visits["visit_time"] = pd.to_datetime(visits["visit_time"])
    return {"clinic.persons": pd.read_csv(DATA / "persons.csv"), "clinic.visits": visits,
            "clinic.visits_archive": pd.read_csv(DATA / "visits_archive.csv")}


@pytest.fixture(scope="session")
def shop_tables() -> dict:
    """The shop's tables as CSV paths (table name -> path), as dpsql.from_df takes them."""
    return dict(SHOP_TABLES)


@pytest.fixture(scope="session")
def pums_reader(pums):
    """A factory of readers over PUMS.PUMS: ``pums_reader(privacy=..., budget=...)``.

    By default the data are tests/data/PUMS.csv and the metadata PUMS.yaml; ``data=`` and
    ``metadata=`` replace them; every other keyword goes to ``dpsql.from_df``."""
    def open_reader(data=None, metadata=DATA / "PUMS.yaml", **kw):
        return dpsql.from_df(pums if data is None else data, metadata, **kw)
    return open_reader


@pytest.fixture(scope="session")
def shop_reader(shop_tables):
    """A factory of readers over the shop (its CSV files and tests/data/shop.yaml):
    ``shop_reader(privacy=..., budget=...)``; keywords go to ``dpsql.from_df``."""
    def open_reader(**kw):
        return dpsql.from_df(shop_tables, DATA / "shop.yaml", **kw)
    return open_reader


@pytest.fixture(scope="session")
def retail_reader():
    """A factory of readers over the retail star schema (tests/data/retail.yaml: customers,
    orders, lineitems, public parts and nations); keywords go to ``dpsql.from_df``."""
    def open_reader(**kw):
        return dpsql.from_df(dict(RETAIL_TABLES), DATA / "retail.yaml", **kw)
    return open_reader


@pytest.fixture(scope="session")
def plain():
    """Plain DuckDB over the shop and retail CSV files (schemas ``shop``, ``retail``), for
    comparing a release at large epsilon with the exact answer: ``plain.sql(q).df()``."""
    import duckdb
    con = duckdb.connect()
    for name, path in {**SHOP_TABLES, **RETAIL_TABLES}.items():
        schema = name.split(".")[0]
        con.execute(f"CREATE SCHEMA IF NOT EXISTS {schema}")
        con.execute(f"CREATE TABLE {name} AS SELECT * FROM read_csv_auto('{path}')")
    yield con
    con.close()
