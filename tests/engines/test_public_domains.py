"""A public table's column values, read at planning time (``Resolver.read_public``): every
column's in one GROUPING SETS query after the one of their statistics, on DuckDB and
PostgreSQL (Spark: the fixture comparisons, whose retail plans read two lookup tables)."""
import datetime

import pandas as pd
import pytest

import dpsql
from dpsql.plan.relations import scan
from dpsql.plan.resolve import Resolver
from tests.servers import reader_over_rows

META = {"": {"p": {"t": {
    "public": True, "i": {"type": "int"}, "f": {"type": "float"}, "s": {"type": "string"},
    "ts": {"type": "datetime"}, "b": {"type": "boolean"}, "one": {"type": "int"}}}}}
ROWS = [(1, 0.5, "a", datetime.datetime(2020, 1, 1), True, 7),
        (1, -0.0, "b", datetime.datetime(2020, 1, 1), False, 7),
        (2, None, "a", None, None, 7),
        (None, 1e300, None, datetime.datetime(1999, 12, 31, 23, 59), True, 7),
        (3, 0.5, "", datetime.datetime(2020, 1, 2), None, 7)]
EXPECTED = {"i": (1, 2, 3), "f": (-0.0, 0.5, 1e300), "s": ("", "a", "b"),
            "ts": (datetime.datetime(1999, 12, 31, 23, 59), datetime.datetime(2020, 1, 1),
                   datetime.datetime(2020, 1, 2)), "b": (False, True), "one": (7,)}


def _domains(reader):
    """{column: domain} of p.t, and the engine queries the reading took."""
    queries = []

    def public(select, tables):
        queries.append(select.sql())
        return reader.engine.public_rows(select, tables)
    table = reader.metadata.tables["p.t"] if "p.t" in reader.metadata.tables else \
        next(t for t in reader.metadata.tables.values() if t.full_name.lower() == "p.t")
    relation = scan(table, reader.metadata)
    Resolver(reader.metadata, public).read_public(relation)
    return {f.name: f.domain for f in relation.visible()}, queries


def _check(reader):
    domains, queries = _domains(reader)
    assert {k: tuple(v) for k, v in domains.items()} == EXPECTED
    assert len(queries) == 2, queries          # the statistics, then every column's values
    assert "GROUPING SETS" in queries[1]


def test_public_values_on_duckdb():
    frame = pd.DataFrame(ROWS, columns=["i", "f", "s", "ts", "b", "one"])
    frame["i"] = frame["i"].astype("Int64")
    frame["b"] = frame["b"].astype("boolean")
    _check(dpsql.from_df({"p.t": frame}, META))


def test_public_values_on_postgres(postgres):
    rows = ", ".join(
        "(" + ", ".join("NULL" if v is None else f"'{v}'" if isinstance(v, (str, datetime.datetime))
                        else str(v) for v in row) + ")" for row in ROWS)
    reader, con = reader_over_rows(postgres, "p.t", "i bigint, f double precision, s text, "
                                   "ts timestamp, b boolean, one bigint", rows, META,
                                   dpsql.Privacy(epsilon=1.0))
    try:
        _check(reader)
    finally:
        con.close()


@pytest.mark.parametrize("engine", ["duckdb"])
def test_a_single_column_is_one_distinct_read(engine):
    frame = pd.DataFrame({"k": [1, 1, 2, None]}).astype("Int64")
    meta = {"": {"p": {"t": {"public": True, "k": {"type": "int"}}}}}
    domains, queries = _domains(dpsql.from_df({"p.t": frame}, meta))
    assert domains == {"k": (1, 2)}
    assert len(queries) == 2 and "DISTINCT" in queries[1] and "GROUPING" not in queries[1]


WIDE = 70
"""Columns of a wide public table: more than Spark's 64 grouping columns (the review of
the one-query read, F5: every plan reading such a table failed on Spark)."""


def _wide_frame() -> tuple:
    frame = pd.DataFrame({f"c{i}": [i % 3, (i + 1) % 3, None] for i in range(WIDE)}
                         ).astype("Int64")
    meta = {"": {"p": {"t": {"public": True,
                             **{f"c{i}": {"type": "int"} for i in range(WIDE)}}}}}
    return frame, meta


def test_a_wide_public_table_is_read_in_chunks_of_columns():
    frame, meta = _wide_frame()
    domains, queries = _domains(dpsql.from_df({"p.t": frame}, meta))
    assert len(queries) == 1 + 3                # statistics, then 32 + 32 + 6 columns
    assert domains == {f"c{i}": tuple(sorted({i % 3, (i + 1) % 3})) for i in range(WIDE)}


def test_a_wide_public_table_is_read_on_spark(spark):
    frame, meta = _wide_frame()
    reader = dpsql.from_connection(spark, meta, tables={"p.t": spark.createDataFrame(
        frame.astype(object).where(frame.notna(), None))})
    domains, queries = _domains(reader)
    assert domains == {f"c{i}": tuple(sorted({i % 3, (i + 1) % 3})) for i in range(WIDE)}
