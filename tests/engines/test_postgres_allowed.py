"""The allow-list on PostgreSQL, entry by entry: every sample expression of
``tests/unit/test_allowed.py`` over values that make PostgreSQL raise (64-bit ends, 1e308,
NaN, infinities, infinite timestamps, text that is no number) is answered or refused
before it runs, never failed on the data; and what is refused matches the PostgreSQL
column of docs/sql.md (``dpsql.engines.postgres.dialect.SUPPORT``)."""
from __future__ import annotations

import re

import duckdb
import pytest

import dpsql
from dpsql.engines.postgres.dialect import SUPPORT
from dpsql.frontend.allowed import ENTRIES
from tests.engines.compare import docs_column
from tests.servers import reader_over_rows
from tests.unit.test_allowed import EXTREMES, METADATA, SAMPLES

pytestmark = pytest.mark.filterwarnings("ignore:dpsql. no budget set")

ROWS = """
  (-9223372036854775808, 1e308, '', TRUE, 'infinity'),
  (9223372036854775807, 'nan', 'abc%_\\', FALSE, '-infinity'),
  (0, 'inf', 'ÿ日本', NULL, '2020-02-29 12:34:56'),
  (-1, '-inf', NULL, TRUE, NULL),
  (NULL, '-0.0', '  padded  ', FALSE, '1970-01-01'),
  (1, NULL, '9223372036854775808', TRUE, '0001-01-01')"""


@pytest.fixture(scope="module")
def reader(postgres):
    reader, con = reader_over_rows(postgres, "x.t", "i bigint, f double precision, s text, "
                                   "b boolean, t timestamp", ROWS, METADATA,
                                   dpsql.Privacy(epsilon=1.0))
    yield reader
    con.close()


def _refused(reader, expression: str) -> bool:
    """Run ``expression`` in WHERE, as a key and as a COUNT argument; True if refused."""
    refused = False
    for sql in (f"SELECT COUNT(*) AS n FROM x.t WHERE ({expression}) IS NOT NULL",
                f"SELECT {expression} AS k, COUNT(*) AS n FROM x.t GROUP BY {expression}",
                f"SELECT COUNT({expression}) AS n FROM x.t"):
        try:
            reader.execute_df(sql)
        except dpsql.QueryError:
            refused = True
    return refused


@pytest.fixture(scope="module")
def duckdb_reader():
    con = duckdb.connect()
    con.execute("CREATE SCHEMA x")
    con.execute(EXTREMES)
    return dpsql.from_connection(con, METADATA, privacy=dpsql.Privacy(epsilon=1.0))


# A sample refused on PostgreSQL for another entry's documented reason.
OTHER_ENTRY = re.compile(r"CAST\(s AS (DATE|TIMESTAMP)\)")


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e.sql)
def test_entry_never_fails_on_postgres_and_its_support_is_documented(reader, duckdb_reader,
                                                                      entry):
    only_postgres = [e for e in SAMPLES[entry.sql]
                     if _refused(reader, e) and not _refused(duckdb_reader, e)]
    support = SUPPORT[entry.sql]
    if support == "yes":
        assert [e for e in only_postgres if not OTHER_ENTRY.search(e)] == []
    else:
        assert only_postgres, f"{entry.sql}: documented as {support!r} but answered as on DuckDB"


def test_the_postgresql_column_of_docs_sql_md():
    column = docs_column("PostgreSQL")
    for entry in ENTRIES:
        assert column[entry.sql] == SUPPORT[entry.sql], entry.sql
