"""The DuckDB engine's dialect: how DuckDB spells the plan's engine-neutral nodes.

Owns: the DuckDB compilation of ``dpsql.plan.nodes`` (the rest of the plan is
rendered by sqlglot's DuckDB generator: ``exp.Try`` is ``TRY(...)``,
``exp.UnixMicros`` is ``EPOCH_US``):
- ``Truncated``: keep a uniformly random subset of at most k rows per person
  (``ARG_MIN(struct, RANDOM(), k)`` and ``UNNEST(..., recursive := true)``);
- ``TruncatedGroups``: keep at most g groups per person and r rows per person in
  each (window functions).
Running plans on a DuckDB connection is ``dpsql.engines.duckdb.engine``.
"""
from __future__ import annotations

from sqlglot import exp

from ...plan.dialect import Dialect
from ...plan.nodes import Truncated, TruncatedGroups

NAME = "duckdb"


class DuckDB(Dialect):
    """DuckDB's compilation of the plan (sqlglot dialect ``duckdb``)."""

    name = NAME

    def truncated(self, node: Truncated) -> exp.Select:
        return truncated(self.lower(node.this), node.args["pid"], node.args["k"],
                         list(node.args["fields"]), node.args.get("prefix") or "")

    def truncated_groups(self, node: TruncatedGroups) -> exp.Select:
        return truncated_groups(self.lower(node.this), node.args["pid"],
                                [k.copy() for k in node.args["keys"]],
                                node.args["max_groups"], node.args["max_rows"])


def column(name: str) -> exp.Column:
    return exp.column(name, quoted=True)


def truncated(rows: exp.Select, pid: str, k: int, fields: list, prefix: str = "") -> exp.Select:
    """Keep a uniformly random subset of at most k rows per person, inside the engine.

    Persons with at most k rows keep them all (what a uniform k-subset gives them
    anyway); only the rows of persons with more go through ARG_MIN(struct,
    RANDOM(), k), which keeps the k rows with the smallest random tags (splitting
    the two is faster: docs/performance.md). Rows whose id is NULL
    were dropped before: they cannot be attributed, so no bound could hold.
    """
    fields = fields or ["_one"]
    rows_name, heavy_name = f"_rows{prefix}", f"_heavy{prefix}"

    def value(f):
        return column(f) if f != "_one" else exp.Literal.number(1)

    heavy = exp.select(column(pid)).from_(rows_name).group_by(column(pid)).having(
        exp.GT(this=exp.Count(this=exp.Star()), expression=exp.Literal.number(k)))
    light = exp.select(*[exp.alias_(value(f), f, quoted=True) for f in fields]).from_(
        rows_name).join(heavy_name, using=[exp.to_identifier(pid, quoted=True)], join_type="ANTI")
    struct = exp.Struct(expressions=[
        exp.PropertyEQ(this=exp.to_identifier(f, quoted=True), expression=value(f)) for f in fields])
    sample = exp.ArgMin(this=struct, expression=exp.Rand(), count=exp.Literal.number(k))
    unnest = exp.Explode(this=sample, expressions=[
        exp.PropertyEQ(this=exp.to_identifier("recursive"), expression=exp.true())])
    sampled = exp.select(unnest).from_(rows_name).join(
        heavy_name, using=[exp.to_identifier(pid, quoted=True)], join_type="SEMI").group_by(column(pid))
    bounded = exp.union(light, sampled, distinct=False)
    return (exp.select(exp.Star())
            .from_(exp.Subquery(this=bounded, alias=exp.TableAlias(this=exp.to_identifier(f"_kept{prefix}"))))
            .with_(rows_name, as_=rows).with_(heavy_name, as_=heavy))


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
