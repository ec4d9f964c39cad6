"""Step 3: rewrite a validated query into a bounded plan, and cost it.

Owns: the bounded aggregate query run on the engine (typed, filtered,
truncated to ``max_ids`` rows per person, clamped), the threshold for unknown group keys, and the
post-processing query over noisy results. The plan's cost is computed here,
from each statistic's stability map and mechanism, before anything runs.

Thresholding (stability-based histogram, seed 003): when GROUP BY keys are not
public, a group is released only if a noisy count clears tau, the smallest value
with ``L0 * P(1 + noise >= tau) <= delta_t`` (plus ``per_key - 1`` for a count of
rows). A person touches at most L0 groups (k = max_ids, or max_groups), so the keys
that exist only because of one person all appear together with probability at
most delta_t. The count is of rows or of distinct persons, whichever needs the
smaller count to clear its noise (``dpsql.plan.threshold``).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from sqlglot import exp

from ..errors import InternalError, QueryError
from ..frontend.parse import literal
from ..frontend.literal_lists import MIN_LISTED, listed, listed_rows
from ..frontend.literals import INT64
from .quantiles import BOUNDED_CTE, counts_with_histogram, histograms, with_histograms
from ..privacy.params import Privacy
from ..privacy.spend import ZERO, Spend
from .rewrite import column, data_type, substitute
from ..frontend.allowed import ENGINE_TYPES
from ..frontend.typecheck import Checker, check, float_literal, predicate
from .aggregates import aggregate_type, plan_aggregates
from .statistics import Statistic, StatisticSet
from .nodes import epoch_us, every_node, truncated, truncated_groups
from .guard_limits import check_released_rows
from .lift import MAX_GRID, lift
from .precut import PRE_CUT_WORK, needs_precut, note as precut_note, precut
from .query import Query
from .relations import Field, censored, check_work
from ..frontend.binding import expression_weight
from .split import query_events, split
from .selection import plan_selection
from .threshold import Threshold, choose_threshold
from ..frontend.dialect import ANALYST_DIALECT
from ..frontend.bigquery import render

NOISY_TABLE = "_noisy"


@dataclass
class Plan:
    query: Query
    exact: exp.Select                      # the bounded plan, run on the engine
    post: exp.Select                       # over the noisy statistics, one row per group
    statistics: list
    key_names: list
    output_names: list
    public_keys: bool = False
    threshold: Statistic | None = None
    tau: float | None = None
    threshold_delta: float = 0.0
    threshold_choice: Threshold | None = None   # which count, and why (explain)
    cost: tuple = (0.0, 0.0)               # (epsilon, delta) of this query alone
    spend: Spend = ZERO                    # what a session adds (dpsql.privacy.spend)
    events: tuple = ()                     # its privacy events (dpsql.privacy.composition)
    notes: list = field(default_factory=list)
    passthrough: list | None = None        # statistic per output when post-processing is a no-op
    key_kinds: list = field(default_factory=list)   # language type of each group key
    selection: bool = False                # only the top k keys are released (plan/selection)

    def __post_init__(self) -> None:
        # The query as the analyst wrote it, parameters bound: release keys and the ledger.
        # The plan itself is engine-neutral: only an engine renders it (dpsql.plan.dialect).
        # (Rendered from a copy each: sqlglot's generator rewrites some trees it renders,
        # WITHIN GROUP, so a tree rendered once is not rendered again.)
        self.bound_sql = render(self.query.tree, ANALYST_DIALECT)
        # What makes two requests one release: identifiers match metadata names without
        # regard to case, so their case is not part of it (text literals keep theirs).
        self.key_sql = render(_case_free(self.query.tree.copy()), ANALYST_DIALECT, own=True)


def _case_free(tree: exp.Expression) -> exp.Expression:
    """``tree`` (the caller's copy) with every identifier lower case and unquoted."""
    for ident in tree.find_all(exp.Identifier):
        ident.set("this", ident.this.lower())
        ident.set("quoted", False)
    return tree


def metadata_types(table) -> dict:
    return {c.name.lower(): c.type for c in table.columns.values()}


def _contribution_bound(relation) -> int:
    """Most rows one person has in the relation (1 for a row-privacy table; a UNION ALL
    of row-privacy relations holds each row once per part)."""
    return max(1, int(relation.k))


def _public_key_columns(query: Query) -> list | None:
    """The metadata ``values`` of every key, if all keys are plain columns that have them."""
    domains = []
    for key in query.keys:
        col = query.table.column(key.name) if isinstance(key, exp.Column) else None
        if col is None or col.values is None:
            return None
        domains.append(col)
    # The same cap on every path (here and dpsql.plan.lift), before any grid is built:
    # beyond it the keys fall back to the threshold (docs/sql.md).
    size = 1
    for col in domains:
        size *= max(len(col.values), 1)
        if size > MAX_GRID:
            return None
    return domains


def _rows(query: Query, pid: str | None, domains: list | None, types: dict) -> exp.Select:
    """Row-level filtering of the typed relation, before truncation so the kept rows
    are ones the query uses."""
    conditions = []
    if query.where is not None:
        conditions.append(predicate(query.where, types, "WHERE"))
    if pid is not None:
        conditions.append(exp.Not(this=exp.Is(this=column(pid), expression=exp.Null())))
    for col in domains or []:
        values = _listed_key(col)
        if not col.values:          # no value is possible (each overflows: NULL): no row
            conditions.append(exp.false())
            continue
        conditions.append(exp.In(this=column(col.name), expressions=[
            exp.TryCast(this=literal(v), to=data_type(ENGINE_TYPES[col.type]))
            for v in col.values] if values is None else [listed(values, False, ENGINE_TYPES["int"])]))
    rows = exp.select(exp.Star()).from_(query.relation.source("_src"), copy=False)
    for cond in conditions:      # each built here: used as it is, not copied
        rows = rows.where(exp.Paren(this=cond), copy=False)
    return rows


def key_output(node: exp.Expression, kind: str) -> exp.Expression:
    """A group key in a type that always converts to numpy: keys leave the engine as
    BIGINT, DOUBLE, VARCHAR or BOOLEAN; times as microseconds since 1970 (release
    turns them back into datetime64), so no key value can fail the conversion."""
    if kind == "int":   # a column of the typed relation is BIGINT already
        return node if isinstance(node, exp.Column) else exp.TryCast(
            this=node, to=data_type("BIGINT"))
    if kind == "float":
        # DuckDB puts 0.0 and -0.0 (and NaNs of any sign) in one group and shows the value
        # of whichever row it met first: one canonical value per group, or that would leak.
        value = exp.TryCast(this=node, to=data_type("DOUBLE"))
        return exp.Case(ifs=[exp.If(this=exp.IsNan(this=value.copy()), true=exp.Cast(
            this=exp.Literal.string("nan"), to=data_type("DOUBLE")))],
            default=exp.Add(this=value, expression=float_literal(0.0)))
    if kind == "datetime":
        return epoch_us(node)
    if kind == "date":
        return epoch_us(exp.TryCast(this=node, to=data_type("TIMESTAMP")))
    return node


def _listed_key(col) -> tuple | None:
    """A public key's values, if they are written as one list node (``listed`` in its
    filter, ``listed_rows`` in its grid), or None to write them value by value: at least
    ``MIN_LISTED`` integers of an integer key, each within BIGINT (``TRY_CAST(v AS BIGINT)``
    is then ``v`` itself). An engine renders the node once (DuckDB: one array constant) or
    expands it into the ``TRY_CAST``s it stands for (``dpsql.plan.dialect``)."""
    values = col.values
    if col.type != "int" or len(values) < MIN_LISTED or \
            any(type(v) is not int or not INT64[0] <= v <= INT64[1] for v in values):
        return None
    return tuple(values)


def _grid(domains: list) -> exp.Select:
    """Every combination of public key values, in the keys' output representation."""
    grid = None
    for i, col in enumerate(domains):
        values = _listed_key(col)
        inline = exp.Values(expressions=[exp.Tuple(expressions=[exp.TryCast(
            this=literal(v), to=data_type(ENGINE_TYPES[col.type]))]) for v in col.values or [None]]
            if values is None else [listed_rows(values, ENGINE_TYPES["int"])],
            alias=exp.TableAlias(this=exp.to_identifier(f"_g{i}"),
                                 columns=[exp.to_identifier(f"_v{i}", quoted=True)]))
        # The output representation written once, over the list's column (not per value:
        # a float key's is a CASE of ten nodes, rendered for each of up to 1,000 values).
        output = exp.Subquery(this=exp.select(exp.alias_(
            key_output(column(f"_v{i}"), col.type), f"_k{i}", quoted=True)).from_(
            inline, copy=False), alias=exp.TableAlias(this=exp.to_identifier(f"_o{i}")))
        # DISTINCT: two listed values may be one engine value ('2020-01-01' and
        # '2020-01-01 00:00:00'); one group must be released once, with one share of noise.
        # NOT NULL: a listed value the engine type cannot hold (an integer beyond 64 bits)
        # converts to NULL, and must not release the NULL group in its place.
        values = exp.Subquery(this=exp.select(exp.Star()).from_(output, copy=False).distinct(
            copy=False).where(exp.Not(this=exp.Is(this=column(f"_k{i}"), expression=exp.Null())),
                              copy=False), alias=exp.TableAlias(this=exp.to_identifier(f"_d{i}")))
        grid = (exp.select(exp.Star()).from_(values, copy=False) if grid is None
                else grid.join(values, join_type="CROSS", copy=False))
    return grid


def check_rows_independent(tree: exp.Expression) -> None:
    """The plan's invariant (docs/privacy.md): every row depends only on its own person's
    rows and public data. No step may number, rank or order rows across persons, so every
    window in a plan is partitioned (by the person, in truncation)."""
    for node in every_node(tree):
        if type(node) is exp.Window and not node.args.get("partition_by"):
            raise InternalError(f"dpsql planned a window over all rows ({node.sql(ANALYST_DIALECT)[:60]}); "
                                "this is a bug, please report it")


def _expanded_weight(query: Query) -> int:
    """The heaviest row-level expression of the released aggregation, if it reads derived
    columns (an expression of base columns only is bounded by the query's size)."""
    fields = query.relation.fields
    heaviest = 1
    for e in [query.where, *query.keys, *query.aggregates]:
        if e is not None:
            weight = expression_weight(e, lambda c: fields.get(c.name.lower(), Field("", "")).weight)
            if weight > expression_weight(e, lambda c: 1):
                heaviest = max(heaviest, weight)
    return heaviest


def build_plan(query: Query, privacy: Privacy, pre_cut_work: int = PRE_CUT_WORK) -> Plan:
    """The bounded plan of ``query`` over its relation, and its cost (``pre_cut_work``: the
    engine's most work per stored row before the cut, ``dpsql.plan.precut``)."""
    check_work(query.relation, _expanded_weight(query))
    query = lift(query)
    table = query.table
    types = metadata_types(table)
    keys = _typed_keys(query, types)
    k = _contribution_bound(query.relation)
    pid = query.relation.pid
    domains = _public_key_columns(query) if query.keys else None
    if domains:
        check_released_rows(query, math.prod(max(len(col.values), 1) for col in domains))
    # A key is released without a threshold only if every column it reads comes from
    # tables whose owner says censor_dims: false (carried per column through joins,
    # UNION ALL, subqueries and per-person aggregation: Field.censored).
    needs_threshold = bool(query.keys) and domains is None and any(
        censored(key, query.relation.fields) for key in query.keys)
    stats = StatisticSet(k, bool(query.keys), pid, privacy.mechanisms, types)
    truncating = pid is not None and not (query.relation.bounded or query.relation.held)
    group_bounds = query.relation.group_bounds if query.keys and truncating else None
    if group_bounds:
        stats.bound_groups(*group_bounds)
    stats.in_bounds = {name for name, f in query.relation.fields.items() if f.in_bounds}
    aggregate_outputs = plan_aggregates(query.aggregates, table, stats)
    selection = plan_selection(query, stats, bool(domains))
    if needs_threshold:
        choice, spend = choose_threshold(stats, privacy)
        threshold, delta_t = choice.statistic, choice.delta
    else:
        choice, threshold, (delta_t, spend) = None, None, split(stats, privacy, False)

    # The exact query: typed relation -> filtered rows -> truncated -> grouped aggregates.
    # Rows outside the public key values are dropped before truncation, so that the rows
    # kept are ones the query uses; without truncation the grid join drops them anyway.
    rows = _rows(query, pid, domains if truncating else None, types)
    if group_bounds:
        rows = truncated_groups(rows, pid, [key_output(node, kind) for node, kind in keys],
                                *group_bounds)
    elif truncating:
        fields = sorted({c.name for e in [n for n, _ in keys] + [s.aggregate for s in stats.items]
                         for c in e.find_all(exp.Column)}, key=str.lower)
        rows = truncated(rows, pid, k, [table.column(f).name if table.column(f) else f for f in fields])
    key_names = [f"_k{i}" for i in range(len(query.keys))]
    # Rows of a held relation carry its sides' random samples: stored like truncated rows.
    exact = _exact_query(rows, keys, key_names, stats.items, domains,
                         truncating or query.relation.held)
    precutting = needs_precut(exact, query.relation.tables, query.work, pre_cut_work)
    if precutting:
        exact = precut(exact, query.relation.tables)
    check_rows_independent(exact)
    post = _post_query(query, aggregate_outputs, key_names, [kind for _, kind in keys],
                       [s.name for s in stats.items])
    plan = Plan(query=query, exact=exact, post=post, statistics=stats.items, key_names=key_names,
                output_names=[name for name, _ in query.outputs], public_keys=bool(domains),
                passthrough=_passthrough(query, post), key_kinds=[kind for _, kind in keys],
                threshold=threshold, threshold_delta=delta_t, spend=spend, cost=spend.pair,
                events=query_events(stats.items, spend),
                threshold_choice=choice, tau=choice.tau if choice else None,
                selection=selection is not None)
    plan.notes += query.notes + ([selection] if selection else []) + (
        [precut_note(pre_cut_work)] if precutting else []) + _notes(group_bounds, bool(query.keys and not domains
                                                          and not needs_threshold))
    return plan


def _typed_keys(query: Query, types: dict) -> list:
    """(guarded expression, type) of each GROUP BY key."""
    keys = []
    for key in query.keys:
        node, kind = check(key, types, "GROUP BY")
        if kind == "null":
            raise QueryError(f"GROUP BY {key.sql(ANALYST_DIALECT)} is a constant NULL; group by a column")
        keys.append((node, kind))
    return keys


def _exact_query(rows, keys: list, key_names: list, items: list, domains,
                 truncating: bool) -> exp.Select:
    """The grouped aggregates (and quantile histograms) over the bounded rows."""
    plain = [s for s in items if s.cell is None]      # read from the engine as values
    hists = histograms(items)
    source = (exp.to_table(BOUNDED_CTE) if hists else
              exp.Subquery(this=rows, alias=exp.TableAlias(this=exp.to_identifier("_bounded"))))
    exact = exp.select(*[exp.alias_(key_output(node, kind), name, quoted=True)
                         for (node, kind), name in zip(keys, key_names)],
                       *[exp.alias_(s.aggregate, s.name, quoted=True) for s in plain]
                       ).from_(source, copy=False)    # the rows below, used as they are
    if keys:
        exact = exact.group_by(*[column(n) for n in key_names], copy=False)
    star = exp.Count(this=exp.Star())
    if len(hists) == 1 and all(s.aggregate == star for s in plain):
        exact = counts_with_histogram(rows, [key_output(node, kind) for node, kind in keys],
                                      key_names, hists, [s.name for s in plain])
    elif hists:
        # Quantiles: one histogram per group over the same bounded rows (dpsql.plan.quantiles).
        exact = with_histograms(exact if (plain or keys) else None, rows,
                                [key_output(node, kind) for node, kind in keys], key_names,
                                hists, materialize=truncating)
    if domains:
        exact = _join_grid(exact, domains, key_names, plain, [n for n, _ in hists.values()])
    return exact


def _notes(group_bounds, keys_public_by_owner: bool) -> list:
    notes = []
    if group_bounds:
        g, r = group_bounds
        notes.append(
            f"contribution bounds from max_groups={g}, max_rows_per_group={r}: a person adds "
            f"rows to at most {g} group(s), at most {r} in each (truncation keeps {g} random "
            f"groups and {r} random rows in each); Laplace noise uses L1 = {g} x {r} = {g * r} "
            f"rows, Gaussian noise L2 = sqrt({g}) x {r} = {math.sqrt(g) * r:.4g} rows")
    if keys_public_by_owner:
        notes.append("censor_dims is false: the owner asserts the group keys are public, "
                     "so they are released without a threshold")
    return notes


def _join_grid(exact: exp.Select, domains, key_names, stats, lists=()) -> exp.Select:
    """Release every public key; combinations absent from the data get exact zeros
    (and ``lists``, the quantiles' histograms, NULL: no rows)."""
    grid = _grid(domains)
    on = None
    for name in key_names:
        cond = exp.NullSafeEQ(this=exp.column(name, "_grid", quoted=True),
                              expression=exp.column(name, "_agg", quoted=True))
        on = cond if on is None else exp.and_(on, cond)
    projections = [exp.alias_(exp.column(n, "_grid", quoted=True), n, quoted=True) for n in key_names]
    projections += [exp.alias_(exp.Coalesce(this=exp.column(s.name, "_agg", quoted=True),
                                            expressions=[exp.Literal.number(0)]), s.name, quoted=True)
                    for s in stats]
    projections += [exp.alias_(exp.column(n, "_agg", quoted=True), n, quoted=True) for n in lists]
    return exp.select(*projections).from_(
        exp.Subquery(this=grid, alias=exp.TableAlias(this=exp.to_identifier("_grid"))),
        copy=False).join(
        exp.Subquery(this=exact, alias=exp.TableAlias(this=exp.to_identifier("_agg"))),
        on=on, join_type="LEFT", copy=False)


def _passthrough(query: Query, post: exp.Select) -> list | None:
    """One row, each output a bare statistic: post-processing would only rename columns,
    so the reader skips the post-processing round trip (docs/performance.md)."""
    if query.keys or query.having is not None or query.distinct or query.limit is not None \
            or query.offset is not None or query.cut is not None:
        return None
    names = []
    for item in post.expressions:
        if not isinstance(item.this, exp.Column):
            return None
        names.append(item.this.name)
    return names


def _post_query(query: Query, aggregate_outputs: list, key_names: list, key_kinds: list,
                stat_names: list) -> exp.Select:
    """The user's SELECT list, HAVING, ORDER BY and LIMIT, over noisy statistics.

    They are typed by the same allow-list as row-level expressions (keys and
    aggregates are leaves of known type), so ``HAVING sex > 2`` on a string key
    compares with '2' as WHERE would. Every order ends with the group keys (under
    DISTINCT: every output), so no order depends on how the engine emitted groups.
    """
    table_types = metadata_types(query.table)
    key_types = list(zip(query.keys, key_kinds))

    def leaf(node):
        for key, kind in key_types:
            if node == key:
                return kind
        if isinstance(node, exp.AggFunc):
            return aggregate_type(node, query.table)
        return None

    def typed(expr, clause):
        return Checker(table_types, leaf, clause).check(expr)[0]

    def filtered(select, cond, clause):
        return select if cond is None else select.where(
            substitute(Checker(table_types, leaf, clause).predicate(cond), mapping))

    # Each aggregate becomes a parenthesised expression: sqlglot prints trees as built, so
    # SUM(x) = (centred + m * n) must stay one operand inside SUM(x) / COUNT(*).
    mapping = [(node, exp.Paren(this=expr) if not isinstance(expr, exp.Column) else expr)
               for node, expr in aggregate_outputs]
    mapping += [(key, column(n)) for key, n in zip(query.keys, key_names)]
    items = [exp.alias_(substitute(typed(expr, "SELECT"), mapping), f"_o{i}", quoted=True)
             for i, (_, expr) in enumerate(query.outputs)]
    # Keys arrive with their NULLs in separate flag columns (dpsql.release.noise): put them back.
    restored = [exp.alias_(exp.Case(ifs=[exp.If(this=column(n + "_null"), true=exp.Null())],
                                    default=column(n)), n, quoted=True) for n in key_names]
    source = exp.to_table(NOISY_TABLE)
    if restored:
        source = _as_noisy(exp.select(*restored, *[column(s) for s in stat_names]).from_(source))
    post = filtered(exp.select(*items).from_(source), query.having, "HAVING")
    if query.cut is not None:       # an inner ORDER BY ... LIMIT, before the outer clauses
        first = filtered(exp.select(exp.Star()).from_(source), query.having, "HAVING")
        first = _ordered(first, query.cut.order, [column(n) for n in key_names], typed, mapping,
                         query.cut.limit, query.cut.offset)
        post = filtered(exp.select(*items).from_(_as_noisy(first)), query.cut.where, "WHERE")
    if query.distinct:
        post = post.distinct()
    ties = ([column(f"_o{i}") for i in range(len(items))] if query.distinct
            else [column(n) for n in key_names])
    return _ordered(post, query.order, ties, typed, mapping, query.limit, query.offset)


def _as_noisy(select: exp.Select) -> exp.Subquery:
    return exp.Subquery(this=select, alias=exp.TableAlias(this=exp.to_identifier(NOISY_TABLE)))


def _ordered(post: exp.Select, order: list, ties: list, typed, mapping: list, limit,
             offset) -> exp.Select:
    """``post`` ordered by ``order`` (output references ``_o<i>`` or expressions over keys
    and aggregates), then by ``ties``, with ``limit`` and ``offset``."""
    terms = []
    for o in order:
        target = o.this
        if not (isinstance(target, exp.Column) and target.name.startswith("_o")):
            target = substitute(typed(target, "ORDER BY"), mapping)
        terms.append(exp.Ordered(this=target, desc=o.args.get("desc"),
                                 nulls_first=o.args.get("nulls_first")))
    terms += [exp.Ordered(this=t, nulls_first=False) for t in ties]
    if terms:
        post = post.order_by(*terms)
    if limit is not None:
        post = post.limit(limit)
    if offset is not None:
        post = post.offset(offset)
    return post
