"""Through the wire as in process: every accepted and refused fixture query (tests/sql/*_pums.sql,
which include the earlier attack families) has the same outcome through dpsql serve and
psycopg as through a Reader: the same refusal message, or the same answer at large epsilon.

Statements the server answers itself are not dpsql queries and are left out: catalog
queries (``SELECT 1`` reads no table: public) and several statements in one string (the
simple protocol runs each, as PostgreSQL does); and ``$1``, which the wire reads as
PostgreSQL's parameter syntax (tests/server/test_serve.py binds them)."""
from __future__ import annotations

import shutil

import pandas as pd
import psycopg
import pytest

from dpsql.server.catalog import Catalog
from dpsql.server.statements import split_statements
from dpsql.metadata.model import Metadata
from tests.engines.compare import duckdb_reader, lines, outcome, same_frame
from tests.paths import DATA
from tests.server.serving import Served, write_deployment

QUERIES = lines("accept_pums.sql") + lines("refuse_pums.sql")


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    where = tmp_path_factory.mktemp("same")
    shutil.copy(DATA / "PUMS_pid.yaml", where / "PUMS_pid.yaml")
    shutil.copy(DATA / "PUMS_pid.csv", where / "PUMS_pid.csv")
    from dpsql.server.scram import make_verifier
    server = Served(write_deployment(
        where, metadata="PUMS_pid.yaml", tables={"PUMS.PUMS": "PUMS_pid.csv"},
        privacy={"epsilon": 1e5, "delta": 1e-6},
        analysts={"alice": {"password": make_verifier("alice's secret"),
                            "budget": {"epsilon": 1e12, "delta": 0.5}}}))
    try:
        yield server
    finally:
        server.stop()


def _wire(con, sql: str):
    try:
        cur = con.execute(sql)
        names = [d.name for d in cur.description]
        return "ok", None, pd.DataFrame(cur.fetchall(), columns=names)
    except psycopg.Error as err:
        return "error", (err.diag.message_primary or "").strip(), None


def test_every_fixture_query_has_the_same_outcome_through_the_wire(served):
    catalog = Catalog(Metadata.load(DATA / "PUMS_pid.yaml"))
    reader = duckdb_reader("pums")
    compared = 0
    with psycopg.connect(served.dsn(), autocommit=True) as con:
        for sql, _ in QUERIES:
            if catalog.answers(sql) or len(split_statements(sql)) != 1 or "$" in sql:
                continue      # answered by the server itself, or $n: PostgreSQL's parameters
            kind, message, frame = outcome(reader, sql)
            wire_kind, wire_message, wire_frame = _wire(con, sql)
            if kind == "ok":
                assert wire_kind == "ok", (sql, wire_message)
                frame.columns = [str(c) for c in frame.columns]
                assert same_frame(frame, wire_frame, rtol=None), sql
                assert list(frame.columns) == list(wire_frame.columns), sql
            else:
                assert wire_kind == "error", sql
                assert " ".join(message.split()) == " ".join(wire_message.split()), sql
            compared += 1
    assert compared > 250
