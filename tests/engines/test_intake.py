"""One intake rule on every engine: a column stored as another type than its metadata's is
cast to it as DuckDB's TRY_CAST casts it, on PostgreSQL and Spark too (the same values, the
same NULLs), and a warning names the columns cast (issue 35)."""
from __future__ import annotations

import warnings

import pandas as pd
import pytest

import dpsql
from tests.engines.compare import same_frame
from tests.engines.intake_checks import (duckdb_rows, frame, meta_of, plain_rows,
                                         postgres_engine, server_rows, spark_engine)
from tests.paths import ROOT

pytestmark = pytest.mark.filterwarnings("ignore:dpsql. no budget set")
PUMS_CSV, PUMS_YAML = (ROOT / "examples" / "data" / n for n in ("PUMS.csv", "PUMS.yaml"))
PG_TEXT = {"n": "bigint", "i": "text", "f": "text", "b": "text"}
PG_FLOAT = {"n": "bigint", "i": "double precision", "s": "double precision"}


@pytest.mark.parametrize("kind", ["text", "float"])
def test_cells_that_do_not_convert_are_the_same_nulls_on_postgres(pg_con, kind):
    df, metadata = frame(kind), meta_of(kind)
    engine = postgres_engine(pg_con, metadata, "c.t", PG_TEXT if kind == "text" else PG_FLOAT,
                             plain_rows(df))
    assert server_rows(engine, metadata) == duckdb_rows(df, metadata)


@pytest.mark.parametrize("kind", ["text", "float"])
def test_cells_that_do_not_convert_are_the_same_nulls_on_spark(spark, kind):
    df, metadata = frame(kind), meta_of(kind)
    schema = "n bigint, i string, f string, b string" if kind == "text" else \
        "n bigint, i double, s double"
    source = spark.createDataFrame(plain_rows(df), schema)
    if kind == "float":       # Spark spells floats as text otherwise than DuckDB: refused
        with pytest.raises(dpsql.MetadataError, match=r"c\.t\.s: the metadata says string"):
            spark_engine(spark, metadata, "c.t", source)
        return
    assert server_rows(spark_engine(spark, metadata, "c.t", source), metadata) == \
        duckdb_rows(df, metadata)


def _pums() -> pd.DataFrame:
    df = pd.read_csv(PUMS_CSV)
    assert str(df.income.dtype) == "float64" and str(df.sex.dtype) == "int64"
    return df


def _pg_text_pums(pg_con):
    """PUMS loaded from its CSV into PostgreSQL as text columns."""
    df = pd.read_csv(PUMS_CSV, dtype=str, keep_default_na=False)
    engine = postgres_engine(pg_con, dpsql.Metadata.load(PUMS_YAML), '"PUMS"."PUMS"',
                             {c: "text" for c in df.columns}, plain_rows(df))
    return engine, pg_con


SQL = ["SELECT sex, COUNT(*) AS n, SUM(income) AS s FROM PUMS.PUMS GROUP BY sex",
       "SELECT married, AVG(age) AS a FROM PUMS.PUMS GROUP BY married"]


def test_pums_in_three_stored_forms_answers_alike(pg_con, spark, tmp_path):
    metadata = dpsql.Metadata.load(PUMS_YAML)
    df = _pums()
    parquet = tmp_path / "pums.parquet"
    df.to_parquet(parquet)
    truth = duckdb_rows(df, metadata)
    assert duckdb_rows(str(parquet), metadata) == truth
    engine, _ = _pg_text_pums(pg_con)
    assert server_rows(engine, metadata) == truth
    assert server_rows(spark_engine(spark, metadata, "PUMS.PUMS", str(parquet)), metadata) == truth
    from_pandas = spark.createDataFrame(df)
    assert server_rows(spark_engine(spark, metadata, "PUMS.PUMS", from_pandas), metadata) == truth
    privacy = dpsql.Privacy(epsilon=1e5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        readers = [dpsql.from_df(df, PUMS_YAML, privacy=privacy),
                   dpsql.from_connection(pg_con, PUMS_YAML, privacy=privacy),
                   dpsql.from_connection(spark, PUMS_YAML, privacy=privacy,
                                         tables={"PUMS.PUMS": str(parquet)})]
    for sql in SQL:
        frames = [r.execute_df(sql) for r in readers]
        assert all(same_frame(frames[0], f) for f in frames[1:]), sql


MESSAGE = ("dpsql: PUMS.PUMS: column income (stored DOUBLE) is cast to its metadata type; "
           "cells that do not convert are NULL")
"""Only income: sex, educ, race and married (int64 where the metadata says string) are cast
too, but every cell survives that unchanged (intake.LOSSLESS)."""


def _warnings(make) -> list:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        make()
    return [str(w.message) for w in caught if "cast to" in str(w.message)]


def test_the_warning_names_the_columns_cast_once_per_binding_on_every_engine(pg_con, spark):
    df = _pums()
    assert _warnings(lambda: dpsql.from_df(df, PUMS_YAML)) == [MESSAGE]
    assert _warnings(lambda: dpsql.from_connection(spark, PUMS_YAML, tables={
        "PUMS.PUMS": spark.createDataFrame(df)})) == [MESSAGE]
    _pg_text_pums(pg_con)
    assert _warnings(lambda: dpsql.from_connection(pg_con, PUMS_YAML)) == [
        "dpsql: PUMS.PUMS: columns age (stored VARCHAR), income (stored VARCHAR) are cast to "
        "their metadata types; cells that do not convert are NULL"]
    # stored as the metadata says: no warning
    typed = df.astype({"sex": str, "educ": str, "race": str, "married": str, "income": "int64"})
    assert _warnings(lambda: dpsql.from_df(typed, PUMS_YAML)) == []


def test_a_column_missing_from_the_data_is_still_an_error(pg_con, spark):
    df = _pums().drop(columns=["income"])
    with pytest.raises(dpsql.MetadataError, match="income"):
        dpsql.from_df(df, PUMS_YAML)
    with pytest.raises(dpsql.MetadataError, match="income"):
        dpsql.from_connection(spark, PUMS_YAML, tables={"PUMS.PUMS": spark.createDataFrame(df)})


@pytest.mark.parametrize("where", ["postgres", "spark"])
def test_one_persons_bad_cell_changes_nothing_but_the_noise(pg_con, spark, where):
    """Neighbours: the same table with and without one person's cell that does not convert
    ('abc' for an int): both answer, with the same columns, types and keys."""
    metadata = dpsql.Metadata.load(PUMS_YAML)
    base = pd.read_csv(PUMS_CSV, dtype=str, keep_default_na=False)
    bad = base.copy()
    bad.loc[0, "income"], bad.loc[1, "age"] = "abc", "1e400"
    frames = []
    for data in (base, bad):
        if where == "postgres":
            postgres_engine(pg_con, metadata, '"PUMS"."PUMS"', {c: "text" for c in data.columns},
                            plain_rows(data))
            reader = dpsql.from_connection(pg_con, PUMS_YAML, privacy=dpsql.Privacy(epsilon=1.0))
        else:
            reader = dpsql.from_connection(spark, PUMS_YAML, privacy=dpsql.Privacy(epsilon=1.0),
                                           tables={"PUMS.PUMS": spark.createDataFrame(data)})
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            frames.append([reader.execute_df(sql) for sql in SQL])
    for a, b in zip(*frames):
        assert list(a.columns) == list(b.columns) and list(a.dtypes) == list(b.dtypes)
        assert sorted(map(str, a.iloc[:, 0])) == sorted(map(str, b.iloc[:, 0]))
