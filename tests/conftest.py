"""Shared fixtures: the real data sets shipped in tests/data."""
from pathlib import Path

import pandas as pd
import pytest

DATA = Path(__file__).parent / "data"


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
