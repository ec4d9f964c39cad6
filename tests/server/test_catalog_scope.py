"""A catalog that reaches nothing but the catalog (issue 33, item 1).

The catalog used to accept an unqualified table name that equalled a CTE's name anywhere in
the statement, in scope or not, and let DuckDB resolve it: ``select * from (with
".tmp/PUMS.csv" as (select 1) select 1) z, ".tmp/PUMS.csv"`` read a data file (DuckDB keeps
``<working directory>/.tmp/`` readable with external access off), and the same trick
showed DuckDB's own settings and views. Relations are now resolved by SQL scope against the
catalog's allow-list, CTEs renamed and relations qualified before DuckDB sees them, on a
DuckDB with no file system. Each attack is replayed in process and through the wire.
"""
from __future__ import annotations

import re

import psycopg
import pytest

from dpsql.errors import Error
from dpsql.metadata.model import Metadata
from dpsql.server.catalog import Catalog
from tests.paths import DATA
from tests.server.serving import Served, write_deployment

SECRET = "name,secret\nann,4242\n"
FILE_ATTACK = 'select * from (with ".tmp/secret.csv" as (select 1) select 1) z, ".tmp/secret.csv"'
OUT_OF_SCOPE = [
    FILE_ATTACK,
    'select * from (with ".tmp/secret.csv" as (select 1) select 1) z join ".tmp/secret.csv" '
    "s on true",
    'select (select count(*) from ".tmp/secret.csv") from (with ".tmp/secret.csv" as '
    "(select 1) select 1) z",
    "select * from (with duckdb_tables as (select 1) select 1) z, duckdb_tables",
    "select * from (with duckdb_settings as (select 1) select 1) z, duckdb_settings",
    "select * from (with duckdb_views as (select 1) select 1) z, duckdb_views",
    "select * from (with x as (select 1) select 1) z, (with y as (select 2) select * from x) w",
    "with a as (select 1) select * from (with b as (select * from a) select 1) z, b",
    "select * from (with t as (select 1) select * from t) z where exists (select 1 from t)",
]
ENGINE_RELATIONS = [
    "select * from duckdb_settings()", "select * from duckdb_tables", "select * from main.x",
    "select * from memory.main.duckdb_tables", "select * from system.main.duckdb_settings",
    "select * from temp.main.x", "select * from dpsql_pg.pg_class",
    'select * from dpsql_data."dpsql_pg.pg_class"', "select * from information_schema.pg_class",
    'select * from pg_catalog."PG_CLASS"', "select * from pg_catalog.duckdb_settings",
    "select * from pragma_version()", "select * from pg_catalog.pg_authid",
    "select * from read_csv_auto('.tmp/secret.csv')", "select * from '.tmp/secret.csv'",
    "select * from pg_class, LATERAL (select * from '.tmp/secret.csv') z",
]
ENGINE_WORDS = re.compile(r"duckdb|binder|catalog error|parser error|/|\.tmp|(?-i:LINE \d+:)|\^",
                          re.I)


def engine_text(message: str):
    """Engine words in ``message``, outside the names it quotes back from the statement."""
    return ENGINE_WORDS.search(re.sub(r"'[^']*'", "''", message))


@pytest.fixture
def in_tmp(tmp_path, monkeypatch):
    """A working directory whose ``.tmp/`` holds a data file (where DuckDB's default
    temporary directory is)."""
    (tmp_path / ".tmp").mkdir()
    (tmp_path / ".tmp" / "secret.csv").write_text(SECRET)
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture(scope="module")
def catalog():
    return Catalog(Metadata.load(str(DATA / "PUMS.yaml")))


def refused(catalog, sql, code=("42P01", "42601")) -> Error:
    assert catalog.answers(sql) is False, sql
    with pytest.raises(Error) as info:
        catalog.run(sql)
    assert info.value.sqlstate in code, (sql, info.value)
    return info.value


def test_a_cte_out_of_scope_does_not_reach_a_file(in_tmp):
    catalog = Catalog(Metadata.load(str(DATA / "PUMS.yaml")))     # built in that directory
    for sql in OUT_OF_SCOPE:
        error = refused(catalog, sql, ("42P01",))
        assert "4242" not in str(error) and not engine_text(str(error)), sql


@pytest.mark.parametrize("sql", ENGINE_RELATIONS)
def test_engine_relations_and_files_are_not_catalog_relations(catalog, in_tmp, sql):
    error = refused(catalog, sql)
    assert "4242" not in str(error) and not engine_text(str(error))


def test_ctes_in_scope_work_as_in_postgres(catalog):
    assert catalog.run("with x as (select 1 as a) select a from x")[1] == [(1,)]
    assert catalog.run("with pg_class as (select 'mine' as relname) "
                       "select relname from pg_class")[1] == [("mine",)]
    assert catalog.run("select relname from (with pg_class as (select 'inner' as relname) "
                       "select * from pg_class) z")[1] == [("inner",)]
    assert catalog.run("select relname from (with t as (select 1) select 1) z, pg_class "
                       "where relname = 'PUMS'")[1] == [("PUMS",)]
    outer = catalog.run("with t as (select 7 as v) select (select v from t), "
                        "(select count(*) from (select * from t) s)")[1]
    assert outer == [(7, 1)]
    shadow = "with t as (select 1 as v) select * from (with t as (select 2 as v) select v " \
             "from t) a, t"
    assert catalog.run(shadow)[1] == [(2, 1)]
    assert catalog.run("with X as (select 3 as v) select v from x")[1] == [(3,)]


def test_a_pg_catalog_name_is_the_catalogs_own_relation(catalog):
    """Out of scope or not, ``pg_settings`` and ``pg_class`` are dpsql's: no DuckDB setting,
    no path, no engine relation."""
    for sql in ("select * from (with pg_settings as (select 1) select 1) z, pg_settings",
                "select name, setting from pg_settings", "select * from pg_catalog.pg_settings"):
        _, rows = catalog.run(sql)
        text = repr(rows)
        assert "memory_limit" not in text and "temp_directory" not in text and "/" not in text
        assert "TimeZone" in text
    _, rows = catalog.run("select relname from pg_class")
    assert rows == [("PUMS",)]
    _, rows = catalog.run("select nspname from pg_namespace order by 1")
    assert [r[0] for r in rows] == ["PUMS", "information_schema", "pg_catalog", "public"]


def test_the_catalog_database_has_no_file_system(catalog, in_tmp):
    cursor = catalog._con.cursor()
    settings = dict(cursor.execute(
        "select name, value from duckdb_settings() where name in ('temp_directory', "
        "'allowed_directories', 'allowed_paths', 'enable_external_access', "
        "'lock_configuration', 'threads', 'disabled_filesystems')").fetchall())
    assert settings["temp_directory"] == "" and settings["allowed_directories"] == "[]"
    assert settings["allowed_paths"] == "[]" and settings["enable_external_access"] == "false"
    assert settings["lock_configuration"] == "true" and settings["threads"] == "1"
    for sql in ("select * from '.tmp/secret.csv'", "select * from read_text('.tmp/secret.csv')",
                "set temp_directory = '.tmp'", "set enable_external_access = true",
                "set memory_limit = '8GB'", "copy (select 1) to '.tmp/out.csv'"):
        with pytest.raises(Exception):
            cursor.execute(sql)
    assert sorted(p.name for p in (in_tmp / ".tmp").iterdir()) == ["secret.csv"]


def test_statement_shapes_outside_the_catalog_are_refused(catalog):
    for sql in ("with recursive t(n) as (select 1 union all select n + 1 from t) "
                "select count(*) from t",
                "select string_agg(relname, ',') over (order by relname) from pg_class",
                "select * from pg_class tablesample 10 percent",
                "select regexp_replace(relname, 'a', 'b') from pg_class",
                "select repeat('a', 1000)", "select lpad('a', 100000)",
                "select query('select 1')", "select getvariable('dpsql_database')",
                "select list_transform([1], lambda x: x)"):
        refused(catalog, sql, ("42601",))


# ---------------------------------------------------------------- through the wire


@pytest.fixture
def served(in_tmp):
    server = Served(write_deployment(in_tmp / "deployment"))
    yield server
    server.stop()


def test_through_the_wire_no_file_and_no_engine_text(served):
    with psycopg.connect(served.dsn("alice"), autocommit=True) as con:
        for sql in OUT_OF_SCOPE + ENGINE_RELATIONS:
            with pytest.raises(psycopg.Error) as info:
                con.execute(sql).fetchall()
            message = info.value.diag.message_primary or ""
            assert info.value.sqlstate in ("42P01", "42601", "42501"), (sql, message)
            assert "4242" not in message and not engine_text(message), (sql, message)
        rows = con.execute("select name, setting from pg_settings").fetchall()
        assert "temp_directory" not in repr(rows) and "/" not in repr(rows)
