"""The property tests of tests/properties/ on Spark, for a bounded number of examples.

Random accepted SQL over random typed tables (the same strategies), each table a Spark
DataFrame typed by its metadata. Properties: only dpsql errors escape, refusals are free
and do not depend on the data, and neighbouring data sets fail alike
(tests/properties/test_properties.py says how). ``DPSQL_SPARK_EXAMPLES`` (default 12) sets
the number of examples per property.
"""
from __future__ import annotations

import os

import pandas as pd
import pytest
from hypothesis import reject

import dpsql
import tests.properties.test_properties as properties
from tests.engines.property_checks import property_tests
from tests.servers import SPARK_TYPES

EXAMPLES = int(os.environ.get("DPSQL_SPARK_EXAMPLES", "12"))


def _value(v, kind: str):
    """A stored value as the metadata type, as a data owner's loader would convert it
    (ints from whole floats and numeric text, floats from numbers and text, text from
    anything); a value it cannot convert raises, and the example is rejected."""
    if v is None or (not isinstance(v, (list, tuple)) and pd.isna(v)):
        return None
    v = v.item() if hasattr(v, "item") else v
    if kind == "int":
        whole = float(v) if not isinstance(v, int) else v
        if isinstance(whole, float) and not whole.is_integer():
            raise ValueError(v)
        return int(whole)
    if kind == "float":
        return float(v)
    if kind == "string":
        return str(v)
    if kind == "boolean":
        if isinstance(v, bool) or v in (0, 1):
            return bool(v)
        raise ValueError(v)
    stamp = pd.Timestamp(v)
    return stamp.date() if kind == "date" else stamp.to_pydatetime()


def _frame(spark, scn, frame: pd.DataFrame):
    """The rows as a DataFrame typed by the scenario's metadata; rows Spark cannot store
    in those types reject the example (a data owner's load error)."""
    schema = ", ".join(f"`{c.name}` {SPARK_TYPES[c.type]}" for c in scn.columns)
    kinds = [c.type for c in scn.columns]
    try:
        rows = [tuple(_value(v, k) for v, k in zip(row, kinds))
                for row in frame[[c.name for c in scn.columns]].itertuples(index=False, name=None)]
        return spark.createDataFrame(rows, schema)
    except (TypeError, ValueError, OverflowError):
        reject()


def _binder(spark):
    def bind(scn, keep, tmpdir, tag):
        frame = scn.frame if keep is None else scn.frame.iloc[keep]
        tables = {scn.full_name(scn.table): _frame(spark, scn, frame)}
        if scn.twin:
            tables[scn.full_name(scn.twin_name)] = _frame(spark, scn, frame)
        return dpsql.from_connection(spark, scn.metadata, tables=tables,
                                     privacy=dpsql.Privacy(epsilon=1.0))
    return bind


@pytest.fixture
def on_engine(spark, monkeypatch):
    monkeypatch.setattr(properties, "bind", _binder(spark))


test_refusals_are_free_and_do_not_depend_on_data_on_spark, test_neighbours_fail_alike_on_spark = \
    property_tests(EXAMPLES)
