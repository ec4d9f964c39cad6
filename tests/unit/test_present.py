"""``Reader.execute`` and the PEP 249 cursor read their rows from the released columns
without pandas, and they are ``execute_df``'s rows: every accepted fixture query, answered
once (the second call replays the same release), gives the same values of the same Python
types both ways, NULLs as None, and the cursor the same description as from the DataFrame's
dtypes; a UNION ALL or grouping sets (one type per column across parts) included.
"""
from __future__ import annotations

import datetime
import warnings

import numpy as np
import pandas as pd
import pytest

import dpsql
from dpsql.api import dbapi
from dpsql.api.present import frame_rows, native, python_values
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
            _same_as_the_cursor_from_the_frame(reader, sql, df)
            compared += 1
    assert compared > 0, name


def _same_as_the_cursor_from_the_frame(reader, sql: str, df) -> None:
    """The cursor's rows are the DataFrame's (each cell through ``present.native``) and its
    description names each column's type from the DataFrame's dtype, as when it held it."""
    cursor = dbapi.Connection(reader).cursor()
    cursor.execute(sql)                          # the same release, replayed
    want_types = [dbapi._type_code(df.iloc[:, i].dtype) for i in range(df.shape[1])]
    want_rows = frame_rows(df)
    got = cursor.fetchall()
    assert [d[1] for d in cursor.description] == want_types, sql
    assert len(got) == len(want_rows), sql
    for a, b in zip(got, want_rows):
        assert all(_same(x, y) for x, y in zip(a, b)), (sql, a, b)


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
    far = np.array(["2020-01-02", "12000-01-01"], dtype="datetime64[us]")
    got = python_values(far)         # past datetime's year 9999: numpy's value, as before
    assert got[0] == datetime.datetime(2020, 1, 2) and got[1] == far[1]
    assert native(far[1]) == far[1] and isinstance(native(far[1]), np.datetime64)
    assert native(pd.Timestamp("2020-01-02 03:04:05")) == datetime.datetime(2020, 1, 2, 3, 4, 5)
    assert type(native(pd.Timestamp("2020-01-02 03:04:05"))) is datetime.datetime
    ns = pd.Timestamp("2020-01-02T03:04:05.000000001")
    assert native(ns) is ns              # nanoseconds kept, not truncated
    assert native(pd.NA) is None and native(pd.NaT) is None and native(np.datetime64("NaT")) is None
    assert native(np.array([0.5, np.nan])) == [0.5, None]
    masked = python_values(np.ma.MaskedArray(far, [True, False]))
    assert masked[0] is None and masked[1] == far[1] and isinstance(masked[1], np.datetime64)
    assert python_values(np.ma.MaskedArray([0.5, np.nan, 2.0], [False, False, True])) == \
        [0.5, None, None]
    assert python_values(np.ma.MaskedArray(np.array(["a", "b"], dtype=object), [True, False])) \
        == [None, "b"]
