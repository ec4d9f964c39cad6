"""Quantile aggregates in a plan: SQL forms, statistics, and the histograms of the bounded plan.

Owns: what the analyst may write (MEDIAN, QUANTILE_CONT/DISC, PERCENTILE_CONT/DISC
... WITHIN GROUP, APPROX_QUANTILE, QUANTILE, lists of p, MIN, MAX), how each becomes
one quantile statistic per p (``Stat.quantile``, mechanism in
``dpsql.mechanisms.quantile``), and the engine SQL that bins the truncated, clamped
values into the statistic's grid and returns one histogram per group:

    WITH _bounded AS (rows)                      -- filtered, truncated rows
    SELECT _a.*, _h0._h0 FROM
      (SELECT keys, other statistics FROM _bounded GROUP BY keys) _a
      LEFT JOIN (SELECT keys, LIST(cell * 2^32 + count) AS _h0
                 FROM (SELECT keys, cell, COUNT(*) ... GROUP BY keys, cell) GROUP BY keys) _h0
      ON keys IS NOT DISTINCT FROM keys

Only cell indices and their counts reach Python, never values. When the rows are
truncated (random), the CTE is MATERIALIZED so that every statistic sees the
same kept rows.
"""
from __future__ import annotations

import contextlib
import contextvars
from fractions import Fraction

from sqlglot import exp

from ..errors import QueryError
from ..privacy.params import Stat
from ..mechanisms.quantile import CELL_CAP, Grid, PermuteAndFlip, quantile_fraction
from .rewrite import bound_literal, clamp, column
from ..frontend.binding import fail
from ..frontend.typecheck import float_literal
from .statistic import Statistic
from .bounds_estimate import bounds_statistic
from ..frontend.dialect import ANALYST_DIALECT

MIN_P, MAX_P = Fraction(1, 100), Fraction(99, 100)
"""MIN(x) and MAX(x) are released as QUANTILE_DISC(x, 0.01) and QUANTILE_DISC(x, 0.99)."""
MAX_LIST = 100
BOUNDED_CTE = "_bounded"
_BOUNDS = contextvars.ContextVar("dpsql_bounds", default=False)


@contextlib.contextmanager
def bounds_mode():
    """Plan QUANTILE_DISC(x, p) of a numeric column as a bounds estimate: one noisy
    histogram over powers of two (``dpsql.plan.bounds_estimate``), whatever p and bounds."""
    token = _BOUNDS.set(True)
    try:
        yield
    finally:
        _BOUNDS.reset(token)


# ----------------------------------------------------------------------------
# SQL forms -> PercentileCont / PercentileDisc(x, p) (validate's rewrite rule)


def _p_value(node: exp.Expression, where: exp.Expression) -> Fraction:
    negative = False
    while isinstance(node, (exp.Paren, exp.Neg)):
        negative ^= isinstance(node, exp.Neg)
        node = node.this
    if not (isinstance(node, exp.Literal) and not node.is_string):
        fail("the quantile p{at} must be a number literal in "
             "[0, 1] (or a list of them, [0.25, 0.5, 0.75]); it is part of the query, not of "
             "the data", where)
    p = quantile_fraction(("-" if negative else "") + node.this)
    if not 0 <= p <= 1:
        fail(f"the quantile p = {'-' if negative else ''}{node.this}{{at}} is outside "
             "[0, 1]", where)
    return p


def _p_literal(p: Fraction) -> exp.Expression:
    return exp.Literal.number(repr(float(p)))


def _quantile(cls, value, p_node, where, flip: bool = False) -> exp.Expression:
    """cls(value, p) with p checked (``flip``: ORDER BY ... DESC reads 1 - p)."""
    def one(node):
        p = _p_value(node, where)
        return _p_literal(1 - p if flip else p)
    if isinstance(p_node, exp.Array):
        if not 1 <= len(p_node.expressions) <= MAX_LIST:
            fail(f"a list of quantiles takes 1 to {MAX_LIST} values{{at}}", where)
        p = exp.Array(expressions=[one(e) for e in p_node.expressions])
    elif p_node is None:
        fail("{at} needs a quantile p, e.g. QUANTILE_CONT(x, 0.5)", where)
    else:
        p = one(p_node)
    return cls(this=value, expression=p)


def normalise_quantile(node: exp.Expression) -> exp.Expression:
    """Rewrite rule: every quantile spelling as PercentileCont/PercentileDisc(x, p)."""
    if isinstance(node, (exp.Min, exp.Max, exp.Median)) and any(
            v for k, v in node.args.items() if k != "this"):
        fail(f"{node.sql_name()} takes one argument{{at}} (for the least of several values per "
             "row write LEAST(a, b))", node)
    if isinstance(node, exp.Median):
        return exp.PercentileCont(this=node.this, expression=_p_literal(Fraction(1, 2)))
    if isinstance(node, (exp.Quantile, exp.ApproxQuantile)):
        extra = [k for k, v in node.args.items() if v is not None and k not in ("this", "quantile")]
        if extra:
            fail("{at}: only the value and the quantile p are supported", node)
        # DuckDB's QUANTILE is QUANTILE_DISC; APPROX_QUANTILE interpolates like CONT.
        # (sqlglot's ApproxQuantile is a subclass of Quantile.)
        cls = exp.PercentileCont if isinstance(node, exp.ApproxQuantile) else exp.PercentileDisc
        return _quantile(cls, node.this, node.args.get("quantile"), node)
    if isinstance(node, exp.WithinGroup):
        inner, order = node.this, node.expression
        if not isinstance(inner, (exp.PercentileCont, exp.PercentileDisc)) or not isinstance(
                order, exp.Order) or len(order.expressions) != 1 or inner.expression is not None:
            fail("WITHIN GROUP is supported for PERCENTILE_CONT(p) and PERCENTILE_DISC(p) "
                 "ordered by one expression{at}", node)
        ordered = order.expressions[0]
        return _quantile(type(inner), ordered.this, inner.this, node,
                         flip=bool(ordered.args.get("desc")))
    if isinstance(node, (exp.PercentileCont, exp.PercentileDisc)):
        return _quantile(type(node), node.this, node.expression, node)
    return node


# ----------------------------------------------------------------------------
# One statistic per p


def _spec(node) -> tuple[list, str]:
    """([p, ...] or [p], how) for a normalised quantile node."""
    if isinstance(node, exp.Min):
        return [MIN_P], "mid"
    if isinstance(node, exp.Max):
        return [MAX_P], "mid"
    how = "cont" if isinstance(node, exp.PercentileCont) else "mid"
    p = node.expression
    values = p.expressions if isinstance(p, exp.Array) else [p]
    return [quantile_fraction(v.this) for v in values], how


def is_list(node) -> bool:
    return isinstance(node, (exp.PercentileCont, exp.PercentileDisc)) and isinstance(
        node.expression, exp.Array)


def output_type(node, table) -> str:
    """Language type of the released value: float, int (DISC/MIN/MAX of int), or list."""
    if is_list(node):
        return "list"
    col = table.column(node.this.name) if isinstance(node.this, exp.Column) else None
    if not isinstance(node, exp.PercentileCont) and col is not None and col.type == "int":
        return "int"
    return "float"


def cell_expression(value: exp.Expression, grid: Grid, in_bounds: bool) -> exp.Expression:
    """The cell index of each row's value (NULL stays NULL) as BIGINT."""
    big = exp.DataType.build("BIGINT")
    if grid.kind == "integer":
        row = value if in_bounds else clamp(value, grid.lower, grid.upper)
        return exp.Sub(this=exp.Paren(this=row), expression=bound_literal(grid.lower))
    double = exp.Cast(this=value, to=exp.DataType.build("DOUBLE"))
    if grid.kind == "linear":
        if grid.cells == 1:
            return exp.Case(ifs=[exp.If(this=exp.Is(this=value.copy(), expression=exp.Null()),
                                        true=exp.Null())], default=exp.Literal.number(0))
        row = clamp(double, float(grid.lower), float(grid.upper))
        scaled = exp.Mul(this=exp.Paren(this=exp.Sub(this=row, expression=float_literal(grid.lower))),
                         expression=float_literal(grid.cells / (grid.upper - grid.lower)))
        index = exp.TryCast(this=exp.Floor(this=scaled), to=big)
        # GREATEST and LEAST skip NULLs in DuckDB: a NULL value must not become cell 0.
        return exp.Case(ifs=[exp.If(this=exp.Is(this=value.copy(), expression=exp.Null()),
                                    true=exp.Null())],
                        default=exp.Anonymous(this="LEAST", expressions=[
                            exp.Anonymous(this="GREATEST", expressions=[index, exp.Literal.number(0)]),
                            exp.Literal.number(grid.cells - 1)]))
    side = (grid.cells - 1) // 2

    def magnitude(x):
        log = exp.Anonymous(this="LOG2", expressions=[x])
        j = exp.TryCast(this=exp.Floor(this=exp.Mul(this=exp.Paren(this=exp.Sub(
            this=log, expression=exp.Literal.number(grid.emin))), expression=exp.Literal.number(
            grid.per_octave))), to=big.copy())
        return exp.Anonymous(this="LEAST", expressions=[
            exp.Anonymous(this="GREATEST", expressions=[j, exp.Literal.number(0)]),
            exp.Literal.number(side - 1)])
    small = exp.LT(this=exp.Abs(this=double.copy()), expression=float_literal(2.0 ** grid.emin))
    return exp.Case(ifs=[
        exp.If(this=small, true=exp.Literal.number(side)),
        exp.If(this=exp.GT(this=double.copy(), expression=exp.Literal.number(0)),
               true=exp.Add(this=exp.Literal.number(side + 1), expression=magnitude(double.copy()))),
        exp.If(this=exp.LT(this=double.copy(), expression=exp.Literal.number(0)),
               true=exp.Sub(this=exp.Literal.number(side - 1),
                            expression=magnitude(exp.Neg(this=double.copy()))))])


def plan_quantile(node, col, value: exp.Expression, lower, upper, integer: bool, stats,
                  in_bounds: bool) -> exp.Expression:
    """Statistics for a quantile aggregate; returns its post-processing expression."""
    if _BOUNDS.get():
        return column(bounds_statistic(stats, col, value).name)
    ps, how = _spec(node)
    int_out = how != "cont" and col.type == "int"
    grid = Grid.for_bounds(lower, upper, integer, stats.mechanisms.quantile_cells)
    cell = cell_expression(value, grid, in_bounds)
    names = []
    for p in ps:
        name = {"percentilecont": "QUANTILE_CONT", "percentiledisc": "QUANTILE_DISC"}.get(
            node.key, node.key.upper())
        label = f"{name}({col.name}, p={p})"
        names.append(quantile_statistic(stats, cell, grid, p, how, int_out, label).name)
    if is_list(node):
        return exp.Array(expressions=[column(n) for n in names])
    return column(names[0])


def quantile_statistic(stats, cell, grid, p, how, int_out, label):
    marker = exp.Anonymous(this="_dpsql_quantile", expressions=[
        cell.copy(), exp.Literal.string(f"{p}|{how}|{grid}")])
    for existing in stats.items:
        if existing.aggregate == marker:
            return existing
    rows = stats.l1_rows
    item = Statistic(f"_s{len(stats.items)}", label, marker, Stat.quantile, rows, rows, int_out,
                     cell=cell, calibrator=lambda eps: PermuteAndFlip.calibrate(
                         grid, p, rows, eps, how, int_out))
    stats.items.append(item)
    return item


def quantile_bounds(col, node):
    """(lower, upper, integer) of a quantile's argument, or a refusal that says what to do."""
    if col.type == "boolean":
        return 0, 1, True
    if _BOUNDS.get() and col.type in ("int", "float"):
        return None, None, col.type == "int"
    if col.type not in ("int", "float"):
        raise QueryError(f"{node.sql(ANALYST_DIALECT)}: column {col.name!r} is of type {col.type}; "
                         "quantiles, MEDIAN, MIN and MAX need a numeric column (int or float)")
    if col.lower is None or col.upper is None:
        raise QueryError(f"{node.sql(ANALYST_DIALECT)}: column {col.name!r} has no lower and upper bound "
                         "in the metadata; the candidates of a quantile are a grid over them. Add "
                         "both bounds (the data owner can estimate them privately with "
                         "`dpsql metadata bounds` or reader.estimate_bounds)")
    integer = (col.type == "int" and float(col.lower).is_integer()
               and float(col.upper).is_integer() and max(abs(col.lower), abs(col.upper)) < 2 ** 62)
    return col.lower, col.upper, integer


# ----------------------------------------------------------------------------
# The bounded plan with histograms


def histograms(items: list) -> dict:
    """Cell expression SQL -> histogram column name, shared by quantiles of one grid."""
    out: dict = {}
    for s in items:
        if s.cell is not None:
            key = s.cell.sql(ANALYST_DIALECT)
            s.histogram = out.setdefault(key, (f"_h{len(out)}", s.cell))[0]
    return out


def _null_safe_on(names: list, left: str, right: str):
    on = None
    for name in names:
        cond = exp.NullSafeEQ(this=exp.column(name, left, quoted=True),
                              expression=exp.column(name, right, quoted=True))
        on = cond if on is None else exp.and_(on, cond)
    return on


def with_histograms(main: exp.Select | None, rows: exp.Select, keys: list, key_names: list,
                    hists: dict, materialize: bool) -> exp.Select:
    """``main`` (keys and other statistics over the CTE _bounded) joined with one histogram
    column per grid, all over the same bounded rows."""
    source = exp.to_table(BOUNDED_CTE)
    if main is None:
        main = exp.select(*[exp.alias_(k.copy(), n, quoted=True) for k, n in zip(keys, key_names)]
                          or [exp.alias_(exp.Literal.number(1), "_dpsql_one", quoted=True)])
        main = main.from_(source.copy()).group_by(*[column(n) for n in key_names]) if keys else main
    out = exp.select(exp.Column(this=exp.Star(), table=exp.to_identifier("_a"))).from_(
        exp.Subquery(this=main, alias=exp.TableAlias(this=exp.to_identifier("_a"))))
    for name, cell in hists.values():
        binned = exp.select(*[exp.alias_(k.copy(), n, quoted=True) for k, n in zip(keys, key_names)],
                            exp.alias_(cell.copy(), "_c", quoted=True)).from_(source.copy())
        counted = exp.select(*[column(n) for n in key_names], column("_c"), exp.alias_(
            exp.Anonymous(this="LEAST", expressions=[exp.Count(this=exp.Star()),
                                                      exp.Literal.number(CELL_CAP)]), "_n", quoted=True)
        ).from_(exp.Subquery(this=binned, alias=exp.TableAlias(this=exp.to_identifier("_cs")))).where(
            exp.Not(this=exp.Is(this=column("_c"), expression=exp.Null()))).group_by(
            *[column(n) for n in key_names], column("_c"))
        packed = exp.Add(this=exp.Mul(this=column("_c"), expression=exp.Literal.number(2 ** 32)),
                         expression=column("_n"))
        hist = exp.select(*[column(n) for n in key_names], exp.alias_(
            exp.Anonymous(this="LIST", expressions=[packed]), name, quoted=True)).from_(
            exp.Subquery(this=counted, alias=exp.TableAlias(this=exp.to_identifier("_ci"))))
        if key_names:
            hist = hist.group_by(*[column(n) for n in key_names])
        sub = exp.Subquery(this=hist, alias=exp.TableAlias(this=exp.to_identifier(name)))
        if key_names:    # copy=False: copying the growing join each time was quadratic
            out = out.join(sub, on=_null_safe_on(key_names, "_a", name), join_type="LEFT",
                           copy=False)
        else:
            out = out.join(sub, join_type="CROSS", copy=False)
        out = out.select(exp.column(name, name, quoted=True), copy=False)
    cte = exp.CTE(this=rows, alias=exp.TableAlias(this=exp.to_identifier(BOUNDED_CTE)),
                  materialized=True if materialize else None)
    out.set("with_", exp.With(expressions=[cte]))
    return out


def counts_with_histogram(rows: exp.Select, keys: list, key_names: list, hists: dict,
                          counts: list) -> exp.Select:
    """One scan for one histogram and row counts (``counts``: names of COUNT(*) statistics,
    e.g. the threshold's): the counts are the sums of the cells' counts, NULL cell included.

    The common shape (a median by group, released above a threshold) then reads the
    bounded rows once instead of twice."""
    (name, cell), = hists.values()
    binned = exp.select(*[exp.alias_(k.copy(), n, quoted=True) for k, n in zip(keys, key_names)],
                        exp.alias_(cell.copy(), "_c", quoted=True)).from_(
        exp.Subquery(this=rows, alias=exp.TableAlias(this=exp.to_identifier(BOUNDED_CTE))))
    counted = exp.select(*[column(n) for n in key_names], column("_c"), exp.alias_(
        exp.Count(this=exp.Star()), "_n", quoted=True)).from_(
        exp.Subquery(this=binned, alias=exp.TableAlias(this=exp.to_identifier("_cs")))).group_by(
        *[column(n) for n in key_names], column("_c"))
    total = exp.Coalesce(this=exp.Cast(this=exp.Sum(this=column("_n")),
                                       to=exp.DataType.build("BIGINT")),
                         expressions=[exp.Literal.number(0)])
    packed = exp.Add(this=exp.Mul(this=column("_c"), expression=exp.Literal.number(2 ** 32)),
                     expression=exp.Anonymous(this="LEAST", expressions=[
                         column("_n"), exp.Literal.number(CELL_CAP)]))
    hist = exp.Filter(this=exp.Anonymous(this="LIST", expressions=[packed]),
                      expression=exp.Where(this=exp.Not(this=exp.Is(
                          this=column("_c"), expression=exp.Null()))))
    out = exp.select(*[column(n) for n in key_names],
                     *[exp.alias_(total.copy(), c, quoted=True) for c in counts],
                     exp.alias_(hist, name, quoted=True)).from_(
        exp.Subquery(this=counted, alias=exp.TableAlias(this=exp.to_identifier("_ci"))))
    return out.group_by(*[column(n) for n in key_names]) if key_names else out
