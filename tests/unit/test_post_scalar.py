"""The one-row post-processing evaluated in Python answers exactly as DuckDB does.

Every ungrouped query of the fixture files whose post-processing ``post_scalar`` takes is run
both ways on released rows drawn from a wide range (zero, negative, huge, fractional): the
values and dtypes must be identical, and where Python hands a row back (a division by zero,
an integer past BIGINT, a domain error) DuckDB's answer is the one used.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import dpsql
from dpsql.engines.post_scalar import scalar
from dpsql.engines.postprocess import PostProcessor, render
from dpsql.plan import NOISY_TABLE
from dpsql.release.noise import empty_noisy
from tests.engines.compare import duckdb_reader, lines
from tests.paths import FIXTURE_FILES, data_set_of

INTS = [0, 1, -1, 2, 7, -13, 1000, 123456789, -987654321, 2 ** 40 + 3, 2 ** 62, -2 ** 62,
        2 ** 63 - 1, -2 ** 63]
FLOATS = [0.0, 1.0, -1.0, 0.5, -2.75, 1e-300, 3.3e12, -7.1e15, 1e308, -1e308, 123.456]


def fixture_posts(grouped: bool = False) -> list:
    """(SQL, plan part) of every accepted fixture query whose post-processing runs on the
    noisy table: the ungrouped ones, or with ``grouped`` the grouped ones."""
    found = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in [f for f in FIXTURE_FILES if f.startswith("accept_")]:
            reader = duckdb_reader(data_set_of(name))
            for sql, _ in lines(name):
                try:
                    plan = reader._plan(sql)
                except dpsql.Error:
                    continue
                for part in getattr(plan, "parts", [plan]):
                    if part.passthrough is None and bool(part.query.keys) == grouped:
                        found.append((sql, part))
    return found


def _rows(empty: dict, rng: np.random.Generator, n: int):
    for _ in range(n):
        yield {name: np.array([rng.choice(INTS) if v.dtype.kind == "i" else rng.choice(FLOATS)],
                              dtype=v.dtype) for name, v in empty.items()}


def test_python_answers_every_fixture_post_processing_row_as_duckdb_does():
    post, rng = PostProcessor(), np.random.default_rng(7)
    taken = compared = handed_back = 0
    for sql, part in fixture_posts():
        text, empty = render(part.post), empty_noisy(part)
        short = scalar(part.post, NOISY_TABLE, {k: v.dtype for k, v in empty.items()})
        if short is None:
            continue
        taken += 1
        for row in _rows(empty, rng, 60):
            mine = short(row)
            if mine is None:
                handed_back += 1
                continue
            theirs = post.run(text, row)
            compared += 1
            assert list(mine) == list(theirs), sql
            for name in mine:
                assert mine[name].dtype == np.asarray(theirs[name]).dtype, (sql, name)
                assert mine[name].tolist() == np.asarray(theirs[name]).tolist(), (sql, row)
    # Most ungrouped fixture queries are taken, and most rows answered here.
    assert taken >= 30 and compared >= 1000 and handed_back >= 10, (taken, compared, handed_back)


@pytest.mark.parametrize("sql", [
    "SELECT (1.5 * \"_s0\") AS \"_o0\" FROM _noisy",                 # a DECIMAL literal
    "SELECT \"_s0\" AS \"_o0\" FROM _noisy ORDER BY \"_s0\"",          # ORDER BY
    "SELECT ABS(\"_s0\") AS \"_o0\" FROM _noisy",                     # no rule for ABS
    "SELECT \"_s0\" // 2 AS \"_o0\" FROM _noisy",                     # no rule for //
    "SELECT 2 * 3 + \"_s0\" AS \"_o0\" FROM _noisy",                  # INTEGER literals
    "SELECT 2 AS \"_o0\" FROM _noisy",                                # no column read
])
def test_shapes_without_a_rule_are_left_to_duckdb(sql):
    import sqlglot
    tree = sqlglot.parse_one(sql, read="duckdb")
    assert scalar(tree, NOISY_TABLE, {"_s0": np.dtype(np.int64)}) is None


def test_a_fresh_average_is_answered_in_python_and_a_having_by_duckdb(pums_reader):
    reader = pums_reader(privacy=dpsql.Privacy(epsilon=1.0), budget=dpsql.Budget(epsilon=10))
    avg = reader._plan("SELECT AVG(income) AS a FROM PUMS.PUMS")
    grouped = reader._plan("SELECT sex, AVG(income) AS a FROM PUMS.PUMS GROUP BY sex "
                           "HAVING COUNT(*) > 10")
    assert id(avg) in reader._scalars and id(grouped) not in reader._scalars
    a = reader.execute_df("SELECT AVG(income) AS a FROM PUMS.PUMS").a[0]
    assert 0 <= a <= 500000
