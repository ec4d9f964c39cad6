"""Step 6b (post-processing): confidence intervals for released outputs.

Owns: the interval of each noisy output column at a confidence level, computed from the
noisy statistics and public facts only (the mechanisms' exact tails, the metadata's
bounds), so it costs nothing and a replay gives the same intervals.

* A statistic's interval is its release plus or minus the mechanism's exact two-sided
  accuracy (``mechanism.accuracy(beta)``: P(|noise| <= a) >= 1 - beta, from the noise's
  exact distribution), widened by 1/2 where a count on a fine grid is shown rounded. A
  quantile's is the bounds of its column: permute-and-flip bounds
  the released rank, not the value (its rank accuracy is in ``explain``).
* An output reads k noisy statistics: each at beta = alpha / k (the union bound), and the
  output's expression is evaluated in interval arithmetic (a tree rewrite of the
  post-processing SELECT into a lower and an upper expression, run by the engine on the
  same noisy rows, so HAVING, ORDER BY and LIMIT apply as they do to the result).
  Operations the arithmetic does not know give the whole real line: never too narrow.

The interval covers the exact answer of the bounded plan (after truncation and clamping),
per cell; it says nothing of the bias that clamping or truncation add.
"""
from __future__ import annotations

import math

from sqlglot import exp

from ..errors import ProgrammingError
from ..privacy.params import Stat

INF = "Infinity"


def check_alpha(alpha) -> float:
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 0 < alpha < 1:
        raise ProgrammingError(f"alpha must be a number in (0, 1), e.g. 0.05 for 95% intervals, "
                               f"got {alpha!r}")
    return float(alpha)


def _num(value: float) -> exp.Expression:
    if math.isinf(value):
        text = INF if value > 0 else "-" + INF
        return exp.Cast(this=exp.Literal.string(text), to=exp.DataType.build("DOUBLE"))
    return exp.Cast(this=exp.Literal.number(repr(float(value))), to=exp.DataType.build("DOUBLE"))


def _double(node: exp.Expression) -> exp.Expression:
    return exp.Cast(this=node, to=exp.DataType.build("DOUBLE"))


def _fn(name: str, *args) -> exp.Expression:
    return exp.Anonymous(this=name, expressions=list(args))


def _paren(node):
    return exp.Paren(this=node)


def statistic_interval(stat, value: exp.Expression, beta: float) -> tuple:
    """(lower, upper) expressions around one noisy statistic's column."""
    m = stat.mechanism
    fixed = m.value_bounds()
    if fixed is not None:
        return _num(fixed[0]), _num(fixed[1])
    half = m.accuracy(beta)
    counts = stat.stat in (Stat.count, Stat.threshold)
    if counts and not m.integer_output:
        half += 0.5                  # released rounded to a whole number
    # Not cut at 0 for counts: an interval then always holds its own release (a count
    # released below 0 where the table does not clamp counts), at the cost of a little width.
    lo = exp.Sub(this=_double(value.copy()), expression=_num(half))
    hi = exp.Add(this=_double(value.copy()), expression=_num(half))
    return lo, hi


class _Intervals:
    """Interval arithmetic over a post-processing expression tree."""

    def __init__(self, leaves: dict, prefix: str):
        self.leaves = leaves             # statistic column name -> (lo, hi)
        self.prefix = prefix
        self.defs: list = []             # (alias, expression): earlier columns of the SELECT

    def __call__(self, node) -> tuple:
        """(lo, hi) of ``node``: names of columns defined in ``defs`` (DuckDB reads a select
        list's earlier aliases), so that a bound used by four corners is computed once and
        the SQL grows with the expression, not with 4^depth."""
        lo, hi = self._bounds(node)
        if isinstance(lo, exp.Column) and isinstance(hi, exp.Column):
            return lo, hi
        k = len(self.defs) // 2
        names = (f"{self.prefix}_t{k}_lo", f"{self.prefix}_t{k}_hi")
        self.defs += [(names[0], lo), (names[1], hi)]
        return exp.column(names[0], quoted=True), exp.column(names[1], quoted=True)

    def _bounds(self, node) -> tuple:
        if isinstance(node, exp.Column) and node.name in self.leaves:
            lo, hi = self.leaves[node.name]
            return lo.copy(), hi.copy()
        if isinstance(node, exp.Column) or isinstance(node, exp.Literal):
            return _double(node.copy()), _double(node.copy())
        if isinstance(node, (exp.Paren, exp.Try)) or (isinstance(node, exp.Nullif) and
                                                       node.expression.this == "0"):
            return self(node.this)   # NULLIF(b, 0), a divisor: b's values (or NULL)
        if isinstance(node, (exp.Cast, exp.TryCast)):
            # Bounds stay DOUBLE: rounding a bound to an integer type could narrow it.
            return self(node.this)
        if isinstance(node, exp.Neg):
            lo, hi = self(node.this)
            return exp.Neg(this=_paren(hi)), exp.Neg(this=_paren(lo))
        if isinstance(node, exp.Add):
            (a, b), (c, d) = self(node.this), self(node.expression)
            return exp.Add(this=a, expression=c), exp.Add(this=b, expression=d)
        if isinstance(node, exp.Sub):
            (a, b), (c, d) = self(node.this), self(node.expression)
            return exp.Sub(this=a, expression=_paren(d)), exp.Sub(this=b, expression=_paren(c))
        if isinstance(node, exp.Mul):
            return self._corners(self(node.this), self(node.expression), exp.Mul)
        if isinstance(node, exp.Div):
            (a, b), (c, d) = self(node.this), self(node.expression)
            lo, hi = self._corners((a, b), (c.copy(), d.copy()), exp.Div)
            # A divisor that may be 0 (or NaN) bounds nothing.
            safe = exp.or_(exp.GT(this=c.copy(), expression=_num(0.0)),
                           exp.LT(this=d.copy(), expression=_num(0.0)))
            return (exp.Case(ifs=[exp.If(this=safe, true=lo)], default=_num(-math.inf)),
                    exp.Case(ifs=[exp.If(this=safe.copy(), true=hi)], default=_num(math.inf)))
        if isinstance(node, (exp.Greatest, exp.Least)):
            name = "GREATEST" if isinstance(node, exp.Greatest) else "LEAST"
            parts = [self(a) for a in [node.this, *node.expressions]]
            return _fn(name, *[p[0] for p in parts]), _fn(name, *[p[1] for p in parts])
        if isinstance(node, exp.Anonymous) and node.name.upper() in ("GREATEST", "LEAST"):
            parts = [self(a) for a in node.expressions]
            return (_fn(node.name.upper(), *[p[0] for p in parts]),
                    _fn(node.name.upper(), *[p[1] for p in parts]))
        if isinstance(node, exp.Sqrt):
            lo, hi = self(node.this)
            return (_fn("SQRT", _fn("GREATEST", lo, _num(0.0))),
                    _fn("SQRT", _fn("GREATEST", hi, _num(0.0))))
        if isinstance(node, exp.Pow) and node.expression == exp.Literal.number(2):
            lo, hi = self(node.this)
            sq_lo = exp.Mul(this=_paren(lo), expression=_paren(lo.copy()))
            sq_hi = exp.Mul(this=_paren(hi), expression=_paren(hi.copy()))
            low = exp.Case(ifs=[exp.If(this=exp.GT(this=lo.copy(), expression=_num(0.0)), true=sq_lo),
                                exp.If(this=exp.LT(this=hi.copy(), expression=_num(0.0)), true=sq_hi)],
                           default=_num(0.0))
            return low, _fn("GREATEST", sq_lo.copy(), sq_hi.copy())
        return _num(-math.inf), _num(math.inf)

    @staticmethod
    def _corners(x: tuple, y: tuple, op) -> tuple:
        products = [op(this=_paren(a.copy()), expression=_paren(b.copy())) for a in x for b in y]
        return (_fn("LEAST", *[p.copy() for p in products]), _fn("GREATEST", *products))


def reads(node: exp.Expression, names: set) -> list:
    """The noisy statistics an output expression reads, in order of first use."""
    seen = []
    for col in node.find_all(exp.Column):
        if col.name in names and col.name not in seen:
            seen.append(col.name)
    return seen


def with_intervals(plan, alpha: float) -> tuple:
    """The post-processing SELECT with ``_oI_lo``/``_oI_hi`` after each noisy output; and
    per output index, the statistics it reads (empty: no noise, no interval)."""
    stats = {s.name: s for s in plan.statistics}
    post = plan.post.copy()
    items, read, defs = [], [], []
    for item in post.expressions:
        body = item.this if isinstance(item, exp.Alias) else item
        names = reads(body, set(stats))
        read.append(names)
        items.append(item)
        if not names:
            continue
        beta = alpha / len(names)
        leaves = {n: statistic_interval(stats[n], exp.column(n, quoted=True), beta) for n in names}
        bounds = _Intervals(leaves, f"_i{len(read) - 1}")
        lo, hi = bounds(body)
        defs += bounds.defs
        items += [exp.alias_(lo, f"{item.alias}_lo", quoted=True),
                  exp.alias_(hi, f"{item.alias}_hi", quoted=True)]
    post.set("expressions", items)
    return _layered(post, defs), read


def _layered(post: exp.Select, defs: list) -> exp.Select:
    """``post`` reading the bounds' intermediate columns from nested SELECTs over its noisy
    table, one per depth of the bounds' expression tree: every bound is computed once
    (inlining them, as one select list's aliases would be, grows as 4^depth)."""
    if not defs:
        return post
    depth: dict = {}
    layers: dict = {}
    for name, expression in defs:
        below = [depth[c.name] for c in expression.find_all(exp.Column) if c.name in depth]
        depth[name] = 1 + max(below, default=0)
        layers.setdefault(depth[name], []).append(exp.alias_(expression, name, quoted=True))
    source = post.args["from_"].this.copy()
    for level in sorted(layers):
        source = exp.Subquery(this=exp.select(exp.Star(), *layers[level]).from_(source),
                              alias=exp.TableAlias(this=exp.to_identifier(f"_b{level}")))
    post.set("from_", exp.From(this=source))
    return post


def describe_outputs(plan, alpha: float = 0.05) -> list:
    """Per noisy output, a line on its interval (for ``explain``)."""
    stats = {s.name: s for s in plan.statistics}
    lines = []
    level = f"{1 - alpha:.0%}"
    for item, name in zip(plan.post.expressions, plan.output_names):
        body = item.this if isinstance(item, exp.Alias) else item
        names = reads(body, set(stats))
        if not names:
            continue
        beta = alpha / len(names)
        parts = []
        for n in names:
            s = stats[n]
            if s.mechanism.value_bounds() is not None:
                parts.append(f"{s.label}: the column's bounds in value (rank: "
                             f"{s.mechanism.accuracy_text(beta)})")
            else:
                parts.append(f"{s.label} {s.mechanism.accuracy_text(beta)}")
        if any(stats[n].mechanism.value_bounds() is not None for n in names):
            how = "the bounds of the quantile's column (its accuracy is in rank)"
        elif len(names) == 1 and body.find(exp.Div, exp.Pow, exp.Sqrt, exp.Mul) is None:
            how = "exact, from the mechanism's distribution"
        else:
            how = (f"by interval arithmetic over its {len(names)} statistics, each at "
                   f"{1 - beta:.4g} (union bound)")
        lines.append(f"  {name}: {level} interval {how}: " + "; ".join(parts))
    return lines
