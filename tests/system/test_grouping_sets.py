"""GROUP BY ROLLUP, CUBE and GROUPING SETS (issue 37): one release whose privacy is split
equally over its grouping sets; at a large epsilon the answer is DuckDB's own."""
from __future__ import annotations

import duckdb
import numpy as np
import pandas as pd
import pytest

import dpsql

pytestmark = pytest.mark.filterwarnings("ignore:dpsql. no budget set")
META = {"": {"s": {"t": {"row_privacy": True,
                         "g": {"type": "string", "values": ["a", "b", "c"]},
                         "h": {"type": "int", "values": [0, 1]},
                         "x": {"type": "float", "lower": 0, "upper": 100}}}}}
ROWS = pd.DataFrame({"g": np.array(["a", "b", "c"])[np.arange(3000) % 3],
                     "h": (np.arange(3000) // 7) % 2, "x": (np.arange(3000) * 37) % 101 * 0.99})
QUERIES = [
    "SELECT g, h, COUNT(*) AS n, SUM(x) AS s FROM s.t GROUP BY ROLLUP(g, h)",
    "SELECT g, h, COUNT(*) AS n, AVG(x) AS a FROM s.t GROUP BY CUBE(g, h)",
    "SELECT g, h, COUNT(*) AS n FROM s.t GROUP BY GROUPING SETS ((g, h), (h), ())",
    "SELECT g, h, COUNT(*) AS n FROM s.t GROUP BY g, ROLLUP(h)",
    "SELECT h AS k, COUNT(*) AS n FROM s.t GROUP BY GROUPING SETS (1, ())",
    "SELECT g, COUNT(*) AS n FROM s.t GROUP BY ROLLUP(g) HAVING COUNT(*) > 1500",
    # fifteenth review of issue 33: spellings PostgreSQL reads that were refused or misread
    "SELECT COUNT(*) AS n FROM s.t GROUP BY ()",
    "SELECT g, COUNT(*) AS n FROM s.t GROUP BY g, () ORDER BY g",
    "SELECT x > 50 AS big, h, COUNT(*) AS n FROM s.t GROUP BY CUBE(x > 50, h)",
    "SELECT g, h, COUNT(*) AS n FROM s.t GROUP BY GROUPING SETS (g, ROLLUP(g, h))",
    # sixteenth review: elements of ROLLUP and CUBE in brackets, and ()
    "SELECT g, COUNT(*) AS n FROM s.t GROUP BY ROLLUP(g, ())",
    "SELECT g, COUNT(*) AS n FROM s.t GROUP BY ROLLUP((g))",
    "SELECT g, h, COUNT(*) AS n FROM s.t GROUP BY CUBE((g, h), ())",
    # seventeenth review: brackets around brackets
    "SELECT g, COUNT(*) AS n FROM s.t GROUP BY ((g))",
    "SELECT g, h, COUNT(*) AS n FROM s.t GROUP BY ROLLUP(((g)), h)",
    # eighteenth review: a bracketed list of keys
    "SELECT g, h, COUNT(*) AS n FROM s.t GROUP BY (g, h)",
    "SELECT g, h, COUNT(*) AS n FROM s.t GROUP BY ((g), (h))",
    # nineteenth review: a bracketed list in a bracketed list
    "SELECT g, h, COUNT(*) AS n FROM s.t GROUP BY ((g, h), g)",
]


def _sorted(frame: pd.DataFrame) -> pd.DataFrame:
    keys = [c for c in frame.columns if c in ("g", "h", "k", "big")]
    out = frame.astype({k: "object" for k in keys}).where(frame.notna(), None)
    return out.sort_values(keys, key=lambda c: c.map(repr)).reset_index(drop=True)


@pytest.mark.parametrize("sql", QUERIES)
def test_grouping_sets_answer_as_duckdb_at_large_epsilon(sql):
    reader = dpsql.from_df(ROWS, META, privacy=dpsql.Privacy(epsilon=1e5))
    got = _sorted(reader.execute_df(sql))
    t = ROWS                                                  # noqa: F841 - read by DuckDB
    want = _sorted(duckdb.sql(sql.replace("s.t", "t")).df())
    assert list(got.columns) == list(want.columns) and len(got) == len(want)
    for column in got.columns:
        if column in ("g", "h", "k", "big"):
            assert [None if pd.isna(v) else str(v) for v in got[column]] == \
                   [None if pd.isna(v) else str(v) for v in want[column]], column
        else:
            assert np.allclose(got[column].astype(float), want[column].astype(float),
                               rtol=1e-3, atol=0.5), column


def test_a_position_in_brackets_is_a_position_as_in_postgresql():
    """Fifteenth review of issue 33: GROUPING SETS ((1), (g)) named dpsql's internal alias;
    PostgreSQL reads (1) as position 1 (DuckDB as the constant 1)."""
    reader = dpsql.from_df(ROWS, META, privacy=dpsql.Privacy(epsilon=1e5))
    got = _sorted(reader.execute_df("SELECT g, COUNT(*) AS n FROM s.t GROUP BY GROUPING SETS ((1), (g))"))
    assert list(got.g) == ["a", "a", "b", "b", "c", "c"]
    assert np.allclose(got.n.astype(float), 1000, atol=0.5)


def test_the_privacy_is_split_over_the_sets_and_costs_one_query():
    reader = dpsql.from_df(ROWS, META, privacy=dpsql.Privacy(epsilon=1.0))
    plan = reader._plan(QUERIES[1])                       # CUBE(g, h): four sets
    assert len(plan.parts) == 4
    assert [p.spend.epsilon for p in plan.parts] == pytest.approx([0.25] * 4)
    assert reader.get_privacy_cost(QUERIES[1])[0] == pytest.approx(1.0)
    reader.execute_df(QUERIES[1])
    assert reader.spent[0] == pytest.approx(1.0)
    zcdp = dpsql.from_df(ROWS, META, privacy=dpsql.Privacy(rho=0.5))
    assert [p.spend.rho for p in zcdp._plan(QUERIES[0]).parts] == pytest.approx([0.5 / 3] * 3)


def test_a_null_key_column_keeps_its_type():
    reader = dpsql.from_df(ROWS, META, privacy=dpsql.Privacy(epsilon=1e5))
    frame = reader.execute_df(QUERIES[3])
    assert str(frame.h.dtype) == "Int64" and frame.h.isna().sum() == 3


@pytest.mark.parametrize("sql, message", [
    ("SELECT g, COUNT(*) AS n FROM s.t GROUP BY ROLLUP(g) ORDER BY n",
     "ORDER with GROUP BY ROLLUP, CUBE or GROUPING SETS is not supported"),
    ("SELECT g, COUNT(*) AS n FROM s.t GROUP BY ROLLUP(g) LIMIT 2", "LIMIT with GROUP BY"),
    ("SELECT g, h, COUNT(*) AS n FROM s.t GROUP BY CUBE(g, h), CUBE(x, g, h)",
     "more than 16 grouping sets"),
    ("SELECT COUNT(*) AS n FROM (SELECT g, COUNT(*) AS c FROM s.t GROUP BY ROLLUP(g)) z",
     "inside a subquery"),
    ("SELECT g, h, COUNT(*) AS n FROM s.t GROUP BY ROLLUP(g)", "h"),
    # a parameter is a value, never a position (it was taken as one inside ROLLUP)
    ("SELECT g, COUNT(*) AS n FROM s.t GROUP BY ROLLUP(g, ?)", "cannot stand for a GROUP BY"),
    ("SELECT g, COUNT(*) AS n FROM s.t GROUP BY GROUPING SETS ((g, ?))", "cannot stand for"),
])
def test_what_is_refused_is_free(sql, message):
    reader = dpsql.from_df(ROWS, META, privacy=dpsql.Privacy(epsilon=1.0))
    with pytest.raises(dpsql.QueryError, match=message.replace("(", r"\(")):
        reader.execute_df(sql, [1] if "?" in sql else None)
    assert reader.spent == (0.0, 0.0)


def test_a_key_column_keeps_its_type_when_no_group_of_its_set_is_released():
    """Fifteenth review: with no group of the finer set released (its key private and
    thresholded), the key column came out as text (TEXT on the wire), BIGINT otherwise."""
    from tests.paths import DATA
    reader = dpsql.from_df(pd.read_csv(DATA / "PUMS.csv"), str(DATA / "PUMS.yaml"),
                           privacy=dpsql.Privacy(epsilon=1e5))
    for floor in (90, 99):
        frame = reader.execute_df(f"SELECT age, COUNT(*) AS n FROM PUMS.PUMS WHERE age >= {floor} "
                                  "GROUP BY ROLLUP(age)")
        assert str(frame.age.dtype) == "Int64", floor
