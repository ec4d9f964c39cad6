"""Rewrite rule: other dialects' spellings of the date functions, as dpsql's own.

Owns: what each spelling means, decided here from the text alone and written as the forms
``dpsql.frontend.temporal`` makes total (docs/sql.md, dates and intervals, lists them):

- ``DATE_SUB(t, INTERVAL n unit)`` (MySQL, BigQuery): ``t - INTERVAL n unit``; BigQuery's
  ``TIMESTAMP_ADD``/``DATETIME_ADD(t, INTERVAL n unit)`` and ``..._SUB``: ``t ± INTERVAL n
  unit``. ``TIMESTAMP_DIFF`` (whole units elapsed, not boundaries) is refused, naming
  DATE_DIFF.
- ``DATE_ADD(t, n)``, ``DATE_SUB(t, n)`` with an integer literal ``n`` (Spark, Hive, and
  DuckDB's ``date + n``): ``t ± INTERVAL n DAY``.
- ``DATE_DIFF(a, b, part)`` (BigQuery: the part last, as a keyword, and ``a`` minus ``b``):
  DuckDB's ``DATE_DIFF('part', b, a)``, for the parts whose boundaries both count alike
  (year, quarter, month, day, hour, minute, second). BigQuery's WEEK counts Sundays, and
  ISOWEEK, ISOYEAR and WEEK(<day>) other boundaries: refused, not silently DuckDB's.

``APPROX_COUNT_DISTINCT(x)`` (BigQuery, DuckDB) is ``COUNT(DISTINCT x)``: counted exactly,
then released with its noise, which is what makes it approximate.

DuckDB's own ``DATE_SUB('part', a, b)`` (whole units) stays refused by the allow-list. The
rewrite runs on the parsed tree, before anything else reads it, so every engine renders the
rule it already has for the result. It runs after parameters are bound, so ``DATE_ADD(t, ?)``
with an integer parameter is ``DATE_ADD(t, 30)``.
"""
from __future__ import annotations

from sqlglot import exp

from .dialect import ANALYST_DIALECT
from .literals import _refuse

BIGQUERY_PARTS = ("year", "quarter", "month", "day", "hour", "minute", "second")
"""The parts of BigQuery's DATE_DIFF that count as DuckDB's do."""
OTHER_BIGQUERY_PARTS = ("week", "isoweek", "isoyear", "dayofweek", "dayofyear",
                        "millisecond", "microsecond")


def date_spellings(tree: exp.Expression) -> exp.Expression:
    """``tree`` with each spelling of the module docstring rewritten (the same tree object
    when there is none)."""
    return tree.transform(_rule, copy=False)


_SHIFTS = {exp.TimestampAdd: exp.Add, exp.DatetimeAdd: exp.Add, exp.TimestampSub: exp.Sub,
           exp.DatetimeSub: exp.Sub}


def _rule(node: exp.Expression) -> exp.Expression:
    if isinstance(node, exp.ApproxDistinct) and not node.args.get("accuracy"):
        # BigQuery's and DuckDB's APPROX_COUNT_DISTINCT(x): the noisy COUNT(DISTINCT x)
        return exp.Count(this=exp.Distinct(expressions=[node.this]))
    shift = _SHIFTS.get(type(node))
    if shift is not None and isinstance(_bare(node.expression), exp.Interval):
        return exp.Paren(this=shift(this=node.this, expression=node.expression))
    if isinstance(node, exp.TimestampDiff):
        _refuse("TIMESTAMP_DIFF (BigQuery's whole units elapsed) is not supported; DATE_DIFF('part', b, a) counts the part's "
                "boundaries from b to a (DATE_DIFF('second', b, a) // 3600 for whole hours)")
    if isinstance(node, exp.DateDiff) and _bigquery_order(node):
        return _bigquery_diff(node)
    if isinstance(node, exp.DateAdd) and not isinstance(_bare(node.expression), exp.Interval):
        return exp.DateAdd(this=node.this, expression=_days(node, node.expression, "DATE_ADD"))
    if isinstance(node, exp.Anonymous) and str(node.this).lower() == "date_sub" and \
            len(node.expressions) == 2:
        t, amount = node.expressions
        if not isinstance(_bare(amount), exp.Interval):
            amount = _days(node, amount, "DATE_SUB")
        return exp.Paren(this=exp.Sub(this=t, expression=amount))
    return node


def _bare(node):
    while isinstance(node, exp.Paren):
        node = node.this
    return node


def _days(node: exp.Expression, amount: exp.Expression, name: str) -> exp.Interval:
    """``INTERVAL 'n' DAY`` of an integer literal ``n`` (possibly negated)."""
    value, sign = _bare(amount), ""
    if isinstance(value, exp.Neg):
        value, sign = _bare(value.this), "-"
    if not (isinstance(value, exp.Literal) and not value.is_string and value.this.isdigit()):
        written = f"{name}({node.this.sql(ANALYST_DIALECT)}, {amount.sql(ANALYST_DIALECT)})"
        _refuse(f"{written[:80]}: {name}(t, n) adds n days, and n must be a "
                f"whole number written literally ({name}(t, 30)), or an INTERVAL literal "
                f"({name}(t, INTERVAL 1 MONTH)); an amount computed from a column is not "
                "supported")
    return exp.Interval(this=exp.Literal.string(sign + value.this), unit=exp.var("DAY"))


def _bigquery_order(node: exp.DateDiff) -> bool:
    """Whether DuckDB's reading of ``node`` took BigQuery's ``DATE_DIFF(a, b, part)``: the
    last argument (DuckDB's end date, ``this``) is a bare date-part keyword, and the first
    (DuckDB's part) is not a part."""
    last, first = node.this, node.args.get("unit")
    if not (isinstance(last, exp.Column) and not last.table and not last.this.quoted
            and last.name.lower() in BIGQUERY_PARTS + OTHER_BIGQUERY_PARTS):
        return False
    named = first.name.lower() if isinstance(first, (exp.Var, exp.Literal)) else None
    return named not in {*BIGQUERY_PARTS, *OTHER_BIGQUERY_PARTS,
                         *(p + "s" for p in BIGQUERY_PARTS + ("week",))}


def _bigquery_diff(node: exp.DateDiff) -> exp.DateDiff:
    part = node.this.name.lower()
    if part not in BIGQUERY_PARTS:
        _refuse(f"DATE_DIFF(a, b, {part.upper()}): BigQuery counts {part.upper()} boundaries "
                "its own way (WEEK from Sundays), which dpsql does not compute; use DAY "
                "(DATE_DIFF(a, b, DAY) // 7 for whole weeks) or MONTH, QUARTER, YEAR")
    first = node.args.get("unit")
    if isinstance(first, exp.Var):   # DuckDB's reading made the first argument a part name
        first = exp.column(first.name)
    return exp.DateDiff(this=first, expression=node.expression, unit=exp.var(part.upper()),
                        date_part_boundary=True)
