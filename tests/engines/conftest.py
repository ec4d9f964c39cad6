"""The engine tests' servers: one PostgreSQL and one local Spark for the whole test session."""
import pytest

from tests.paths import DATA, SHOP_TABLES
from tests.servers import PostgresServer, load_csv, spark_csv, spark_session


@pytest.fixture(scope="session")
def postgres():
    server = PostgresServer()
    try:
        with server.connect() as con:
            load_csv(con, DATA / "PUMS_pid.yaml", {"PUMS.PUMS": DATA / "PUMS_pid.csv"})
            load_csv(con, DATA / "shop.yaml", SHOP_TABLES)
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
    """The PUMS and shop data sets as DataFrames typed by their metadata, cached."""
    pums = {"PUMS.PUMS": spark_csv(spark, DATA / "PUMS_pid.yaml", "PUMS.PUMS",
                                   DATA / "PUMS_pid.csv").cache()}
    shop = {n: spark_csv(spark, DATA / "shop.yaml", n, p).cache() for n, p in SHOP_TABLES.items()}
    return {"pums": pums, "shop": shop}
