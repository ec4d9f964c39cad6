"""The widest row a catalog statement can return, known before it runs.

Owns: the bound on a result row's size. DuckDB hands its result to the server a chunk of
up to 2,048 rows at a time, each column flattened, and that memory is not under its
memory limit: 400 columns of a 900-byte constant took 1.1 GB for one chunk. So a
statement whose widest possible row is over ``MAX_ROW_BYTES`` is refused before it runs
(54000), which keeps one chunk under 2,048 x ``MAX_ROW_BYTES`` (32 MiB).

The bound follows the statement's scopes (sqlglot's ``traverse_scope``): a column of a
catalog relation is as wide as that column's widest value (known when the catalog is
built), a column of a CTE or subquery as its expression there, ``*`` as all columns of
its sources, a literal as its text, a number, boolean or comparison 16 bytes, CASE and
COALESCE as their widest branch; anything else is as wide as the widest value a statement
can build (``catalog_limits.MAX_VALUE_BYTES``) or that the catalog holds; session
functions (``current_user``, ...) and ``pgcompat``'s macros answer at most 80 bytes.
"""
from __future__ import annotations

from sqlglot import exp
from sqlglot.optimizer.scope import Scope, traverse_scope

from .catalog_build import width
from .catalog_limits import MAX_VALUE_BYTES
from .catalog_scope import PG_CATALOG
from .pgcompat import MACROS, TooLarge

MAX_ROW_BYTES = 16 << 10
"""Widest result row (one chunk of them: 32 MiB)."""

_SMALL = (exp.Predicate, exp.Connector, exp.Not, exp.Count, exp.Length, exp.Null,
          exp.Boolean, exp.Add, exp.Sub, exp.Mul, exp.Div, exp.IntDiv, exp.Mod, exp.Neg,
          exp.Abs, exp.Sum, exp.Avg, exp.ArraySize, exp.RowNumber, exp.Exists, exp.In,
          exp.Between, exp.Is, exp.Like, exp.ILike, exp.RegexpLike, exp.StrPosition)
_NAMES = (exp.CurrentDatabase, exp.CurrentUser, exp.CurrentSchema, exp.CurrentVersion,
          exp.SessionUser, exp.CurrentRole) if hasattr(exp, "CurrentRole") else ()
_EITHER = (exp.Case, exp.If, exp.Coalesce, exp.Nullif, exp.Greatest, exp.Least, exp.Paren,
           exp.Max, exp.Min, exp.Distinct)


def check(tree, widths: dict) -> None:
    """TooLarge if a row of ``tree``'s result can be wider than ``MAX_ROW_BYTES``."""
    bound = Bound(tree, widths).row()
    if bound > MAX_ROW_BYTES:
        raise TooLarge(f"a catalog query's rows are at most {MAX_ROW_BYTES >> 10} KiB (this "
                       f"one's could be {bound:,} bytes)")


class Bound:
    """Widths of one statement's rows and values."""

    def __init__(self, tree, widths: dict) -> None:
        self.widths = widths
        self.scopes = {id(s.expression): s for s in traverse_scope(tree)}
        self.root = self.scopes[id(tree)]
        widest = max((w for cols in widths.values() for w in cols.values()), default=16)
        self.most = max(widest, width("x" * MAX_VALUE_BYTES))

    def row(self, scope: Scope | None = None) -> int:
        """The widest row of ``scope`` (the statement's by default)."""
        scope = scope or self.root
        query = scope.expression
        if isinstance(query, exp.SetOperation):
            return max((self.row(s) for s in scope.set_operation_scopes), default=self.most)
        if not isinstance(query, exp.Select):
            return self.most
        return sum(self.value(e, scope) for e in query.expressions)

    def value(self, node, scope: Scope) -> int:
        """The widest value of expression ``node`` in ``scope``."""
        if isinstance(node, exp.Alias):
            return self.value(node.this, scope)
        if isinstance(node, exp.Star):
            return sum(self.source(s) for s in scope.selected_sources.values())
        if isinstance(node, exp.Column):
            return self.column(node, scope)
        if isinstance(node, exp.Literal):
            return width(node.this if node.is_string else None)
        if isinstance(node, _SMALL):
            return width(None)
        if isinstance(node, _NAMES) or (isinstance(node, exp.Anonymous) and (
                node.name.lower() in MACROS or node.name.lower() == "version")):
            return width("x" * 80)      # a name, a version, or one of pgcompat's answers
        if isinstance(node, exp.Dot) and isinstance(node.expression, exp.Func):
            return self.value(node.expression, scope)          # pg_catalog.f(...)
        if isinstance(node, exp.Cast):
            return max(self.value(node.this, scope), 48)
        if isinstance(node, _EITHER):
            return max((self.value(c, scope) for c in node.iter_expressions()),
                       default=width(None))
        if isinstance(node, exp.Subquery) and id(node.this) in self.scopes:
            return self.row(self.scopes[id(node.this)])
        return self.most

    def column(self, node: exp.Column, scope: Scope) -> int:
        if isinstance(node.this, exp.Star):
            found = scope.sources.get(node.table)
            return self.source(found) if found is not None else self.most
        if node.table:
            found = scope.sources.get(node.table)
            return self.named(found, node.name) if found is not None else self.most
        candidates = [self.named(s, node.name) for s in scope.selected_sources.values()]
        return max(candidates) if candidates else self.most

    def source(self, source) -> int:
        """All columns of a FROM source (a (node, source) pair or the source)."""
        source = source[1] if isinstance(source, tuple) else source
        if isinstance(source, Scope):
            return self.row(source)
        relation = self._relation(source)
        return sum(relation.values()) if relation is not None else self.most

    def named(self, source, name: str) -> int:
        """Column ``name`` of a FROM source."""
        source = source[1] if isinstance(source, tuple) else source
        if isinstance(source, Scope):
            query = source.expression
            if isinstance(query, exp.Select):
                for select in query.expressions:
                    if select.alias_or_name == name and not isinstance(select, exp.Star):
                        return self.value(select, source)
            return self.row(source)
        relation = self._relation(source)
        return relation.get(name, self.most) if relation is not None else self.most

    def _relation(self, table):
        if not isinstance(table, exp.Table) or not isinstance(table.this, exp.Identifier):
            return None
        return self.widths.get((table.db or PG_CATALOG, table.name))
