"""The relational plan: what the final aggregation reads, with bounds on every column.

Owns: turning the FROM clause of a query (metadata tables, ``WITH`` and
subqueries, nested to any depth) into one ``Relation``. A relation is a
sqlglot query over the base table's typed relation plus, per column, its type,
its bounds, its public value set and whether it is the person's id; and, for the
whole relation, whose rows they are (the privacy unit) and the most rows one
person can have in it (``k``). The final aggregation (``dpsql.plan.aggregate``)
reads its sensitivities from these, never from data.

Three kinds of step, each a small function from relation to relation:
- ``scan``: a metadata table (its typed relation); ``k`` is ``max_ids``.
- ``select_rows``: derived columns and WHERE (row-level, so ``k`` is unchanged);
  ``SELECT DISTINCT`` only when the person's id is among its columns.
- ``per_person``: ``GROUP BY`` the person's id (and maybe more keys): the
  child's rows are truncated to ``k`` per person first, so every aggregate has
  bounds (``COUNT(*)`` in ``[1, k]``, ``SUM(x)`` in ``[k min(lo, 0), k max(hi, 0)]``,
  ``AVG``/``MIN``/``MAX`` in ``[lo, hi]``); the result has one row per person
  (``k = 1``) when grouped by the id alone, else at most ``k``.
Any other aggregation in a subquery mixes persons and is refused.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from sqlglot import exp

from ..errors import QueryError
from ..metadata import Column, Table
from ..rewrite import TYPED_SOURCE, clamp, column, substitute
from ..sql.binding import Binder, fail
from ..sql.typecheck import Checker
from .bounds import INF, Deriver

HIDDEN_PID = "_dpsql_pid"
"""The column that carries the person's id through steps that do not select it."""
ROW_CLAUSES = {"expressions", "from_", "from", "where", "group", "having", "order", "distinct",
               "kind", "with_", "with"}
PER_PERSON_AGGREGATES = (exp.Count, exp.Sum, exp.Avg, exp.Min, exp.Max)


@dataclass
class Field:
    """One column of a relation, as the final aggregation needs to know it."""

    name: str
    kind: str                          # language type (dpsql.sql.allowed.ENGINE_TYPES)
    lower: float | int | None = None
    upper: float | int | None = None
    domain: tuple | None = None        # public set of non-NULL values
    nullable: bool = True
    is_id: bool = False                # exactly the person's id
    of_id: bool = False                # computed from the id: never a released key
    origin: str = ""                   # how it was derived, for explain

    def bounds_text(self) -> str:
        if self.kind == "boolean":
            return "boolean"
        if self.is_id:
            return "person id"
        if self.lower is None or self.upper is None:
            return "unbounded"
        return f"[{self.lower:g}, {self.upper:g}]" + (
            f", {len(self.domain)} public values" if self.domain is not None else "")


@dataclass
class Relation:
    base: Table                        # the metadata table whose persons the rows belong to
    fields: dict                       # lower-case name -> Field, in output order
    pid: str | None                    # column holding the person id; None: row privacy
    k: int                             # most rows one person has here
    bounded: bool = False              # k holds by construction: no truncation needed
    sql: exp.Select | None = None      # None: the base table's typed relation itself
    steps: list = field(default_factory=list)

    def source(self, alias: str = "_src") -> exp.Expression:
        name = exp.TableAlias(this=exp.to_identifier(alias))
        if self.sql is None:
            return exp.Table(this=exp.to_identifier(TYPED_SOURCE, quoted=True), alias=name)
        return exp.Subquery(this=self.sql.copy(), alias=name)

    def types(self) -> dict:
        return {k: f.kind for k, f in self.fields.items()}

    def table(self) -> Table:
        """The relation as a metadata table, so the aggregation planner reads it as one."""
        if self.sql is None:
            return self.base
        columns = {}
        for f in self.fields.values():
            columns[f.name] = Column(
                f.name, f.kind, private_id=(f.name == self.pid), lower=f.lower, upper=f.upper,
                nullable=f.nullable, values=tuple(sorted(f.domain, key=repr)) if f.domain is not None else None)
        return Table(self.base.schema, self.base.name, columns, max_ids=self.k,
                     row_privacy=self.pid is None, censor_dims=self.base.censor_dims)

    def visible(self) -> list:
        return [f for f in self.fields.values() if f.name != HIDDEN_PID]


# ------------------------------------------------------------------ scan

def scan(table: Table) -> Relation:
    pid = None if table.row_privacy or not table.private_ids else table.private_ids[0]
    fields = {}
    for col in table.columns.values():
        bounded = col.type in ("int", "float") and col.bounded
        fields[col.name.lower()] = Field(
            col.name, col.type, col.lower if bounded else None, col.upper if bounded else None,
            domain=col.values, nullable=col.nullable, is_id=col.private_id, of_id=col.private_id,
            origin="metadata")
    k = 1 if pid is None else int(table.max_ids)
    unit = "row (row_privacy)" if pid is None else f"person ({pid}), at most {k} row(s) each"
    return Relation(table, fields, pid, k, steps=[f"scan {table.full_name}: privacy unit {unit}"])


# ------------------------------------------------------------------ resolution

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
            if cte.args.get("materialized") is not None:
                pass
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


# ------------------------------------------------------------------ row-level select

def _references_id(node: exp.Expression, child: Relation) -> bool:
    return any(child.fields.get(c.name.lower(), Field("", "")).of_id for c in node.find_all(exp.Column))


def _derive(expr: exp.Expression, kind: str, child: Relation, name: str, id_column: bool) -> Field:
    if id_column:
        f = child.fields[expr.name.lower()]
        return replace(f, name=name)
    d = Deriver(child.fields)
    lo, hi = (d.interval(expr) if kind in ("int", "float", "boolean") else (-INF, INF))
    bounded = math.isfinite(lo) and math.isfinite(hi) and kind in ("int", "float")
    if bounded and kind == "int":
        lo, hi = math.floor(lo), math.ceil(hi)
    domain = d.domain(expr, kind)
    return Field(name, kind, lo if bounded else None, hi if bounded else None,
                 domain=tuple(domain) if domain is not None else None,
                 of_id=_references_id(expr, child), origin=expr.sql("duckdb")[:60])


def _output_name(item: exp.Expression) -> str:
    if isinstance(item, exp.Alias):
        return item.alias
    if isinstance(item, exp.Column):
        return item.name
    fail(f"the column {item.sql('duckdb')[:60]} of a CTE or subquery needs a name: write "
         "... AS name")


def _check_name(name: str, seen: set, where: str) -> None:
    if name.lower().startswith("_dpsql"):
        fail(f"column names starting with _dpsql are reserved (in {where!r})")
    if name.lower() in seen:
        fail(f"two columns of {where!r} are named {name!r}; give each a different alias")
    seen.add(name.lower())


def select_rows(tree: exp.Select, child: Relation, binder: Binder, name: str) -> Relation:
    types = child.types()
    projections, fields, seen = [], {}, set()
    for item in tree.expressions:
        if isinstance(item, exp.Star) or (isinstance(item, exp.Column) and isinstance(item.this, exp.Star)):
            if item.args.get("except") or item.args.get("replace"):
                fail(f"* EXCLUDE/REPLACE is not supported (inside {name!r}); list the columns")
            for f in child.visible():
                _check_name(f.name, seen, name)
                projections.append(exp.alias_(column(f.name), f.name, quoted=True))
                fields[f.name.lower()] = replace(f)
            continue
        out = _output_name(item)
        _check_name(out, seen, name)
        bound = binder.bind(item.unalias().copy(), "SELECT")
        if any(isinstance(n, exp.AggFunc) for n in bound.walk()):
            fail(f"aggregate in a row-level SELECT of {name!r}")
        expr, kind = Checker(types, clause=f"SELECT of {name!r}").check(bound)
        if kind == "null":
            fail(f"the column {out!r} of {name!r} is a constant NULL; CAST it to a type")
        is_id = isinstance(bound, exp.Column) and child.fields[bound.name.lower()].is_id
        fields[out.lower()] = _derive(bound if is_id else expr, kind, child, out, is_id)
        projections.append(exp.alias_(expr, out, quoted=True))
    pid = None
    if child.pid is not None:
        ids = [f.name for f in fields.values() if f.is_id]
        pid = ids[0] if ids else HIDDEN_PID
        if not ids:
            projections.append(exp.alias_(column(child.pid), HIDDEN_PID, quoted=True))
            fields[HIDDEN_PID] = replace(child.fields[child.pid.lower()], name=HIDDEN_PID)
    for f in fields.values():   # only one column is the unit's id; copies are of_id
        f.is_id = f.name == pid
    sql = exp.select(*projections).from_(child.source("_c"))
    where = tree.args.get("where")
    steps = list(child.steps)
    if where is not None:
        cond = Checker(types, clause=f"WHERE of {name!r}").predicate(binder.bind(where.this.copy(), "WHERE"))
        sql = sql.where(cond)
    if tree.args.get("distinct"):
        if pid is None or not any(f.is_id for f in fields.values() if f.name != HIDDEN_PID):
            fail(f"SELECT DISTINCT inside {name!r} must include the privacy unit's id among its "
                 "columns: otherwise it merges rows of different persons")
        sql = sql.distinct()
    steps.append(f"{name}: row-level select (rows per person unchanged, at most {child.k}): "
                 + ", ".join(f"{f.name} {f.bounds_text()}" for f in fields.values()
                             if f.name != HIDDEN_PID)
                 + ("; WHERE " + where.this.sql("duckdb")[:80] if where is not None else ""))
    return Relation(child.base, fields, pid, child.k, child.bounded, sql, steps)


# ------------------------------------------------------------------ per-person aggregation

def truncated(rows: exp.Select, pid: str, k: int, fields: list, prefix: str = "") -> exp.Select:
    """Keep a uniformly random subset of at most k rows per person, inside the engine.

    Persons with at most k rows keep them all (what a uniform k-subset gives them
    anyway); only the rows of persons with more go through ARG_MIN(struct,
    RANDOM(), k), which keeps the k rows with the smallest random tags. Splitting
    the two measured 1.6-2x faster than sampling everyone. Rows whose id is NULL
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


def not_null_id(rows: exp.Select, pid: str) -> exp.Select:
    return rows.where(exp.Not(this=exp.Is(this=column(pid), expression=exp.Null())))


class _PerPerson:
    """Builds one per-person aggregation (see the module docstring)."""

    def __init__(self, tree, child: Relation, binder: Binder, name: str):
        self.tree, self.child, self.binder, self.name = tree, child, binder, name
        self.types = child.types()
        self.aggregates: list = []       # (bound node, output name, engine expression, Field)

    def key_list(self) -> list:
        group = self.tree.args.get("group")
        if group is None:
            fail(f"aggregation inside {self.name!r} without GROUP BY mixes the rows of all "
                 "persons; only per-person aggregation (GROUP BY the privacy unit's id) is "
                 "allowed inside a subquery or CTE")
        if any(group.args.get(a) for a in ("rollup", "cube", "grouping_sets", "all")):
            fail(f"GROUP BY ROLLUP/CUBE/GROUPING SETS/ALL is not supported (inside {self.name!r})")
        items = self.tree.expressions
        by_alias = {i.alias.lower(): i.this for i in items if isinstance(i, exp.Alias)}
        keys = []
        for key in group.expressions:
            if isinstance(key, exp.Literal) and not key.is_string and key.this.isdigit() \
                    and 1 <= int(key.this) <= len(items):
                key = items[int(key.this) - 1].unalias()
            elif isinstance(key, exp.Column) and not key.table and key.name.lower() in by_alias \
                    and self.child.fields.get(key.name.lower()) is None:
                key = by_alias[key.name.lower()]
            bound = self.binder.bind(key.copy(), "GROUP BY")
            if any(isinstance(n, exp.AggFunc) for n in bound.walk()):
                fail(f"aggregate in GROUP BY (inside {self.name!r})")
            if bound not in keys:
                keys.append(bound)
        ids = [k for k in keys if isinstance(k, exp.Column) and self.child.fields[k.name.lower()].is_id]
        if self.child.pid is None:
            fail(f"aggregation inside {self.name!r}: the table has row privacy (every row is a "
                 "person), so a GROUP BY inside a subquery or CTE would mix persons; aggregate "
                 "in the outer query")
        if not ids:
            fail(f"GROUP BY inside {self.name!r} does not include the privacy unit's id "
                 f"({self.child.base.private_ids[0]}): that aggregation mixes the rows of "
                 "different persons. Group by the id (per-person aggregation) or aggregate in "
                 "the outer query")
        if self.child.bounded:
            fail(f"{self.name!r} aggregates per person a second time; aggregate the per-person "
                 "rows in the outer query")
        return keys

    def aggregate(self, node: exp.Expression, out: str) -> Field:
        if not isinstance(node, PER_PERSON_AGGREGATES):
            fail(f"{node.sql('duckdb')[:60]} is not supported in a per-person aggregation "
                 f"(inside {self.name!r}); use COUNT, SUM, AVG, MIN or MAX")
        k = self.child.k
        checker = Checker(self.types, clause=f"the per-person aggregation {self.name!r}")
        arg = node.this
        if isinstance(node, exp.Count):
            if isinstance(arg, exp.Star) or isinstance(arg, (exp.Literal, exp.Boolean)):
                agg, lo = exp.Count(this=exp.Star()), 1
            elif isinstance(arg, exp.Distinct):
                if len(arg.expressions) != 1:
                    fail("COUNT(DISTINCT ...) takes one expression")
                agg, lo = exp.Count(this=exp.Distinct(expressions=[checker.check(arg.expressions[0])[0]])), 0
            else:
                agg, lo = exp.Count(this=checker.check(arg)[0]), 0
            return agg, Field(out, "int", lo, k, domain=tuple(range(lo, k + 1)), nullable=False,
                              origin=f"{node.sql('duckdb')[:40]} per person, at most {k} rows")
        expr, kind = checker.check(arg)
        if isinstance(node, (exp.Min, exp.Max)) and kind not in ("int", "float", "boolean"):
            return type(node)(this=expr), Field(out, kind, origin=node.sql("duckdb")[:40])
        if kind not in ("int", "float", "boolean"):
            fail(f"{node.sql('duckdb')[:60]} needs a number (inside {self.name!r})")
        d = Deriver(self.child.fields)
        lo, hi = (0, 1) if kind == "boolean" else d.interval(expr)
        if kind == "boolean":
            expr, kind = exp.Cast(this=expr, to=exp.DataType.build("BIGINT")), "int"
        if not (math.isfinite(lo) and math.isfinite(hi)):
            if isinstance(node, (exp.Min, exp.Max)):
                return type(node)(this=expr), Field(out, kind, origin=node.sql("duckdb")[:40])
            fail(_unbounded_message(node, d.unbounded))
        if kind == "int":
            lo, hi = math.floor(lo), math.ceil(hi)
        value = clamp(expr, lo, hi)
        if isinstance(node, exp.Sum):
            engine = "BIGINT" if kind == "int" else "DOUBLE"
            return (exp.TryCast(this=exp.Sum(this=value), to=exp.DataType.build(engine)),
                    Field(out, kind, k * min(lo, 0), k * max(hi, 0),
                          origin=f"SUM per person of {k} rows in [{lo:g}, {hi:g}]"))
        if isinstance(node, exp.Avg):
            return exp.Avg(this=value), Field(out, "float", lo, hi, origin="AVG per person")
        return type(node)(this=value), Field(out, kind, lo, hi, origin=f"{node.key.upper()} per person")


def _unbounded_message(node, parts) -> str:
    where = "; ".join(dict.fromkeys(parts)) or node.sql("duckdb")[:80]
    return (f"{node.sql('duckdb')[:80]} needs bounds, but its argument is unbounded: {where}. "
            "Bound it in the query, e.g. LEAST(GREATEST(x, 0), 100), or give the column lower "
            "and upper bounds in the metadata (chosen without looking at the data)")


def per_person(tree: exp.Select, child: Relation, binder: Binder, name: str) -> Relation:
    builder = _PerPerson(tree, child, binder, name)
    keys = builder.key_list()
    projections, fields, seen, aggs = [], {}, set(), []
    key_exprs, key_outputs = [], {}
    for key in keys:
        expr, kind = Checker(builder.types, clause=f"GROUP BY of {name!r}").check(key)
        key_exprs.append(expr)

    def add_aggregate(node, out):
        for existing, existing_out in aggs:
            if existing == node:
                return existing_out
        agg, f = builder.aggregate(node, out)
        aggs.append((node, out))
        fields[out.lower()] = f
        projections.append(exp.alias_(agg, out, quoted=True))
        return out

    for item in tree.expressions:
        out = _output_name(item)
        _check_name(out, seen, name)
        bound = binder.bind(item.unalias().copy(), "SELECT")
        if bound in keys:
            i = keys.index(bound)
            is_id = isinstance(bound, exp.Column) and child.fields[bound.name.lower()].is_id
            _, kind = Checker(builder.types, clause=name).check(bound)
            fields[out.lower()] = _derive(bound if is_id else key_exprs[i], kind, child, out, is_id)
            projections.append(exp.alias_(key_exprs[i], out, quoted=True))
            key_outputs.setdefault(i, out)
        elif isinstance(bound, exp.AggFunc):
            add_aggregate(bound, out)
        else:
            fail(f"{item.sql('duckdb')[:60]} inside {name!r} is neither a GROUP BY key nor one "
                 "aggregate; per-person columns are keys or COUNT/SUM/AVG/MIN/MAX(...)")
    ids = [f.name for f in fields.values() if f.is_id]
    pid = ids[0] if ids else HIDDEN_PID
    for f in fields.values():
        f.is_id = f.name == pid
    if not ids:
        projections.append(exp.alias_(column(child.pid), HIDDEN_PID, quoted=True))
        fields[HIDDEN_PID] = replace(child.fields[child.pid.lower()], name=HIDDEN_PID, is_id=True)
    having = tree.args.get("having")
    condition = None
    if having is not None:
        bound = binder.bind(having.this.copy(), "HAVING")
        mapping = []
        for node in [n for n in bound.walk() if isinstance(n, exp.AggFunc)]:
            out = add_aggregate(node, f"_dpsql_h{len(aggs)}")
            mapping.append((node, column(out)))
        for i, key in enumerate(keys):
            if i not in key_outputs:
                out = f"_dpsql_h{len(aggs)}_{i}"
                _, kind = Checker(builder.types, clause=name).check(key)
                fields[out.lower()] = _derive(key_exprs[i], kind, child, out, False)
                projections.append(exp.alias_(key_exprs[i], out, quoted=True))
                key_outputs[i] = out
            mapping.append((key, column(key_outputs[i])))
        having_expr = substitute(bound, mapping)
        condition = Checker({k: f.kind for k, f in fields.items()},
                            clause=f"HAVING of {name!r}").predicate(having_expr)
    # Truncate the child's rows (after its WHERE) to k per person, then aggregate.
    rows = exp.select(exp.Star()).from_(child.source("_c"))
    where = tree.args.get("where")
    if where is not None:
        rows = rows.where(Checker(builder.types, clause=f"WHERE of {name!r}").predicate(
            binder.bind(where.this.copy(), "WHERE")))
    rows = not_null_id(rows, child.pid)
    used = {child.pid} | {c.name for p in projections + key_exprs for c in p.find_all(exp.Column)}
    used = sorted((child.fields[u.lower()].name for u in used if u.lower() in child.fields), key=str.lower)
    rows = truncated(rows, child.pid, child.k, used, prefix=f"_{len(child.steps)}")
    groups = [e.copy() for e in key_exprs]
    if not any(isinstance(e, exp.Column) and e.name == child.pid for e in groups):
        groups.append(column(child.pid))
    sql = exp.select(*projections).from_(exp.Subquery(
        this=rows, alias=exp.TableAlias(this=exp.to_identifier("_t")))).group_by(*groups)
    if condition is not None:
        sql = exp.select(exp.Star()).from_(exp.Subquery(
            this=sql, alias=exp.TableAlias(this=exp.to_identifier("_p")))).where(condition)
    k = 1 if len(keys) == 1 else child.k
    hidden = [n for n in fields if n.startswith("_dpsql_h")]
    steps = list(child.steps)
    steps.append(f"truncation: at most {child.k} row(s) per person kept (uniformly at random), "
                 f"before {name!r}")
    steps.append(f"{name}: per-person aggregation by {', '.join(key.sql('duckdb') for key in keys)}"
                 f" -> at most {k} row(s) per person: "
                 + ", ".join(f"{f.name} {f.bounds_text()}" for n, f in fields.items()
                             if n not in hidden and f.name != HIDDEN_PID)
                 + (f"; HAVING {having.this.sql('duckdb')[:80]}" if having is not None else ""))
    return Relation(child.base, fields, pid, k, True, sql, steps)


def resolve(tree: exp.Select, metadata) -> tuple:
    """(relation, qualifiers) that the top-level query aggregates."""
    return Resolver(metadata).from_clause(tree, {})
