"""The DuckDB engine's dialect: how DuckDB spells the plan's engine-neutral nodes.

Owns: the DuckDB compilation of ``dpsql.plan.nodes`` (the rest of the plan is
rendered by sqlglot's DuckDB generator: ``exp.Try`` is ``TRY(...)``,
``exp.UnixMicros`` is ``EPOCH_US``):
- ``Truncated``: keep a uniformly random subset of at most k rows per person
  (the k smallest of per-row random tags, for persons with more than k rows only);
- ``TruncatedGroups``: keep at most g groups per person and r rows per person in
  each (window functions);
- which CTEs DuckDB stores and which it recomputes (``inline_deterministic``);
- aggregates of a filtered column as DuckDB's FILTER (``dpsql.engines.duckdb.filters``).
Running plans on a DuckDB connection is ``dpsql.engines.duckdb.engine``.
"""
from __future__ import annotations

from sqlglot import exp

from ...plan.dialect import Dialect
from .filters import restored_filters
from ...plan.nodes import Truncated, TruncatedGroups
from ..truncation import Spelling, column, tag_cut, volatile

NAME = "duckdb"


class DuckDB(Dialect):
    """DuckDB's compilation of the plan (sqlglot dialect ``duckdb``)."""

    name = NAME

    def lowered(self, tree: exp.Expression) -> exp.Expression:
        return restored_filters(inline_deterministic(self.compile_nodes(tree)))

    def truncated(self, node: Truncated) -> exp.Select:
        # The whole tree gets this dialect's rewrites once, in ``lower``; the rows inside
        # only need their own nodes compiled.
        return truncated(self.compile_nodes(node.this), node.args["pid"], node.args["k"],
                         list(node.args["fields"]), node.args.get("prefix") or "")

    def truncated_groups(self, node: TruncatedGroups) -> exp.Select:
        return truncated_groups(self.compile_nodes(node.this), node.args["pid"],
                                [k.copy() for k in node.args["keys"]],
                                node.args["max_groups"], node.args["max_rows"])


def truncated(rows: exp.Select, pid: str, k: int, fields: list, prefix: str = "") -> exp.Select:
    """Keep a uniformly random subset of at most k rows per person, inside the engine
    (``dpsql.engines.truncation.tag_cut``): a person's k + 1 smallest tags are
    ``MIN(tag, k + 1)``, a heap, and the heavy persons' rows are chosen by SEMI and ANTI
    joins. The untagged rows are recomputed rather than stored when they are
    deterministic (docs/performance.md)."""
    return tag_cut(rows, pid, k, fields, prefix, SPELLING)


def _smallest(tag: exp.Column, k: int) -> exp.Expression:
    return exp.Anonymous(this="MIN", expressions=[tag, exp.Literal.number(k + 1)])


SPELLING = Spelling(smallest=_smallest, semi_joins=True)


def inline_deterministic(tree: exp.Expression) -> exp.Expression:
    """``tree`` with each CTE whose materialisation is unset and whose body is
    deterministic (not ``volatile``) marked NOT MATERIALIZED: DuckDB otherwise stores a
    CTE read twice (the typed relation of a truncated table), which costs more than
    reading it again. (Truncation sets its own CTEs' materialisation.)"""
    for cte in tree.find_all(exp.CTE):
        if cte.args.get("materialized") is None and not volatile(cte.this):
            cte.set("materialized", False)
    return tree


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
