"""The column types of a data file, for ``dpsql metadata init`` (schema only).

Owns: reading a .csv/.parquet file's column names and DuckDB types, so that the
command layer never imports DuckDB itself (engines/registry.py).
"""
from __future__ import annotations

import os

import duckdb

from ...errors import DataError


def describe(path: str) -> list:
    """[(column name, DuckDB type)] of a .csv/.parquet file: schema only."""
    if not os.path.isfile(path):
        raise FileNotFoundError(f"data file not found: {path}")
    suffix = os.path.splitext(path)[1].lower()  # the same rule as dpsql.from_df
    if suffix not in (".csv", ".parquet", ".pq"):
        raise DataError(f"{path}: unsupported file type; give a .csv or .parquet file")
    reader = "read_csv" if suffix == ".csv" else "read_parquet"
    con = duckdb.connect()
    try:
        # DESCRIBE returns (column_name, column_type, ...); the path is a bound
        # parameter, never pasted into the SQL text. DuckDB sniffs a CSV's types
        # from a sample of rows; that stays in this process and only the type
        # names are written out.
        rows = con.execute(f"DESCRIBE SELECT * FROM {reader}(?)", [path]).fetchall()
    finally:
        con.close()
    return [(r[0], r[1]) for r in rows]
