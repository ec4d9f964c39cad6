"""Private selection: ``GROUP BY key ORDER BY COUNT(*) DESC LIMIT k`` that shows only keys.

Owns: recognising the query shape that asks which k public keys are the most frequent
and nothing else, and giving its count the top-k selection mechanism
(``dpsql.mechanisms.selection``) instead of a noisy count per key. The shape: every
GROUP BY key has public values (metadata ``values:``), the SELECT list shows keys only,
the only aggregate is COUNT(*) (or COUNT(1)), used as ``ORDER BY COUNT(*) DESC`` alone,
with ``LIMIT k`` (no OFFSET, HAVING, DISTINCT or outer query). Its cost is that of k
rounds of selection, whatever the number of keys.
"""
from __future__ import annotations

import math

from sqlglot import exp

from ..errors import QueryError
from ..mechanisms.selection import TopK
from .query import Query


def _counts_rows(node) -> bool:
    return isinstance(node, exp.Count) and isinstance(node.this, (exp.Star, exp.Literal))


def selection_k(query: Query, public_keys: bool) -> int | None:
    """k if ``query`` is a top-k selection over public keys, else None."""
    if not (public_keys and query.keys and query.limit is not None and query.offset is None
            and query.having is None and not query.distinct and query.cut is None):
        return None
    if len(query.aggregates) != 1 or not _counts_rows(query.aggregates[0]):
        return None
    if len(query.order) != 1 or not query.order[0].args.get("desc") \
            or not _counts_rows(query.order[0].this):
        return None
    if any(expr.find(exp.AggFunc) for _, expr in query.outputs):
        return None
    return int(query.limit) if int(query.limit) >= 1 else None


def plan_selection(query: Query, stats, public_keys: bool) -> str | None:
    """Give the count the top-k mechanism if ``query`` is a selection; the explain note."""
    k = selection_k(query, public_keys)
    if k is None or len(stats.items) != 1:
        return None
    # Delta (L-inf): rows one person adds to one key's count.
    rows = stats.per_group if stats.per_group else stats.k
    keys = math.prod(len(query.table.column(key.name).values) for key in query.keys)
    k = min(k, keys)         # public: a LIMIT past the key set spends no round for nothing
    stats.items[0].calibrator = lambda eps: TopK.calibrate(k, rows, eps, keys)
    return (f"private selection: only the top {k} key(s) by COUNT(*) are released, by {k} "
            f"round(s) of permute-and-flip (one person moves one key's count by at most "
            f"{rows} row(s)); the cost grows with k, not with the number of keys")


def normalise_mode(tree: exp.Expression) -> exp.Expression:
    """``SELECT MODE(x) [AS m] FROM ... [WHERE ...]`` as ``SELECT x AS m FROM ... GROUP BY x
    ORDER BY COUNT(*) DESC LIMIT 1``: the most frequent value is a top-1 selection (over
    x's public values; without them, the thresholded histogram's noisy top count)."""
    if not isinstance(tree, exp.Select) or not any(
            part.find(exp.Mode) for part in [*tree.expressions, tree.args.get("having"),
                                             tree.args.get("order")] if part):
        return tree        # a MODE in a subquery (a per-person aggregation) is not this one
    items = tree.expressions
    item = items[0] if len(items) == 1 else None
    mode = item.this if isinstance(item, exp.Alias) else item
    if not isinstance(mode, exp.Mode) or any(tree.args.get(c) for c in (
            "group", "having", "order", "limit", "offset", "distinct")):
        raise QueryError("MODE(x) is released as a private selection of x's most frequent "
                         "value: it must be the only item of the SELECT list, without GROUP "
                         "BY, HAVING, ORDER BY, LIMIT or DISTINCT (for the top k values, write "
                         "SELECT x FROM t GROUP BY x ORDER BY COUNT(*) DESC LIMIT k)")
    if not isinstance(mode.this, exp.Column):
        raise QueryError("MODE takes a column of the table (its values are the candidates)")
    name = item.alias if isinstance(item, exp.Alias) else "mode"
    out = tree.copy()
    out.set("expressions", [exp.alias_(mode.this.copy(), name)])
    return out.group_by(mode.this.copy(), copy=False).order_by(
        exp.Ordered(this=exp.Count(this=exp.Star()), desc=True), copy=False).limit(1, copy=False)
