"""What the engine tests share: the fixture SQL files, DuckDB's answers to compare with, and
a comparison of result frames at large epsilon."""
from __future__ import annotations

import re

import numpy as np
import pandas as pd

import dpsql
from tests.paths import DATA_SETS, SQL

LARGE = dpsql.Privacy(epsilon=1e5)
QUANTILES = re.compile(r"(MEDIAN|QUANTILE|PERCENTILE|\bMIN|\bMAX)\w*\s*\(", re.I)


def lines(name: str) -> list:
    out = []
    for line in (SQL / name).read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            sql, expected = line.rsplit(" -- ", 1)
            out.append((sql.strip(), expected.strip()))
    return out


def duckdb_reader(data_set: str, privacy=LARGE):
    meta, tables = DATA_SETS[data_set]
    return dpsql.from_df({n: pd.read_csv(p) for n, p in tables.items()}, meta, privacy=privacy)


def outcome(reader, sql: str):
    try:
        return "ok", reader.get_privacy_cost(sql), reader.execute_df(sql)
    except dpsql.Error as err:
        return type(err).__name__, str(err), None


def same_frame(a: pd.DataFrame, b: pd.DataFrame, rtol: float | None = 1e-3) -> bool:
    if a.shape != b.shape or list(a.columns) != list(b.columns):
        return False
    for column in a.columns:
        x, y = a[column].to_numpy(), b[column].to_numpy()
        if x.dtype == object and len(x) and isinstance(x[0], (list, np.ndarray)):
            x, y = np.concatenate([np.asarray(v, float) for v in x]), np.concatenate(
                [np.asarray(v, float) for v in y])
        if x.dtype.kind in "fiub" and y.dtype.kind in "fiub":
            # At epsilon 1e5 the noise is below 0.01 on counts and sums of these bounds.
            # Quantiles choose among cells of equal rank, which in a small group can be far
            # apart: their values are compared by the neighbour tests, not here.
            if rtol is None:
                continue
            if not np.allclose(np.sort(x.astype(float)), np.sort(y.astype(float)), rtol=rtol,
                               atol=0.5, equal_nan=True):
                return False
        elif sorted(map(_cell, x)) != sorted(map(_cell, y)):
            return False
    return True


def _cell(value) -> str:
    """A cell as text, every spelling of missing (None, NaN, NA) alike: pandas shows missing
    text as NaN, a server sends NULL."""
    return "NULL" if value is None or value is pd.NA or (
        isinstance(value, float) and value != value) else str(value)


def without_engine_sql(text: str) -> str:
    """An explain without its rendered engine SQL (the one part that differs per engine)."""
    return re.sub(r"bounded plan \(runs on the engine\):\n.*?\n\n", "", text, flags=re.S)


def docs_column(header: str) -> dict:
    """The allowed-functions table of docs/sql.md: construct (as in ``ENTRIES``) -> the cell
    of column ``header``."""
    from tests.paths import ROOT
    rows = [re.split(r"(?<!\\)\|", line)[1:-1] for line in
            (ROOT / "docs" / "sql.md").read_text().splitlines()
            if line.startswith("| ") and "| construct | types |" not in line]
    head = next(re.split(r"(?<!\\)\|", line)[1:-1] for line in
                (ROOT / "docs" / "sql.md").read_text().splitlines()
                if line.startswith("| construct | types |"))
    at = [h.strip() for h in head].index(header)
    return {cells[0].strip().replace("\\|", "|"): cells[at].strip() for cells in rows
            if len(cells) == len(head)}
