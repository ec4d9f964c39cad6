"""What psql, JDBC and SQLAlchemy ask of the catalog, answered from the metadata (issue 33,
item 10), and engine text never shown.

``\\l`` answered with a DuckDB binder error (``Values list "d" does not have a column named
"daticulocale"``), ``\\du`` and ``\\df`` failed, and ``current_database()`` was not the
database connected to. The statements psql 15 sends (``psql -E``) are replayed in process,
and psql itself, a JDBC program calling DatabaseMetaData and SQLAlchemy's inspector run
against ``dpsql serve``.
"""
from __future__ import annotations

import logging
import os
import re
import shutil
import subprocess

import pytest
import sqlalchemy

from dpsql.errors import Error
from dpsql.metadata.model import Metadata
from dpsql.server.catalog import Catalog
from tests.paths import DATA
from tests.server.serving import PASSWORDS, Served, write_deployment
from tests.server.test_serve_jdbc import _driver
from tests.servers import missing

PSQL_L = """SELECT d.datname as "Name",
       pg_catalog.pg_get_userbyid(d.datdba) as "Owner",
       pg_catalog.pg_encoding_to_char(d.encoding) as "Encoding",
       d.datcollate as "Collate",
       d.datctype as "Ctype",
       d.daticulocale as "ICU Locale",
       CASE d.datlocprovider WHEN 'c' THEN 'libc' WHEN 'i' THEN 'icu' END AS "Locale Provider",
       pg_catalog.array_to_string(d.datacl, E'\\n') AS "Access privileges"
FROM pg_catalog.pg_database d
ORDER BY 1;"""
PSQL_DU = """SELECT r.rolname, r.rolsuper, r.rolinherit,
  r.rolcreaterole, r.rolcreatedb, r.rolcanlogin,
  r.rolconnlimit, r.rolvaliduntil,
  ARRAY(SELECT b.rolname
        FROM pg_catalog.pg_auth_members m
        JOIN pg_catalog.pg_roles b ON (m.roleid = b.oid)
        WHERE m.member = r.oid) as memberof
, r.rolreplication
, r.rolbypassrls
FROM pg_catalog.pg_roles r
WHERE r.rolname !~ '^pg_'
ORDER BY 1;"""
PSQL_DF = """SELECT n.nspname as "Schema",
  p.proname as "Name",
  pg_catalog.pg_get_function_result(p.oid) as "Result data type",
  pg_catalog.pg_get_function_arguments(p.oid) as "Argument data types",
 CASE p.prokind
  WHEN 'a' THEN 'agg'
  WHEN 'w' THEN 'window'
  WHEN 'p' THEN 'proc'
  ELSE 'func'
 END as "Type"
FROM pg_catalog.pg_proc p
     LEFT JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
WHERE pg_catalog.pg_function_is_visible(p.oid)
      AND n.nspname <> 'pg_catalog'
      AND n.nspname <> 'information_schema'
ORDER BY 1, 2, 4;"""
ENGINE_TEXT = re.compile(r"duckdb|binder|catalog error|parser error|conversion error|"
                         r"invalid input error|interrupt error|(?-i:LINE \d+:)|\^", re.I)


@pytest.fixture(scope="module")
def catalog():
    return Catalog(Metadata.load(str(DATA / "PUMS.yaml")))


def test_psql_l_du_df_in_process(catalog):
    columns, rows = catalog.run(PSQL_L, database="dpsql")
    assert [c[0] for c in columns] == ["Name", "Owner", "Encoding", "Collate", "Ctype",
                                       "ICU Locale", "Locale Provider", "Access privileges"]
    assert rows == [("dpsql", "dpsql", "UTF8", "C", "C", None, "libc", None)]
    columns, rows = catalog.run(PSQL_DU)
    assert [c[0] for c in columns][:2] == ["rolname", "rolsuper"] and len(columns) == 11
    assert [(r[0], r[8]) for r in rows] == [("dpsql", [])]
    columns, rows = catalog.run(PSQL_DF)
    assert [c[0] for c in columns] == ["Schema", "Name", "Result data type",
                                       "Argument data types", "Type"]
    assert rows == []


def test_current_database_is_the_database_asked_for(catalog):
    assert catalog.run("select current_database(), current_catalog")[1] == [("PUMS", "PUMS")]
    run = catalog.run("select current_database(), (select datname from pg_database), "
                      "(select min(table_catalog) from information_schema.tables), "
                      "(select min(catalog_name) from information_schema.schemata)",
                      database="analytics")
    assert run[1] == [("analytics",) * 4]
    long = "d" * 100
    assert catalog.run("select current_database()", database=long)[1] == [("d" * 63,)]


def test_engine_errors_are_fixed_messages_and_logged(catalog, caplog):
    caplog.set_level(logging.INFO, logger="dpsql.server.catalog")
    cases = {"select nosuchcolumn from pg_catalog.pg_class": "42703",
             "select 'x'::integer from pg_class": "22000",
             "select relname + 1 from pg_class": "42703",
             "select ('{1,2}'::int[])[1] / 0 from pg_class": None}
    for sql, code in cases.items():
        try:
            catalog.run(sql)
        except Error as error:
            assert code is None or error.sqlstate == code, (sql, error)
            assert not ENGINE_TEXT.search(str(error)) and "\n" not in str(error), str(error)
    logged = " ".join(r.getMessage() for r in caplog.records)
    assert "nosuchcolumn" in logged and "Binder" in logged


# ---------------------------------------------------------------- real clients


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    server = Served(write_deployment(tmp_path_factory.mktemp("clients")))
    yield server
    server.stop()


def psql(served, command: str) -> subprocess.CompletedProcess:
    if shutil.which("psql") is None:
        missing("psql (PostgreSQL's client) is not installed")
    return subprocess.run(
        ["psql", f"host={served.socket_dir} port={served.port} user=alice "
                 "dbname=dpsql", "-X", "-c", command],
        capture_output=True, text=True, timeout=60,
        env=dict(os.environ, PGPASSWORD=PASSWORDS["alice"]))


PSQL_EXPECTED = {
    r"\l": [r"List of databases", r"\n dpsql \| dpsql \| UTF8"],
    r"\dn": [r"List of schemas", r"\n PUMS +\| dpsql", r"\n public +\| dpsql"],
    r"\du": [r"List of roles", r"\n dpsql "],
    r"\df": [r"List of functions", r"\(0 rows\)"],
    r"\dt": [r"List of relations", r"PUMS +\| PUMS +\| table \| dpsql"],
    r"\d": [r"List of relations", r"PUMS +\| PUMS +\| table \| dpsql"],
    r'\d "PUMS"."PUMS"': [r'Table "PUMS.PUMS"', r"\n age +\| bigint", r"\n sex +\| text",
                          r"\n married +\| text"],
    r"\l+": [r"List of databases"], r"\dt+": [r"heap"], r"\dn+": [r"List of schemas"],
    r'\d+ "PUMS"."PUMS"': [r"Access method: heap"], r"\dp": [r"Access privileges"],
    r"\dT": [r"List of data types"], r"\dv": [r"Did not find any relations"],
    r"\di": [r"Did not find any relations"], r"\dx": [r"List of installed extensions"],
    r"\db": [r"pg_default"], r"\dconfig": [r"configuration parameters"],
    "select current_database()": [r"\n dpsql\n"],
}


@pytest.mark.parametrize("command", list(PSQL_EXPECTED))
def test_psql_commands(served, command):
    done = psql(served, command)
    assert done.returncode == 0 and "ERROR" not in done.stderr, done.stderr
    for pattern in PSQL_EXPECTED[command]:
        assert re.search(pattern, done.stdout + done.stderr), (command, done.stdout)


def test_psql_errors_carry_no_engine_text(served):
    for sql in ("select nosuchcolumn from pg_class", "select 'x'::integer from pg_class",
                "select relname + 1 from pg_class"):
        done = psql(served, sql)
        assert "ERROR" in done.stderr and not ENGINE_TEXT.search(done.stderr), done.stderr


def test_sqlalchemy_inspector(served):
    engine = sqlalchemy.create_engine(sqlalchemy.URL.create(
        "postgresql+psycopg", username="alice", password=PASSWORDS["alice"], database="dpsql",
        query={"host": served.socket_dir, "port": str(served.port),
               "sslmode": "disable"}))
    try:
        inspector = sqlalchemy.inspect(engine)
        assert {"PUMS", "public"} <= set(inspector.get_schema_names())
        assert inspector.get_table_names(schema="PUMS") == ["PUMS"]
        for listing in ("get_view_names", "get_materialized_view_names", "get_sequence_names",
                        "get_foreign_table_names"):
            assert getattr(inspector, listing)(schema="PUMS") == []
        columns = inspector.get_columns("PUMS", schema="PUMS")
        assert [(c["name"], type(c["type"]).__name__, c["nullable"]) for c in columns] == [
            ("age", "BIGINT", True), ("sex", "TEXT", True), ("educ", "TEXT", True),
            ("race", "TEXT", True), ("income", "BIGINT", True), ("married", "TEXT", True)]
        assert inspector.get_pk_constraint("PUMS", schema="PUMS")["constrained_columns"] == []
        for method in ("get_foreign_keys", "get_indexes", "get_unique_constraints",
                       "get_check_constraints"):
            assert getattr(inspector, method)("PUMS", schema="PUMS") == []
        assert inspector.get_table_comment("PUMS", schema="PUMS") == {"text": None}
        assert inspector.has_table("PUMS", schema="PUMS") and inspector.has_schema("PUMS")
        assert not inspector.has_sequence("x", schema="PUMS")
        assert inspector.get_enums(schema="PUMS") == [] and inspector.get_domains("PUMS") == []
        reflected = sqlalchemy.MetaData()
        reflected.reflect(engine, schema="PUMS")
        assert list(reflected.tables) == ["PUMS.PUMS"]
    finally:
        engine.dispose()


JAVA = r"""
import java.sql.*;
public class Meta {
    public static void main(String[] a) throws Exception {
        String url = "jdbc:postgresql://127.0.0.1:" + a[0] + "/dpsql?sslmode=require";
        try (Connection c = DriverManager.getConnection(url, "alice", a[1])) {
            DatabaseMetaData d = c.getMetaData();
            show("catalogs", d.getCatalogs());
            show("schemas", d.getSchemas());
            show("schemasP", d.getSchemas(null, "PUMS"));
            show("tableTypes", d.getTableTypes());
            show("tables", d.getTables(null, "PUMS", "%", null));
            show("columns", d.getColumns(null, "PUMS", "PUMS", "%"));
            show("primaryKeys", d.getPrimaryKeys(null, "PUMS", "PUMS"));
            show("importedKeys", d.getImportedKeys(null, "PUMS", "PUMS"));
            show("exportedKeys", d.getExportedKeys(null, "PUMS", "PUMS"));
            show("crossReference", d.getCrossReference(null, "PUMS", "PUMS", null, "PUMS", "PUMS"));
            show("indexInfo", d.getIndexInfo(null, "PUMS", "PUMS", false, true));
            show("typeInfo", d.getTypeInfo());
            show("functions", d.getFunctions(null, "PUMS", "%"));
            show("functionColumns", d.getFunctionColumns(null, "PUMS", "%", "%"));
            show("procedures", d.getProcedures(null, "PUMS", "%"));
            show("procedureColumns", d.getProcedureColumns(null, "PUMS", "%", "%"));
            show("columnPrivileges", d.getColumnPrivileges(null, "PUMS", "PUMS", "%"));
            show("tablePrivileges", d.getTablePrivileges(null, "PUMS", "%"));
            show("bestRowIdentifier", d.getBestRowIdentifier(null, "PUMS", "PUMS", 0, true));
            show("versionColumns", d.getVersionColumns(null, "PUMS", "PUMS"));
            show("udts", d.getUDTs(null, "PUMS", "%", null));
            try (Statement s = c.createStatement()) {
                show("database", s.executeQuery("SELECT current_database()"));
            }
        }
    }
    static void show(String what, ResultSet r) throws SQLException {
        int n = 0;
        while (r.next()) {
            n++;
            StringBuilder b = new StringBuilder(what + " row");
            for (int i = 1; i <= r.getMetaData().getColumnCount(); i++)
                b.append("|").append(r.getString(i));
            System.out.println(b);
        }
        System.out.println(what + " rows " + n);
        r.close();
    }
}
"""


def test_jdbc_database_metadata(tmp_path):
    jar = _driver()
    if jar is None or shutil.which("java") is None:
        missing("no PostgreSQL JDBC driver or no Java")
    source = tmp_path / "Meta.java"
    source.write_text(JAVA)
    served = Served(write_deployment(tmp_path / "deployment", tls=True))   # JDBC needs TCP
    try:
        done = subprocess.run(["java", "-cp", jar, str(source), str(served.port),
                               PASSWORDS["alice"]], capture_output=True, text=True, timeout=180)
    finally:
        served.stop()
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    counts = {line.split()[0]: int(line.split()[-1]) for line in lines if " rows " in line}
    assert counts["tables"] == 1 and "tables row|dpsql|PUMS|PUMS|TABLE" in done.stdout
    columns = [line.split("|") for line in lines if line.startswith("columns row|")]
    assert [(c[4], c[6]) for c in columns] == [("age", "int8"), ("sex", "text"),
                                              ("educ", "text"), ("race", "text"),
                                              ("income", "int8"), ("married", "text")]
    assert "catalogs row|dpsql" in lines and "database row|dpsql" in lines
    assert counts["schemasP"] == 1 and counts["typeInfo"] > 20
    for empty in ("primaryKeys", "importedKeys", "exportedKeys", "crossReference", "indexInfo",
                  "functions", "procedures", "functionColumns", "procedureColumns"):
        assert counts[empty] == 0, empty
