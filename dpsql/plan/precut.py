"""Rewrite rule: a heavy statement reads each person's stored rows cut to ``max_ids`` first.

Owns: where a person's rows are cut when the query's expressions are heavy. A plan
filters and computes its expressions (``WHERE``, derived columns, aggregate arguments,
``JOIN ... ON``, correlated conditions) and only then keeps ``k`` random rows per person,
so that the kept rows are ones the query uses. Every such expression then runs on all of a
person's *stored* rows, which no metadata bounds: the work bound per private row
(``dpsql.frontend.binding.MAX_ROW_WORK``) times a person's 1,000 stored rows showed their
presence in the time (issue 33's twenty-first review: +0.42 s on DuckDB, +0.52 s on
PostgreSQL, over the wire, with ``max_ids: 3``).

The rule: a statement whose work per private row (the binder's total, every part of it) is
over ``PRE_CUT_WORK``, or that tests a person's rows against each other (a correlated
``EXISTS`` over private rows: pairs of stored rows), reads every private table as at most
``max_ids`` uniformly random rows per person (per referenced key for a table that reaches
its person through ``references``), cut before any of its expressions run; rows whose
person is NULL pass unchanged (they are no one's, and the dry run's row of NULLs must
still reach the expressions). Then one person's rows cost at most ``max_ids`` times the
bounded work, whatever they store. A cheap statement keeps "filter, then cut": its work
per stored row is at most ``PRE_CUT_WORK``, about what reading and cutting a row costs
(so a person's many rows slow it no more than they slow any query: docs/privacy.md,
"Residual timing"). The cut is the one truncation uses (``dpsql.plan.nodes.Truncated``);
for a person with more stored rows than ``max_ids``, a heavy query's ``WHERE`` chooses among
their kept rows, not among all of them (explain says so).
"""
from __future__ import annotations

from sqlglot import exp

from ..errors import InternalError
from .nodes import every_node, truncated
from .rewrite import WHOLE, column, typed_name

PRE_CUT_WORK = 2_048
"""Most work per private row (``dpsql.frontend.costs`` units: bytes and steps) a statement
may run on a person's stored rows before they are cut: about comparing one 256-character
cell (1,024 bytes) with a literal, or matching it to a prefix pattern, twice."""

def note(limit: int) -> str:
    """What explain says of a plan that reads its tables cut first (``limit``: the engine's)."""
    why = (f"this query's expressions are heavy (more than {limit:,} bytes and steps a row), "
           "guarded, or compare a person's rows with each other")
    return (f"{why}: each person's stored rows are first cut to max_ids random rows, and the "
            "query's WHERE and expressions run on those (docs/privacy.md)")


def needs_precut(exact: exp.Expression, tables, work: int, limit: int = PRE_CUT_WORK) -> bool:
    """Whether ``exact``, a plan over ``tables`` of a statement with ``work`` per private
    row, must read their persons' rows cut first (``limit``: the engine's PRE_CUT_WORK). A
    statement with a guarded expression is cut first on every engine: the guards cost more
    than the cost model prices (review 25: 30 ROUNDs, 25 us a stored row on Spark)."""
    if not any(_key(t) for t in tables):
        return False
    if work > limit or any(_guarded(n) for n in every_node(exact)):
        return True
    private = {typed_name(t) for t in tables if _key(t)}
    return any(t.name in private for e in exact.find_all(exp.Exists) for t in e.find_all(exp.Table))


def _guarded(node: exp.Expression) -> bool:
    """An analyst's node an engine guards (the typecheck's ``exp.Try``, which carries the
    type it recorded), reads through a lambda (NULLIF, a simple CASE of a computed value:
    review 26 timed 41 NULLIFs at 11 us a stored row on Spark), or a cast of an analyst's
    text (the plan's own nodes carry no type)."""
    if isinstance(node, (exp.Try, exp.Nullif)):
        return node.type is not None
    if isinstance(node, exp.Case) and node.args.get("this") is not None:
        return node.type is not None and not isinstance(node.this, (exp.Column, exp.Literal))
    if isinstance(node, (exp.Cast, exp.TryCast)):
        source = node.this.type
        if source is None:
            return False
        # from text, or an analyst's cast to text (review 27: 18 CAST(t AS VARCHAR), rated
        # cheap, cost Spark 11-13 us a stored row)
        return source.this in exp.DataType.TEXT_TYPES or (
            isinstance(node, exp.TryCast) and node.to.this in exp.DataType.TEXT_TYPES)
    return False


def precut(exact: exp.Select, tables) -> exp.Select:
    """``exact`` (changed in place) reading each private table of ``tables`` cut per person:
    each table is cut once, in a MATERIALIZED CTE of its own that every read of it uses (the
    same kept rows for each read: review 22 found two independent cuts of one table, in a
    key check and in the join it guards, counting a shared order for both its claimants;
    and a correlated subquery over an inline cut made DuckDB cut again per outer row)."""
    cuts = {typed_name(t): t for t in tables if _key(t)}
    by_name = {t.full_name.lower(): typed for typed, t in cuts.items()}
    names = {typed: f"_dpsql_cut{i}" for i, typed in enumerate(_ordered(cuts, by_name))}

    def cut(node):
        if isinstance(node, exp.Table) and not node.args.get("db") and node.name in cuts \
                and not node.meta.get(WHOLE):
            alias = node.args.get("alias") or exp.TableAlias(
                this=exp.to_identifier(node.name, quoted=True))
            return exp.Table(this=exp.to_identifier(names[node.name], quoted=True),
                             alias=alias.copy())
        return node
    exact = exact.transform(cut, copy=False)
    read = _read_columns(exact, cuts.values(), by_name, set(names.values()))
    ctes = []
    for i, (typed, name) in enumerate(names.items()):
        parent = _parent(cuts[typed], by_name)
        held = None if parent is None else (names[parent[0]], parent[1])
        ctes.append(exp.CTE(this=_cut_rows(cuts[typed], f"_p{i}", held, read),
                            materialized=True,
                            alias=exp.TableAlias(this=exp.to_identifier(name, quoted=True))))
    existing = exact.args.get("with_")
    exact.set("with_", exp.With(expressions=ctes + (list(existing.expressions)
                                                     if existing is not None else [])))
    return exact


def _read_columns(exact: exp.Select, tables, by_name: dict, cut_names) -> set | None:
    """The names (lower case) of the columns ``exact`` reads, with every cut table's key
    and the columns other cuts read from it, or None for every column (a ``*`` other than
    ``COUNT(*)``'s or a plain ``SELECT * FROM`` a cut, whose readers name what they use). A
    cut stores only these (review 28: storing a person's unread text columns cost PostgreSQL
    +0.26 s for 20,000 rows of 256 characters)."""
    if not all(_named_star(star, cut_names) for star in exact.find_all(exp.Star)):
        return None
    # every name the plan spells (a column, or a JOIN ... USING list's identifier): a
    # superset of the columns it reads
    read = {i.name.lower() for i in exact.find_all(exp.Identifier)}
    for table in tables:
        read.add(_key(table).lower())
        if (parent := _parent(table, by_name)) is not None:
            read.add(parent[1].lower())
    return read


def _named_star(star: exp.Star, cut_names) -> bool:
    """Whether ``star`` passes on only columns its readers name: ``COUNT(*)``, or ``SELECT *``
    straight from a cut outside a set operation (which matches columns by position)."""
    if isinstance(star.parent, exp.Count):
        return True
    select = star.parent
    source = select.args.get("from_") if isinstance(select, exp.Select) else None
    return (source is not None and isinstance(source.this, exp.Table)
            and source.this.name in cut_names and not select.args.get("joins")
            and not isinstance(select.parent, exp.SetOperation))


def _ordered(cuts: dict, by_name: dict) -> list:
    """The tables' typed names, each after the table it references (its CTE reads that one's)."""
    done: list = []
    while len(done) < len(cuts):
        ready = [typed for typed, table in cuts.items() if typed not in done and (
            (parent := _parent(table, by_name)) is None or parent[0] in done)]
        if not ready:                   # a circle of references: metadata refuses it
            raise InternalError("references in a circle reached the planner; please report it")
        done += ready
    return done


def _parent(table, by_name: dict) -> tuple | None:
    """(typed name, column) of the cut table that ``table``'s key references, if any."""
    col = table.column(_key(table))
    if col is None or col.private_id or not col.references:
        return None
    schema_table, _, column_name = col.references.lower().rpartition(".")
    typed = by_name.get(schema_table)
    return None if typed is None else (typed, column_name)


def _cut_rows(table, prefix: str, held: tuple | None, read: set | None) -> exp.Select:
    """At most max_ids random rows per key value of ``table``, of its columns in ``read``
    (None: all); for a table that reaches its person through ``references`` (``held``: the
    referenced table's cut and column), only rows whose key its kept rows hold (review 22:
    cut per order alone, a person's 1,000 orders kept 3,000 items where orders' max_ids
    was 3)."""
    key = _key(table)
    names = [n for n in table.columns if read is None or n.lower() in read]

    def stored():
        return exp.select(*[column(n) for n in names]).from_(
            exp.Table(this=exp.to_identifier(typed_name(table), quoted=True)))
    null = exp.Is(this=column(key), expression=exp.Null())
    owned = stored().where(exp.Not(this=null.copy()))
    if held is not None:
        owned = owned.where(exp.In(this=column(key), query=exp.Subquery(this=exp.select(
            column(held[1])).from_(exp.Table(this=exp.to_identifier(held[0], quoted=True))))))
    kept = truncated(owned, key, table.max_ids, names, prefix)
    unowned = stored().where(null)
    # Each value through a CASE on a random number (always true): no engine moves a
    # condition on it below the cut (DuckDB's filter pushdown, PostgreSQL's and Spark's
    # through a window on its partition key), so the query's WHERE runs on kept rows only.
    fenced = [exp.alias_(exp.Case(ifs=[exp.If(this=exp.GTE(
        this=exp.Rand(), expression=exp.Literal.number(0)), true=column(n))]), n, quoted=True)
        for n in names]
    return exp.select(*fenced).from_(exp.Subquery(
        this=exp.union(unowned, exp.select(exp.Star()).from_(exp.Subquery(
            this=kept, alias=exp.TableAlias(this=exp.to_identifier(f"_cut{prefix}")))),
            distinct=False),
        alias=exp.TableAlias(this=exp.to_identifier(f"_stored{prefix}"))))


def _key(table) -> str | None:
    """The column whose value names a row's person (or referenced row), if rows are cut."""
    if table.public or table.row_privacy or not table.sample_max_ids:
        return None
    for name, col in table.columns.items():
        if col.private_id:
            return name
    for name, col in table.columns.items():
        if col.references:
            return name
    return None
