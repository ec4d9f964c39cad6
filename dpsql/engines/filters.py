"""Rewrite rules of DuckDB and PostgreSQL for aggregates over the plan's derived columns.

Owns: ``restored_filters`` and ``counted_bases``. The plan writes ``agg(x) FILTER (WHERE
p)`` as an aggregate of a column ``_dpsql_eN = CASE WHEN p THEN x END`` defined below it
(dpsql.plan.validate normalises FILTER; the column carries the bounds), clamped in the
aggregate. DuckDB evaluates that in 70 ms per 10^7 rows and ``agg(clamp(x)) FILTER (WHERE
p)`` in 29 ms (docs/performance.md). The two are the same aggregate: it ignores NULLs, and
the clamp of NULL is NULL, so the rows where p does not hold add nothing either way.
PostgreSQL's FILTER skips the aggregate's step on those rows too: at 5,000,000 rows, one
backend without parallel workers, the FILTER benchmark query took 433-553 ms of CPU with it
against 490-570 ms as written, the plain query 417-550 ms.

An AVG of an expression counts the expression's values: ``COUNT(_dpsql_eN)`` beside
``SUM(_dpsql_eN)``, where ``_dpsql_eN`` is, e.g., ``clamp(age) - 30``. PostgreSQL computes
each aggregate's argument on its own (DuckDB shares it), and counting the column ``age``
itself is the same count: a clamp, and adding or subtracting a number, are NULL exactly
when their operand is (the plan writes ``+`` and ``-`` without a guard only where they
cannot fail). ``counted_bases`` counts the column.
"""
from __future__ import annotations

from sqlglot import exp

# Aggregates that ignore NULL arguments (COUNT(*) has none: it is never rewritten).
NULL_IGNORING = (exp.Sum, exp.Count, exp.Avg, exp.Min, exp.Max)
COMPARISONS = (exp.LT, exp.GT, exp.LTE, exp.GTE)


def restored_filters(tree: exp.Expression, selects: list | None = None) -> exp.Expression:
    """``tree`` with each aggregate of one filtered column rewritten as a FILTER (``selects``:
    its SELECTs, where the caller's walk found them)."""
    for select in list(tree.find_all(exp.Select)) if selects is None else selects:
        definitions = _definitions(select)
        if definitions:
            for agg in [n for e in select.expressions for n in e.find_all(NULL_IGNORING)]:
                _rewrite(agg, definitions)
    return tree


def counted_bases(tree: exp.Expression, selects: list | None = None) -> exp.Expression:
    """``tree`` with each ``COUNT`` of a column ``_dpsql_eN = clamp(c) ± n`` (or
    ``clamp(c)``, ``c ± n``) counting ``c`` (``selects``: its SELECTs, if known)."""
    for select in list(tree.find_all(exp.Select)) if selects is None else selects:
        node = _defining_select(select)
        bases = _counted_columns(node) if node is not None else {}
        for count in [n for e in select.expressions for n in e.find_all(exp.Count)] if bases else ():
            argument = count.this
            while isinstance(argument, exp.Paren):
                argument = argument.this
            if isinstance(argument, exp.Column) and not argument.table and argument.name in bases:
                count.set("this", exp.column(bases[argument.name], quoted=True))
    return tree


def _counted_columns(node: exp.Select) -> dict:
    """Name -> c of ``node``'s columns that are NULL exactly when the source column c is
    (not when ``node`` defines a column named c too: the outer count would read that one)."""
    alias = node.args["from_"].this.alias_or_name
    defined = {e.alias_or_name.lower() for e in node.expressions[1:]}
    found = {}
    for e in node.expressions[1:]:
        value = e.this if isinstance(e, exp.Alias) else None
        while isinstance(value, exp.Paren):
            value = value.this
        if isinstance(value, (exp.Add, exp.Sub)):
            value = _shifted(value)
        columns = list(value.find_all(exp.Column)) if value is not None else []
        if columns and all(c.table in ("", alias) for c in columns) \
                and columns[0].name.lower() not in defined \
                and _null_preserving(value, columns[0].name):
            found[e.alias] = columns[0].name
    return found


def _shifted(node: exp.Expression) -> exp.Expression | None:
    """x of ``x + n``, ``n + x``, ``x - n`` or ``n - x`` (n a number), else None."""
    left, right = node.this, node.expression
    other = left if _number(right) else right if _number(left) else None
    while isinstance(other, exp.Paren):
        other = other.this
    return other


def _definitions(select: exp.Select) -> dict:
    """Name -> (p, x) of the columns ``CASE WHEN p THEN x END`` that ``select`` reads
    through ``SELECT *`` subqueries from one select over one source (no join)."""
    node = _defining_select(select)
    return _filtered_columns(node) if node is not None else {}


def _defining_select(select: exp.Select) -> exp.Select | None:
    """The select that ``select`` reads through ``SELECT *`` subqueries, one source and no
    join on the way, and that adds columns to ``*``; None if there is none."""
    node = select
    while True:
        source = node.args.get("from_")
        if source is None or node.args.get("joins") or not isinstance(source.this, exp.Subquery):
            return None
        node = source.this.this
        if not isinstance(node, exp.Select) or node.args.get("joins") or node.args.get("group"):
            return None
        if not node.expressions or not isinstance(node.expressions[0], exp.Star):
            return None
        if len(node.expressions) > 1:
            return node


def _filtered_columns(node: exp.Select) -> dict:
    inner = node.args["from_"].this
    alias = inner.alias_or_name
    found = {}
    for e in node.expressions[1:]:
        case = e.this if isinstance(e, exp.Alias) else None
        if (isinstance(case, exp.Case) and len(case.args.get("ifs") or []) == 1
                and case.args.get("default") is None and not case.args.get("this")):
            cond, value = case.args["ifs"][0].this, case.args["ifs"][0].args["true"]
            if all(c.table in ("", alias) for n in (cond, value) for c in n.find_all(exp.Column)):
                found[e.alias] = (_unqualified(cond), _unqualified(value))
    return found


def _unqualified(node: exp.Expression) -> exp.Expression:
    return node.copy().transform(
        lambda n: exp.column(n.name, quoted=True) if isinstance(n, exp.Column) else n)


def _rewrite(agg: exp.Expression, definitions: dict) -> None:
    """Rewrite ``agg`` in place if its argument is a filtered column, or its clamp."""
    if isinstance(agg.parent, exp.Filter) or isinstance(agg.this, exp.Distinct):
        return
    columns = {c.name for c in agg.this.find_all(exp.Column)} if agg.this else set()
    if len(columns) != 1 or next(iter(columns)) not in definitions:
        return
    name = next(iter(columns))
    if not _null_preserving(agg.this, name):
        return
    cond, value = definitions[name]
    argument = agg.this.transform(
        lambda n: value.copy() if isinstance(n, exp.Column) and n.name == name else n)
    new = agg.copy()
    new.set("this", argument)
    agg.replace(exp.Filter(this=new, expression=exp.Where(this=cond.copy())))


def _null_preserving(node: exp.Expression, name: str) -> bool:
    """Whether ``node`` is the column ``name`` or a clamp of it (``CASE WHEN c < L THEN L
    WHEN c > U THEN U ELSE c END``, in parentheses or not): NULL when the column is."""
    while isinstance(node, exp.Paren):
        node = node.this
    if isinstance(node, exp.Column):
        return node.name == name
    if not isinstance(node, exp.Case) or node.args.get("this"):
        return False
    default = node.args.get("default")
    return (isinstance(default, exp.Column) and default.name == name and all(
        isinstance(i.this, COMPARISONS) and _constant(i.args["true"])
        and {c.name for c in i.this.find_all(exp.Column)} == {name}
        for i in node.args["ifs"]))


def _constant(node: exp.Expression) -> bool:
    """Whether ``node`` is a literal or a negated number (never NULL). Review of
    counted_bases: any negation passed, and an analyst's ``CASE WHEN i < 3 THEN -(m + 1)
    ELSE i END`` (NULL where m is, or where its guard is) was counted as ``COUNT(i)``."""
    while isinstance(node, exp.Paren):
        node = node.this
    return isinstance(node, exp.Literal) or _number(node)


def _number(node: exp.Expression) -> bool:
    """Whether ``node`` is a number, or a negated one, in parentheses or not."""
    while isinstance(node, (exp.Paren, exp.Neg)):
        node = node.this
    return isinstance(node, exp.Literal) and node.is_number
