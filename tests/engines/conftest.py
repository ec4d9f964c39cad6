"""The engine tests' servers: one PostgreSQL for the whole test session."""
import pytest

from tests.paths import DATA, SHOP_TABLES
from tests.servers import PostgresServer, load_csv


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
