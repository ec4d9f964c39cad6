"""The relational plan: what the final aggregation reads, with bounds on every column.

Owns: the ``Relation`` that the FROM clause of a query (metadata tables,
``WITH`` and subqueries, nested to any depth; resolved by ``resolve``) becomes,
the row-level steps. A relation is a
sqlglot query over the base table's typed relation plus, per column, its type,
its bounds, its public value set and whether it is the person's id; and, for the
whole relation, whose rows they are (the privacy unit) and the most rows one
person can have in it (``k``). The final aggregation (``dpsql.plan.aggregate``)
reads its sensitivities from these, never from data.

Three kinds of step, each a small function from relation to relation:
- ``scan``: a metadata table (its typed relation); ``k`` is ``max_ids``.
- ``select_rows``: derived columns and WHERE (row-level, so ``k`` is unchanged);
  ``SELECT DISTINCT`` only when the person's id is among its columns.
- ``per_person`` (its own module): ``GROUP BY`` the person's id, after
  truncating the child to ``k`` rows per person (``dpsql.plan.nodes.Truncated``).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from sqlglot import exp

from ..metadata.model import Column, Table
from .rewrite import column, typed_name
from ..frontend.allowed import TEXT_UNIT
from ..frontend.costs import CHARS, chars_as_bytes, row_cost, text_length
from ..frontend.binding import Binder, expression_weight, fail
from ..frontend.typecheck import Checker
from .bounds import INF, Deriver, field_chars
from ..frontend.dialect import ANALYST_DIALECT

HIDDEN_PID = "_dpsql_pid"
"""The column that carries the person's id through steps that do not select it."""
MAX_FANOUT = 1_000
"""Most rows a relation may hold per private source row of its person: what one row
becomes through joins with public relations (the product of a key's repetitions in each),
with private tables on the person (the other side's bound) and through references (the
referenced row's copies, dpsql.plan.references), summed over UNION ALL parts and
semi-joins. The work one person's rows can cause is then at most this many times their
rows: it must not grow with factors the analyst chooses, or the time a query takes would
tell whether the rows a WHERE singles out are there."""
MAX_PUBLIC_ROWS = 1_000_000
"""Most rows of a public relation (a public table, VALUES, their joins), checked from
public facts before the relation is read or built."""
ROW_CLAUSES = {"expressions", "from_", "from", "where", "group", "having", "order", "distinct",
               "kind", "with_", "with"}


@dataclass
class Field:
    """One column of a relation, as the final aggregation needs to know it."""

    name: str
    kind: str                          # language type (dpsql.frontend.allowed.ENGINE_TYPES)
    lower: float | int | None = None
    upper: float | int | None = None
    domain: tuple | None = None        # public set of non-NULL values
    nullable: bool = True
    is_id: bool = False                # exactly the person's id
    of_id: bool = False                # computed from the id: never a released key
    in_bounds: bool = False            # every value lies within [lower, upper] by construction
    origin: str = ""                   # how it was derived, for explain
    source: str | None = None          # "schema.table.column": that column's value, unchanged
    id_copy: bool = False              # equals the person's id on every row (an inner join's key)
    ref: str | None = None             # "schema.table.column" this column references (no id yet)
    weight: int = 1                    # base-column references it stands for (MAX_WEIGHT)
    cost: int = 0                      # work computing it takes a row (frontend.costs)
    text: int | None = None            # most bytes of its text (None: weight units)
    chars: int | None = None           # most characters of its text (None: text_bytes())
    censored: bool = True              # as a group key, needs a threshold unless its values
                                       # are public: False only if every table it comes from
                                       # says censor_dims: false

    def text_bytes(self) -> int:
        """The most bytes of this text column (``text`` if known, else its weight's units)."""
        return self.text if self.text is not None else chars_as_bytes(self.weight * TEXT_UNIT)

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
    unit: str = "person"               # person | row | public (no persons) | reference (see ref)
    tables: tuple | None = None        # every metadata table the relation reads
    ref: tuple | None = None           # unit "reference": (field, referenced Table, its column)
    group_bounds: tuple | None = None  # (max_groups, max_rows_per_group) that truncation may use
    local_ids: bool = False            # the ids are random identities of a row-privacy
                                       # table's rows: they name no person outside this relation
    fanout: int = 1                    # most engine rows here per private source row of the
                                       # person (public repetitions, joins; see MAX_FANOUT)
    rows: int | None = None            # public relations: most rows (see MAX_PUBLIC_ROWS)
    copies: dict = field(default_factory=dict)
    # lower-case full name of a private table -> the most rows of this relation that one
    # row of it becomes (strictly, per row; a table not listed: no such bound is known).
    # A reference join needs it for the table it references (dpsql.plan.references).
    held: bool = False                 # k holds by how the rows were made (the sides of a
                                       # join on the person were truncated before it), though
                                       # they are not per-person rows: no truncation needed
    owned: bool = False                # ``sql`` was built for this relation's one reader (a
                                       # join's truncated side, a join): the first ``source``
                                       # takes it as it is, later ones copy it

    def __post_init__(self) -> None:
        if self.tables is None:
            self.tables = (self.base,)

    def source(self, alias: str = "_src") -> exp.Expression:
        name = exp.TableAlias(this=exp.to_identifier(alias))
        if self.sql is None:
            return exp.Table(this=exp.to_identifier(typed_name(self.base), quoted=True), alias=name)
        if self.owned:       # no other tree holds it: not copied (copying a nested
            self.owned = False               # plan at each level of joins was quadratic)
            return exp.Subquery(this=self.sql, alias=name)
        return exp.Subquery(this=self.sql.copy(), alias=name)

    def derived(self, fields: dict, pid, k: int, bounded: bool, sql, steps: list) -> "Relation":
        """A relation computed row by row (or per person) from this one: same unit and tables."""
        return Relation(self.base, fields, pid, k, bounded, sql, steps, self.unit, self.tables,
                        self.ref, self.group_bounds, self.local_ids, self.fanout, self.rows,
                        dict(self.copies), self.held and k == self.k and pid == self.pid)

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
                nullable=f.nullable, values=_ordered(f.domain), weight=f.weight,
                cost=f.cost, text=f.text)
        # Whether a key needs a threshold is each key column's own property (Field.censored,
        # read by the aggregation planner), not the base table's.
        return Table(self.base.schema, self.base.name, columns, max_ids=self.k,
                     row_privacy=self.pid is None, censor_dims=True)

    def visible(self) -> list:
        return [f for f in self.fields.values() if f.name != HIDDEN_PID]


def _ordered(domain) -> tuple | None:
    """A public value set in a fixed order (numbers by value), so plans are reproducible."""
    if domain is None:
        return None
    return tuple(sorted(domain, key=lambda v: (type(v).__name__, v)))


# ------------------------------------------------------------------ scan

def scan(table: Table, metadata=None) -> Relation:
    """A metadata table. Its person is its private_id, or a column that references the
    private_id of another table (orders.customer_id -> customers.customer_id); a column
    that references any other column (order_items.order_id -> orders.order_id) leaves
    the relation waiting for a join with that table (unit "reference")."""
    pid = None if table.row_privacy or not table.private_ids else table.private_ids[0]
    ref = None
    refs = [c for c in table.columns.values() if c.references]
    if refs and metadata is not None and pid is None and not table.row_privacy:
        target_table, target_col = referenced(metadata, refs[0].references)
        if target_col.private_id:
            pid = refs[0].name
        else:
            ref = (refs[0].name, target_table, target_col.name)
    fields = {}
    for col in table.columns.values():
        bounded = col.type in ("int", "float") and col.bounded
        is_id = col.name == pid
        fields[col.name.lower()] = Field(
            col.name, col.type, col.lower if bounded else None, col.upper if bounded else None,
            domain=col.values, nullable=col.nullable, is_id=is_id, of_id=is_id or col.private_id,
            origin="metadata", source=f"{table.full_name}.{col.name}".lower(), weight=col.work,
            text=chars_as_bytes(col.text_length) if col.type == "string" else None,
            chars=col.text_length if col.type == "string" else None,
            censored=table.public or table.censor_dims,
            ref=(f"{ref[1].full_name}.{ref[2]}".lower() if ref and col.name == ref[0] else None))
    if table.public:
        return Relation(table, fields, None, 0, True, steps=[f"scan {table.full_name}: public "
                        "(no private rows)"], unit="public")
    k = 1 if pid is None and ref is None else int(table.max_ids)
    groups = ((int(table.max_groups), int(table.max_rows_per_group))
              if table.max_groups and table.max_rows_per_group and pid is not None else None)
    if ref is not None:
        unit = (f"the person of {ref[1].full_name}.{ref[2]} (through {ref[0]}), at most {k} "
                "row(s) each")
        kind = "reference"
    elif pid is None:
        unit, kind = "row (row_privacy)", "row"
    else:
        unit, kind = f"person ({pid}), at most {k} row(s) each", "person"
        if groups:
            unit += f"; at most {groups[0]} group(s) and {groups[1]} row(s) per group"
    return Relation(table, fields, pid, k, steps=[f"scan {table.full_name}: privacy unit {unit}"],
                    unit=kind, ref=ref, group_bounds=groups, copies={table.full_name.lower(): 1})


def referenced(metadata, target: str) -> tuple:
    """(Table, Column) named by a ``references`` value (checked when the metadata loaded)."""
    parts = target.split(".")
    table = metadata.find_table(".".join(parts[:-1]))
    column_ = table.column(parts[-1]) if table is not None else None
    if column_ is None:
        fail(f"the metadata's reference {target!r} names no column; fix the metadata")
    return table, column_


# ------------------------------------------------------------------ row-level select

def _references_id(node: exp.Expression, child: Relation) -> bool:
    return any(child.fields.get(c.name.lower(), Field("", "")).of_id for c in node.find_all(exp.Column))


MAX_WORK = 10_000
"""Most work one private source row may cost: the rows it becomes (``fanout``) times the
weight of the heaviest column computed on them (``Field.weight``)."""


def check_work(relation: "Relation", extra: int = 1) -> None:
    """Refuse before anything runs if one private row could cost more than MAX_WORK."""
    heaviest = max([f.weight for f in relation.fields.values()] + [extra])
    if relation.fanout * heaviest > MAX_WORK:
        fail(f"each private row becomes up to {relation.fanout:,} row(s), and a column computed "
             f"on them stands for {heaviest:,} column references (a string column counting one per "
             f"{TEXT_UNIT} characters of its max_length): {relation.fanout * heaviest:,} "
             f"units of work per private row, more than dpsql's limit of {MAX_WORK:,}, which "
             "keeps the time a query takes from telling whether the rows it singles out are "
             "there. Join fewer public rows, or compute simpler or shorter columns")


def field_text(fields: dict):
    """The most bytes of a text column of ``fields`` (``costs.text_length``'s reader)."""
    def text(c):
        f = fields.get(c.name.lower())
        return f.text_bytes() if f is not None and f.kind == "string" else None
    return text


def field_cost(expr: exp.Expression, fields: dict) -> int:
    """The work (``costs.row_cost``) computing ``expr`` over a relation's ``fields`` takes a row."""
    return row_cost(expr, field_text(fields),
                    lambda c: getattr(fields.get(c.name.lower()), "cost", 0))


def censored(node: exp.Expression, fields: dict) -> bool:
    """Whether a key computed by ``node`` needs a threshold: if any column it reads does
    (a column the relation does not know counts as one that does)."""
    return any(fields.get(c.name.lower(), Field("", "")).censored for c in node.find_all(exp.Column))


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
    plain = child.fields.get(expr.name.lower()) if isinstance(expr, exp.Column) else None
    return Field(name, kind, lo if bounded else None, hi if bounded else None,
                 domain=tuple(domain) if domain is not None else None,
                 of_id=_references_id(expr, child), origin=expr.sql(ANALYST_DIALECT)[:60],
                 censored=censored(expr, child.fields),
                 weight=expression_weight(expr, lambda c: child.fields.get(
                     c.name.lower(), Field("", "")).weight),
                 cost=field_cost(expr, child.fields),
                 text=text_length(expr, field_text(child.fields)) if kind == "string" else None,
                 chars=(text_length(expr, field_chars(child.fields), CHARS)
                        if kind == "string" else None),
                 nullable=plain.nullable if plain is not None else True,
                 source=plain.source if plain is not None else None,
                 ref=plain.ref if plain is not None else None,
                 id_copy=plain.id_copy if plain is not None else False)


def _output_name(item: exp.Expression) -> str:
    if isinstance(item, exp.Alias):
        return item.alias
    if isinstance(item, exp.Column):
        return item.name
    fail(f"the column {item.sql(ANALYST_DIALECT)[:60]} of a CTE or subquery needs a name: write "
         "... AS name")


def _check_name(name: str, seen: set, where: str, planned: bool = False) -> None:
    """``planned``: a name dpsql chose (``dpsql.plan.correlated``), not the analyst."""
    if name.lower().startswith("_dpsql") and not planned:
        fail(f"column names starting with _dpsql are reserved (in {where!r})")
    if name.lower() in seen:
        fail(f"two columns of {where!r} are named {name!r}; give each a different alias")
    seen.add(name.lower())


def select_rows(tree: exp.Select, child: Relation, binder: Binder, name: str) -> Relation:
    types = child.types()
    projections, fields, seen = [], {}, set()
    for item in tree.expressions:
        if isinstance(item, exp.Star) or (isinstance(item, exp.Column) and isinstance(item.this, exp.Star)):
            _select_star(item, child, binder, name, seen, projections, fields)
            continue
        out = _output_name(item)
        planned = bool(item.meta.get("dpsql_hidden"))   # a column a WHERE reads
        _check_name(out, seen, name, planned)
        bound = binder.bind(item.unalias().copy(), "WHERE" if planned else "SELECT")
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
        bound = binder.bind(where.this.copy(), "WHERE")
        _not_null(bound, projections, fields)
        sql = sql.where(Checker(types, clause=f"WHERE of {name!r}").predicate(bound), copy=False)
    if tree.args.get("distinct"):
        if tree.args["distinct"].args.get("on") is not None:
            fail(f"DISTINCT ON is not supported (inside {name!r}): which row it keeps depends "
                 "on the order of other rows")
        if pid is None or not any(f.is_id for f in fields.values() if f.name != HIDDEN_PID):
            fail(f"SELECT DISTINCT inside {name!r} must include the privacy unit's id among its "
                 "columns: otherwise it merges rows of different persons")
        sql = sql.distinct(copy=False)
    steps.append(f"{name}: row-level select (rows per person unchanged, at most {child.k}): "
                 + ", ".join(f"{f.name} {f.bounds_text()}" for f in fields.values()
                             if f.name != HIDDEN_PID)
                 + ("; WHERE " + where.this.sql(ANALYST_DIALECT)[:80] if where is not None else ""))
    out = child.derived(fields, pid, child.k, child.bounded, sql, steps)
    out.ref = carried_ref(child.ref, fields)
    return out


def _not_null(where: exp.Expression, projections: list, fields: dict) -> None:
    """Mark not nullable each column selected unchanged that ``where`` (bound) keeps
    non-NULL by a top-level ``AND``-ed ``x IS NOT NULL``: the query text says so."""
    present, stack = set(), [where]
    while stack:
        node = stack.pop()
        while isinstance(node, exp.Paren):
            node = node.this
        if isinstance(node, exp.And):
            stack += [node.this, node.expression]
        elif isinstance(node, exp.Not) and isinstance(node.this, exp.Is) and isinstance(
                node.this.expression, exp.Null) and isinstance(node.this.this, exp.Column):
            present.add(node.this.this.name.lower())
    for item in projections:
        if isinstance(item.this, exp.Column) and item.this.name.lower() in present:
            fields[item.alias.lower()].nullable = False


def carried_ref(ref: tuple | None, fields: dict) -> tuple | None:
    """A relation's ``ref`` (unit "reference") after a select: the column that still holds
    the referencing value. A plain rename (``order_id AS oid``) keeps the column what it is,
    so the reference follows it to its new name; a computed value never carries it."""
    if ref is None:
        return None
    target = f"{ref[1].full_name}.{ref[2]}".lower()
    names = [f.name for f in fields.values() if f.ref == target]
    if not names or any(n.lower() == ref[0].lower() for n in names):
        return ref
    return (names[0],) + tuple(ref[1:])


def _select_star(item, child: Relation, binder: Binder, name: str, seen: set,
                 projections: list, fields: dict) -> None:
    """Add the columns ``*`` or ``t.*`` (less any EXCLUDE) of ``child`` to the select."""
    star = item if isinstance(item, exp.Star) else item.this
    if any(star.args.get(k) for k in ("replace", "rename")):
        fail(f"* REPLACE/RENAME is not supported (inside {name!r}); list the columns")
    excluded = set()
    for col in star.args.get("except_") or star.args.get("except") or []:
        if not isinstance(col, exp.Column) or child.fields.get(col.name.lower()) is None:
            fail(f"* EXCLUDE ({col.sql(ANALYST_DIALECT)}): no such column (inside {name!r})")
        excluded.add(col.name.lower())
    owned = None                   # t.*: the columns of table t only
    if isinstance(item, exp.Column) and item.table and binder.scope is not None:
        cols = binder.scope.get(item.table.lower())
        if cols is None:
            fail(f"unknown table or alias {item.table!r} in {item.table}.* (inside {name!r})")
        owned = {t.lower() for t in cols.values()}
    for f in [f for f in child.visible() if f.name.lower() not in excluded
              and (owned is None or f.name.lower() in owned)]:
        _check_name(f.name, seen, name)
        projections.append(exp.alias_(column(f.name), f.name, quoted=True))
        fields[f.name.lower()] = replace(f)



# ------------------------------------------------------------------ truncation

def not_null_id(rows: exp.Select, pid: str) -> exp.Select:
    """``rows`` (the caller's own select, changed in place) without the rows of a NULL id."""
    return rows.where(exp.Not(this=exp.Is(this=column(pid), expression=exp.Null())), copy=False)


def _unbounded_message(node, parts) -> str:
    where = "; ".join(dict.fromkeys(parts)) or node.sql(ANALYST_DIALECT)[:80]
    return (f"{node.sql(ANALYST_DIALECT)[:80]} needs bounds, but its argument is unbounded: {where}. "
            "Bound it in the query, e.g. LEAST(GREATEST(x, 0), 100), or give the column lower "
            "and upper bounds in the metadata (chosen without looking at the data)")
