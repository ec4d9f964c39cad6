"""The engine tests' servers: one PostgreSQL and one local Spark for the whole test session."""
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
    try:
        yield session
    finally:
        session.stop()


@pytest.fixture(scope="session")
def spark_tables(spark):
    """Every fixture data set (tests.paths.DATA_SETS) as DataFrames typed by their metadata, cached."""
    return {name: {n: spark_csv(spark, meta, n, p).cache() for n, p in tables.items()}
            for name, (meta, tables) in DATA_SETS.items()}
