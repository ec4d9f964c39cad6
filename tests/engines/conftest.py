"""The engine tests' servers: one PostgreSQL and one local Spark for the whole test session (under
pytest-xdist, on the one worker that runs the tests needing them: tests/conftest.py groups
them)."""
import re
import shutil

import pytest

from tests.paths import DATA_SETS
from tests.servers import PostgresServer, load_csv, spark_csv, spark_session


@pytest.fixture(scope="session")
def postgres():
    server = PostgresServer()
    try:
        with server.connect() as con:
            for meta, tables in DATA_SETS.values():
                load_csv(con, meta, tables)
        yield server
    finally:
        server.stop()


@pytest.fixture
def pg_con(postgres):
    con = postgres.connect()
    yield con
    con.close()


@pytest.fixture(scope="session")
def spark():
    session = spark_session()
    warehouse = re.sub(r"^file:(//)?", "", session.conf.get("spark.sql.warehouse.dir"))
    try:
        yield session
    finally:
        session.stop()
        shutil.rmtree(warehouse, ignore_errors=True)    # a temporary directory of this worker


@pytest.fixture(scope="session")
def spark_tables(spark):
    """Every fixture data set (tests.paths.DATA_SETS) as DataFrames typed by their metadata, cached."""
    return {name: {n: spark_csv(spark, meta, n, p).cache() for n, p in tables.items()}
            for name, (meta, tables) in DATA_SETS.items()}
