"""Per-person truncation by random tags, without sorting anyone's rows: the plan the DuckDB
and PostgreSQL dialects share (each says how its SQL spells the few parts that differ).

Owns: ``tag_cut`` (keep a uniformly random subset of at most k rows per person) and
``volatile`` (whether a relation read twice must be stored, not recomputed).

A person with at most k rows keeps them all, untouched (what a uniform k-subset gives
them anyway). Each row of a person with more gets an independent uniform tag, drawn once
(the tagged rows are stored), and the person keeps the rows whose tag is below the
(k+1)-th smallest of theirs: the k smallest tags, a uniform k-subset. Should the k-th
and (k+1)-th tags tie (random doubles: as good as never), the person keeps only the rows
strictly below the k-th, so at most k rows are kept whatever the tags. Which rows a person
keeps depends on their own rows and tags only. Rows whose id is NULL were dropped before:
they cannot be attributed, so no bound could hold.

The engines differ in how they list a person's k-th and (k+1)-th smallest tags (DuckDB:
``MIN(tag, k + 1)``, a heap of k + 1 values; PostgreSQL: the ordered tags of the heavy
persons only) and in how they keep or drop the heavy persons' rows (DuckDB's SEMI and
ANTI joins; ``EXISTS`` elsewhere). Spark's dialect draws its subset in one aggregation
(``dpsql.engines.spark.dialect``): it has no way to store a relation within a statement.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from sqlglot import exp

TAG, SMALLEST, CUT = "_dpsql_tag", "_dpsql_smallest", "_dpsql_cut"


def column(name: str) -> exp.Column:
    return exp.column(name, quoted=True)


@dataclass(frozen=True)
class Spelling:
    """What an engine's SQL spells its own way in ``tag_cut``.

    ``smallest(tag, k)``: an aggregate listing at least a person's k + 1 smallest tags in
    ascending order, its positions counted from 1; ``semi_joins``: DuckDB's SEMI and ANTI
    joins (else ``[NOT] EXISTS``)."""

    smallest: Callable[[exp.Column, int], exp.Expression]
    semi_joins: bool


def tag_cut(rows: exp.Select, pid: str, k: int, fields: list, prefix: str,
            spelling: Spelling) -> exp.Select:
    """``SELECT fields`` of the rows kept: every row of the persons with at most k, and
    the k smallest-tagged rows of each other person (module docstring)."""
    fields = fields or ["_one"]
    names = {n: f"_{n}{prefix}" for n in ("rows", "heavy", "tagged", "cut")}

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
    tagged = _select([exp.Star(), exp.alias_(exp.Rand(), TAG, quoted=True)], table("rows"))
    light = kept("rows")
    _restrict(tagged, names, pid, keep=True, spelling=spelling)
    _restrict(light, names, pid, keep=False, spelling=spelling)
    listed = _select([column(pid), exp.alias_(spelling.smallest(column(TAG), k), SMALLEST,
                                              quoted=True)], table("tagged"))
    listed.set("group", exp.Group(expressions=[column(pid)]))
    cut = _select([column(pid), exp.alias_(_cut(k), CUT, quoted=True)], exp.Subquery(
        this=listed, alias=exp.TableAlias(this=exp.to_identifier("_smallest"))))
    sampled = kept("tagged")
    sampled.set("joins", [exp.Join(this=table("cut"), using=[exp.to_identifier(pid, quoted=True)])])
    sampled.set("where", exp.Where(this=exp.LT(this=column(TAG), expression=column(CUT))))
    bounded = exp.Union(this=light, expression=sampled, distinct=False)
    select = _select([exp.Star()], exp.Subquery(
        this=bounded, alias=exp.TableAlias(this=exp.to_identifier(f"_kept{prefix}"))))
    select.set("with_", exp.With(expressions=[
        exp.CTE(this=body, alias=exp.TableAlias(this=exp.to_identifier(names[name])),
                materialized=stored)
        for name, body, stored in (("rows", rows, volatile(rows)), ("heavy", heavy, True),
                                   ("tagged", tagged, True), ("cut", cut, True))]))
    return select


def _restrict(select: exp.Select, names: dict, pid: str, keep: bool, spelling: Spelling):
    """``select`` limited to the heavy persons' rows (``keep``) or to the others'."""
    heavy = exp.Table(this=exp.to_identifier(names["heavy"]))
    if spelling.semi_joins:
        select.set("joins", [exp.Join(this=heavy, using=[exp.to_identifier(pid, quoted=True)],
                                      kind="SEMI" if keep else "ANTI")])
        return
    def qualified(table):
        return exp.Column(this=exp.to_identifier(pid, quoted=True),
                          table=exp.to_identifier(table))
    match = exp.EQ(this=qualified(names["heavy"]),
                   expression=qualified(select.args["from_"].this.name))
    exists = exp.Exists(this=_select([exp.Literal.number(1)], heavy).where(match, copy=False))
    select.set("where", exp.Where(this=exists if keep else exp.Not(this=exists)))


def _select(items: list, source: exp.Expression, *joins) -> exp.Select:
    """``SELECT items FROM source [joins]``, its parts used as they are (not copied)."""
    select = exp.Select(expressions=items, from_=exp.From(this=source))
    if joins:
        select.set("joins", list(joins))
    return select


def _cut(k: int) -> exp.Expression:
    """The tag below which a heavy person's rows are kept: the (k+1)-th smallest of
    their tags, or the k-th if the two tie (the list ascending, positions from 1)."""
    # Positions written 1-based (offset 1): sqlglot then renders them as they are,
    # without annotating types to convert them (milliseconds per truncation).
    nth = [exp.Bracket(this=column(SMALLEST), expressions=[exp.Literal.number(i)], offset=1)
           for i in (k, k + 1)]
    return exp.If(this=exp.LT(this=nth[0], expression=nth[1]), true=nth[1].copy(),
                  false=nth[0].copy())


def volatile(tree: exp.Expression) -> bool:
    """Whether evaluating ``tree`` twice could give different rows: it draws randomness,
    or aggregates other than COUNT (a float sum's rounding depends on the order parallel
    workers combine partial sums, so a filter over it can flip; the key filters of joins
    count), windows, limits, samples, or calls a function dpsql did not write as a plain
    scalar. Such a relation must be stored, not recomputed, when it is read twice (its
    persons must count the same rows each time). Conservative: an unknown function or
    aggregate counts as volatile."""
    return any(isinstance(n, (exp.Rand, exp.Uuid, exp.Window, exp.Limit, exp.Offset,
                              exp.Fetch, exp.TableSample, exp.Qualify))
               or (isinstance(n, exp.AggFunc) and not isinstance(n, EXACT_AGGREGATES))
               or (isinstance(n, exp.Anonymous) and str(n.this).lower() not in SCALARS)
               for n in tree.walk())


SCALARS = {"least", "greatest"}
# The same result in any order. Not MIN/MAX: over doubles mixing 0.0 and -0.0, DuckDB
# returns either zero from run to run (found by the hostile-analyst test of issue 25).
EXACT_AGGREGATES = (exp.Count,)
