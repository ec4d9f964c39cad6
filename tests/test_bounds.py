"""Unit tests of the derived-bounds rules (dpsql.plan.bounds), and a property check.

Each rule is applied to the guarded tree the engine runs, so the property test
evaluates that very tree in DuckDB on values inside the input bounds and checks
the result lies in the derived interval (and, for keys, in the derived domain).
"""
from __future__ import annotations

import math

import duckdb
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpsql.parse import parse_query
from dpsql.plan.bounds import Deriver
from dpsql.plan.relations import Field
from dpsql.sql.typecheck import check

FIELDS = {
    "x": Field("x", "int", 0, 100),
    "y": Field("y", "float", -5.0, 5.0),
    "p": Field("p", "float", 1.0, 1000.0),
    "u": Field("u", "int"),                       # unbounded
    "b": Field("b", "boolean"),
    "t": Field("t", "datetime"),
    "s": Field("s", "string", domain=("a", "b")),
}


def _expr(sql: str):
    tree = parse_query(f"SELECT {sql} AS e FROM T")
    node = tree.expressions[0].this
    return check(node, {k: f.kind for k, f in FIELDS.items()}, "SELECT")


def interval(sql: str):
    expr, _ = _expr(sql)
    return Deriver(FIELDS).interval(expr)


def domain(sql: str):
    expr, kind = _expr(sql)
    return Deriver(FIELDS).domain(expr, kind)


INF = math.inf


@pytest.mark.parametrize("sql, expected", [
    ("x", (0, 100)), ("7", (7, 7)), ("-x", (-100, 0)), ("x + y", (-5, 105)),
    ("x - y", (-5, 105)), ("x * y", (-500, 500)), ("y * y", (-25, 25)),
    ("x / p", (0, 100)), ("x / y", (-INF, INF)), ("x / 0", (-INF, INF)),
    ("ABS(y)", (0, 5)), ("ABS(x - 30)", (0, 70)), ("x // 10", (0, 10)), ("x % 7", (0, 7)),
    ("LEAST(GREATEST(u, 0), 120)", (0, 120)), ("GREATEST(u, 0)", (0, INF)), ("u", (-INF, INF)),
    ("CASE WHEN b THEN 1 ELSE 0 END", (0, 1)), ("IF(b, x, 200)", (0, 200)),
    ("COALESCE(x, 500)", (0, 500)), ("NULLIF(x, 3)", (0, 100)),
    ("CAST(b AS INTEGER)", (0, 1)), ("CAST(y AS BIGINT)", (-5, 5)), ("x > 3", (0, 1)),
    ("ROUND(y)", (-5, 5)), ("FLOOR(y / 2)", (-3, 2)), ("CEIL(y / 2)", (-2, 3)),
    ("POWER(y, 2)", (0, 25)), ("POWER(y, 3)", (-125, 125)), ("SQRT(p)", (1, math.sqrt(1000))),
    ("SQRT(y)", (-INF, INF)), ("LN(p)", (0, math.log(1000))), ("LN(x)", (-INF, INF)),
    ("EXP(y)", (math.exp(-5), math.exp(5))), ("EXTRACT(month FROM t)", (1, 12)),
    ("EXTRACT(hour FROM t)", (0, 23)), ("EXTRACT(year FROM t)", (-INF, INF)),
    ("SIGN(u)", (-1, 1)), ("LENGTH(s)", (-INF, INF)),
])
def test_interval_rules(sql, expected):
    lo, hi = interval(sql)
    assert lo == pytest.approx(expected[0]) and hi == pytest.approx(expected[1]), (sql, lo, hi)


@pytest.mark.parametrize("sql, expected", [
    ("x // 10", set(range(11))), ("x // 10 * 10", set(range(0, 101, 10))),
    ("b", {False, True}), ("x > 50", {False, True}),
    ("CASE WHEN x > 50 THEN 'old' ELSE 'young' END", {"old", "young"}),
    ("CASE WHEN x > 50 THEN 'old' END", {"old"}),
    ("EXTRACT(month FROM t)", set(range(1, 13))), ("s", {"a", "b"}),
    ("x", None), ("u // 10", None), ("y", None), ("x * 1000 // 1", None),
])
def test_domain_rules(sql, expected):
    assert domain(sql) == expected


_CON = duckdb.connect()     # its own connection: the module-level one is shared by other tests
EXPRESSIONS = ["x + y", "x - y", "x * y", "x / p", "ABS(y)", "x // 7", "x % 7", "-x",
               "LEAST(GREATEST(x, 10), 20)", "CASE WHEN y > 0 THEN x ELSE -x END",
               "ROUND(y, 1)", "FLOOR(y)", "CEIL(x / p)", "POWER(y, 2)", "SQRT(p)", "LN(p)",
               "EXP(y)", "CAST(y AS BIGINT)", "COALESCE(x, y)", "GREATEST(x, y) - LEAST(x, y)",
               "x // 10 * 10 + 5", "(x + 1) * (y - 2)"]


@settings(max_examples=60, deadline=None)
@given(x=st.integers(0, 100), y=st.floats(-5, 5), p=st.floats(1, 1000),
       sql=st.sampled_from(EXPRESSIONS))
def test_engine_values_lie_in_the_derived_interval(x, y, p, sql):
    expr, kind = _expr(sql)
    lo, hi = Deriver(FIELDS).interval(expr)
    value = _CON.execute(f"SELECT {expr.sql('duckdb')} FROM (SELECT {x}::BIGINT AS x, "
                         f"{y!r}::DOUBLE AS y, {p!r}::DOUBLE AS p)").fetchall()[0][0]
    if value is None:
        return
    slack = 1e-9 * max(1.0, abs(lo) if math.isfinite(lo) else 1.0, abs(hi) if math.isfinite(hi) else 1.0)
    assert lo - slack <= value <= hi + slack, (sql, x, y, p, value, lo, hi)
    values = Deriver(FIELDS).domain(expr, kind)
    if values is not None:
        assert value in values, (sql, value)
