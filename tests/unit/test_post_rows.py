"""A grouped query's post-processing evaluated in Python answers exactly as DuckDB does.

Every grouped query of the fixture files whose post-processing ``post_rows`` takes is run
both ways on released tables drawn at random (1-20 rows; keys with NULLs, text with case,
accents, emoji and an empty string, integer extremes; statistics zero, negative, huge,
fractional): the columns, values, dtypes and row order must be identical, and where Python
hands a table back DuckDB's answer is the one used.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import sqlglot

import dpsql
from dpsql.engines.post_rows import MAX_ROWS, grouped
from dpsql.engines.postprocess import PostProcessor, render
from dpsql.plan import NOISY_TABLE
from dpsql.release.noise import empty_noisy
from tests.unit.test_post_scalar import FLOATS, INTS, fixture_posts

TEXTS = ["", "a", "B", "b", "ab", "a b", "é", "e\u0301", "Z", "ß", "SS", "😀", "中", "0", "10",
         "9", "\u00a0", "a\x00b"]


def _key_values(dtype, rng, n):
    if dtype.kind == "O":
        pool = TEXTS
    elif dtype.kind == "b":
        pool = [False, True]
    else:
        pool = INTS
    return [pool[i] for i in rng.integers(0, len(pool), n)]


def _table(empty: dict, keys: list, rng: np.random.Generator) -> dict:
    """A released table: unique key tuples (a NULL is one value), random statistics."""
    n = int(rng.integers(1, 21))
    seen, rows = set(), []
    for _ in range(n * 4):
        row = {}
        for key in keys:
            null = bool(rng.random() < 0.15)
            row[key + "_null"] = null
            row[key] = _key_values(empty[key].dtype, rng, 1)[0]
            if null:   # add_noise's stand-in for a NULL key: the type's zero value
                row[key] = "" if empty[key].dtype.kind == "O" else empty[key].dtype.type(0)
        ident = tuple((row[k + "_null"], row[k]) for k in keys)
        if ident not in seen:
            seen.add(ident)
            rows.append(row)
        if len(rows) == n:
            break
    table = {}
    for name, column in empty.items():
        if name in keys or name.endswith("_null") and name[:-5] in keys:
            table[name] = np.array([r[name] for r in rows], dtype=column.dtype)
        elif column.dtype.kind == "i":
            table[name] = np.array([INTS[i] for i in rng.integers(0, len(INTS), len(rows))])
        else:
            table[name] = np.array([FLOATS[i] for i in rng.integers(0, len(FLOATS), len(rows))],
                                   dtype=column.dtype)
    return table


def _same(mine, theirs, sql):
    assert list(mine) == list(theirs), sql
    for name in mine:
        a, b = mine[name], theirs[name]
        assert type(a) is type(b) and a.dtype == b.dtype, (sql, name, a, b)
        assert pd.Series(a).equals(pd.Series(b)), (sql, name, a, b)


def test_python_answers_every_grouped_fixture_post_processing_as_duckdb_does():
    post, rng = PostProcessor(), np.random.default_rng(11)
    taken = compared = handed_back = 0
    for sql, part in fixture_posts(grouped=True):
        text, empty = render(part.post), empty_noisy(part)
        short = grouped(part.post, NOISY_TABLE, {k: v.dtype for k, v in empty.items()},
                        part.key_names)
        if short is None:
            continue
        taken += 1
        for _ in range(15):
            table = _table(empty, part.key_names, rng)
            mine = short(table)
            if mine is None:
                handed_back += 1
                continue
            compared += 1
            _same(mine, post.run(text, table), sql)
    assert taken >= 100 and compared >= 1500 and handed_back >= 10, (taken, compared, handed_back)


def test_many_rows_and_other_shapes_are_left_to_duckdb():
    empty = {"_k0": np.array([], dtype=np.int64), "_k0_null": np.array([], dtype=np.bool_),
             "_s0": np.array([], dtype=np.int64)}
    dtypes = {k: v.dtype for k, v in empty.items()}
    base = ('SELECT "_k0" AS "_o0", "_s0" * 2 AS "_o1" FROM (SELECT CASE WHEN "_k0_null" '
            'THEN NULL ELSE "_k0" END AS "_k0", "_s0" FROM _noisy) AS _noisy')
    short = grouped(sqlglot.parse_one(base + ' ORDER BY "_k0"', read="duckdb"), NOISY_TABLE,
                    dtypes, ["_k0"])
    n = MAX_ROWS + 1
    big = {"_k0": np.arange(n), "_k0_null": np.zeros(n, dtype=bool), "_s0": np.arange(n)}
    assert short is not None and short(big) is None
    small = {name: values[:3][::-1].copy() for name, values in big.items()}
    assert short(small)["_o0"].tolist() == [0, 1, 2]
    for tail in (' ORDER BY "_o1"', ' ORDER BY "_o1" DESC LIMIT 2', ' ORDER BY "_k0" LIMIT -1',
                 ' ORDER BY "_k0" LIMIT 1 + 1', ' ORDER BY "_k0" + 0', ' ORDER BY 1',
                 ' WHERE "_s0" > 1 ORDER BY "_k0"', ''):
        tree = sqlglot.parse_one(base + tail, read="duckdb")
        assert grouped(tree, NOISY_TABLE, dtypes, ["_k0"]) is None, tail


@pytest.mark.parametrize("tail", [
    ' ORDER BY "_k0" DESC', ' ORDER BY "_k0" NULLS FIRST', ' ORDER BY "_k0" DESC NULLS FIRST',
    ' ORDER BY "_o1" DESC, "_k0" LIMIT 3', ' ORDER BY "_o1", "_o0" DESC LIMIT 2 OFFSET 1',
    ' ORDER BY "_s0" DESC, "_k0" OFFSET 2', ' ORDER BY "_o0" LIMIT 0',
])
def test_orders_and_cuts_that_name_every_key_are_answered_as_duckdb_does(tail):
    """Ties of the first term (many equal statistics, -0.0 and 0.0) are broken by the key,
    as DuckDB breaks them; NULL keys go where the term says."""
    base = ('SELECT "_k0" AS "_o0", "_s0" * 2 AS "_o1" FROM (SELECT CASE WHEN "_k0_null" '
            'THEN NULL ELSE "_k0" END AS "_k0", "_s0" FROM _noisy) AS _noisy')
    empty = {"_k0": np.array([], dtype=object), "_k0_null": np.array([], dtype=np.bool_),
             "_s0": np.array([], dtype=np.float64)}
    tree = sqlglot.parse_one(base + tail, read="duckdb")
    short = grouped(tree, NOISY_TABLE, {k: v.dtype for k, v in empty.items()}, ["_k0"])
    assert short is not None, tail
    table = {"_k0": np.array(["b", "a", "", "é", "B", "c"], dtype=object),
             "_k0_null": np.array([False, False, True, False, False, False]),
             "_s0": np.array([1.5, -0.0, 1.5, 0.0, 1.5, -2.0])}
    mine = short(table)
    assert mine is not None
    _same(mine, PostProcessor().run(render(tree), table), tail)


@pytest.mark.parametrize("sql", [
    "SELECT sex, COUNT(*) AS n, AVG(age) AS a FROM PUMS.PUMS GROUP BY sex",
    "SELECT educ, married, SUM(income) AS s FROM PUMS.PUMS GROUP BY educ, married",
])
def test_a_fresh_grouped_release_is_answered_in_python(pums_reader, sql):
    reader = pums_reader(privacy=dpsql.Privacy(epsilon=1.0), budget=dpsql.Budget(epsilon=10))
    plan = reader._plan(sql)
    assert id(plan) in reader._scalars
    frame = reader.execute_df(sql)
    keys = [c for c in frame.columns if c in ("sex", "educ", "married")]
    assert frame[keys].apply(tuple, axis=1).tolist() == sorted(frame[keys].apply(tuple, axis=1))
