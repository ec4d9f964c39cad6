"""Which statements are catalog statements, and what every relation in one is.

Owns: the check of a catalog statement's shape and relations, and the rewrite that makes
DuckDB resolve each relation to what the check resolved it to. A statement is one
PostgreSQL query (SELECT, or a set operation of them) of allow-listed nodes, functions
and operators. Its identifiers are normalised as PostgreSQL does (unquoted names are
lower case), and every table reference in it is resolved by SQL scope, with sqlglot's
scope analysis (``traverse_scope``), never by matching names across the statement: a
reference is a CTE in its scope, a catalog relation of the allow-list
(``catalog_columns``: pg_catalog's, qualified or not, and information_schema's,
qualified), or an allow-listed table function. Anything else (a data table, a file name,
a CTE out of scope, one of DuckDB's own relations) makes it not a catalog statement.

The rewrite gives every CTE a fresh name, ``dpsql_cte_<n>``, and the references the
scope analysis tied to it that name (keeping the one they were written with as their
alias), and every catalog relation its view's qualified name in ``dpsql_pg`` or
``dpsql_is``: whatever DuckDB's own scoping would do, a name it sees is a CTE of the
statement or one of the catalog's views, nothing else.
"""
from __future__ import annotations

import sqlglot
from sqlglot import exp
from sqlglot.optimizer.normalize_identifiers import normalize_identifiers
from sqlglot.optimizer.scope import ScopeType, traverse_scope

from .catalog_build import SCHEMAS
from .pgcompat import MACROS

PG_CATALOG, INFO_SCHEMA = "pg_catalog", "information_schema"

ALLOWED_FUNCTIONS = frozenset("""
    abs and any array array_agg array_length array_position array_size array_to_string
    between bool_and bool_or btrim case cast char_length coalesce collate concat concat_ws
    count current_catalog current_database current_role current_schema current_schemas
    current_user current_version dense_rank exists explode exploding_generate_series
    generate_subscripts greatest group_concat if ilike in initcap is json_build_object
    least left length like logical_and logical_or lower ltrim max min not nullif or
    position rank regexp_like replace right row_number rtrim session_user
    split_part strpos substr substring sum trim try_cast unnest upper version
""".split()) | set(MACROS)
"""Functions a catalog statement may call: catalog helpers, strings, comparisons, casts."""

WINDOW_FUNCTIONS = frozenset("row_number rank dense_rank count min max sum".split())
TABLE_FUNCTIONS = (exp.ExplodingGenerateSeries, exp.Explode)
_REFUSED_NODES = tuple(getattr(exp, n) for n in (
    "Insert", "Update", "Delete", "Merge", "Create", "Drop", "Alter", "Command", "Copy", "Set",
    "Pragma", "Use", "Attach", "Detach", "Describe", "Show", "LoadData", "Into", "Lock",
    "Transaction", "Commit", "Rollback", "Summarize", "Export", "Install", "Kill", "Grant",
    "Revoke", "TruncateTable", "Analyze", "Placeholder", "SessionParameter", "Lambda",
    "Pivot", "Unpivot", "TableSample", "Lateral", "JoinHint", "Connect", "MatchRecognize",
    "Changes", "HistoricalData", "Version", "Var") if hasattr(exp, n))
_TABLE_ARGS = {"this", "db", "catalog", "alias", "joins", "only"}
QUERY_ROOTS = (exp.Select, exp.Union, exp.Intersect, exp.Except)
_OPERATORS = ("~", "!~", "=", "<>")


MAX_TOKENS = 10_000
"""Most tokens a catalog statement may have (psql's and JDBC drivers' catalog queries have
a few hundred to two thousand). A longer statement is not one: its parse and scope analysis
would cost seconds before the analyst's own checks refused it (issue 33, fourth review: a
chain of 2,500 CTEs, 83,000 characters, took 0.9 s of CPU here before the query planner's
20,000-node limit refused it, and 3.7 s of another analyst's time on a loaded server)."""


def parse(sql: str):
    """The tree of one PostgreSQL query, identifiers normalised, or None (also for more
    than MAX_TOKENS tokens, checked before parsing)."""
    dialect = sqlglot.Dialect.get_or_raise("postgres")
    tokens = dialect.tokenize(sql)
    if len(tokens) > MAX_TOKENS:
        return None
    trees = [t for t in dialect.parser().parse(tokens, sql) if t is not None]
    if len(trees) != 1 or not isinstance(trees[0], QUERY_ROOTS):
        return None
    return normalize_identifiers(trees[0], dialect="postgres")


def shape_ok(tree) -> bool:
    """Every node, function and operator of ``tree`` is one a catalog statement may use."""
    for node in tree.walk():
        if isinstance(node, _REFUSED_NODES) or (
                isinstance(node, exp.Select) and not node.expressions):
            return False
        if isinstance(node, exp.With) and node.args.get("recursive"):
            return False
        if isinstance(node, exp.Func) and function_name(node) not in ALLOWED_FUNCTIONS:
            return False
        if isinstance(node, exp.Window) and not _window_ok(node):
            return False
        if isinstance(node, exp.Dot) and not _dot_ok(node):
            return False
        if isinstance(node, exp.Operator) and operator_name(node) not in _OPERATORS:
            return False
        if isinstance(node, exp.Table) and any(
                v for k, v in node.args.items() if k not in _TABLE_ARGS):
            return False
    return True


def function_name(node: exp.Func) -> str:
    if isinstance(node, exp.Anonymous):
        return node.name.lower()
    return node.sql_name().lower() if hasattr(node, "sql_name") else type(node).__name__.lower()


def operator_name(node: exp.Operator) -> str:
    return str(node.args.get("operator", "")).split(".")[-1].strip()


def _window_ok(node: exp.Window) -> bool:
    inner = node.this
    return isinstance(inner, exp.Func) and function_name(inner) in WINDOW_FUNCTIONS


def _dot_ok(node: exp.Dot) -> bool:
    """``pg_catalog.f(...)`` (and information_schema's ``_pg_expandarray``) are function
    calls; other dotted expressions are column or field paths."""
    if not isinstance(node.expression, exp.Func):
        return True
    if not isinstance(node.this, exp.Identifier):
        return False
    schema = node.this.name
    return schema == PG_CATALOG or (schema == INFO_SCHEMA and function_name(
        node.expression) == "_pg_expandarray")


# ---------------------------------------------------------------- relations by scope


def resolve(tree, allowed: dict):
    """``[(table node, what)]`` for every table reference of ``tree``, where ``what`` is
    ``("cte", the CTE node)``, ``("relation", schema, name)`` or ``("function",)``;
    None if any reference is none of these (or the scopes cannot be built)."""
    try:
        scopes = traverse_scope(tree)
    except Exception:  # noqa: BLE001 - a statement sqlglot cannot scope is not ours
        return None
    found, seen = [], set()
    for scope in scopes:
        for table in scope.tables:
            what = _classify(scope, table, allowed)
            if what is None or id(table) in seen:
                return None
            seen.add(id(table))
            found.append((table, what))
    if any(id(t) not in seen for t in tree.find_all(exp.Table)):
        return None                     # a table reference outside every scope
    return found


def _classify(scope, table: exp.Table, allowed: dict):
    if table.catalog:
        return None
    if not isinstance(table.this, exp.Identifier):
        ok = isinstance(table.this, TABLE_FUNCTIONS) and table.db in ("", PG_CATALOG)
        return ("function",) if ok else None
    source = scope.sources.get(table.alias_or_name)
    if source is table:
        db = table.db or PG_CATALOG
        return ("relation", db, table.name) if table.name in allowed.get(db, ()) else None
    if getattr(source, "scope_type", None) == ScopeType.CTE and not table.db:
        cte = source.expression.parent
        if isinstance(cte, exp.CTE) and cte.alias == table.name:
            return ("cte", cte)
    return None


def rewrite(tree, resolved: list) -> None:
    """Rename CTEs and qualify catalog relations in place, as the module says."""
    names = {}
    for n, cte in enumerate(tree.find_all(exp.CTE)):
        names[id(cte)] = f"dpsql_cte_{n}"
    for table, what in resolved:
        if what[0] == "function":
            table.set("db", None)
            continue
        original = table.this.copy()
        if what[0] == "cte":
            table.set("this", exp.to_identifier(names[id(what[1])]))
        else:
            table.set("this", exp.to_identifier(what[2], quoted=True))
            table.set("db", exp.to_identifier(SCHEMAS[what[1]]))
        if not table.args.get("alias"):
            table.set("alias", exp.TableAlias(this=original))
    for cte in tree.find_all(exp.CTE):
        alias = cte.args["alias"]
        alias.set("this", exp.to_identifier(names[id(cte)]))
