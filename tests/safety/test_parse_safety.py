"""Hostile SQL text (issue 7, case 11) and compatibility traps (issue 7, case 3).

Whatever the analyst sends, the answer is a result or a dpsql error with a
clear message: never a RecursionError, a sqlglot TokenError or a raw
duckdb.Error. Real DuckDB, real data in tests/data.
"""
import sqlite3
import sys

import pandas as pd
import pytest
import yaml

import dpsql
from dpsql.cli import command as cli
from dpsql.frontend import parse

from tests.paths import DATA

PUMS_CSV, PUMS_META = DATA / "PUMS.csv", DATA / "PUMS.yaml"
WHERE = "SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE "


@pytest.fixture
def reader(pums_reader):
    return pums_reader(privacy=dpsql.Privacy(epsilon=10.0), budget=dpsql.Budget(10_000.0))


def exact(condition) -> int:
    return int(condition(pd.read_csv(PUMS_CSV)).sum())


def refused(reader, sql, *words):
    spent = reader.spent
    with pytest.raises(dpsql.QueryError) as info:
        reader.execute_df(sql)
    for word in words:
        assert word in str(info.value), str(info.value)
    assert reader.spent == spent  # refused for free
    return str(info.value)


def at_stack_depth(depth, fn):
    """Call fn with the Python stack ``depth`` frames deep."""
    frame, current = sys._getframe(), 0
    while frame is not None:
        frame, current = frame.f_back, current + 1

    def down(k):
        return fn() if k <= 0 else down(k - 1)
    return down(depth - current)


# ----------------------------------------------------------------- parser crashes

def test_200_nested_parentheses_is_query_error(reader):
    refused(reader, WHERE + "(" * 200 + "age > 1" + ")" * 200,
            f"more than {parse.MAX_NESTING} levels", "parentheses")


def test_200_nested_function_calls_is_query_error(reader):
    refused(reader, WHERE + "abs(" * 200 + "age" + ")" * 200 + " > 1", "levels deep")


def test_nesting_at_the_limit_is_answered(reader):
    n = parse.MAX_NESTING
    assert abs(reader.execute_df(WHERE + "(" * n + "age > 30" + ")" * n).n[0]
               - exact(lambda d: d.age > 30)) < 40
    refused(reader, WHERE + "(" * (n + 1) + "age > 30" + ")" * (n + 1), "levels deep")


def test_brackets_inside_string_literals_do_not_count(reader):
    sql = WHERE + "CAST(sex AS VARCHAR) = '" + "(" * 300 + "'"
    assert abs(reader.execute_df(sql).n[0]) < 40


def test_a_500_term_or_chain_is_answered(reader):
    sql = WHERE + " OR ".join(f"age = {i}" for i in range(500))
    tree = parse.parse_query(sql)
    depth, stack = 0, [(tree, 1)]
    while stack:
        node, d = stack.pop()
        depth = max(depth, d)
        stack.extend((c, d + 1) for c in parse._children(node))
    assert depth < 25  # rebalanced: about log2(500) levels of OR, not 500
    assert abs(reader.execute_df(sql).n[0] - 1000) < 40


@pytest.mark.parametrize("where", [
    " OR ".join(f"age = {i}" for i in range(3000)),
    # issue 33's twenty-eighth review, F4: DuckDB prepared this for 22 s
    " OR ".join(f"(age > {i % 90} AND income < {1000 * i})" for i in range(1700)),
    # the twenty-ninth, F1 and F2: five of these ran the Spark server out of memory, and
    # DuckDB planned them for 31 s against a 20 s timeout
    " AND ".join(f"(age <> {i % 100} OR income <> {i})" for i in range(1800)),
    " AND ".join(f"income <> {i}" for i in range(2400)),
])
def test_more_than_512_ands_and_ors_are_refused_for_free_before_planning(reader, where):
    import time
    started = time.perf_counter()
    refused(reader, WHERE + where, f"more than {parse.MAX_CONNECTIVES} conditions", "IN (...)")
    assert time.perf_counter() - started < 5


CASE_512 = "SUM(CASE " + " ".join(f"WHEN age > {i} THEN {i}" for i in range(512)) + " END)"


@pytest.mark.parametrize("sql", [
    # issue 33's thirtieth review, F1: 1,000-3,000 branches of one CASE (24-76 kB) took 10-21 s
    # to plan on Spark (no AND or OR in it) and 7 s on DuckDB, for free
    "SELECT SUM(CASE " + " ".join(f"WHEN age > {i} THEN {i}" for i in range(3000)) + " END) "
    "FROM PUMS.PUMS",
    f"SELECT {CASE_512} AS s FROM PUMS.PUMS WHERE age > 1 AND age < 99",
    "SELECT COUNT(*) FROM PUMS.PUMS WHERE age IN (" + ", ".join(
        f"IF(income > {i}, {i}, 0)" for i in range(600)) + ")",
])
def test_more_than_512_case_branches_are_refused_for_free_before_planning(reader, sql):
    import time
    started = time.perf_counter()
    refused(reader, sql, f"more than {parse.MAX_CONNECTIVES} conditions", "CASE WHEN")
    assert time.perf_counter() - started < 5


def test_a_case_of_512_branches_is_answered(reader):
    """Every age in PUMS is above 0, so the first WHEN gives every row 0: the sum is noise
    alone (Laplace of scale 511 / 10; |noise| > 1,000 has probability 3e-9). It asserted
    ``!= 0`` before, which failed about once in a hundred runs (once in a session's runs)."""
    assert abs(reader.execute_df(f"SELECT {CASE_512} AS s FROM PUMS.PUMS").s[0]) < 1000


def test_rebalanced_chains_keep_their_order_and_precedence():
    sql = ("SELECT COUNT(*) FROM t WHERE a = ? OR a = ? OR a = ? OR a = ? OR a = ? "
           "AND b = ? AND b = ? AND b = ? OR (c = ? OR c = ?) AND d = ?")
    assert parse.parse_query(sql, tuple(range(1, 12))).sql("duckdb") == (
        "SELECT COUNT(*) FROM t WHERE a = 1 OR a = 2 OR a = 3 OR a = 4 OR a = 5 AND b = 6 "
        "AND b = 7 AND b = 8 OR (c = 9 OR c = 10) AND d = 11")


def test_or_chain_beyond_the_node_limit_is_query_error_suggesting_in(reader):
    refused(reader, WHERE + " OR ".join(f"age = {i}" for i in range(4500)),
            f"{parse.MAX_CONNECTIVES} conditions", "IN (...)")


def test_long_arithmetic_chain_is_query_error(reader):
    refused(reader, WHERE + "age" + " + 1" * 200 + " > 1", f"{parse.MAX_DEPTH} levels deep")


def test_long_unary_minus_chain_is_query_error(reader):
    refused(reader, WHERE + "age > " + "- " * 100 + "1", f"{parse.MAX_DEPTH} levels deep")
    refused(reader, WHERE + "age > " + "- " * 5000 + "1", "too deeply")


def test_long_not_chain_is_query_error(reader):
    refused(reader, WHERE + "NOT " * 1000 + "age > 1", "nested too deeply")


def test_unterminated_string_is_query_error(reader):
    refused(reader, WHERE + "sex = 'abc", "never closed", "line 1, column 49")


def test_unterminated_quoted_name_is_query_error(reader):
    refused(reader, WHERE + '"sex = 1', "never closed")


def test_query_longer_than_the_limit_is_query_error(reader):
    sql = WHERE + "age IN (" + ", ".join(["1"] * 40_000) + ")"
    assert len(sql) > parse.MAX_SQL_LENGTH
    refused(reader, sql, "characters long", f"{parse.MAX_SQL_LENGTH:,}")


def test_nul_in_query_is_query_error(reader):
    refused(reader, WHERE + "age > 1\x00", "NUL")


@pytest.mark.parametrize("error", [ValueError("bad"), RecursionError("deep"),
                                   IndexError("list index out of range"),
                                   KeyError("x"), AttributeError("y")])
def test_any_parser_exception_is_query_error(reader, monkeypatch, error):
    def broken(tokens, sql, dialect):
        raise error
    monkeypatch.setattr(parse, "_parse_tokens", broken)
    refused(reader, WHERE + "age > 1", "parse")


def test_tokenizer_exception_is_query_error(reader, monkeypatch):
    def broken(sql, dialect):
        raise ValueError("bad")
    monkeypatch.setattr(parse, "_tokenize", broken)
    refused(reader, WHERE + "age > 1", "cannot read the query")


def test_queries_at_every_limit_never_raise_recursion_error_from_a_deep_stack(reader):
    """The documented guarantee: called 400 frames deep, queries at every limit are
    answered, and queries past them are QueryErrors, never a RecursionError."""
    n, d = parse.MAX_NESTING, parse.MAX_DEPTH
    at_limit = [WHERE + "abs(" * n + "age" + ")" * n + " > 1",
                WHERE + "CASE WHEN age > 1 THEN " * n + "1" + " END" * n + " = 1",
                WHERE + "age > " + "- " * (d - 4) + "1",  # a tree exactly d levels deep
                "SELECT age" + " + 1" * (d - 4) + " AS k, COUNT(*) AS n FROM PUMS.PUMS GROUP BY k"]
    for sql in at_limit:
        cost = at_stack_depth(400, lambda: reader.get_privacy_cost(sql))
        assert cost[0] > 0
    past = [WHERE + "abs(" * (n + 1) + "age" + ")" * (n + 1) + " > 1",
            WHERE + "age > " + "- " * (d - 3) + "1",
            WHERE + "(" * 300 + "age > 1" + ")" * 300,
            WHERE + "age > " + "- " * 5000 + "1",
            WHERE + "NOT " * 2000 + "age > 1"]
    for sql in past:
        with pytest.raises(dpsql.QueryError, match="deep"):
            at_stack_depth(400, lambda: reader.get_privacy_cost(sql))


# ----------------------------------------------------------------- paramstyle

@pytest.mark.parametrize("sql", [WHERE + "age > %s",
                                 WHERE + "age > %(age)s",
                                 WHERE + "age IN (%s, %s)",
                                 WHERE + "age > 1 LIMIT %s",
                                 WHERE + "age > %s AND CAST(sex AS VARCHAR) LIKE '%s%'"])
def test_pyformat_placeholders_are_query_errors(reader, sql):
    refused(reader, sql, "paramstyle is qmark", "?")


def test_pyformat_placeholders_are_query_errors_through_the_dbapi():
    con = dpsql.connect(metadata=str(PUMS_META), tables={"PUMS.PUMS": str(PUMS_CSV)},
                        privacy=dpsql.Privacy(epsilon=1.0), budget=dpsql.Budget(10.0))
    cur = con.cursor()
    with pytest.raises(dpsql.QueryError, match="paramstyle is qmark"):
        cur.execute(WHERE + "age > %s", (30,))
    with pytest.raises(dpsql.QueryError, match="paramstyle is qmark"):
        cur.execute(WHERE + "age > %(age)s", [30])
    assert con.spent == (0.0, 0.0)
    con.close()


def test_percent_in_string_literals_and_modulo_still_work(reader):
    sex_1 = exact(lambda d: d.sex == 1)
    sql = WHERE + "CAST(sex AS VARCHAR) LIKE '%s%' OR CAST(sex AS VARCHAR) LIKE '1%'"
    assert abs(reader.execute_df(sql).n[0] - sex_1) < 40
    even = exact(lambda d: d.age % 2 == 0)
    assert abs(reader.execute_df(WHERE + "age %2 = 0").n[0] - even) < 40
    assert abs(reader.execute_df(WHERE + "age % 2 = 0 AND age > ?", (-1,)).n[0] - even) < 40


# ----------------------------------------------------------------- compatibility

def test_sqlite_connection_is_programming_error():
    lite = sqlite3.connect(":memory:")
    with pytest.raises(dpsql.ProgrammingError, match=r"duckdb\.DuckDBPyConnection.*"
                       r"sqlite3\.Connection"):
        dpsql.from_connection(lite, PUMS_META)
    with pytest.raises(dpsql.ProgrammingError, match=r"sqlite3\.Connection"):
        dpsql.connect(lite, metadata=str(PUMS_META))
    with pytest.raises(dpsql.ProgrammingError, match="NoneType"):
        dpsql.from_connection(None, PUMS_META)
    lite.close()


@pytest.mark.parametrize("shape", ["reversed", "reversed_step", "shuffled", "named_index",
                                   "multi_index_reversed"])
def test_from_df_with_reversed_or_non_default_index_is_answered(shape):
    df = pd.read_csv(PUMS_CSV)
    frame = {"reversed": lambda: df.iloc[::-1],
             "reversed_step": lambda: df.iloc[::-2],
             "shuffled": lambda: df.sample(frac=1.0, random_state=7),
             "named_index": lambda: df.set_index("age"),
             "multi_index_reversed": lambda: df.set_index(["educ", "age"]).iloc[::-1]}[shape]()
    rows = len(df) // 2 if shape == "reversed_step" else len(df)
    total = int(df.age.iloc[::-2].sum()) if shape == "reversed_step" else int(df.age.sum())
    r = dpsql.from_df(frame, PUMS_META, privacy=dpsql.Privacy(epsilon=10.0),
                      budget=dpsql.Budget(100.0))
    out = r.execute_df("SELECT COUNT(*) AS n, SUM(age) AS s FROM PUMS.PUMS")
    assert abs(out.n[0] - rows) < 40 and abs(out.s[0] - total) < 4000
    assert frame.shape[1] == (df.shape[1] - len(frame.index.names)
                              if shape.startswith(("named", "multi")) else df.shape[1])


def test_cli_binds_a_table_whose_metadata_schema_is_empty(tmp_path, capsys):
    doc = yaml.safe_load(PUMS_META.read_text())
    meta = tmp_path / "empty_schema.yaml"
    meta.write_text(yaml.safe_dump({"Collection": {"": {"PUMS": doc["PUMS"]["PUMS"]["PUMS"]}}}))
    code = cli.main(["query", "--metadata", str(meta), "--table", f"PUMS={PUMS_CSV}",
                     "--epsilon", "5", "--format", "csv", "SELECT COUNT(*) AS n FROM PUMS"])
    out = capsys.readouterr()
    assert code == 0, out.err
    header, value = out.out.splitlines()
    assert header == "n" and abs(float(value) - 1000) < 40
    code = cli.main(["query", "--metadata", str(meta), "--table", f"NOPE={PUMS_CSV}",
                     "--epsilon", "5", "SELECT COUNT(*) AS n FROM PUMS"])
    assert code == cli.EXIT_QUERY and "NOPE" in capsys.readouterr().err
    code = cli.main(["query", "--metadata", str(meta), "--table", f".PUMS={PUMS_CSV}",
                     "--epsilon", "5", "SELECT COUNT(*) AS n FROM PUMS"])
    assert code == cli.EXIT_USAGE and "TABLE=PATH" in capsys.readouterr().err


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_a_large_derived_column_read_many_times_is_refused_before_any_engine_plans_it():
    """Fourteenth review of issue 33: a CTE column ``age IN (5,000 integers)`` counted as
    one column reference, so 961 references to it (under the cap of 1,000) made
    PostgreSQL's planner expand 4.8 million nodes: 7.5 GB and up to 49 s, past the
    statement's timeout and its cancel. Its other terms now count one per 100 (a list its
    values): read 31 times per level, it is refused, free; read once, it is planned."""
    reader = dpsql.from_df(pd.read_csv(DATA / "PUMS.csv"), str(DATA / "PUMS.yaml"),
                           privacy=dpsql.Privacy(epsilon=1.0))

    def query(values: int, refs: int) -> str:
        listed = ", ".join(str(i) for i in range(values))
        inner = " + ".join(["CAST(k AS INTEGER)"] * refs)
        mid = ", ".join(f"({inner}) AS m{i}" for i in range(refs))
        outer = " + ".join(f"m{i}" for i in range(refs))
        return (f"WITH a AS (SELECT age IN ({listed}) AS k FROM PUMS.PUMS), b AS (SELECT {mid} "
                f"FROM a) SELECT COUNT(*) AS n FROM b WHERE ({outer}) > 0")

    # the review's CASE had 2,000 branches (now over the 512 conditions a statement may have)
    case = ("WITH a AS (SELECT CASE " + " ".join(f"WHEN age = {i} THEN {i}" for i in range(500))
            + " END AS k FROM PUMS.PUMS) SELECT COUNT(*) AS n FROM a WHERE "
            + " + ".join(["k"] * 60) + " > 0")
    for sql in (query(5000, 31), case):
        with pytest.raises(dpsql.QueryError, match="column references once the columns"):
            reader.get_privacy_cost(sql)
    assert reader.get_privacy_cost(query(5000, 1))[0] == pytest.approx(1.0)
    assert reader.spent == (0.0, 0.0)


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_what_ctes_expand_is_bounded_for_the_whole_statement():
    """Fifteenth review of issue 33: the bound held per expression, so 64 aggregates each
    reading (through two CTE levels) a column of weight 891 were accepted, and PostgreSQL's
    planner took 7.9 GB and 19 s, past the 5 s timeout and a cancel. The expansion of all
    of a statement's expressions together is now bounded (MAX_STATEMENT_WEIGHT)."""
    reader = dpsql.from_df(pd.read_csv(DATA / "PUMS.csv"), str(DATA / "PUMS.yaml"),
                           privacy=dpsql.Privacy(epsilon=1.0))

    def query(aggregates: int) -> str:
        listed = ", ".join(str(100000 + i) for i in range(1000))
        ors = " OR ".join(["k"] * 9)
        sums = ", ".join(f"SUM(CASE WHEN k THEN {i} ELSE 0 END) AS a{i}" for i in range(aggregates))
        return (f"WITH c1 AS (SELECT age, age IN ({listed}) AS k FROM PUMS.PUMS), c2 AS (SELECT "
                f"age, ({ors}) AS k FROM c1), c3 AS (SELECT age, ({ors}) AS k FROM c2) "
                f"SELECT {sums} FROM c3")

    for aggregates in (2, 64):
        with pytest.raises(dpsql.QueryError, match="in all beyond their own text"):
            reader.get_privacy_cost(query(aggregates))
    assert reader.get_privacy_cost(query(1))[0] == pytest.approx(1.0)
    assert reader.spent == (0.0, 0.0)
