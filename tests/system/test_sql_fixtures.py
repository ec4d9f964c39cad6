"""The SQL surface, one query per line: tests/sql/accept_<set>.sql and refuse_<set>.sql.

Each line of a fixture file is one test (its id is the file name and line number):

    <sql> -- ok                          accept_*.sql: reader.explain and reader.execute_df
                                         both succeed
    <sql> -- ErrorClass: fragment        refuse_*.sql: reader.explain raises that dpsql.Error
                                         subclass, and its message contains the fragment

Lines starting with ``#`` are comments; blank lines are ignored. ``<set>`` names the data set:
one of ``tests.paths.DATA_SETS``: ``pums`` (PUMS.PUMS from tests/data/PUMS_pid.csv +
PUMS_pid.yaml, private_id pid), ``shop`` (tests/data/shop_*.csv + shop.yaml) or ``retail``
(tests/data/retail_*.csv + retail.yaml, a four-level star schema). Each file gets one reader, with the default privacy and
no budget (so that nothing is refused for budget), opened once for all its lines.

To add a case, add a line to the right file; to see why a line fails, run it alone, e.g.
``python -m pytest "tests/system/test_sql_fixtures.py::test_sql_line[refuse_shop.sql:12]"``.
"""
from __future__ import annotations

import re

import pytest

import dpsql

from tests.paths import DATA_SETS, SQL

FILE = re.compile(r"^(accept|refuse)_([A-Za-z0-9]+)\.sql$")
pytestmark = pytest.mark.filterwarnings("ignore:dpsql. no budget set")


def parse_line(line: str):
    """(sql, expectation) of a fixture line, or None for a comment or a blank line."""
    text = line.strip()
    if not text or text.startswith("#"):
        return None
    if " -- " not in text:
        return text, None                     # malformed: reported by the test of its line
    sql, expect = text.rsplit(" -- ", 1)
    return sql.strip(), expect.strip()


def fixture_lines():
    """One pytest.param per query line of every fixture file, with id <file>:<line>."""
    files = sorted(p for p in SQL.iterdir() if FILE.match(p.name))
    assert files, f"no accept_*.sql / refuse_*.sql files in {SQL}"
    params = []
    for path in files:
        for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            parsed = parse_line(line)
            if parsed is not None:
                params.append(pytest.param(path.name, *parsed, id=f"{path.name}:{lineno}"))
    return params


LINES = fixture_lines()


@pytest.fixture(scope="module")
def reader_of():
    """``reader_of(file name)``: that fixture file's reader, opened at its first line and
    kept for the others."""
    opened = {}

    def reader(name: str):
        if name not in opened:
            data_set = FILE.match(name).group(2)
            assert data_set in DATA_SETS, f"{name}: unknown data set {data_set!r}"
            meta, tables = DATA_SETS[data_set]
            opened[name] = dpsql.from_df(dict(tables), meta, privacy=dpsql.Privacy())
        return opened[name]
    return reader


@pytest.mark.parametrize("file, sql, expect", LINES)
def test_sql_line(reader_of, file, sql, expect):
    kind = FILE.match(file).group(1)                  # accept or refuse
    reader = reader_of(file)
    assert expect is not None, f"no ' -- ' before the expected outcome: {sql}"
    if kind == "accept":
        assert expect == "ok", f"accept lines must end in '-- ok', not '-- {expect}'"
        reader.explain(sql)
        reader.execute_df(sql)
        return
    assert ":" in expect, f"refuse lines must end in '-- ErrorClass: fragment', not '-- {expect}'"
    name, fragment = (s.strip() for s in expect.split(":", 1))
    error = getattr(dpsql, name, None)
    assert isinstance(error, type) and issubclass(error, dpsql.Error), (
        f"{name} is not a dpsql.Error subclass")
    assert fragment, "empty message fragment"
    with pytest.raises(error) as info:
        reader.explain(sql)
    got = type(info.value).__name__
    assert got == name, f"expected {name}, got {got}: {info.value}"
    assert fragment in str(info.value), f"expected {fragment!r} in the message: {info.value}"
