"""Step 2: check a parsed SELECT against the metadata; refuse what is not private.

Owns: every refusal about the shape of the released aggregation. Its FROM
(tables, CTEs, subqueries) is resolved into one relation by
``dpsql.plan.resolve``, which owns the refusals inside it. The output, a
``Query``, is a normalised tree (columns unqualified and named as in that
relation, GROUP BY ordinals and aliases resolved) plus the pieces the planner
needs. Besides FROM, only three parts of the query touch private rows: WHERE,
the GROUP BY keys and the arguments of aggregates. They must be row-level (no
aggregates, windows or subqueries). Everything else is evaluated later on
noisy results only.
"""
from __future__ import annotations

from sqlglot import exp

from ..metadata.model import Metadata
from .outer import compose, split_outer
from .query import Query
from .guard_limits import check_conditions
from .contributions import apply_options, output_name as _output_name, rewrite
from .resolve import resolve
from .qualify import qualify_subqueries
from .aggregates import RELEASED
from .quantiles import normalise_quantile
from .selection import normalise_mode
from ..frontend.allowed import clause_name
from ..frontend.binding import Binder as _Binder
from ..frontend.binding import fail as _fail
from ..frontend.binding import statement_expansion, statement_work, statement_work_total
from ..frontend.dialect import ANALYST_DIALECT

SUPPORTED_AGGREGATES = RELEASED     # dpsql.plan.aggregates
# SmartNoise spellings that sqlglot leaves as anonymous functions.
ANONYMOUS_AGGREGATES = {"var": exp.Variance, "std": exp.Stddev, "var_samp": exp.Variance,
                        "variance_samp": exp.Variance}
# Aggregates sqlglot renames (STRING_AGG is its GroupConcat, written back as LISTAGG):
# a refusal names every spelling (thirteenth review of issue 33).
_RENAMED = {exp.GroupConcat: "STRING_AGG (LISTAGG, GROUP_CONCAT)", exp.ArrayAgg: "ARRAY_AGG (LIST)",
            exp.ArgMax: "MAX_BY (ARG_MAX)", exp.ArgMin: "MIN_BY (ARG_MIN)",
            exp.LogicalAnd: "BOOL_AND (EVERY)", exp.LogicalOr: "BOOL_OR (ANY)"}
OTHER_AGGREGATES = frozenset((
    "arbitrary arg_max_null arg_max_nulls_last arg_min_null arg_min_nulls_last bitstring_agg "
    "combine_aggr count_star decimal_average entropy favg fsum geomean geometric_mean histogram "
    "histogram_exact kahan_sum kurtosis_pop lttb mad mean product reservoir_quantile sem "
    "sum_no_overflow sumkahan variant_group_object").split())
"""DuckDB's aggregates that sqlglot reads as plain functions (review 40, F2: PRODUCT(age) was
refused as a column neither grouped nor aggregated)."""
# SELECT clauses dpsql understands; any other (QUALIFY, WINDOW, sampling, ...) is refused
# rather than silently dropped.
KNOWN_CLAUSES = {"expressions", "from_", "from", "where", "group", "having", "order", "limit",
                 "offset", "distinct", "kind"}
# Functions that read files, the environment or the catalog, or raise on purpose.
FORBIDDEN_FUNCTION_PREFIXES = ("read_", "query", "error", "getenv", "current_setting", "glob",
                               "sniff_", "parquet_", "duckdb_", "pragma_", "pg_", "which_secret",
                               "iceberg_", "delta_", "http", "sqlite_", "postgres_", "mysql_")


def normalise_aggregates(tree: exp.Expression, copy: bool = True) -> exp.Expression:
    """Rewrite rule: SmartNoise's VAR(x)/STD(x) as sqlglot aggregate nodes; every
    quantile spelling (MEDIAN, PERCENTILE_CONT ... WITHIN GROUP, ...) as
    PercentileCont/PercentileDisc(x, p) (``dpsql.plan.quantiles``). ``copy=False``:
    ``tree`` is the caller's own, rewritten in place."""
    def rule(node):
        node = normalise_quantile(node)
        if isinstance(node, exp.Anonymous) and str(node.this).lower() in ANONYMOUS_AGGREGATES:
            if len(node.expressions) != 1:
                _fail(f"{node.this}() takes one column{{at}}", node)
            return ANONYMOUS_AGGREGATES[str(node.this).lower()](this=node.expressions[0])
        return node
    return tree.transform(rule, copy=copy)


def _clauses(tree: exp.Select) -> None:
    unknown = sorted(k for k, v in tree.args.items()
                     if v and k not in KNOWN_CLAUSES | {"with_", "with", "joins"})
    if unknown:
        _fail(f"{', '.join(clause_name(k) for k in unknown)} is not supported in a dpsql query")


def normalise_filters(tree: exp.Expression, copy: bool = True) -> exp.Expression:
    """Rewrite rule: ``agg(x) FILTER (WHERE p)`` as ``agg(CASE WHEN p THEN x END)``.

    An aggregate ignores NULLs, so this is the same aggregate over the rows where p
    holds; ``COUNT(*)`` counts a constant 1 there. ``copy=False``: in place."""
    def rule(node):
        if not isinstance(node, exp.Filter):
            return node
        agg, where = node.this, node.expression
        if not isinstance(agg, SUPPORTED_AGGREGATES) or not isinstance(where, exp.Where):
            _fail("FILTER is supported on COUNT, SUM, AVG, VAR, STDDEV, quantiles, MIN and "
                  "MAX only{at}", node)
        arg = agg.this
        distinct = isinstance(arg, exp.Distinct)
        inner = arg.expressions[0] if distinct and len(arg.expressions) == 1 else arg
        if distinct and len(arg.expressions) != 1:
            _fail("COUNT(DISTINCT ...) takes one expression")
        if isinstance(inner, exp.Star):
            inner = exp.Literal.number(1)
        case = exp.Case(ifs=[exp.If(this=where.this.copy(), true=inner.copy())])
        new = agg.copy()
        new.set("this", exp.Distinct(expressions=[case]) if distinct else case)
        return new
    return tree.transform(rule, copy=copy)


def _check_contained(tree: exp.Select) -> None:
    """Nothing in the query may reach beyond the one table: no other table, subquery,
    COLUMNS(...) expansion, or function that reads files or raises on purpose."""
    _check_contained_parts(list(tree.expressions) + [
        tree.args.get(k) for k in ("where", "group", "having", "order")])


def _check_contained_parts(parts: list) -> None:
    for node in (n for part in parts if part is not None for n in part.walk()):
        if isinstance(node, (exp.Subquery, exp.Select, exp.Exists, exp.Table)):
            _fail("subqueries and references to other tables are not supported; one row's "
                  "answer must depend on that row only")
        if isinstance(node, exp.Columns):
            _fail("COLUMNS(...) is not supported; name the columns")
        if isinstance(node, exp.Func):
            name = (node.name if isinstance(node, exp.Anonymous) else node.sql_name()).lower()
            if name.startswith(FORBIDDEN_FUNCTION_PREFIXES):
                _fail(f"function {name}() is not allowed in a dpsql query{{at}}", node)


def _check_row_level(expr: exp.Expression, clause: str) -> None:
    for node in expr.walk():
        if isinstance(node, (exp.AggFunc,) + SUPPORTED_AGGREGATES):
            _fail(f"aggregate {node.sql(ANALYST_DIALECT)} is not allowed in {clause}{{at}}", node)
        if isinstance(node, exp.Window):
            _fail(f"window functions are not supported ({clause}){{at}}", node)
        if isinstance(node, (exp.Subquery, exp.Select, exp.Exists)) and node is not expr:
            _fail(f"subqueries are not supported ({clause}); they would let one row's "
                  "answer depend on other rows")
        if isinstance(node, exp.Star):
            _fail(f"* is not allowed in {clause}")


def _aggregates_in(expr: exp.Expression) -> list:
    found = []
    for node in expr.walk():
        if isinstance(node, exp.AggFunc):
            if not isinstance(node, SUPPORTED_AGGREGATES):
                _fail(f"aggregate {_RENAMED.get(type(node)) or node.sql(ANALYST_DIALECT)} is "
                      "not supported{at}; supported: COUNT, SUM, AVG, VAR/VARIANCE, STDDEV/STD, "
                      "MEDIAN, QUANTILE_CONT/DISC, PERCENTILE_CONT/DISC, APPROX_QUANTILE, MODE, "
                      "MIN, MAX, CORR, COVAR_POP/SAMP, REGR_SLOPE/INTERCEPT", node)
            inner = [n for n in node.this.walk() if isinstance(n, exp.AggFunc)] if node.this else []
            if inner:
                _fail(f"nested aggregates are not allowed: {node.sql(ANALYST_DIALECT)}{{at}}", node)
            if not (isinstance(node, exp.Count) and isinstance(node.this, exp.Star)):
                _check_row_level(node.this, f"the argument of {node.sql_name()}")
            found.append(node)
    return found


def _check_row_level_except_aggregates(expr: exp.Expression) -> None:
    for node in expr.walk():
        if isinstance(node, exp.Window):
            _fail("window functions are not supported{at}", node)
        if isinstance(node, (exp.Subquery, exp.Select, exp.Exists)):
            _fail("subqueries are not supported; they would let one row's answer depend on other rows")


def _uses_only_keys(expr: exp.Expression, keys: list, clause: str) -> None:
    """Outside aggregates, a row value may appear only inside a GROUP BY key."""
    def visit(node):
        if any(node == key for key in keys) or isinstance(node, exp.AggFunc):
            return
        if isinstance(node, exp.Anonymous) and node.name.lower() in OTHER_AGGREGATES:
            _fail(f"aggregate {node.name.upper()}() is not supported{{at}}; supported: COUNT, "
                  "SUM, AVG, VAR/VARIANCE, STDDEV/STD, MEDIAN, QUANTILE_CONT/DISC, "
                  "PERCENTILE_CONT/DISC, APPROX_QUANTILE, MODE, MIN, MAX, CORR, COVAR_POP/SAMP, "
                  "REGR_SLOPE/INTERCEPT", node)
        if isinstance(node, exp.Column):
            hint = (" (in HAVING a table column wins over an output alias of the same name, "
                    "as in DuckDB: rename the alias)" if clause == "HAVING" else "")
            _fail(f"column {node.sql(ANALYST_DIALECT)} in {clause} is neither grouped nor aggregated"
                  "{at}; dpsql releases aggregates only (add it to GROUP BY or aggregate it)"
                  + hint, node)
        if isinstance(node, exp.Star):
            _fail("SELECT * would release raw rows; select aggregates such as COUNT(*)")
        for child in node.iter_expressions():
            visit(child)
    visit(expr)


def _int_literal(node, what: str):
    if node is None:
        return None
    value = node.expression if isinstance(node, (exp.Limit, exp.Offset)) else node
    if not (isinstance(value, exp.Literal) and not value.is_string and value.this.isdigit()
            and value.this.isascii()):
        _fail(f"{what} must be a non-negative integer literal")
    # lengths first: int() refuses more than 4,300 digits (an error of Python's, not a refusal)
    if len(value.this.lstrip("0")) > 19 or int(value.this) > 2 ** 63 - 1:
        _fail(f"{what} {_digits(value.this)} is beyond the largest {what} ({2 ** 63 - 1}); "
              f"leave {what} out to keep every row")
    return int(value.this)


def _digits(text: str) -> str:
    """A number's digits for a message (a long one cut, with its length)."""
    return text if len(text) <= 24 else f"{text[:20]}... ({len(text):,} digits)"


def _resolve_group(tree: exp.Select, binder: _Binder, items: list) -> list:
    group = tree.args.get("group")
    if group is None:
        return []
    sets = (exp.Rollup, exp.Cube, exp.GroupingSets)
    if group.args.get("rollup") or group.args.get("cube") or group.args.get("grouping_sets") \
            or group.args.get("all") or any(isinstance(k, sets) for k in group.expressions):
        _fail("GROUP BY ALL, and ROLLUP, CUBE or GROUPING SETS inside a subquery or a CTE, "
              "are not supported: name the keys (GROUP BY sex, educ), or group the outer "
              "query by ROLLUP, CUBE or GROUPING SETS")
    keys = []
    by_alias = {_output_name(i).lower(): i for i in items if isinstance(i, exp.Alias)}
    for key in group.expressions:
        while isinstance(key, exp.Paren):       # GROUP BY ((sex)) is GROUP BY sex
            key = key.this
        index = _position(key, "GROUP BY", len(items))
        if index is not None:
            key = items[index - 1].unalias()
        elif (isinstance(key, exp.Column) and not key.table and binder.table.column(key.name) is None
              and key.name.lower() in by_alias):
            key = by_alias[key.name.lower()].this
        _check_row_level(key, "GROUP BY")
        key = binder.bind(key.copy(), "GROUP BY")
        if key not in keys:
            keys.append(key)
    return keys


def validate(tree: exp.Select, metadata: Metadata, public=None) -> Query:
    """Check the query and normalise it; raises ``QueryError`` naming the problem.

    ``public``: a function that reads public tables (``Engine.public_rows``), so that
    their values can be public key sets; without it they are joined but not read."""
    with statement_work(), statement_expansion():
        check_conditions(tree)
        return _validate(tree, metadata, public)


def _validate(tree: exp.Select, metadata: Metadata, public) -> Query:
    original = tree        # the query as asked (parameters bound): its canonical text
    tree = rewrite(tree, metadata)     # BigQuery's differential-privacy syntax, if any
    tree, outer = split_outer(tree)    # an outer query over one aggregation: its inner one
    tree = normalise_filters(normalise_aggregates(normalise_mode(tree)), copy=False)
    _clauses(tree)
    tree = qualify_subqueries(tree, metadata)   # names in subqueries scoped as SQL does
    # FROM, WITH, subqueries, joins, semi-joins of WHERE: one relation
    relation, qualifiers, tree = resolve(tree, metadata, public)
    table = relation.table()
    _check_contained(tree)
    window = tree.find(exp.Window)
    if window is not None:
        _fail("window functions (OVER) are not supported{at}", window)
    binder = _Binder(table, qualifiers, relation.fanout)
    items = list(tree.expressions)
    for item in items:
        if isinstance(item, exp.Star) or (isinstance(item, exp.Column) and isinstance(item.this, exp.Star)):
            _fail("SELECT * would release raw rows; select aggregates such as COUNT(*)")
    where = tree.args.get("where")
    if where is not None:
        _check_row_level(where.this, "WHERE")
        where = binder.bind(where.this.copy(), "WHERE")
    keys = _resolve_group(tree, binder, items)
    keys, distinct = _select_distinct(tree, binder, items, keys)
    outputs, aggregates = _outputs(items, binder, keys)
    aliases = {name.lower(): expr for name, expr in reversed(outputs)}
    having, in_having = _having(tree, binder, aliases, keys)
    order, in_order = _order(tree, outputs, binder, aliases, keys, distinct)
    aggregates += in_having + in_order
    if not aggregates and not keys:
        _fail("the query selects no aggregate; dpsql releases aggregates such as COUNT(*), "
              "SUM(col) or AVG(col), optionally with GROUP BY")
    unique = []
    for agg in aggregates:
        if agg not in unique:
            unique.append(agg)
    query = Query(
        tree=original, table=table, relation=relation, where=where, keys=keys,
        aggregates=unique, outputs=outputs, having=having, order=order,
        limit=_int_literal(tree.args.get("limit"), "LIMIT"),
        offset=_int_literal(tree.args.get("offset"), "OFFSET"), distinct=distinct)
    if outer is not None:
        query = compose(query, outer, _int_literal(outer.select.args.get("limit"), "LIMIT"),
                        _int_literal(outer.select.args.get("offset"), "OFFSET"))
        _check_contained_parts([e for _, e in query.outputs] + [query.having] + [
            o.this for o in query.order] + ([query.cut.where] if query.cut else []))
    query = apply_options(query)
    query.work = statement_work_total() or 0     # every part so far (dpsql.plan.precut)
    return query


def _select_distinct(tree: exp.Select, binder: _Binder, items: list, keys: list) -> tuple:
    """(keys, distinct): ``SELECT DISTINCT`` without aggregates becomes a GROUP BY."""
    distinct = bool(tree.args.get("distinct"))
    if distinct and tree.args["distinct"].args.get("on") is not None:
        _fail("DISTINCT ON is not supported: which row it keeps depends on the order of rows")
    if distinct and not keys and not any(i.find(exp.AggFunc) for i in items):
        # SELECT DISTINCT a, b is GROUP BY a, b (and then releases keys only).
        for item in items:
            _check_row_level(item.unalias(), "SELECT DISTINCT")
        keys = [binder.bind(item.unalias().copy(), "SELECT DISTINCT") for item in items]
        distinct = False
    return keys, distinct


def _outputs(items: list, binder: _Binder, keys: list) -> tuple:
    """(outputs as (name, expression), the aggregates they use) of the SELECT list."""
    aggregates: list = []
    outputs = []
    for item in items:
        name = _output_name(item)
        expr = binder.bind(item.unalias().copy(), "SELECT")
        aggregates += _aggregates_in(expr)
        _uses_only_keys(expr, keys, "SELECT")
        outputs.append((name, expr))
    seen = set()
    for name, _ in outputs:
        if name.lower() in seen:
            _fail(f"two output columns are named {name!r}; give each a different alias")
        seen.add(name.lower())
    return outputs, aggregates


def _having(tree: exp.Select, binder: _Binder, aliases: dict, keys: list) -> tuple:
    """(bound HAVING or None, the aggregates it uses)."""
    having = tree.args.get("having")
    if having is None:
        return None, []
    _check_row_level_except_aggregates(having.this)
    having = binder.bind(having.this.copy(), "HAVING", aliases, keys)
    aggregates = _aggregates_in(having)
    _uses_only_keys(having, keys, "HAVING")
    return having, aggregates


def _order(tree: exp.Select, outputs: list, binder: _Binder, aliases: dict, keys: list,
           distinct: bool) -> tuple:
    """(resolved ORDER BY terms, the aggregates they use)."""
    order, aggregates = [], []
    order_node = tree.args.get("order")
    for ordered in (order_node.expressions if order_node else []):
        resolved = _resolve_order(ordered, outputs, binder, aliases, keys, distinct)
        order.append(resolved)
        if not (isinstance(resolved.this, exp.Column) and resolved.this.name.startswith("_o")):
            aggregates += _aggregates_in(resolved.this)
    return order, aggregates


def _position(key: exp.Expression, clause: str, size: int) -> int | None:
    """The 1-based position of ``GROUP BY 2``/``ORDER BY 2``, or None if not a number."""
    if not (isinstance(key, exp.Literal) and not key.is_string):
        return None
    if not (key.this.isdigit() and key.this.isascii()):
        _fail(f"{clause} {_digits(key.this)} is not a position; write a whole number from 1 "
              f"to {size}, or name a column")
    index = int(key.this) if len(key.this.lstrip("0")) <= 19 else None
    if index is None or not 1 <= index <= size:
        _fail(f"{clause} {_digits(key.this.lstrip('0') or '0')} is out of range: the SELECT "
              f"list has {size} items")
    return index


def _resolve_order(ordered: exp.Ordered, outputs: list, binder: _Binder, aliases: dict,
                   keys: list, distinct: bool) -> exp.Ordered:
    """ORDER BY binds positions and output aliases first, then expressions (as DuckDB).

    An expression that is not an output is evaluated over keys and aggregates, like
    a SELECT item (``ORDER BY CAST(gender AS INTEGER) * -1``)."""
    key = ordered.this
    index = _position(key, "ORDER BY", len(outputs))
    if index is not None:
        target = index - 1
    elif isinstance(key, exp.Column) and not key.table and key.name.lower() in aliases:
        target = [n.lower() for n, _ in outputs].index(key.name.lower())
    else:
        bound = binder.bind(key.copy(), "ORDER BY", aliases)
        matches = [i for i, (_, expr) in enumerate(outputs) if expr == bound]
        if not matches:
            if distinct:
                _fail(f"ORDER BY {key.sql(ANALYST_DIALECT)} is not in the output of SELECT DISTINCT"
                      "{at}; order by a selected column, alias or position", key)
            _check_row_level_except_aggregates(bound)
            _uses_only_keys(bound, keys, "ORDER BY")
            return exp.Ordered(this=bound, desc=ordered.args.get("desc"),
                               nulls_first=ordered.args.get("nulls_first"))
        target = matches[0]
    return exp.Ordered(this=exp.column(f"_o{target}", quoted=True),
                       desc=ordered.args.get("desc"), nulls_first=ordered.args.get("nulls_first"))
