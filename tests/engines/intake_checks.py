"""The intake rule's checks: a table's typed relation as each engine reads it, row by row.

The rows come from the typed relation itself (``Engine.compile`` reads every table through
it), so they are the exact values every aggregate is computed on, with no noise.
"""
from __future__ import annotations

import math
import warnings

import pandas as pd
from sqlglot import exp

from dpsql.engines.duckdb.engine import Engine
from dpsql.engines.postgres.engine import PostgresEngine
from dpsql.engines.spark.engine import SparkEngine
from dpsql.metadata import Metadata
from dpsql.plan.rewrite import typed_name

CELLS = ["abc", "", "1e400", "9223372036854775808", "9223372036854775807", " 12 ", "12.5",
         "13.5", "-12.5", "1e3", "+5", ".5", "5.", "inf", "-Infinity", "nan", "-0", "3.0",
         "1e18", "1e19", "yes", "no", "t", "f", "TRUE", "False", "1", "0", "y", "N", "on",
         " true ", "2", "01", "\u30005", "5\u2003", "\u1680inf", "\t7\n", "\v8\f", None]
r"""Cells stored as text for int, float and boolean columns (DuckDB's answers are the truth).
Unicode spaces: PostgreSQL's ``\s`` matched them and its casts then raised (tenth review)."""

FLOATS = [1.0, 2.5, 3.5, -2.5, 0.1, 1e-5, 123456.789, 1e15, 1e16, 9.2e18, 1e19, -9.3e18,
          float("inf"), float("-inf"), -0.0, None]
"""Doubles stored for int and string columns (pandas stores None as NaN: NULL everywhere)."""

TEXT_META = {"": {"c": {"t": {"row_privacy": True, "n": {"type": "int"}, "i": {"type": "int"},
                              "f": {"type": "float"}, "b": {"type": "boolean"}}}}}
FLOAT_META = {"": {"c": {"t": {"row_privacy": True, "n": {"type": "int"}, "i": {"type": "int"},
                               "s": {"type": "string"}}}}}


def frame(kind: str) -> pd.DataFrame:
    """The cells as a DataFrame: n the row number, each other column the same stored cell."""
    if kind == "text":
        return pd.DataFrame({"n": range(len(CELLS)), "i": CELLS, "f": CELLS, "b": CELLS})
    return pd.DataFrame({"n": range(len(FLOATS)), "i": FLOATS, "s": FLOATS}).astype(
        {"i": "float64", "s": "float64"})


def meta_of(kind: str):
    return Metadata.load(TEXT_META if kind == "text" else FLOAT_META)


def normal(value):
    """A cell comparable across drivers: floats by their value (NaN as a string)."""
    if isinstance(value, float) and math.isnan(value):
        return "nan"
    if hasattr(value, "is_integer") and not isinstance(value, float):   # Decimal
        return int(value) if value == int(value) else float(value)
    return value


def sorted_rows(rows) -> list:
    return sorted((tuple(normal(v) for v in row) for row in rows), key=lambda r: repr(r))


def duckdb_rows(source, metadata) -> list:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        engine = Engine.from_data(source, metadata)
    table = next(iter(metadata.tables.values()))
    sql = engine._typed(table).sql("duckdb")
    return sorted_rows(engine.con.execute(sql).fetchall())


def server_rows(engine, metadata) -> list:
    table = next(iter(metadata.tables.values()))
    select = exp.select(exp.Star()).from_(exp.to_identifier(typed_name(table), quoted=True))
    from dpsql.plan.rewrite import with_source
    sql = engine.dialect.render(with_source(select, {typed_name(table): engine._typed(table)}))
    return sorted_rows(engine._execute(sql)[1])


def postgres_engine(con, metadata, table: str, columns: dict, rows: list):
    """A PostgreSQL engine over a table created with ``columns`` (name -> SQL type)."""
    with con.cursor() as cur:
        cur.execute(f"CREATE SCHEMA IF NOT EXISTS {table.split('.')[0]}")
        cur.execute(f"DROP TABLE IF EXISTS {table}")
        cur.execute(f"CREATE TABLE {table} (" + ", ".join(
            f'"{c}" {t}' for c, t in columns.items()) + ")")
        marks = ", ".join(["%s"] * len(columns))
        cur.executemany(f"INSERT INTO {table} VALUES ({marks})", rows)
    con.commit()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return PostgresEngine.from_connection(con, metadata)


def spark_engine(spark, metadata, name: str, source):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return SparkEngine.from_session(spark, metadata, tables={name: source})


def plain_rows(df: pd.DataFrame) -> list:
    """``df``'s rows as Python values, NaN (pandas' missing float) as None."""
    return [tuple(None if isinstance(v, float) and math.isnan(v) else v for v in row)
            for row in df.astype(object).itertuples(index=False)]
