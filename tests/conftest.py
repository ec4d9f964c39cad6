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


# -- markers, xdist groups and order ------------------------------------------------------
# Every test is marked by its directory (pyproject.toml registers the markers; addopts has
# --strict-markers): tests/engines -> engines, tests/server -> server, tests/neighbours ->
# neighbours, tests/properties -> properties, each of these also ``slow``; the slow files
# below get ``slow`` too. ``python -m pytest -m "not slow"`` is the quick subset (README).

SLOW_FAMILIES = ("engines", "server", "neighbours", "properties")

SLOW_FILES = {
    # measured: files outside the slow families whose tests take seconds each
}

PARALLEL_ORDER = ("engines", "properties", "neighbours", "server")
SERIAL_ORDER = ("unit", "safety", "system", "server", "neighbours", "properties", "engines")

SERVER_FIXTURES = {"spark_tables": "spark", "spark": "spark", "postgres": "postgres"}
"""Session fixtures that start a server -> its xdist group: every test using one (from the
same conftest) runs on the same worker, so that the run starts each server once, not once
per worker (session fixtures are per worker under xdist)."""


def _relative(item) -> tuple:
    from tests.paths import TESTS
    try:
        return Path(str(item.path)).resolve().relative_to(TESTS).parts
    except ValueError:
        return ()


def _group(item, parts: tuple) -> str | None:
    """The xdist group (``--dist loadgroup``) of a test, or None to schedule it alone: the
    server it needs, else its file when it uses a module- or class-scoped fixture (built
    once on the worker that runs the whole file)."""
    infos = getattr(item, "_fixtureinfo", None)
    defs = getattr(infos, "name2fixturedefs", {}) if infos is not None else {}
    for name, server in SERVER_FIXTURES.items():
        if name in item.fixturenames and defs.get(name):
            return f"{server}:{defs[name][-1].baseid}"
    for name in item.fixturenames:
        found = defs.get(name)
        if found and found[-1].scope in ("module", "class", "package"):
            return "file:" + "/".join(parts)
    return None


@pytest.hookimpl(tryfirst=True)   # before xdist reads the xdist_group marks
def pytest_collection_modifyitems(config, items):
    for item in items:
        parts = _relative(item)
        family = parts[0] if len(parts) > 1 else None
        if family in SLOW_FAMILIES:
            item.add_marker(getattr(pytest.mark, family))
            item.add_marker(pytest.mark.slow)
        elif "/".join(parts) in SLOW_FILES:
            item.add_marker(pytest.mark.slow)
        group = _group(item, parts)
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))
    # Under xdist (a worker collects; --no-loadscope-reorder keeps this order) the slowest
    # work goes first, so that no long group starts last while the other worker idles;
    # run serially, the quick families go first, so that the dots start at once.
    distributed = hasattr(config, "workerinput")
    order = {name: i for i, name in enumerate(PARALLEL_ORDER if distributed else SERIAL_ORDER)}
    rank = {id(item): order.get(_relative(item)[0] if len(_relative(item)) > 1 else "",
                                len(order)) for item in items}
    items.sort(key=lambda item: rank[id(item)])          # stable: collection order within
