"""Name resolution: which column of which relation a name in the query means.

Owns: binding column references (case-insensitive, optionally qualified by a
table name or alias) to the columns of one relation, and the error messages
that point at the place in the query text.
"""
from __future__ import annotations

import contextlib
import contextvars

from sqlglot import exp

from ..errors import QueryError
from . import costs, literal_lists
from .allowed import MAX_TEXT_COPIES, TEXT_UNIT
from .dialect import ANALYST_DIALECT


def position(node: exp.Expression) -> str:
    ident = node if isinstance(node, exp.Identifier) else node.find(exp.Identifier)
    meta = getattr(ident, "meta", None) or {}
    if "line" in meta:
        return f" (line {meta['line']}, column {meta['col']})"
    return ""


UNDEFINED_COLUMN = "42703"
"""The SQLSTATE of a column the relation lacks, however it was named (review 37, F2: a
qualified one was 42601, an unqualified one 42703)."""


def fail(msg: str, node: exp.Expression | None = None, sqlstate: str | None = None) -> None:
    where = position(node) if node is not None else ""
    err = QueryError(msg.replace("{at}", where))
    if sqlstate is not None:
        err.sqlstate = sqlstate
    raise err


MAX_WEIGHT = 1_000
"""Most base-column references one expression may stand for, derived columns of CTEs and
subqueries expanded (an expression of base columns only is bounded by the query's size). A column read 30 times by each of two CTE levels (CONCAT(s, s, ...))
stands for 900: without a cap, the work one row costs (and the plan's size) would grow as
a power of the query's length, and the time taken would tell whether a row is there."""


def expression_weight(expr: exp.Expression, column_weight) -> int:
    """How many base-column references ``expr`` stands for once every derived column it
    reads is expanded (``column_weight(column node)``), a string literal counting one per
    100 characters and every other node one per 100 (a literal list: its values): the work,
    and for text the length, of one row's value. (Fourteenth review of issue 33: a CTE
    column ``age IN (5,000 integers)`` weighed 1, and 961 references to it made
    PostgreSQL's planner expand 4.8 million nodes, 7.5 GB and 49 s, past every deadline.)"""
    total, nodes = 0, 0
    for node in expr.walk():
        if isinstance(node, exp.Column):
            total += column_weight(node)
        elif isinstance(node, exp.Literal) and node.is_string:
            total += len(str(node.this)) // 100
        else:
            nodes += literal_lists.weight(node)
    return max(total + nodes // 100, 1)


GROWS_TEXT = (exp.Concat, exp.DPipe, exp.Upper, exp.Lower)
"""Nodes whose text may be longer than their operands' (see MAX_TEXT_COPIES)."""


def text_copies(expr: exp.Expression, column_weight) -> int:
    """How many column values the text ``expr`` builds may copy: each column read under a
    CONCAT, ||, UPPER or LOWER counts its weight (the references it stands for once derived
    columns are expanded), three times over under UPPER or LOWER, which may lengthen text."""
    copies = 0
    for column in expr.find_all(exp.Column):
        growth, at = 0, column
        while at is not expr and at.parent is not None:
            at = at.parent
            if isinstance(at, GROWS_TEXT):
                growth = max(growth, 1) * (3 if isinstance(at, (exp.Upper, exp.Lower)) else 1)
        copies += growth * column_weight(column)
    return copies


MAX_STATEMENT_WEIGHT = 2 * MAX_WEIGHT
"""What CTE and subquery expansion may add over all of one statement's expressions (each
level of a chain counts: one expression at the per-expression bound read through two levels
fits). On PostgreSQL about 0.14 MB of planner memory a unit: 2,000 is about 300 MB."""
_EXPANSION: contextvars.ContextVar = contextvars.ContextVar("dpsql_expansion", default=None)


@contextlib.contextmanager
def statement_expansion():
    """The scope of one statement: what CTEs and subqueries expand in all its expressions
    together is at most MAX_STATEMENT_WEIGHT (fifteenth review of issue 33: 64 aggregates each of
    weight 891 over one CTE column made PostgreSQL's planner take 7.9 GB and 19 s, past
    the timeout and the cancel, while each was under the bound)."""
    token = _EXPANSION.set([0])
    try:
        yield
    finally:
        _EXPANSION.reset(token)


def _expanded(extra: int, clause: str) -> None:
    total = _EXPANSION.get()
    if total is None or extra <= 0:
        return
    total[0] += extra
    if total[0] > MAX_STATEMENT_WEIGHT:
        fail(f"the expressions of this query (the last in {clause}) stand for {total[0]:,} "
             "column references in all beyond their own text once the columns of their CTEs "
             f"and subqueries are expanded, more than dpsql's limit of {MAX_STATEMENT_WEIGHT:,} a "
             "query, which keeps the work the engine plans from growing with the query; read "
             "derived columns fewer times, or compute them in fewer levels")


MAX_ROW_WORK = 1_000_000
"""Most bytes of text (and interpreter steps, ``dpsql.frontend.costs``) a statement's
expressions may process for one private source row: each expression's cost times the rows that row becomes where
it runs (``Relation.fanout``), summed over the statement (all its parts: a UNION ALL, a
query's grouping sets). Measured on PostgreSQL at the bound (a CASE running the work on one
person's row only, under 1, 100 and 1,000 joined rows): 0.9 to 2.0 ms more with the person
(medians of 20 runs; 4,000,000 allowed 4 to 5 ms)."""
_ROW_WORK: contextvars.ContextVar = contextvars.ContextVar("dpsql_row_work", default=None)


@contextlib.contextmanager
def statement_work():
    """The scope of one statement for MAX_ROW_WORK (re-entered by its parts: one total)."""
    if _ROW_WORK.get() is not None:
        yield
        return
    token, counts = _ROW_WORK.set([0]), _COUNTS.set({})
    try:
        yield
    finally:
        _ROW_WORK.reset(token)
        _COUNTS.reset(counts)


_COUNTS: contextvars.ContextVar = contextvars.ContextVar("dpsql_statement_counts", default=None)


def statement_count(kind: str, part: object, count: int) -> int:
    """The statement's total of ``kind`` (e.g. an engine's guards) with ``count`` in its
    ``part``: a part counted again (lowered twice) keeps the larger count. ``count`` alone
    outside ``statement_work``."""
    counts = _COUNTS.get()
    if counts is None:
        return count
    old, _ = counts.get((kind, id(part)), (0, None))
    counts[(kind, id(part))] = (max(old, count), part)      # (holding ``part``: ids stay unique)
    return sum(n for (each, _), (n, _) in counts.items() if each == kind)


def statement_work_total() -> int | None:
    """The statement's work per private row so far (None outside ``statement_work``)."""
    total = _ROW_WORK.get()
    return None if total is None else total[0]


def charge_work(cost: int, fanout: int, clause: str) -> None:
    """Add ``cost`` (one evaluation) times ``fanout`` to the statement's work per private row."""
    total = _ROW_WORK.get()
    if total is None:
        return
    total[0] += cost * max(fanout, 1)
    if total[0] > MAX_ROW_WORK:
        fail(f"this query may make the engine process up to {total[0]:,} bytes for each "
             f"private row (the last in {clause}: {cost:,} per evaluation, for each of the up to "
             f"{fanout:,} row(s) one private row becomes there; text counting its most bytes, "
             f"{costs.BYTES_PER_CHAR} a character of a column's max_length, a LIKE pattern's "
             f"length once for each position of its subject after a '%' that more pattern "
             f"follows, and every other term {costs.NODE_COST}), more than dpsql's limit of "
             f"{MAX_ROW_WORK:,}, which keeps the time a query takes from telling whether one "
             "person's rows are there. Use shorter texts and patterns, fewer '%' in a pattern, "
             "fewer joined rows, or simpler expressions")


def check_weight(weight: int, clause: str) -> None:
    if weight > MAX_WEIGHT:
        fail(f"an expression in {clause} stands for {weight:,} column references once the "
             f"columns of its CTEs and subqueries are expanded (a string column counting one "
             f"per {TEXT_UNIT} characters of its max_length, and other terms one per 100, a "
             f"list its values), more than dpsql's limit of "
             f"{MAX_WEIGHT:,}, which keeps the work one row costs from growing with the query; "
             "read derived or long text columns fewer times")


class Binder:
    """Resolves column references of one relation (case-insensitive).

    ``scope`` maps each table name or alias usable as a qualifier to
    {column name: the relation's column}; after a join, two tables' columns of
    the same name are different columns of the relation (``p.pid``, ``v.pid``),
    and an unqualified name that could be either is ambiguous. The entry ``""``
    holds names that are unambiguous whatever the tables say (``USING`` columns).
    A set of qualifiers means one table whose columns keep their names."""

    def __init__(self, table, qualifiers, fanout: int | None = 1) -> None:
        self.table = table
        self.fanout = fanout       # rows one private row becomes here; None: charged by the caller
        self.scope = qualifiers if isinstance(qualifiers, dict) else None
        self.qualifiers = set(qualifiers)

    def label(self) -> str:
        """The relation as the query names it: its table, or its alias or aliases (a subquery,
        CTE or join reads one table but is not it)."""
        if self.table.full_name.lower() in self.qualifiers:
            return self.table.full_name
        return ", ".join(sorted(self.qualifiers)) or self.table.full_name

    def column(self, node: exp.Column):
        name = node.name.lower()
        if name.startswith("_dpsql"):     # the plan's own columns are never the analyst's
            fail(f"the name {node.name!r}{{at}} is reserved for dpsql's own plan columns", node)
        if node.table and node.table.lower() not in self.qualifiers:
            fail(f"unknown table or alias {node.table!r} in {node.sql(ANALYST_DIALECT)}{{at}}", node)
        if self.scope is None:
            return self.table.column(node.name)
        if node.table:
            target = self.scope[node.table.lower()].get(name)
            if target is None:
                known = ", ".join(self.scope[node.table.lower()])
                fail(f"{node.table} has no column {node.name!r}{{at}}; its columns: {known}", node,
                     UNDEFINED_COLUMN)
            return self.table.column(target)
        if name in self.scope.get("", {}):
            return self.table.column(self.scope[""][name])
        candidates = sorted({cols[name] for q, cols in self.scope.items() if q and name in cols})
        if len(candidates) > 1:
            owners = sorted(q for q, cols in self.scope.items() if q and name in cols and "." not in q)
            fail(f"column name {node.name!r} is ambiguous{{at}}: it could be "
                 + " or ".join(f"{q}.{node.name}" for q in owners) + "; qualify it", node)
        if candidates:
            return self.table.column(candidates[0])
        return self.table.column(node.name)

    def bind(self, expr: exp.Expression, clause: str, aliases: dict | None = None,
             keys: list | None = None) -> exp.Expression:
        bound = self._bind(expr, clause, aliases, keys)
        weight = self.weight(bound)
        own = expression_weight(bound, lambda c: 1)
        if weight > MAX_WEIGHT and weight > own:
            check_weight(weight, clause)   # only what CTEs expand; the text's size has its caps
        _expanded(weight - own, clause)
        if bound.find(*GROWS_TEXT) is not None:
            copies = text_copies(bound, self._column_weight)
            if copies > MAX_TEXT_COPIES:
                fail(f"an expression in {clause} copies text columns {copies} times, derived "
                     f"columns expanded and a column counting once per {TEXT_UNIT} characters "
                     f"of its max_length; at most {MAX_TEXT_COPIES} are allowed, so that no "
                     "value can build a text longer than an engine holds")
        if self.fanout is not None:
            charge_work(self.cost(bound), self.fanout, clause)
        return bound

    def cost(self, expr: exp.Expression) -> int:
        """The work one evaluation of bound ``expr`` may take (``costs.row_cost``)."""
        return costs.row_cost(expr, self._column_text, self._column_cost)

    def _column_text(self, node: exp.Column) -> int | None:
        col = self.table.column(node.name) if not isinstance(node.this, exp.Star) else None
        if col is None or col.type != "string":
            return None
        text = getattr(col, "text", None)         # a derived column's, when known
        return text if text is not None else costs.chars_as_bytes(col.weight * col.text_length)

    def _column_cost(self, node: exp.Column) -> int:
        col = self.table.column(node.name) if not isinstance(node.this, exp.Star) else None
        return getattr(col, "cost", 0) if col is not None else 0

    def weight(self, expr: exp.Expression) -> int:
        return expression_weight(expr, self._column_weight)

    def _column_weight(self, node: exp.Column) -> int:
        col = self.table.column(node.name) if not isinstance(node.this, exp.Star) else None
        return getattr(col, "work", 1) if col is not None else 1

    def _bind(self, expr: exp.Expression, clause: str, aliases: dict | None = None,
              keys: list | None = None) -> exp.Expression:
        """Columns of the table first, then (HAVING, ORDER BY) output aliases, as DuckDB.

        In ORDER BY an output alias wins over a column (as in DuckDB). In HAVING a
        name outside any aggregate that is not a grouped column binds to an output
        alias of that name, as SmartNoise does (``HAVING income > 100000`` with
        ``SUM(income) AS income``). ``expr`` is the caller's copy: bound in place."""
        aliases = aliases or {}
        grouped = {k.name.lower() for k in keys or [] if isinstance(k, exp.Column)}

        def rule(node):
            if isinstance(node, exp.Column) and not isinstance(node.this, exp.Star):
                name = node.name.lower()
                is_alias = not node.table and name in aliases and node.find_ancestor(exp.AggFunc) is None
                col = self.column(node)
                if is_alias and (col is None or clause == "ORDER BY"
                                 or (clause == "HAVING" and name not in grouped)):
                    return aliases[name].copy()
                if col is None:
                    known = ", ".join(c for c in self.table.columns
                                      if not c.lower().startswith("_dpsql"))
                    fail(f"unknown column {node.sql(ANALYST_DIALECT)} in {clause}{{at}}; "
                          f"columns of {self.label()}: {known}", node)
                return exp.column(col.name, quoted=True)
            return node
        return expr.transform(rule, copy=False)
