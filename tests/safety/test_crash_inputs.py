"""Inputs that crashed with a non-dpsql exception; each must now be a dpsql error or work.

1. numbers beyond the double range, written in the SQL or passed as parameters
   (``OverflowError`` in the typing step);
2. relations nested deeper than the planner can render (a CTE chain: ``RecursionError``),
   and deeply nested expressions;
3. ``estimate_bounds`` / ``dpsql metadata bounds`` on a float column (``OverflowError``
   computing 2.0 ** 1024 for the log grid);
4. DataFrames whose text columns use any pandas string storage, or hold non-str objects
   such as ``datetime.date`` (``UnicodeEncodeError`` with pyarrow installed).

Real DuckDB, real data in tests/data (fixtures of conftest.py).
"""
import datetime
import decimal
import os
import sys
import time
import warnings

import numpy as np
import pandas as pd
import pytest
import yaml

import dpsql
from dpsql.cli import command as cli
from dpsql.frontend import parse
from dpsql.mechanisms.quantile import Grid
from tests.safety.test_parse_safety import at_stack_depth

WHERE = "SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE "
BIG = "1" + "0" * 400                      # a 401-digit integer


@pytest.fixture
def reader(pums_reader):
    return pums_reader(privacy=dpsql.Privacy(epsilon=1.0), budget=dpsql.Budget(epsilon=100))


def refused(reader, sql, *words, params=None, error=dpsql.QueryError):
    """Refused by execute_df, get_privacy_cost and explain, each message holding
    ``words``; nothing spent."""
    spent = reader.spent
    for call in (reader.execute_df, reader.get_privacy_cost, reader.explain):
        with pytest.raises(error) as info:
            call(sql, params) if params is not None else call(sql)
        message = str(info.value)
        for word in words:
            assert word in message, message
    assert reader.spent == spent
    return message


# ----------------------------------------------------------------- 1. numbers out of range

@pytest.mark.parametrize("sql, where", [
    (WHERE + "age < " + BIG, "line 1, column 49"),
    (WHERE + "age > -" + BIG, "line 1, column 50"),
    (WHERE + "age < (" + BIG + ")", "line 1, column 50"),
    (WHERE + "age < 1e400", "line 1, column 49"),
    (WHERE + "age + " + BIG + " > 1", "line 1, column 49"),
    (WHERE + "age IN (1, " + BIG + ")", "line 1, column 54"),
    (WHERE + "CAST('" + BIG + "' AS DOUBLE) > age", "line 1, column 48"),
    (WHERE + "income = '" + BIG + "'", "WHERE"),
    ("SELECT SUM(age * " + BIG + ") AS s FROM PUMS.PUMS", "line 1, column 18"),
], ids=["int", "negative", "parenthesised", "exponent", "arithmetic", "in_list", "cast_text",
        "text_compared_with_int", "in_sum"])
def test_number_literal_beyond_the_double_range_is_query_error(reader, sql, where):
    message = refused(reader, sql, "out of range", "64-bit", "finite", where)
    assert BIG not in message                      # shortened: the first digits and the length


def test_number_literal_beyond_the_double_range_is_refused_by_the_cli(capsys, data_dir):
    code = cli.main(["query", "--metadata", str(data_dir / "PUMS.yaml"),
                     "--table", f"PUMS.PUMS={data_dir / 'PUMS.csv'}", "--epsilon", "1",
                     WHERE + "age < " + BIG])
    err = capsys.readouterr().err
    assert code == cli.EXIT_QUERY and "query refused" in err and "out of range" in err, err
    assert "internal error" not in err and "Traceback" not in err


@pytest.mark.parametrize("value, words", [
    (10 ** 400, ("bigint", "finite")),
    (-10 ** 400, ("bigint", "finite")),
    (decimal.Decimal("1e400"), ("bigint", "finite")),
    (decimal.Decimal("-1e400"), ("bigint", "finite")),
    (float("inf"), ("finite",)),
    (float("-inf"), ("finite",)),
], ids=["int", "negative_int", "decimal", "negative_decimal", "inf", "negative_inf"])
def test_parameter_beyond_the_double_range_is_query_error(reader, value, words):
    sql = WHERE + "age > ? AND income < ?"
    refused(reader, sql, "parameter 2", *words, params=(30, value))


def test_numbers_within_the_range_are_answered(reader, pums):
    sql = WHERE + "income < ?"
    for value in (2 ** 63 - 1, -2 ** 63, 2 ** 64, 10 ** 300, -10 ** 300, decimal.Decimal("1e300"),
                  decimal.Decimal("1e-400"), np.uint64(2 ** 64 - 1), 1.7e308):
        exact = (pums.income < float(value)).sum()
        assert abs(reader.execute_df(sql, (value,)).n[0] - exact) < 60, value
    assert abs(reader.execute_df(WHERE + "income < 1" + "0" * 300).n[0] - 1000) < 60
    assert abs(reader.execute_df(WHERE + "income > -1" + "0" * 300).n[0] - 1000) < 60


# ----------------------------------------------------------------- 2. nesting

def cte_chain(levels: int, inner: str = "") -> str:
    """A query nesting ``levels`` relations: levels - 1 CTEs, each reading the previous."""
    ctes = [f"t0 AS (SELECT * FROM PUMS.PUMS{inner})"]
    ctes += [f"t{i} AS (SELECT * FROM t{i - 1})" for i in range(1, levels - 1)]
    return "WITH " + ", ".join(ctes) + f" SELECT COUNT(*) AS n FROM t{levels - 2}"


def test_cte_chain_at_the_limit_is_answered_and_one_more_is_refused(reader):
    m = parse.MAX_RELATION_DEPTH
    assert abs(reader.execute_df(cte_chain(m)).n[0] - 1000) < 60
    refused(reader, cte_chain(m + 1), f"the query nests {m + 1} relations deep; dpsql allows "
            f"at most {m}")


def test_cte_chain_at_the_limit_is_answered_from_a_deep_stack(reader):
    """The guarantee of dpsql/frontend/parse.py: called 400 frames deep, a query at every limit at
    once (here the deepest brackets inside the deepest CTE) never hits RecursionError."""
    n, m = parse.MAX_NESTING, parse.MAX_RELATION_DEPTH
    # the CTE's own parenthesis is one bracket level
    deep = " WHERE " + "abs(" * (n - 1) + "age" + ")" * (n - 1) + " > 1"
    cost = at_stack_depth(400, lambda: reader.get_privacy_cost(cte_chain(m, deep)))
    assert cost[0] > 0
    out = at_stack_depth(400, lambda: reader.execute_df(cte_chain(m, deep)))
    assert abs(out.n[0] - 1000) < 60
    with pytest.raises(dpsql.QueryError, match="relations deep"):
        at_stack_depth(400, lambda: reader.get_privacy_cost(cte_chain(m + 1, deep)))


@pytest.mark.parametrize("ctes", [120, 2000])
def test_long_cte_chains_are_refused_quickly(reader, ctes):
    start = time.perf_counter()
    refused(reader, cte_chain(ctes + 1), f"nests {ctes + 1} relations deep",
            f"at most {parse.MAX_RELATION_DEPTH}")
    assert time.perf_counter() - start < 10


def test_a_cte_chain_longer_than_the_text_limit_is_query_error(reader):
    start = time.perf_counter()
    refused(reader, cte_chain(5001))
    assert time.perf_counter() - start < 10


def test_subqueries_inside_ctes_count_as_levels(reader):
    m = parse.MAX_RELATION_DEPTH
    k = m // 2 + 1                       # CTEs: t0 is 1 level, each later one 2 more
    ctes = ["t0 AS (SELECT * FROM PUMS.PUMS)"]
    ctes += [f"t{i} AS (SELECT * FROM (SELECT * FROM t{i - 1}) AS s)" for i in range(1, k)]
    sql = "WITH " + ", ".join(ctes) + f" SELECT COUNT(*) AS n FROM t{k - 1}"
    refused(reader, sql, f"nests {1 + 2 * (k - 1) + 1} relations deep")


@pytest.mark.parametrize("sql, depth", [
    ("SELECT COUNT(*) FROM t", 1),
    ("SELECT COUNT(*) FROM (SELECT * FROM t) AS s", 2),
    ("WITH a AS (SELECT * FROM t), b AS (SELECT * FROM a) SELECT COUNT(*) FROM b", 3),
    ("WITH a AS (SELECT * FROM t) SELECT COUNT(*) FROM t", 1),         # a is not read
    ("WITH a AS (SELECT * FROM s.a) SELECT COUNT(*) FROM a", 2),       # s.a is a stored table
    # in a CTE's body only the CTEs before it are visible: this b is a stored table
    ("WITH a AS (SELECT * FROM b), b AS (SELECT * FROM t) SELECT COUNT(*) FROM a", 2),
    ("WITH a AS (SELECT * FROM t) SELECT COUNT(*) FROM "
     "(WITH b AS (SELECT * FROM a) SELECT * FROM b) AS s", 4),
    ("SELECT COUNT(*) FROM t UNION ALL SELECT COUNT(*) FROM (SELECT * FROM t) AS s", 2),
])
def test_relation_depth(sql, depth):
    assert parse.relation_depth(parse.parse_query(sql)) == depth


@pytest.mark.parametrize("sql", [
    WHERE + "(" * 2000 + "age" + ")" * 2000 + " > 3",
    WHERE + " + ".join(["age"] * 3000) + " > 3",
    WHERE + "abs(" * 2000 + "age" + ")" * 2000 + " > 3",
    "SELECT COUNT(*) AS n FROM " + "(SELECT * FROM " * 200 + "PUMS.PUMS" + ") AS s" * 200,
], ids=["parentheses", "sum_chain", "functions", "subqueries"])
def test_deeply_nested_expressions_are_query_errors(reader, sql):
    refused(reader, sql, "deep")


# ----------------------------------------------------------------- 3. bounds of float columns

def test_log_grid_of_doubles_is_finite():
    with warnings.catch_warnings():
        warnings.simplefilter("error")            # no overflow warning from numpy either
        grid = Grid.log(False)
        edges = [grid.values(np.arange(grid.cells), how) for how in ("low", "high", "mid")]
    assert np.isfinite(grid.lower) and np.isfinite(grid.upper) and grid.lower == -grid.upper
    assert grid.upper == sys.float_info.max
    for values in edges:
        assert np.isfinite(values).all() and (np.diff(values) >= 0).all()
    # the top cell still bounds the largest double
    assert edges[1][-1] == sys.float_info.max and edges[0][0] == -sys.float_info.max


def test_estimate_bounds_of_a_float_column_contains_the_data():
    values = np.linspace(-50.5, 1234.25, 5000)
    meta = {"": {"s": {"t": {"row_privacy": True, "x": {"type": "float"}}}}}
    reader = dpsql.from_df(pd.DataFrame({"x": values}), meta, budget=dpsql.Budget(epsilon=100))
    for _ in range(5):
        lo, hi = reader.estimate_bounds("s.t", "x", epsilon=1.0)
        assert np.isfinite(lo) and np.isfinite(hi) and lo < hi
        # P(either bound misses more than 2.5% of the data) < 1e-9 (exact PF probabilities)
        assert ((values >= lo) & (values <= hi)).mean() >= 0.95
    assert reader.spent[0] == pytest.approx(5.0)


@pytest.mark.parametrize("value", [1.7e308, -1.79e308, 5e-324])
def test_estimate_bounds_of_extreme_doubles_are_finite(value):
    meta = {"": {"s": {"t": {"row_privacy": True, "x": {"type": "float"}}}}}
    reader = dpsql.from_df(pd.DataFrame({"x": np.full(3000, value)}), meta,
                           budget=dpsql.Budget(epsilon=10))
    lo, hi = reader.estimate_bounds("s.t", "x", epsilon=1.0)
    assert np.isfinite(lo) and np.isfinite(hi) and lo <= value <= hi


def _float_income_metadata(data_dir, tmp_path):
    text = (data_dir / "PUMS.yaml").read_text()
    old = "income:\n        type: int\n        lower: 0\n        upper: 500000"
    assert old in text
    path = tmp_path / "PUMS_float.yaml"
    path.write_text(text.replace(old, "income:\n        type: float"))
    return path


def test_metadata_bounds_cli_on_a_float_column(data_dir, tmp_path, capsys, pums):
    meta = _float_income_metadata(data_dir, tmp_path)
    code = cli.main(["metadata", "bounds", "--metadata", str(meta), "--table",
                     f"PUMS.PUMS={data_dir / 'PUMS.csv'}", "--column", "income", "--epsilon", "1",
                     "--write"])
    out = capsys.readouterr()
    assert code == 0, out.err
    assert "internal error" not in out.err and "lower" in out.out
    column = yaml.safe_load(meta.read_text())["PUMS"]["PUMS"]["PUMS"]["income"]
    lo, hi = column["lower"], column["upper"]
    assert isinstance(lo, float) and isinstance(hi, float) and np.isfinite([lo, hi]).all()
    assert ((pums.income >= lo) & (pums.income <= hi)).mean() >= 0.95


# ----------------------------------------------------------------- 4. text storages

TEXT_COLUMNS = ["sex", "educ", "race", "married"]      # type: string in tests/data/PUMS.yaml
DAYS = [datetime.date(2020, 1, 1) + datetime.timedelta(days=i % 3) for i in range(1000)]


def _as_storage(pums: pd.DataFrame, storage: str) -> pd.DataFrame:
    df = pums.copy()
    for c in TEXT_COLUMNS:
        text = df[c].map(str)            # '1', '9', ... as Python str (object dtype)
        if storage == "object_str":
            df[c] = text.astype(object)
        elif storage == "object_mixed":
            # the codes as Python str, int, bytes and numpy int, with None and a lone surrogate
            cells = [v if i % 4 == 0 else int(v) if i % 4 == 1 else
                     v.encode() if i % 4 == 2 else np.int64(v) for i, v in enumerate(text)]
            cells[5], cells[6] = None, "a\ud800"
            df[c] = pd.Series(cells, index=df.index, dtype=object)
        elif storage == "python":
            df[c] = text.astype(pd.StringDtype("python"))
            df.loc[6, c] = "a\ud800"          # a Python-backed string can hold a surrogate
        elif storage == "pyarrow":
            df[c] = text.astype(pd.StringDtype("pyarrow"))
        elif storage == "str":               # pandas 3's default (Arrow-backed with pyarrow)
            df[c] = text.astype(str)
        elif storage == "str_without_pyarrow":   # what pandas 3 uses without pyarrow
            df[c] = text.astype(pd.StringDtype("python", na_value=np.nan))
        else:
            raise AssertionError(storage)
    df["day"] = pd.Series(DAYS, index=df.index, dtype=object)
    return df


@pytest.mark.parametrize("storage", ["object_str", "object_mixed", "python", "pyarrow", "str",
                                     "str_without_pyarrow"])
def test_text_columns_in_every_pandas_storage(pums, data_dir, tmp_path, storage):
    if storage == "pyarrow" and os.environ.get("CI") != "true":
        pytest.importorskip("pyarrow")     # in the test extra: CI always runs this case
    doc = yaml.safe_load((data_dir / "PUMS.yaml").read_text())
    doc["PUMS"]["PUMS"]["PUMS"]["day"] = {"type": "string"}
    meta = tmp_path / "PUMS_day.yaml"
    meta.write_text(yaml.safe_dump(doc))
    df = _as_storage(pums, storage)
    if storage == "str":
        assert df["sex"].dtype == "str"
    reader = dpsql.from_df(df, metadata=str(meta), privacy=dpsql.Privacy(epsilon=1.0, delta=1e-6),
                           budget=dpsql.Budget(epsilon=100, delta=1e-3))
    count = reader.execute_df("SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE day = '2020-01-02'")
    assert list(count.columns) == ["n"] and count.shape == (1, 1)
    assert abs(count.n[0] - DAYS.count(datetime.date(2020, 1, 2))) < 60
    grouped = reader.execute_df("SELECT sex, day, COUNT(*) AS n FROM PUMS.PUMS GROUP BY sex, day "
                                "ORDER BY sex, day")
    assert list(grouped.columns) == ["sex", "day", "n"]
    # two sexes x three days, each a few hundred rows: all clear the threshold
    assert grouped.shape == (6, 3), grouped
    assert set(grouped.sex) == {"0", "1"}
    assert set(grouped.day) == {"2020-01-01", "2020-01-02", "2020-01-03"}


# -- found by the second hostile review of issue 20 ------------------------------------

@pytest.mark.parametrize("privacy", [dict(epsilon=1e30), dict(epsilon=1e200), dict(epsilon=1e14),
                                     dict(rho=1e30)])
def test_per_query_privacy_beyond_the_largest_is_refused_at_once(privacy):
    """SUM at epsilon 1e30 charged and then raised OverflowError; at 1e14 the exact sum was
    clamped to the sampler's range (a wrong answer, and an interval that missed it)."""
    with pytest.raises(dpsql.ProgrammingError, match="beyond dpsql's largest"):
        dpsql.Privacy(**privacy)


@pytest.mark.parametrize("sql", ["SELECT SUM(ROUND(income * 1e300, 30)) AS s FROM PUMS.PUMS",
                                 "SELECT SUM(ROUND(age * 1e306)) AS s FROM PUMS.PUMS"])
def test_rounding_beyond_the_doubles_is_a_query_error(reader, sql):
    refused(reader, sql)              # a QueryError, free, from each entry point


# Found by the attack review of the Spark engine: CONCAT(s, s, ..., s) of 999 copies made
# the engine fail (DuckDB: "Cannot create a string of size ..."; Spark: past 2 GB) only
# when one person's s was a few MB long.
TEXT_META = {"": {"x": {"t": {"max_ids": 1, "pid": {"type": "int", "private_id": True},
                              "s": {"type": "string"}}}}}


def test_text_copied_more_than_the_limit_is_refused_for_free():
    from dpsql.frontend.allowed import MAX_TEXT_COPIES
    frame = pd.DataFrame({"pid": [1, 2], "s": ["a", "b"]})
    reader = dpsql.from_df({"x.t": frame}, TEXT_META, privacy=dpsql.Privacy(epsilon=1.0))
    many = "CONCAT(" + ", ".join(["s"] * (MAX_TEXT_COPIES + 1)) + ")"
    nested = "UPPER(" * 6 + "s || s" + ")" * 6 + " || " + "s || " * 10 + "s"   # 3^6 * 2 + 11
    for expression in (many, nested):
        with pytest.raises(dpsql.QueryError, match="copies text columns"):
            reader.execute_df(f"SELECT COUNT(*) AS n FROM x.t WHERE LENGTH({expression}) > 0")
    # 3^6 copies of a derived column of two: hidden from each expression alone
    upper = "UPPER(" * 6 + "s2" + ")" * 6
    with pytest.raises(dpsql.QueryError, match="copies text columns 1458 times"):
        reader.execute_df(f"WITH c AS (SELECT pid, s || s AS s2 FROM x.t) "
                          f"SELECT COUNT(*) AS n FROM c WHERE LENGTH({upper}) > 0")
    at_limit = "CONCAT(" + ", ".join(["s"] * MAX_TEXT_COPIES) + ")"
    reader.execute_df(f"SELECT COUNT(*) AS n FROM x.t WHERE LENGTH({at_limit}) > 0")
    assert reader.spent == (1.0, 0.0)


@pytest.mark.parametrize("max_length", [None, 1000, "MAX_TEXT_CELL"])
def test_a_text_cell_longer_than_the_limit_reads_as_null(max_length):
    """A string column's cells hold at most its max_length characters (DEFAULT_TEXT_LENGTH
    when the metadata gives none, at most MAX_TEXT_CELL); a longer cell reads as NULL."""
    from dpsql.frontend.allowed import DEFAULT_TEXT_LENGTH, MAX_TEXT_CELL
    meta = yaml.safe_load(yaml.safe_dump(TEXT_META))
    limit = {None: DEFAULT_TEXT_LENGTH, "MAX_TEXT_CELL": MAX_TEXT_CELL}.get(max_length, max_length)
    if max_length is not None:
        meta[""]["x"]["t"]["s"]["max_length"] = limit
    frame = pd.DataFrame({"pid": [1, 2, 3], "s": ["x" * (limit + 1), "y" * limit, "z"]})
    reader = dpsql.from_df({"x.t": frame}, meta, privacy=dpsql.Privacy(epsilon=1e5))
    for where in ("s IS NULL", f"LENGTH(s) = {limit}", "s = 'z'"):
        df = reader.execute_df(f"SELECT COUNT(*) AS n FROM x.t WHERE {where}")
        assert round(df.n[0]) == 1, where


def test_a_long_text_column_costs_work_by_its_length():
    """Third review of issue 33 (timing): on PostgreSQL, STRPOS(LOWER(CONCAT(s x 33))) took
    110 ms over one person's 131,072-character cell against 28 ms over a one-character cell,
    and 860 ms against 250 ms under a 300-row CROSS JOIN, so the time told whether that
    person was there. A reference now costs one unit per TEXT_UNIT characters of the
    column's max_length, so the checks that bound a row's work bound its characters too;
    the refusals are free."""
    meta = yaml.safe_load(yaml.safe_dump(TEXT_META))
    meta[""]["x"]["t"]["s"]["max_length"] = 131072                  # 512 units
    frame = pd.DataFrame({"pid": [1, 2], "s": ["a", "b"]})
    reader = dpsql.from_df({"x.t": frame}, meta, privacy=dpsql.Privacy(epsilon=1.0))
    values = "(VALUES " + ", ".join(f"({i})" for i in range(20)) + ") v(x)"
    for sql, words in [
        ("SELECT COUNT(*) AS n FROM x.t WHERE STRPOS(CONCAT(s, 'x'), 'zz') > 0",
         "copies text columns 512 times"),
        (f"SELECT COUNT(*) AS n FROM x.t CROSS JOIN {values} WHERE s LIKE '%a'",
         r"bytes for each private row \(the last in WHERE: 1,572,\d{3} per evaluation, "
         "for each of the up to 20 row"),        # '%a': 131,072 x 4 bytes of s x 3, 20 rows
        ("SELECT COUNT(*) AS n FROM x.t WHERE s = 'a' OR s = 'b' OR s = 'c'",
         "1,536 column references")]:
        with pytest.raises(dpsql.QueryError, match=words):
            reader.execute_df(sql)
    assert reader.spent == (0.0, 0.0)
    reader.execute_df("SELECT COUNT(*) AS n FROM x.t WHERE s LIKE 'a%'")    # one read: answered


def test_an_ilike_over_many_copies_of_a_text_is_refused_for_free():
    """Hostile review of issue 33 (engines): CASE WHEN pid = t THEN CONCAT(1,000 copies of
    a text column) ELSE '' END ILIKE '%a%' failed on PostgreSQL (case folding past its 1 GB
    allocation limit) and ran Spark out of memory only when the target's cell held 131,072
    four-byte characters. More than MAX_TEXT_COPIES (now 100) copies are refused before
    any engine runs, whatever the data."""
    frame = pd.DataFrame({"pid": [1, 2], "s": ["a", "b"]})
    reader = dpsql.from_df({"x.t": frame}, TEXT_META, privacy=dpsql.Privacy(epsilon=1.0))
    inner = "CONCAT(" + ", ".join(["s"] * 50) + ")"
    built = "CONCAT(" + ", ".join([inner] * 20) + ")"
    with pytest.raises(dpsql.QueryError, match="copies text columns 1000 times"):
        reader.execute_df(f"SELECT COUNT(*) AS n FROM x.t WHERE "
                          f"(CASE WHEN pid = 1 THEN {built} ELSE '' END) ILIKE '%a%'")
    assert reader.spent == (0.0, 0.0)
