"""The DuckDB engine's dialect: how DuckDB spells the plan's engine-neutral nodes.

Owns: the DuckDB compilation of ``dpsql.plan.nodes`` (the rest of the plan is
rendered by sqlglot's DuckDB generator: ``exp.UnixMicros`` is ``EPOCH_US``):
- ``exp.Try`` and ``NULLIF``: forms that never raise and never copy an operand
  (``dpsql.engines.duckdb.guards``; DuckDB's own ``TRY`` re-runs a vector row by row);
- ``Truncated``: keep a uniformly random subset of at most k rows per person
  (the k smallest of per-row random tags, for persons with more than k rows only);
- ``TruncatedGroups``: keep at most g groups per person and r rows per person in
  each (window functions);
- which CTEs DuckDB stores and which it recomputes (``inline_deterministic``);
- aggregates of a filtered column as DuckDB's FILTER (``dpsql.engines.filters``).
Running plans on a DuckDB connection is ``dpsql.engines.duckdb.engine``.
"""
from __future__ import annotations

from sqlglot import exp

from ...frontend.literal_lists import listed_in, rows_in
from ...plan.dialect import Dialect
from ...plan.fences import fence_columns, fence_inlining
from ..filters import restored_filters
from .guards import never_raising
from ...plan.nodes import Truncated, TruncatedGroups, every_node

NAME = "duckdb"


class DuckDB(Dialect):
    """DuckDB's compilation of the plan (sqlglot dialect ``duckdb``)."""

    name = NAME

    def lowered(self, tree: exp.Expression) -> exp.Expression:
        tree = never_raising(self.compile_nodes(tree))
        volatile, ctes, lists, selects = _walked(tree)
        for node in lists:
            (as_rows if isinstance(node, exp.Values) else as_array)(node)
        inline_deterministic(ctes, volatile)
        return fence_inlining(restored_filters(tree, selects), random_fence)

    def truncated(self, node: Truncated) -> exp.Select:
        # The whole tree gets this dialect's rewrites once, in ``lower``; the rows inside
        # only need their own nodes compiled.
        return truncated(self.compile_nodes(node.this), node.args["pid"], node.args["k"],
                         list(node.args["fields"]), node.args.get("prefix") or "", stored=None)

    def truncated_groups(self, node: TruncatedGroups) -> exp.Select:
        return truncated_groups(self.compile_nodes(node.this), node.args["pid"],
                                [k.copy() for k in node.args["keys"]],
                                node.args["max_groups"], node.args["max_rows"])


def random_fence(select: exp.Select) -> bool:
    """DuckDB's fence (``dpsql.plan.fences``): each column behind ``RANDOM() < 2``, always
    true but volatile (spelled apart from the pre-cut's ``RANDOM() >= 0``), so that DuckDB
    does not put the column's expression in place of each reference to it (review 37, F3: a
    CTE column of 40 guarded products read 260 times in one GREATEST was prepared 260 times,
    20 s that a cancel could not stop)."""
    return fence_columns(select, lambda: exp.LT(this=exp.Rand(), expression=exp.Literal.number(2)))


def as_array(node: exp.In) -> exp.In:
    """``x IN (<a long list of integers>)`` (``dpsql.frontend.literal_lists``), in place, with
    its list as one BIGINT[] constant that DuckDB reads from its text: ``x IN (SELECT
    UNNEST(CAST('[1,2,...]' AS BIGINT[])))`` is ``x IN (1, 2, ...)`` (the list holds no
    NULL: NULL, TRUE or FALSE alike, compared in the same type), but DuckDB binds it in
    milliseconds, where 15,000 constants took 40 ms each time a CTE holding them was read."""
    node.set("query", exp.Subquery(this=exp.select(exp.Unnest(expressions=[
        _array(listed_in(node))]))))
    node.set("expressions", None)
    return node


def as_rows(node: exp.Values) -> exp.Subquery:
    """``(VALUES (1), (2), ...) AS name(col)`` of a long list of integers
    (``dpsql.frontend.literal_lists``; a planner's list: of ``TRY_CAST(v AS BIGINT)``), in
    place, as ``(SELECT UNNEST(CAST('[1,2,...]' AS BIGINT[])) AS col) AS name``: the same
    rows (a BIGINT column, where the VALUES' integers are INTEGER or BIGINT by their size,
    which every reader of the list casts to BIGINT), bound as one constant."""
    alias = node.args["alias"]
    rows = exp.select(exp.Alias(this=exp.Unnest(expressions=[_array(rows_in(node))]),
                                alias=alias.columns[0].copy()))
    return node.replace(exp.Subquery(this=rows, alias=exp.TableAlias(this=alias.this.copy())))


def _array(values: tuple) -> exp.Cast:
    """A BIGINT[] constant of ``values``, read by DuckDB from its text."""
    return exp.Cast(this=exp.Literal.string("[" + ",".join(map(str, values)) + "]"),
                    to=exp.DataType.build("BIGINT[]", dialect=NAME))


def column(name: str) -> exp.Column:
    return exp.column(name, quoted=True)


def truncated(rows: exp.Select, pid: str, k: int, fields: list, prefix: str = "",
              stored: bool | None = False) -> exp.Select:
    """Keep a uniformly random subset of at most k rows per person, inside the engine.

    Persons with at most k rows keep them all (what a uniform k-subset gives them
    anyway). Each row of a person with more gets an independent uniform tag (RANDOM(),
    drawn once: the tagged rows are materialised) and the person keeps the rows whose
    tag is below the (k+1)-th smallest of theirs: the k smallest tags, a uniform
    k-subset. Should the k-th and (k+1)-th tags tie (random doubles: as good as never),
    the person keeps only the rows strictly below the k-th, so at most k rows are kept
    whatever the tags. Which rows a person keeps depends on their own rows and tags
    only. The untagged rows are recomputed rather than stored when they are
    deterministic (docs/performance.md). Rows whose id is NULL were dropped before:
    they cannot be attributed, so no bound could hold. ``stored=None``: whether the rows are
    stored is decided by the one walk of the lowered plan (``_walked``), not by a walk of
    the rows per truncation (nested truncations walked a plan once per level).
    """
    fields = fields or ["_one"]
    names = {n: f"_{n}{prefix}" for n in ("rows", "heavy", "tagged", "cut")}

    def using():
        return [exp.to_identifier(pid, quoted=True)]

    def table(name):
        return exp.Table(this=exp.to_identifier(names[name]))

    def value(f):
        return column(f) if f != "_one" else exp.Literal.number(1)

    def kept(source):
        return _select([exp.alias_(value(f), f, quoted=True) for f in fields], table(source))

    # Built without sqlglot's copying builders: ``rows`` (the whole plan below) is used
    # once, as it is, so compiling nested truncations stays linear in the plan's size.
    heavy = _select([column(pid)], table("rows"))
    heavy.set("group", exp.Group(expressions=[column(pid)]))
    heavy.set("having", exp.Having(this=exp.GT(this=exp.Count(this=exp.Star()),
                                               expression=exp.Literal.number(k))))
    tagged = _select([exp.Star(), exp.alias_(exp.Rand(), TAG, quoted=True)], table("rows"),
                     exp.Join(this=table("heavy"), using=using(), kind="SEMI"))
    smallest = exp.Anonymous(this="MIN", expressions=[column(TAG), exp.Literal.number(k + 1)])
    listed = _select([column(pid), exp.alias_(smallest, SMALLEST, quoted=True)], table("tagged"))
    listed.set("group", exp.Group(expressions=[column(pid)]))
    cut = _select([column(pid), exp.alias_(_cut(k), CUT, quoted=True)], exp.Subquery(
        this=listed, alias=exp.TableAlias(this=exp.to_identifier("_smallest"))))
    light = kept("rows")
    light.set("joins", [exp.Join(this=table("heavy"), using=using(), kind="ANTI")])
    sampled = kept("tagged")
    sampled.set("joins", [exp.Join(this=table("cut"), using=using())])
    sampled.set("where", exp.Where(this=exp.LT(this=column(TAG), expression=column(CUT))))
    bounded = exp.Union(this=light, expression=sampled, distinct=False)
    select = _select([exp.Star()], exp.Subquery(
        this=bounded, alias=exp.TableAlias(this=exp.to_identifier(f"_kept{prefix}"))))
    select.set("with_", exp.With(expressions=[
        exp.CTE(this=body, alias=exp.TableAlias(this=exp.to_identifier(names[name])),
                materialized=stored)
        for name, body, stored in (("rows", rows, _volatile(rows) if stored is False else None),
                                   ("heavy", heavy, True), ("tagged", tagged, True),
                                   ("cut", cut, True))]))
    if stored is None:
        select.args["with_"].expressions[0].meta[STORED_IF_VOLATILE] = True
    return select


def _select(items: list, source: exp.Expression, *joins) -> exp.Select:
    """``SELECT items FROM source [joins]``, its parts used as they are (not copied)."""
    select = exp.Select(expressions=items, from_=exp.From(this=source))
    if joins:
        select.set("joins", list(joins))
    return select


TAG, SMALLEST, CUT = "_dpsql_tag", "_dpsql_smallest", "_dpsql_cut"
STORED_IF_VOLATILE = "dpsql_stored_if_volatile"


def _cut(k: int) -> exp.Expression:
    """The tag below which a heavy person's rows are kept: the (k+1)-th smallest of
    their tags, or the k-th if the two tie (``MIN(tag, k + 1)`` lists them ascending;
    DuckDB counts list positions from 1)."""
    # Positions written 1-based (offset 1, DuckDB's): sqlglot then renders them as they
    # are, without annotating types to convert them (milliseconds per truncation).
    nth = [exp.Bracket(this=column(SMALLEST), expressions=[exp.Literal.number(i)], offset=1)
           for i in (k, k + 1)]
    return exp.If(this=exp.LT(this=nth[0], expression=nth[1]), true=nth[1].copy(),
                  false=nth[0].copy())


def _volatile(tree: exp.Expression) -> bool:
    """Whether evaluating ``tree`` twice could give different rows: it draws randomness,
    or aggregates other than COUNT (a float sum's rounding depends on the order parallel
    threads combine partial sums, so a filter over it can flip; the key filters of joins
    count), windows, limits, samples, or calls a function dpsql did not
    write as a plain scalar. Such a relation must be stored, not recomputed, when it is
    read twice (its persons must count the same rows each time). Conservative: an
    unknown function or aggregate counts as volatile."""
    return any(_volatile_node(n) for n in tree.walk())


def _volatile_node(n: exp.Expression) -> bool:
    return (isinstance(n, (exp.Rand, exp.Uuid, exp.Window, exp.Limit, exp.Offset,
                           exp.Fetch, exp.TableSample, exp.Qualify))
            or (isinstance(n, exp.AggFunc) and not isinstance(n, EXACT_AGGREGATES))
            or (isinstance(n, exp.Anonymous) and str(n.this).lower() not in SCALARS))


def _walked(tree: exp.Expression) -> tuple:
    """(the ids of the nodes of ``tree`` that are ``_volatile``, its CTEs, its ``IN`` and
    VALUES of an integer list, its SELECTs), in one walk: each volatile node marks itself and
    its ancestors (walking every CTE's body on its own walked a nested plan once per CTE
    above it)."""
    marked: set = set()
    ctes, lists, selects = [], [], []
    for node in every_node(tree):
        if isinstance(node, exp.CTE):
            ctes.append(node)
        elif type(node) is exp.Select:
            selects.append(node)
        elif listed_in(node) is not None or rows_in(node) is not None:
            lists.append(node)
        if _volatile_node(node):
            while node is not None and id(node) not in marked:
                marked.add(id(node))
                node = node.parent
    return marked, ctes, lists, selects


SCALARS = {"least", "greatest"}
# The same result in any order. Not MIN/MAX: over doubles mixing 0.0 and -0.0, DuckDB
# returns either zero from run to run (found by the hostile-analyst test of issue 25).
EXACT_AGGREGATES = (exp.Count,)


def inline_deterministic(ctes: list, volatile: set) -> None:
    """Each of the plan's ``ctes`` whose materialisation is unset and whose body is
    deterministic (not in ``volatile``: ``_walked``) marked NOT MATERIALIZED: DuckDB
    otherwise stores a CTE read twice (the typed relation of a truncated table), which costs
    more than reading it again. (Truncation sets its own CTEs' materialisation; its rows'
    CTE, when left to the walk, ``STORED_IF_VOLATILE``, is stored if not deterministic.)"""
    for cte in ctes:
        if cte.args.get("materialized") is None:
            if id(cte.this) not in volatile:
                cte.set("materialized", False)
            elif cte.meta.get(STORED_IF_VOLATILE):
                cte.set("materialized", True)


def truncated_groups(rows: exp.Select, pid: str, keys: list, max_groups: int,
                     max_rows: int) -> exp.Select:
    """Keep at most ``max_groups`` groups (values of ``keys``) per person, chosen at
    random, and at most ``max_rows`` random rows of the person in each.

    A person's groups are ranked by a hash of (id, keys, a random seed drawn once per
    run), ties broken by the keys themselves, so the rank identifies the group; rows
    within a group are ranked by RANDOM(). Whatever is kept depends on the person's
    own rows only. Rows whose id is NULL were dropped before."""
    seed = exp.select(exp.alias_(exp.Rand(), "_dpsql_seed", quoted=True))
    hashed = exp.Anonymous(this="HASH", expressions=[column(pid)] + [k.copy() for k in keys]
                           + [column("_dpsql_seed")])
    group_rank = exp.Window(this=exp.Anonymous(this="DENSE_RANK"), partition_by=[column(pid)],
                            order=exp.Order(expressions=[exp.Ordered(this=hashed)] + [
                                exp.Ordered(this=k.copy(), nulls_first=False) for k in keys]))
    ranked = exp.select(exp.Star(), exp.alias_(group_rank, "_dpsql_g", quoted=True),
                        exp.alias_(exp.Rand(), "_dpsql_u", quoted=True)).from_(
        exp.Subquery(this=rows, alias=exp.TableAlias(this=exp.to_identifier("_gr")))).join(
        exp.Subquery(this=seed, alias=exp.TableAlias(this=exp.to_identifier("_seed"))),
        join_type="CROSS")
    row_rank = exp.Window(this=exp.RowNumber(), partition_by=[column(pid), column("_dpsql_g")],
                          order=exp.Order(expressions=[exp.Ordered(this=column("_dpsql_u"))]))
    numbered = exp.select(exp.Star(), exp.alias_(row_rank, "_dpsql_r", quoted=True)).from_(
        exp.Subquery(this=ranked, alias=exp.TableAlias(this=exp.to_identifier("_gk"))))
    return exp.select(exp.Star()).from_(exp.Subquery(
        this=numbered, alias=exp.TableAlias(this=exp.to_identifier("_rk")))).where(exp.and_(
            exp.LTE(this=column("_dpsql_g"), expression=exp.Literal.number(max_groups)),
            exp.LTE(this=column("_dpsql_r"), expression=exp.Literal.number(max_rows))))
