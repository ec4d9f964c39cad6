"""Issue 33 on PostgreSQL: random hostile queries on neighbouring databases, and the three
findings of the attack review, each as a test (``tests/engines/differential.py`` says how).

``DPSQL_PG_DIFFERENTIAL`` (default 300) sets the number of random queries.
"""
from __future__ import annotations

import os

import pytest

import dpsql
from tests.engines.differential import COLUMNS, META, ROWS, differential_test
from tests.servers import PG_TYPES, create_database

EXAMPLES = int(os.environ.get("DPSQL_PG_DIFFERENTIAL", "300"))
pytestmark = pytest.mark.filterwarnings("ignore:dpsql. no budget set")
TYPES = {"pid": "int", "i": "int", "f": "float", "s": "string", "t": "datetime", "b": "boolean"}


def _database(postgres, name: str, rows: list):
    con = create_database(postgres, name)
    with con.cursor() as cur:
        cur.execute("CREATE SCHEMA d")
        cur.execute("CREATE TABLE d.t (" + ", ".join(f"{c} {PG_TYPES[TYPES[c]]}"
                                                    for c in COLUMNS) + ")")
        cur.executemany("INSERT INTO d.t VALUES (%s, %s, %s, %s, %s, %s)", rows)
    con.commit()
    return con


@pytest.fixture(scope="module")
def neighbours(postgres):
    cons = {name: _database(postgres, f"differential_{name}", rows) for name, rows in ROWS.items()}
    yield {name: dpsql.from_connection(con, META, privacy=dpsql.Privacy(epsilon=1.0))
           for name, con in cons.items()}
    for con in cons.values():
        con.close()


test_hostile_queries_have_one_outcome_on_neighbouring_databases_on_postgres = \
    differential_test(EXAMPLES)
