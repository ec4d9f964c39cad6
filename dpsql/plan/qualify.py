"""Rewrite rule: unqualified columns of subqueries in WHERE, qualified as SQL scopes them.

Owns: which table an unqualified name inside ``EXISTS (...)`` or ``IN (SELECT ...)``
means. SQL looks for it in the subquery's own FROM first, then in each enclosing query
outward: ``SELECT o_priority, COUNT(*) FROM orders WHERE EXISTS (SELECT * FROM lineitems
WHERE l_order_id = o_order_id)`` compares lineitems' ``l_order_id`` with the outer
orders' ``o_order_id``. sqlglot's optimizer does the scoping
(``sqlglot.optimizer.qualify_columns``, over a schema built from the metadata), on a
copy of the query; the names it finds are written onto the analyst's own column nodes
(which keep their positions in the text for error messages), so the semi-join planner
(``dpsql.plan.resolve``) sees which columns are the outer query's.

Only columns inside a subquery of a WHERE are touched: the names of each query level
itself are bound by ``dpsql.frontend.binding``, with its own messages (an ambiguous
name is refused there). A name sqlglot cannot place (unknown, or in a relation whose
columns it cannot see) stays as written, and the planner says what is wrong with it.
"""
from __future__ import annotations

from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.optimizer.normalize_identifiers import normalize_identifiers
from sqlglot.optimizer.qualify_columns import qualify_columns
from sqlglot.optimizer.scope import Scope, traverse_scope
from sqlglot.schema import MappingSchema

from ..frontend.allowed import ENGINE_TYPES
from ..frontend.dialect import ANALYST_DIALECT


def schema_of(metadata) -> MappingSchema:
    """The metadata's tables as sqlglot's schema: collection.schema.table -> column types."""
    nested: dict = {}
    for table in metadata.tables.values():
        columns = {c.name: ENGINE_TYPES.get(c.type, "VARCHAR") for c in table.columns.values()}
        nested.setdefault(metadata.collection or "_", {}).setdefault(
            table.schema or "_", {})[table.name] = columns
    return MappingSchema(nested, dialect=ANALYST_DIALECT, normalize=True)


def qualify_subqueries(tree: exp.Expression, metadata) -> exp.Expression:
    """``tree`` with each unqualified column inside a WHERE's subquery qualified by the
    table or alias SQL's scoping gives it (``tree`` itself, unchanged, when it has none)."""
    if not _unqualified(tree):
        return tree
    tree = tree.copy()
    originals = {}
    for i, col in enumerate(_unqualified(tree)):
        col.meta["dpsql_column"] = i
        originals[i] = col
    work = normalize_identifiers(tree.copy(), dialect=ANALYST_DIALECT)
    schema = schema_of(metadata)
    try:
        work = qualify_columns(work, schema=schema, expand_alias_refs=False,
                               expand_stars=True, allow_partial_qualification=True)
    except (SqlglotError, KeyError, ValueError):
        return tree                # the planner explains what it cannot resolve
    seen = set()
    for scope in traverse_scope(work):          # innermost first; a correlated column is
        for col in scope.columns:               # listed again in the enclosing scopes
            i = col.meta.get("dpsql_column")
            if i is None or not col.table or i in seen:
                continue
            seen.add(i)
            if col.table not in scope.sources and any(
                    _may_hold(source, col.name, schema) for source in scope.sources.values()):
                continue         # ambiguous in its own FROM: the planner says so
            originals[i].meta["dpsql_written"] = originals[i].sql(ANALYST_DIALECT)
            originals[i].set("table", exp.to_identifier(col.table))
    return tree


def _may_hold(source, name: str, schema: MappingSchema) -> bool:
    """Whether a FROM item of a subquery may have a column ``name`` (then an unqualified
    ``name`` is not the outer query's, whatever sqlglot concluded: SQL looks inside first)."""
    try:
        if isinstance(source, exp.Table):
            return name.lower() in {c.lower() for c in schema.column_names(source)}
        selects = source.expression.named_selects if isinstance(source, Scope) else None
    except (SqlglotError, KeyError, ValueError, AttributeError):
        return True
    if selects is None or "*" in selects or not selects:
        return True
    return name.lower() in {c.lower() for c in selects}


def _in_subquery(node: exp.Expression) -> bool:
    """Whether ``node`` lies inside an EXISTS or the subquery of an IN."""
    child, at = node, node.parent
    while at is not None:
        if isinstance(at, exp.Exists) or (isinstance(at, exp.In) and child is at.args.get("query")):
            return True
        child, at = at, at.parent
    return False


def _unqualified(tree: exp.Expression) -> list:
    return [c for c in tree.find_all(exp.Column)
            if not c.table and not isinstance(c.this, exp.Star) and _in_subquery(c)]
