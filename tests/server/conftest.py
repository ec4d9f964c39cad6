"""The server tests' PostgreSQL: a throwaway cluster, to check dpsql's bytes against
what PostgreSQL itself writes (skipped locally without one, a failure under CI=true)."""
import pytest

from tests.servers import PostgresServer


@pytest.fixture(scope="session")
def postgres():
    server = PostgresServer()
    try:
        yield server
    finally:
        server.stop()
