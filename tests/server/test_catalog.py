"""The server's catalog: real clients' catalog queries answered from the metadata alone.

The queries in ``client_queries.sql`` were captured from a PostgreSQL 15 server's
statement log while psql, SQLAlchemy and pandas browsed a table shaped like PUMS; each
must be accepted and answered with PostgreSQL's column names and the metadata's
tables and columns. Anything else (data, files, settings, several statements) is refused.
"""
import json
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpsql.errors import Error, ProgrammingError
from dpsql.metadata.model import Metadata
from dpsql.server.catalog import PARAMETERS, Catalog

HERE = Path(__file__).parent
PUMS = HERE.parent / "data" / "PUMS.yaml"
CAPTURED_OID = "'16385'"
PUMS_COLUMNS = [("age", "bigint"), ("sex", "text"), ("educ", "text"), ("race", "text"),
                ("income", "bigint"), ("married", "text")]


def load_queries() -> list:
    entries = []
    for chunk in (HERE / "client_queries.sql").read_text().split("\n-- next\n"):
        entry, body = {}, []
        for line in chunk.strip("\n").splitlines():
            meta = re.match(r"^-- (params|columns): (.*)$", line)
            label = re.match(r"^-- ([a-z]+): (.*)$", line)
            if body or not line.startswith("--"):
                body.append(line)
            elif meta:
                entry[meta.group(1)] = json.loads(meta.group(2))
            elif label:
                entry["client"], entry["what"] = label.groups()
        entry["sql"] = "\n".join(body)
        entries.append(entry)
    return entries


QUERIES = load_queries()


@pytest.fixture(scope="module")
def catalog():
    return Catalog(Metadata.load(str(PUMS)))


@pytest.fixture(scope="module")
def oid(catalog):
    _, rows = catalog.run("SELECT c.oid FROM pg_catalog.pg_class c WHERE c.relname = 'PUMS'")
    return rows[0][0]


def answer(catalog, oid, entry, **kwargs):
    sql = entry["sql"].replace(CAPTURED_OID, f"'{oid}'")
    assert catalog.answers(sql), entry["what"]
    columns, rows = catalog.run(sql, entry["params"], **kwargs)
    return [c[0] for c in columns], rows


def test_the_captured_file_holds_every_client():
    assert len(QUERIES) >= 25
    assert {e["client"] for e in QUERIES} >= {"psql", "sqlalchemy", "pandas"}
    assert all(e["sql"].strip() and "columns" in e and "params" in e for e in QUERIES)


@pytest.mark.parametrize("entry", QUERIES, ids=[f"{e['client']}:{e['what']}:{i}"
                                                for i, e in enumerate(QUERIES)])
def test_every_captured_query_is_answered_with_postgres_column_names(catalog, oid, entry):
    names, rows = answer(catalog, oid, entry, user="alice")
    assert names == entry["columns"]
    for row in rows:
        assert len(row) == len(names)


def by_what(what: str) -> list:
    found = [e for e in QUERIES if e["what"] == what]
    assert found, what
    return found


def test_psql_dt_lists_the_metadata_table(catalog, oid):
    for what in (r"\dt", r'\dt "PUMS".*'):
        _, rows = answer(catalog, oid, by_what(what)[0])
        assert [r[:3] for r in rows] == [("PUMS", "PUMS", "table")]
    _, rows = answer(catalog, oid, by_what(r"\dt PUMS.*")[0])
    assert rows == []  # unquoted PUMS is pums, as in PostgreSQL


def test_psql_dn_lists_the_metadata_schema(catalog, oid):
    _, rows = answer(catalog, oid, by_what(r"\dn")[0])
    assert "PUMS" in [r[0] for r in rows]


def test_psql_d_describes_the_columns(catalog, oid):
    queries = by_what(r'\d "PUMS"."PUMS"')
    _, rows = answer(catalog, oid, queries[0])
    assert rows == [(oid, "PUMS", "PUMS")]
    _, rows = answer(catalog, oid, queries[1])
    assert rows[0][1] == "r" and rows[0][-1] == "heap"
    names, rows = answer(catalog, oid, queries[2])
    assert [(r[0], r[1]) for r in rows] == PUMS_COLUMNS
    for query in queries[3:]:
        assert answer(catalog, oid, query)[1] == []


def test_sqlalchemy_connect_and_reflection(catalog, oid):
    connect = by_what("connect (dialect initialize)")
    _, rows = answer(catalog, oid, connect[0])
    assert re.match(r"PostgreSQL (\d+)\.(\d+)", rows[0][0])
    assert answer(catalog, oid, connect[1])[1] == [("PUMS",)]
    assert answer(catalog, oid, connect[2])[1] == [("read committed",)]
    assert answer(catalog, oid, connect[3])[1] == [("on",)]
    assert answer(catalog, oid, connect[4])[1] == []  # no hstore
    schemas = answer(catalog, oid, by_what("inspect(engine).get_schema_names()")[0])[1]
    assert {"PUMS", "public"} <= {r[0] for r in schemas}
    tables = by_what("inspect(engine).get_table_names(schema='PUMS')")[0]
    assert answer(catalog, oid, tables)[1] == [("PUMS",)]
    assert answer(catalog, oid, by_what(
        "inspect(engine).has_table('PUMS', schema='PUMS')")[0])[1] == [("PUMS",)]
    names, rows = answer(catalog, oid, by_what(
        "inspect(engine).get_columns('PUMS', schema='PUMS')")[0])
    assert [(r[0], r[1]) for r in rows] == PUMS_COLUMNS
    assert {r[names.index("table_name")] for r in rows} == {"PUMS"}
    assert not any(r[names.index("not_null")] for r in rows)


def test_pandas_read_sql_text_is_not_a_table(catalog, oid):
    [entry] = [e for e in QUERIES if e["client"] == "pandas"]
    assert answer(catalog, oid, entry)[1] == []


def test_information_schema(catalog, oid):
    _, rows = answer(catalog, oid, by_what("information_schema.tables")[0])
    assert rows == [("PUMS", "PUMS", "PUMS", "BASE TABLE")]
    _, rows = answer(catalog, oid, by_what("information_schema.columns")[0])
    assert [(r[2], r[4]) for r in rows] == PUMS_COLUMNS
    _, rows = answer(catalog, oid, by_what("information_schema.schemata")[0])
    assert rows == [("PUMS",)]


def test_session_functions(catalog):
    columns, rows = catalog.run("SELECT version(), current_database(), current_user, "
                                "session_user, current_schema()", user="alice")
    assert [c[0] for c in columns] == ["version", "current_database", "current_user",
                                       "session_user", "current_schema"]
    assert rows == [("PostgreSQL 15.0 (dpsql)", "PUMS", "alice", "alice", "PUMS")]
    assert catalog.run("select pg_catalog.version()")[1] == [("PostgreSQL 15.0 (dpsql)",)]
    assert catalog.run("SELECT $1::text AS x", ["hello"])[1] == [("hello",)]


def test_public_schema_comes_first_when_it_holds_tables():
    meta = Metadata.load({"db": {"public": {"t": {"row_privacy": True,
                                                  "x": {"type": "float"}}}}})
    catalog = Catalog(meta)
    assert catalog.run("SELECT current_schema()")[1] == [("public",)]
    assert catalog.run("SELECT table_name, data_type FROM information_schema.columns")[1] == [
        ("t", "double precision")]


def test_parameters():
    for name, value in {"server_version": "15.0", "server_encoding": "UTF8",
                        "client_encoding": "UTF8", "DateStyle": "ISO, MDY", "TimeZone": "UTC",
                        "integer_datetimes": "on", "standard_conforming_strings": "on",
                        "IntervalStyle": "postgres", "is_superuser": "off",
                        "application_name": "", "transaction_isolation": "read committed",
                        "default_transaction_read_only": "on"}.items():
        assert PARAMETERS[name] == value
    assert "search_path" in PARAMETERS and "extra_float_digits" in PARAMETERS


REFUSED = [
    'SELECT * FROM "PUMS"."PUMS"', "SELECT COUNT(*) FROM PUMS.PUMS", "SELECT * FROM PUMS",
    "SELECT * FROM read_csv('/etc/passwd')", "SELECT * FROM '/etc/passwd'",
    "SELECT * FROM read_parquet('x.parquet')", "SELECT * FROM glob('/*')",
    "COPY (SELECT 1) TO '/tmp/x.csv'", "ATTACH '/tmp/x.db' AS x", "INSTALL httpfs",
    "LOAD httpfs", "SET x = 1", "SELECT getenv('HOME')",
    'SELECT c.relname FROM pg_catalog.pg_class c JOIN "PUMS"."PUMS" p ON true',
    'SELECT relname FROM pg_class WHERE relname IN (SELECT sex FROM "PUMS"."PUMS")',
    "SELECT 1; SELECT 2", "SELECT * FROM duckdb_settings()", "SELECT * FROM pg_catalog.foo",
    "SELECT * FROM main.pg_class", "SELECT * FROM memory.pg_catalog.pg_class",
    "WITH x AS (SELECT * FROM \"PUMS\".\"PUMS\") SELECT * FROM x",
    "INSERT INTO t VALUES (1)", "CREATE TABLE t (x int)", "DROP TABLE pg_class",
    "PRAGMA version", "SHOW data_directory", "SHOW ALL", "SELECT", "", "not sql at all",
    "SELECT pg_read_file('/etc/passwd')", "SELECT * FROM pg_settings; DROP TABLE x",
    "SELECT * FROM information_schema.pums", "SELECT version() FROM \"PUMS\"",
]


@pytest.mark.parametrize("sql", REFUSED)
def test_refused(catalog, sql):
    assert catalog.answers(sql) is False
    with pytest.raises(Error):
        catalog.run(sql)


def test_unknown_settings_are_an_error_as_in_postgres(catalog):
    with pytest.raises(Error) as info:
        catalog.run("SELECT current_setting('data_directory')")
    assert info.value.sqlstate == "42704" and "/" not in str(info.value)
    assert catalog.run("SELECT current_setting('data_directory', true)")[1] == [(None,)]
    assert catalog.run("SELECT current_setting('TimeZone')")[1] == [("UTC",)]


def test_run_never_reads_a_file(catalog):
    with pytest.raises(ProgrammingError) as info:
        catalog.run("SELECT * FROM read_csv('/etc/passwd')")
    assert "root:" not in str(info.value) and "\n" not in str(info.value)


def test_the_database_itself_is_locked(catalog):
    cursor = catalog._con.cursor()
    for sql in ("SELECT * FROM read_csv('/etc/passwd')", "SET enable_external_access = true",
                "LOAD httpfs"):
        with pytest.raises(Exception):
            cursor.execute(sql)


def test_duckdb_errors_are_one_line_programming_errors(catalog):
    with pytest.raises(ProgrammingError) as info:
        catalog.run("SELECT nosuchcolumn FROM pg_catalog.pg_class")
    assert "\n" not in str(info.value)


FRAGMENTS = ["SELECT", "FROM", "pg_catalog.pg_class", "pg_class", "information_schema.tables",
             '"PUMS"."PUMS"', "WHERE", "(", ")", ",", ";", "'x'", "$1", "1", "version()",
             "read_csv('/etc/passwd')", "JOIN", "ON", "UNION", "WITH a AS", "::regclass",
             "OPERATOR(pg_catalog.~)", "COLLATE", "*", "current_setting('x')", "--", "/*"]


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(max_size=80),
                 st.lists(st.sampled_from(FRAGMENTS), max_size=12).map(" ".join)))
def test_answers_never_raises(sql):
    result = CATALOG.answers(sql)
    assert result is True or result is False


CATALOG = Catalog(Metadata.load(str(PUMS)))
