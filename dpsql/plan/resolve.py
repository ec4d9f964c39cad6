"""Name resolution of FROM: tables, CTEs and subqueries, nested to any depth.

Owns: which relation each name in a FROM clause means (a CTE in scope first,
then a metadata table), the clauses allowed inside a CTE or subquery, and the
choice between a row-level select and a per-person aggregation for each.
"""
from __future__ import annotations

from sqlglot import exp

from ..metadata import Table
from ..sql.binding import Binder, fail
from .per_person import per_person
from .relations import ROW_CLAUSES, Relation, scan, select_rows


class Resolver:
    """Resolves the FROM of a query, with the CTEs in scope, into a relation."""

    def __init__(self, metadata):
        self.metadata = metadata

    def from_clause(self, tree: exp.Select, env: dict) -> tuple:
        """(relation, qualifiers) of ``tree``'s FROM, after its own WITH."""
        env = self.with_clause(tree, env)
        if tree.args.get("joins"):
            fail("joins are not supported yet; query one table, CTE or subquery")
        source = tree.args.get("from_") or tree.args.get("from")
        if source is None:
            fail("the query has no FROM clause; name a table from the metadata")
        return self.relation_of(source.this, env)

    def with_clause(self, tree: exp.Select, env: dict) -> dict:
        with_ = tree.args.get("with_") or tree.args.get("with")
        if with_ is None:
            return env
        if with_.args.get("recursive"):
            fail("WITH RECURSIVE is not supported")
        env = dict(env)
        for cte in with_.expressions:
            name = cte.alias_or_name.lower()
            body = cte.this
            if not isinstance(body, exp.Select):
                fail(f"the CTE {cte.alias_or_name!r} must be one SELECT (UNION, INTERSECT and "
                     "EXCEPT are not supported)")
            if cte.args["alias"].columns:
                fail(f"column names after the CTE name {cte.alias_or_name!r} are not supported; "
                     "alias the columns inside it")
            env[name] = self.select(body, env, cte.alias_or_name)
        return env

    def relation_of(self, node: exp.Expression, env: dict) -> tuple:
        if isinstance(node, exp.Subquery):
            if node.args.get("alias") is not None and node.args["alias"].columns:
                fail("column names after a subquery's alias are not supported; alias the "
                     "columns inside it")
            if not isinstance(node.this, exp.Select):
                fail("a subquery in FROM must be one SELECT (UNION, INTERSECT and EXCEPT are "
                     "not supported)")
            rel = self.select(node.this, env, node.alias or "subquery")
            return rel, ({node.alias.lower()} if node.alias else set())
        if not isinstance(node, exp.Table) or not isinstance(node.this, exp.Identifier):
            fail("FROM must name a table from the metadata, a CTE or a subquery (no table "
                 "functions)")
        extra = sorted(k for k, v in node.args.items() if v and k not in ("this", "db", "catalog", "alias"))
        if extra:
            fail(f"{', '.join(k.upper() for k in extra)} on the table is not supported "
                 "(sampling or pivoting would change whose rows are counted)")
        if node.alias and node.args["alias"].columns:
            fail("column names after a table's alias are not supported")
        parts = [p for p in (node.catalog, node.db, node.name) if p]
        if len(parts) == 1 and parts[0].lower() in env:
            rel = env[parts[0].lower()]
            return rel, {(node.alias or node.name).lower()}
        table = self.table(node, ".".join(parts))
        names = {node.alias.lower()} if node.alias else {node.name.lower(), table.full_name.lower()}
        return scan(table), names

    def table(self, node, name: str) -> Table:
        matches = self.metadata.matching_tables(name)
        if len(matches) > 1:
            fail(f"table name {name!r} is ambiguous{{at}}: it matches "
                 f"{', '.join(t.full_name for t in matches)}; write schema.table", node)
        if not matches:
            known = ", ".join(sorted(self.metadata.tables)) or "none"
            fail(f"unknown table {name!r}{{at}}; tables in the metadata: {known}", node)
        table = matches[0]
        if table.privacy_unit_problem:
            fail(table.privacy_unit_problem)
        return table

    # -- one SELECT inside FROM/WITH -----------------------------------------
    def select(self, tree: exp.Select, env: dict, name: str) -> Relation:
        if tree.args.get("limit") is not None or tree.args.get("offset") is not None:
            fail(f"LIMIT/OFFSET inside {name!r} is not supported: which rows it keeps would "
                 "depend on other persons' rows")
        unknown = sorted(k for k, v in tree.args.items() if v and k not in ROW_CLAUSES | {"joins"})
        if unknown:
            fail(f"{', '.join(k.upper() for k in unknown)} is not supported inside {name!r}")
        child, qualifiers = self.from_clause(tree, env)
        for part in [*tree.expressions, tree.args.get("where"), tree.args.get("group"),
                     tree.args.get("having")]:
            if part is None:
                continue
            for node in part.walk():
                if isinstance(node, exp.Window):
                    fail(f"window functions are not supported (inside {name!r}){{at}}", node)
                if isinstance(node, (exp.Subquery, exp.Select, exp.Exists)):
                    fail(f"subqueries in expressions are not supported (inside {name!r}): "
                         "scalar and correlated subqueries make one row's value depend on "
                         "other rows")
        binder = Binder(child.table(), qualifiers)
        grouped = tree.args.get("group") is not None or tree.args.get("having") is not None or any(
            isinstance(n, exp.AggFunc) for item in tree.expressions for n in item.walk())
        if grouped:
            return per_person(tree, child, binder, name)
        return select_rows(tree, child, binder, name)


def resolve(tree: exp.Select, metadata) -> tuple:
    """(relation, qualifiers) that the top-level query aggregates."""
    return Resolver(metadata).from_clause(tree, {})
