"""Engines total by construction (issue 33): the rule tables of the PostgreSQL and Spark
dialects, checked without a server.

Every node of an analyst's expression is compiled from one table of rules
(``dpsql.plan.dialect.apply_rules``): by its class, and by its type where that matters. A
node the typecheck left untyped inside an analyst's expression (the division inside a
float ``//``) is typed by what it computes and gets the rule of that type; a rule's output
keeps the type, so that the rule of its parent sees it; a node without a rule is refused
before anything runs; and guards that read their operands more than once cannot make a
short query compile to an unbounded one."""
from __future__ import annotations

import time

import pytest
import sqlglot
from sqlglot import exp

import dpsql
from dpsql.engines.postgres import dialect as postgres
from dpsql.engines.spark import dialect as spark
from dpsql.frontend.allowed import ENTRIES
from dpsql.frontend.typecheck import check

COLUMNS = {"i": "int", "f": "float", "s": "string", "b": "boolean", "t": "datetime"}
DIALECTS = {"postgres": (postgres, postgres.Postgres), "spark": (spark, spark.Spark)}
REWRITTEN = {exp.DateTrunc: exp.TimestampTrunc, exp.DateAdd: exp.Add}
"""Allow-list nodes the typecheck rewrites into others before any engine sees them."""


def _render(dialect, expression: str) -> str:
    typed, _ = check(sqlglot.parse_one(expression, read="duckdb"), dict(COLUMNS))
    return dialect().render(exp.select(exp.alias_(typed, "v", quoted=True)).from_("t"))


@pytest.mark.parametrize("name", DIALECTS)
def test_every_allow_list_node_has_a_rule(name):
    module, _ = DIALECTS[name]
    nodes = {REWRITTEN.get(n, n) for e in ENTRIES for n in e.nodes if isinstance(n, type)}
    assert sorted(n.__name__ for n in nodes if n not in module.RULES) == []


@pytest.mark.parametrize("name", DIALECTS)
def test_a_node_without_a_rule_is_refused_by_name(name, monkeypatch):
    module, dialect = DIALECTS[name]
    monkeypatch.delitem(module.RULES, exp.Sqrt)
    with pytest.raises(dpsql.QueryError, match=r"SQRT is not supported on"):
        _render(dialect, "SQRT(f) + 1")
    monkeypatch.setitem(module.RULES, exp.Mod, {"BIGINT": module.RULES[exp.IntDiv]["BIGINT"]})
    with pytest.raises(dpsql.QueryError, match=r"MOD of DOUBLE is not supported on"):
        _render(dialect, "f % 2")


def test_the_division_inside_a_float_floor_division_is_guarded_on_postgres():
    """Finding 11's cause: the typecheck writes a float ``a // b`` as FLOOR(TRY(a / b)) and
    leaves the division untyped; it was rendered as a bare ``a / b``, which PostgreSQL
    raises on when the quotient overflows. Now it gets the rule of a DOUBLE division, whose
    guard decides on the exact quotient."""
    sql = _render(postgres.Postgres, "f // 1e-306")
    assert "CAST(f AS DECIMAL) / CAST(CAST(1e-306 AS DOUBLE PRECISION) AS DECIMAL)" in sql


def test_a_compiled_operand_keeps_its_type_for_its_parents_rule():
    """A CAST of a guarded product to BIGINT must get the float-to-integer rule (a range
    check): the guard's CASE carried no type, so the cast was rendered as a bare CAST, which
    raises beyond int64."""
    sql = _render(postgres.Postgres, "CAST(f * 1e300 AS BIGINT)")
    assert "< 9223372036854775808.0 THEN CAST(ROUND(" in sql


def test_postgres_reads_double_literals_as_double_precision():
    """PostgreSQL reads 1.5e0 as NUMERIC, whose arithmetic is not DuckDB's (and whose scale
    grows with each product until it overflows)."""
    assert "CAST(1.5e0 AS DOUBLE PRECISION)" in _render(postgres.Postgres, "f * 1.5")


def test_date_parts_are_postgresqls_fields_and_an_unknown_one_is_refused(monkeypatch):
    """Finding 12's cause: DuckDB's part names went to PostgreSQL as they are, and
    PostgreSQL rejects DAYOFWEEK and DAYOFYEAR only when it computes one, on every data set
    but never in a dry run on NULLs."""
    assert "EXTRACT(DOW FROM t)" in _render(postgres.Postgres, "EXTRACT(dayofweek FROM t)")
    assert "EXTRACT(DOY FROM t)" in _render(postgres.Postgres, "DATE_PART('dayofyear', t)")
    monkeypatch.delitem(postgres.FIELDS, "isoyear")
    with pytest.raises(dpsql.QueryError, match="date part 'isoyear' is not supported"):
        _render(postgres.Postgres, "EXTRACT(isoyear FROM t)")


@pytest.mark.parametrize("name", DIALECTS)
@pytest.mark.parametrize("template", ["({}) * f", "ROUND({}, 2)", "({}) // 2.5", "LN({} + 1)"])
def test_nested_guards_are_refused_before_they_grow_without_bound(name, template):
    """A guard reads its operands more than once, so nested guards grew exponentially: 6
    nested ROUNDs compiled for 20 s into a megabyte of SQL. Past a bound on what the rules
    add, the query is refused, quickly, for free. (Before, 7 nested ROUNDs took minutes.)"""
    _, dialect = DIALECTS[name]
    expression = "f"
    for _ in range(7):
        expression = template.format(expression)
    start = time.perf_counter()
    try:
        sql = _render(dialect, expression)
    except dpsql.QueryError as err:
        assert "too large" in str(err)
    else:
        assert len(sql) < 400_000
    assert time.perf_counter() - start < 10


def test_the_fixed_points_guard_reads_no_abs_of_a_bigint_on_postgres():
    """Review 33f, F1: a sum of integers beyond 2^53 multiplies the clamped BIGINT by 2^-33;
    the underflow guard of that product was ABS(value) >= ..., which PostgreSQL raises on
    for -2^63 (a value within the bounds). It is two comparisons now."""
    from dpsql.engines.postgres.numbers import plan_arith
    value = exp.column("v")
    guarded = plan_arith(exp.Mul(this=value, expression=exp.Literal.number(2.0 ** -33)))
    assert "ABS" not in guarded.sql("postgres").upper()


def test_float_sums_are_float8_only_where_their_bounds_prove_no_overflow_on_postgres():
    """Review 33f, F2: a float8 SUM or AVG raises on overflow. Where the plan's bound (k rows
    of |x| <= m) proves it cannot, it stays float8 (full speed); otherwise it is NUMERIC."""
    from dpsql.engines.postgres.sums import plan_avg, plan_sum
    from dpsql.plan.dialect import SUM_BOUND

    def rendered(kind, bound):
        value = exp.column("x")
        value.type = exp.DataType.build("DOUBLE")
        node = kind(this=value)
        if bound is not None:
            node.meta[SUM_BOUND] = bound
        return (plan_sum if kind is exp.Sum else plan_avg)(node).sql("postgres")
    assert "DECIMAL" not in rendered(exp.Sum, (3, 1e6)) + rendered(exp.Avg, (3, 1e6))
    for kind, bound in ((exp.Sum, (3, 1.7e308)), (exp.Sum, None), (exp.Avg, (3, 1e200)),
                        (exp.Avg, None)):
        assert "CAST(x AS DECIMAL)" in rendered(kind, bound), (kind, bound)
