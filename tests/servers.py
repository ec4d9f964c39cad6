"""Real database servers for the engine tests: started by the test session, stopped after.

PostgreSQL: ``initdb`` in a temporary directory and ``pg_ctl start`` on a unix socket
there (no TCP). As root, the server runs as the ``postgres`` (or ``nobody``) user, since
PostgreSQL refuses to run as root. Without a server (no ``pg_config``, no psycopg) the
tests that need one are skipped with the reason, except under ``CI=true``, where a
missing server fails the run.
"""
from __future__ import annotations

import atexit
import csv
import os
import pwd
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from dpsql.metadata import Metadata

PG_TYPES = {"int": "bigint", "float": "double precision", "string": "text",
            "boolean": "boolean", "datetime": "timestamp", "date": "date"}


def missing(reason: str):
    """Skip locally; fail under CI=true, where every server must be present."""
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"{reason} (CI=true: the engine tests must run)")
    pytest.skip(reason)


class PostgresServer:
    """A throwaway PostgreSQL cluster on a unix socket."""

    def __init__(self) -> None:
        bindir = _pg_bindir()
        if bindir is None:
            missing("PostgreSQL is not installed (no pg_config with initdb and pg_ctl)")
        try:
            import psycopg  # noqa: F401
        except ImportError:
            missing("psycopg is not installed (pip install 'psycopg[binary]')")
        self.bindir = bindir
        self.root = Path(tempfile.mkdtemp(prefix="dpsql-pg-"))
        self.data = self.root / "data"
        self.user = _server_user()
        if self.user is not None:
            os.chown(self.root, self.user.pw_uid, self.user.pw_gid)
        self._run("initdb", "-D", str(self.data), "-U", "postgres", "--auth=trust", "-E", "UTF8",
                  "--no-sync")
        with open(self.data / "postgresql.conf", "a") as conf:
            conf.write(f"listen_addresses = ''\nunix_socket_directories = '{self.root}'\n"
                       "fsync = off\nsynchronous_commit = off\nfull_page_writes = off\n")
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.root / "log"), "-w", "start")
        self.conninfo = f"host={self.root} user=postgres dbname=postgres"

    def _run(self, program: str, *args: str) -> None:
        command = [str(Path(self.bindir) / program), *args]
        if self.user is not None:
            command = ["runuser", "-u", self.user.pw_name, "--", *command]
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"{program} failed: {done.stderr.strip()[-500:]}")

    def url(self, dbname: str = "postgres") -> str:
        return f"postgresql://postgres@/{dbname}?host={self.root}"

    def connect(self, **kwargs):
        import psycopg
        return psycopg.connect(self.conninfo, **kwargs)

    def stop(self) -> None:
        try:
            self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "stop")
        finally:
            shutil.rmtree(self.root, ignore_errors=True)


def _pg_bindir() -> str | None:
    config = shutil.which("pg_config")
    if config is None:
        return None
    bindir = subprocess.run([config, "--bindir"], capture_output=True, text=True).stdout.strip()
    ok = all((Path(bindir) / p).exists() for p in ("initdb", "pg_ctl", "postgres"))
    return bindir if ok else None


def _server_user():
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        try:
            return pwd.getpwnam(name)
        except KeyError:
            continue
    missing("running as root without a 'postgres' or 'nobody' user to run PostgreSQL as")


def load_frame(con, metadata, name: str, frame) -> None:
    """Load a DataFrame as metadata table ``name`` (through a CSV in memory)."""
    with tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False) as f:
        frame.to_csv(f, index=False)
    try:
        load_csv(con, metadata, {name: f.name})
    finally:
        os.unlink(f.name)


def reader_over_rows(server: "PostgresServer", table: str, columns: str, rows: str, metadata,
                     privacy):
    """(reader, connection) over a table ``table`` created as ``columns`` holding the SQL
    VALUES ``rows`` (values no other loader would store: infinities, NaN, int64 ends)."""
    import dpsql
    con = server.connect()
    schema = table.split(".")[0]
    with con.cursor() as cur:
        cur.execute(f"CREATE SCHEMA IF NOT EXISTS {schema}; DROP TABLE IF EXISTS {table}")
        cur.execute(f"CREATE TABLE {table} ({columns})")
        cur.execute(f"INSERT INTO {table} VALUES {rows}")
    con.commit()
    return dpsql.from_connection(con, metadata, privacy=privacy), con


def create_database(server: "PostgresServer", name: str):
    """A fresh database on ``server``, and a connection to it."""
    admin = server.connect(autocommit=True)
    admin.execute(f'DROP DATABASE IF EXISTS "{name}"')
    admin.execute(f'CREATE DATABASE "{name}"')
    admin.close()
    import psycopg
    return psycopg.connect(f"host={server.root} user=postgres dbname={name}")


def load_csv(con, metadata, tables: dict) -> None:
    """Create each metadata table on the server, typed by the metadata, and load its CSV."""
    meta = Metadata.load(metadata)
    with con.cursor() as cur:
        for name, path in tables.items():
            table = meta.find_table(name)
            schema = table.schema or "public"
            target = f'"{schema}"."{table.name}"'
            with open(path) as f:
                header = next(csv.reader(f))
            kinds = [(table.column(h).type if table.column(h) else "string") for h in header]
            cur.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
            cur.execute(f"DROP TABLE IF EXISTS {target}")
            cur.execute(f"CREATE TABLE {target} (" + ", ".join(
                f'"{h}" {PG_TYPES[k]}' for h, k in zip(header, kinds)) + ")")
            cur.execute("DROP TABLE IF EXISTS _load")
            cur.execute("CREATE TEMP TABLE _load (" + ", ".join(f'"{h}" text' for h in header) + ")")
            with open(path, "rb") as f, cur.copy(
                    "COPY _load FROM STDIN WITH (FORMAT csv, HEADER true)") as copy:
                while chunk := f.read(1 << 16):
                    copy.write(chunk)
            casts = [(f"CAST(CAST(NULLIF(\"{h}\", '') AS numeric) AS bigint)" if k == "int"
                      else f"CAST(NULLIF(\"{h}\", '') AS {PG_TYPES[k]})")
                     for h, k in zip(header, kinds)]
            cur.execute(f"INSERT INTO {target} SELECT {', '.join(casts)} FROM _load")
            cur.execute(f"ANALYZE {target}")   # as a served database would be: good plans
    con.commit()


SPARK_TYPES = {"int": "bigint", "float": "double", "string": "string", "boolean": "boolean",
               "datetime": "timestamp_ntz", "date": "date"}


def spark_session(master: str = "local[2]", adaptive: bool = False):
    """A local Spark (2 threads, no UI) for the test session, or a skip (a failure under
    CI=true) when pyspark or Java is missing. ``master``: another (a local cluster).

    ``adaptive``: Spark's adaptive query execution, on by default in Spark and off here
    unless asked for. On the fixtures' small tables it re-plans every stage of a plan and
    runs each as a job of its own: the 17 answered TPC-H fixture queries (27 Spark
    statements) took 41.8 s with it and 26.3 s without, one after the other on this 2-core
    machine. Results do not depend on it; the cluster checks
    (``tests/engines/spark_cluster_checks.py``) keep it on, as Spark's default, so truncation,
    the sampler and the threshold are checked with it too."""
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        missing("pyspark is not installed (pip install -e '.[test]')")
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        missing("Spark needs Java (17): no java on PATH and no JAVA_HOME")
    # The tests' Spark runs a few hundred small queries in a short-lived JVM: its JIT's first
    # tier only and a serial collector (nothing a query's result depends on) took the JVM's
    # CPU from 95 s to 42 s and the wall time from 147 s to 66 s on 40 fixture queries (at
    # load 9-10 on 2 cores).
    warehouse = tempfile.mkdtemp(prefix="dpsql-spark-warehouse-")
    atexit.register(shutil.rmtree, warehouse, True)     # every caller's (a fixture removes it sooner)
    spark = (SparkSession.builder.master(master).appName("dpsql-tests")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", "2").config("spark.driver.memory", "2g")
             .config("spark.sql.adaptive.enabled", "true" if adaptive else "false")
             .config("spark.driver.extraJavaOptions", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")
             .config("spark.sql.warehouse.dir", warehouse)
             .getOrCreate())
    spark.sparkContext.setLogLevel("FATAL")
    return spark


def spark_csv(spark, metadata, name: str, path):
    """A metadata table's CSV as a Spark DataFrame typed by the metadata (columns it does
    not describe as text)."""
    table = Metadata.load(metadata).find_table(name)
    with open(path) as f:
        header = next(csv.reader(f))
    kinds = [(table.column(h).type if table.column(h) else "string") for h in header]
    # integers are read as DECIMAL first: the CSVs spell some as 17000.0
    schema = ", ".join(f"`{h}` {'decimal(38, 9)' if k == 'int' else SPARK_TYPES[k]}"
                       for h, k in zip(header, kinds))
    frame = spark.read.csv(str(path), header=True, schema=schema)
    return frame.selectExpr(*[f"CAST(`{h}` AS bigint) AS `{h}`" if k == "int" else f"`{h}`"
                              for h, k in zip(header, kinds)])
