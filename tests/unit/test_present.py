"""``Reader.execute`` reads its rows from the released columns without pandas, and they are
``execute_df``'s rows: every accepted fixture query, answered once (the second call replays
the same release), gives the same values of the same Python types both ways, NULLs as
None; a UNION ALL or grouping sets (one type per column across parts) included.
"""
from __future__ import annotations

import datetime
import warnings

import numpy as np
import pandas as pd
import pytest

import dpsql
from dpsql.api.present import frame_rows, python_values
from tests.engines.compare import duckdb_reader, lines
from tests.paths import FIXTURE_FILES, data_set_of


def _same(a, b) -> bool:
    if isinstance(a, datetime.datetime) or isinstance(b, datetime.datetime):
        return pd.Timestamp(a) == pd.Timestamp(b)     # pandas' Timestamp is a datetime
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (a != a and b != b)
    return type(a) is type(b) and a == b


@pytest.mark.parametrize("name", [f for f in FIXTURE_FILES if f.startswith("accept_")])
def test_rows_are_execute_df_rows_for_every_fixture_query(name):
    reader = duckdb_reader(data_set_of(name))
    compared = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for sql, _ in lines(name):
            try:
                header, *rows = reader.execute(sql)
            except dpsql.Error:
                continue
            df = reader.execute_df(sql)          # the same release, replayed
            assert header == tuple(df.columns), sql
            expected = frame_rows(df)
            assert len(rows) == len(expected), sql
            for got, want in zip(rows, expected):
                assert all(_same(a, b) for a, b in zip(got, want)), (sql, got, want)
            compared += 1
    assert compared > 0, name


def test_python_values_of_every_column_kind():
    masked = np.ma.MaskedArray([1, 2, 3], [False, True, False])
    assert python_values(masked) == [1, None, 3]
    assert python_values(np.array([1.5, np.nan])) == [1.5, None]
    assert python_values(np.array([True, False])) == [True, False]
    times = np.array(["2020-01-02T03:04:05.5", "NaT"], dtype="datetime64[us]")
    assert python_values(times) == [datetime.datetime(2020, 1, 2, 3, 4, 5, 500000), None]
    fine = np.array(["2020-01-02T03:04:05.000000001"], dtype="datetime64[ns]")
    assert python_values(fine) == [pd.Timestamp("2020-01-02T03:04:05.000000001")]
    assert python_values(pd.array([1, None], dtype="Int64")) == [1, None]
    assert python_values(pd.array([0.5, None], dtype="Float64")) == [0.5, None]
    assert python_values(np.array(["a", None], dtype=object)) == ["a", None]
    assert all(type(v) is int for v in python_values(np.array([1, 2], dtype=np.int64)))
