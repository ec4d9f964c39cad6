"""The property tests of tests/properties/ on PostgreSQL, for a bounded number of examples.

Random accepted SQL over random typed tables (the same strategies), each table loaded into
a database of the test server, typed by its metadata. Properties: only dpsql errors
escape, refusals are free and do not depend on the data, and neighbouring data sets fail
alike (tests/properties/test_properties.py says how). ``DPSQL_PG_EXAMPLES`` (default 30)
sets the number of examples per property.
"""
from __future__ import annotations

import itertools
import os

import pandas as pd
import pytest
from hypothesis import reject

import dpsql
import tests.properties.test_properties as properties
from tests.engines.property_checks import property_tests
from tests.servers import PG_TYPES, create_database

EXAMPLES = int(os.environ.get("DPSQL_PG_EXAMPLES", "30"))
_names = itertools.count()


def _load(con, scn, frame: pd.DataFrame, table: str) -> None:
    """Create ``table`` typed by the scenario's metadata and insert the rows; rows the
    harness cannot store in those types reject the example (a data owner's load error)."""
    import psycopg
    schema = scn.schema or "public"
    cols = [c for c in scn.columns]
    with con.cursor() as cur:
        cur.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
        cur.execute(f'CREATE TABLE "{schema}"."{table}" (' + ", ".join(
            f'"{c.name}" {PG_TYPES[c.type]}' for c in cols) + ")")
        rows = [tuple(None if pd.isna(v) else (v.item() if hasattr(v, "item") else v)
                      for v in row) for row in frame[[c.name for c in cols]].itertuples(
                          index=False, name=None)]
        try:
            if rows:
                cur.executemany(f'INSERT INTO "{schema}"."{table}" VALUES (' + ", ".join(
                    ["%s"] * len(cols)) + ")", rows)
        except (psycopg.Error, TypeError, ValueError):
            con.rollback()
            reject()
    con.commit()


def _binder(server):
    def bind(scn, keep, tmpdir, tag):
        frame = scn.frame if keep is None else scn.frame.iloc[keep]
        con = create_database(server, f"prop{next(_names)}")
        _load(con, scn, frame, scn.table)
        if scn.twin:
            _load(con, scn, frame, scn.twin_name)
        return dpsql.from_connection(con, scn.metadata, privacy=dpsql.Privacy(epsilon=1.0))
    return bind


@pytest.fixture
def on_engine(postgres, monkeypatch):
    monkeypatch.setattr(properties, "bind", _binder(postgres))


test_refusals_are_free_and_do_not_depend_on_data_on_postgres, test_neighbours_fail_alike_on_postgres = \
    property_tests(EXAMPLES)
