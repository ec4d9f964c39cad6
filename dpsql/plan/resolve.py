"""Name resolution of FROM: tables, CTEs, subqueries, joins, VALUES and UNION ALL.

Owns: which relation each name in a FROM clause means (a CTE in scope first,
then a metadata table), the clauses allowed inside a CTE or subquery, the
choice between a row-level select and a per-person aggregation for each, and
the semi-joins of WHERE (``IN (SELECT ...)``, ``EXISTS``). How joins and unions
change whose rows a relation holds is ``dpsql.plan.joins``. Public tables are
read here, at planning time: their values are public key sets and bounds.
"""
from __future__ import annotations

from sqlglot import exp

from ..metadata.model import Table
from .rewrite import column
from ..frontend.allowed import ENGINE_TYPES, clause_name
from ..frontend.binding import Binder, fail
from .bounds import MAX_DOMAIN
from .comma import comma_joins, in_written_order
from .correlated import correlated_filter, correlated_in, is_outer, simple_link, split
from .joins import Join, conjuncts as _conjuncts, visible_scope
from .paths import join_to_person
from .setops import semi_join, union_all
from .per_person import per_person
from .column_lists import column_names, name_items, renamed
from .references import filtered
from .relations import ROW_CLAUSES, Field, Relation, scan, select_rows
from ..frontend.dialect import ANALYST_DIALECT
from ..frontend.literal_lists import rows_in


GROUPING_CHUNK = 32
"""Most columns in one GROUPING SETS read of a public table's values: Spark refuses more
than 64 grouping columns (32 with its legacy integer grouping id)."""


class Resolver:
    """Resolves the FROM of a query, with the CTEs in scope, into a relation."""

    def __init__(self, metadata, public=None):
        self.metadata = metadata
        self.public = public           # engine.public_rows, or None: public data unknown

    def from_clause(self, tree: exp.Select, env: dict, person: bool = False) -> tuple:
        """(relation, scope, tree) of ``tree``'s FROM and joins, after its own WITH, with
        the semi-joins of its WHERE applied (``tree`` comes back without them, and with
        its comma joins made the INNER JOINs they stand for, in join-graph order:
        ``dpsql.plan.comma``).
        ``person``: the relation must have its person (the released aggregation reads
        it), so a referencing relation gets the joins along its references
        (``dpsql.plan.paths``)."""
        env = self.with_clause(tree, env)
        source = tree.args.get("from_") or tree.args.get("from")
        if source is None:
            fail("a SELECT without a FROM clause (the query or one of its subqueries) reads no "
                 "table; name a table from the metadata")
        items = [source.this] + [j.this for j in tree.args.get("joins") or []]
        sides = []
        for node in items:
            rel, names = self.relation_of(node, env)
            sides.append((rel, visible_scope(rel, names)))
        tree, order = comma_joins(tree, [_names(rel, scope) for rel, scope in sides])
        relation, scope = sides[order[0]]
        for node, i in zip(tree.args.get("joins") or [], order[1:]):
            relation, scope = Join(self, relation, scope, *sides[i], node).build()
        relation = in_written_order(relation, [len(rel.visible()) for rel, _ in sides], order)
        if person:
            relation, scope = join_to_person(self, relation, scope)
        return self.semi_joins(tree, relation, scope, env)

    # -- semi-joins ------------------------------------------------------------
    def semi_joins(self, tree: exp.Select, relation: Relation, scope: dict, env: dict) -> tuple:
        where = tree.args.get("where")
        if where is None or not any(isinstance(n, (exp.Subquery, exp.Select, exp.Exists))
                                    for n in where.this.walk()):
            return relation, scope, tree
        rest = []
        for part in _conjuncts(where.this):
            negated = isinstance(part, exp.Not)
            inner = part.this if negated else part
            while isinstance(inner, exp.Paren):
                inner = inner.this
            if not any(isinstance(n, (exp.Subquery, exp.Select, exp.Exists)) for n in inner.walk()):
                rest.append(part)
                continue
            relation = self.semi_join(inner, negated, relation, scope, env)
        tree = tree.copy()
        if rest:
            cond = rest[0]
            for p in rest[1:]:
                cond = exp.and_(cond, p)
            tree.set("where", exp.Where(this=cond))
        else:
            tree.set("where", None)
        return relation, scope, tree

    def semi_join(self, node, negated: bool, relation: Relation, scope: dict, env: dict):
        label = ("NOT " if negated else "") + ("EXISTS (...)" if isinstance(node, exp.Exists)
                                               else "IN (SELECT ...)")
        binder = Binder(relation.table(), scope, relation.fanout)
        if isinstance(node, exp.In) and node.args.get("query") is not None:
            target = node.this
            sub = node.args["query"]
            sub = sub.this if isinstance(sub, exp.Subquery) else sub
            if isinstance(sub, exp.Select) and split(sub, scope)[1]:
                return correlated_in(self, sub, target, negated, relation, scope, env, label)
        elif isinstance(node, exp.Exists):
            sub = node.this
            sub = sub.this if isinstance(sub, exp.Subquery) else sub
            if isinstance(sub, exp.Select):
                linked = split(sub, scope)[1]
                if linked and not simple_link(linked):
                    return correlated_filter(self, sub, negated, relation, scope, env, label)
            target, sub = self._decorrelate(sub, scope)
        else:
            fail("scalar and correlated subqueries in WHERE are not supported (one row's answer "
                 "would depend on other rows); a subquery is supported as x IN (SELECT ...), "
                 "EXISTS (SELECT ...) or their NOT, joined to the rest of WHERE by AND. To "
                 "compare rows with an aggregate of other persons' rows (x > (SELECT AVG(x) "
                 "...)), ask for the aggregate as a query of its own and use the released value "
                 "as a literal or ? parameter in this one")
        if not isinstance(sub, exp.Select):
            fail(f"{label}: the subquery must be one SELECT")
        bound = binder.bind(target.copy(), "WHERE")
        if not isinstance(bound, exp.Column):
            fail(f"{label}: the tested value must be a column")
        inner = self.select(sub, env, label)
        return semi_join(relation, bound.name, inner, negated, label, self.metadata,
                         not_in=negated and isinstance(node, exp.In))

    def _decorrelate(self, sub: exp.Select, outer_scope: dict) -> tuple:
        """EXISTS (SELECT ... FROM t WHERE t.a = o.b AND p) as o.b IN (SELECT t.a FROM t WHERE p)."""
        inner_names, linked, rest = split(sub, outer_scope)
        if not linked:
            fail("EXISTS: the subquery must be tied to the outer rows by inner.id = outer.id, "
                 "or by a key that references tie to one person (i.order_id = o.order_id); "
                 "an uncorrelated EXISTS would test other persons' rows")
        link = linked[0]
        outer = link.this if is_outer(link.this, outer_scope, inner_names) else link.expression
        inner = link.expression if outer is link.this else link.this
        new = sub.copy()
        new.set("expressions", [inner.copy()])
        new.set("where", exp.Where(this=exp.and_(*[p.copy() for p in rest])) if rest else None)
        return outer, new

    def with_clause(self, tree: exp.Select, env: dict) -> dict:
        with_ = tree.args.get("with_") or tree.args.get("with")
        if with_ is None:
            return env
        if with_.args.get("recursive"):
            fail("WITH RECURSIVE is not supported")
        env = dict(env)
        for cte in with_.expressions:
            name = cte.alias_or_name.lower()
            names = column_names(cte.args["alias"])
            env[name] = renamed(self.body(name_items(cte.this, names), env, cte.alias_or_name),
                                names, cte.alias_or_name)
        return env

    def relation_of(self, node: exp.Expression, env: dict) -> tuple:
        if isinstance(node, exp.Values):
            return self.values(node)
        if isinstance(node, exp.Subquery) and isinstance(node.this, exp.Values):
            return self.values(node.this, node.args.get("alias"))
        if isinstance(node, exp.Subquery):
            names = column_names(node.args.get("alias"))
            label = node.alias or "subquery"
            rel = self.body(name_items(node.this, names), env, label)
            return renamed(rel, names, label), ({node.alias.lower()} if node.alias else set())
        if not isinstance(node, exp.Table) or not isinstance(node.this, exp.Identifier):
            fail("FROM must name a table from the metadata, a CTE or a subquery (no table "
                 "functions)")
        extra = sorted(k for k, v in node.args.items() if v and k not in ("this", "db", "catalog", "alias"))
        if "joins" in extra:
            fail("joins in parentheses are not supported; write them without parentheses "
                 "(FROM a JOIN b ON ... JOIN c ON ...)")
        if extra:
            fail(f"{', '.join(clause_name(k) for k in extra)} on the table is not supported "
                 "(it would change which rows are counted; read the table as it is)")
        columns = column_names(node.args.get("alias"))
        parts = [p for p in (node.catalog, node.db, node.name) if p]
        if len(parts) == 1 and parts[0].lower() in env:
            rel = env[parts[0].lower()]
            return renamed(rel, columns, node.alias or node.name), {(node.alias or node.name).lower()}
        table = self.table(node, ".".join(parts))
        names = {node.alias.lower()} if node.alias else {node.name.lower(), table.full_name.lower()}
        relation = scan(table, self.metadata)
        if table.public:
            self.read_public(relation)
            relation = _without_nulls(relation)
        return renamed(relation, columns, node.alias or node.name), names

    # -- public data -------------------------------------------------------------
    def read_public(self, relation: Relation, known: dict | None = None) -> None:
        """Every value (up to MAX_DOMAIN) and the range of each column of a public relation.
        ``known``: field name -> its non-NULL values and row count, where the planner has them
        already (a VALUES list's int and text columns): not read from the engine again."""
        if self.public is None:
            return
        known = known or {}
        stats = self._public_stats(relation, [f for f in relation.visible()
                                              if f.name not in known])
        listed_values, to_read = {}, []
        for f in relation.visible():
            if f.name in known:
                listed, rows = known[f.name]
                distinct, non_null = len(set(listed)), len(listed)
                lo, hi = (min(listed), max(listed)) if listed else (None, None)
            else:
                distinct, lo, hi, rows, non_null = stats[f.name]
            relation.rows = int(rows)
            f.nullable = non_null < rows
            if f.kind in ("int", "float") and lo is not None:
                # Bounds, still clamped: a public table may change after planning (a view in
                # the owner's connection), and a plan is cached for the session.
                f.lower, f.upper = lo, hi
            if distinct <= MAX_DOMAIN:
                if f.name in known:
                    listed_values[f.name] = set(known[f.name][0])
                else:
                    to_read.append(f)
            f.origin = "public data"
        listed_values.update(self._public_domains(relation, to_read))
        for f in relation.visible():
            # The values are read after the statistics: a table changed between the two
            # reads may hold more than MAX_DOMAIN of them (then it has no public value set).
            if f.name in listed_values and len(listed_values[f.name]) <= MAX_DOMAIN:
                f.domain = tuple(sorted(listed_values[f.name],
                                        key=lambda v: (type(v).__name__, v)))

    def _public_domains(self, relation: Relation, fields: list) -> dict:
        """{name: its non-NULL values} of ``fields`` of a public relation, read in one query
        per GROUPING_CHUNK of them: a GROUPING SETS of one column each, where a row's one
        non-NULL column is a value of that column (a query per column took about 0.1 s each
        on Spark: six reads of one lookup table for one plan)."""
        out: dict = {}
        for start in range(0, len(fields), GROUPING_CHUNK):
            out.update(self._domains_of(relation, fields[start:start + GROUPING_CHUNK]))
        return out

    def _domains_of(self, relation: Relation, fields: list) -> dict:
        if not fields:
            return {}
        cols = [column(f.name) for f in fields]
        select = exp.select(*[c.copy() for c in cols]).from_(relation.source("_p"))
        if len(cols) == 1:
            select = select.where(exp.Not(this=exp.Is(this=cols[0].copy(),
                                                      expression=exp.Null()))).distinct()
        else:
            select = select.group_by(exp.GroupingSets(expressions=[
                exp.Tuple(expressions=[c.copy()]) for c in cols]))
        out: dict = {f.name: set() for f in fields}
        for row in self.public(select, relation.tables):
            for f, value in zip(fields, row):
                if value is not None:
                    out[f.name].add(value)
        return out

    def _public_stats(self, relation: Relation, fields: list) -> dict:
        """{name: (distinct, min, max, rows, non-NULL)} of ``fields``, read in one query (a
        query a column took 16 of a five-table join's plan's 90 ms: issue 34)."""
        if not fields:
            return {}
        aggs = [exp.Count(this=exp.Star())]
        for f in fields:
            col = column(f.name)
            # The range of numbers only (the bounds): PostgreSQL has no MIN of a boolean.
            ends = [exp.Min(this=col.copy()), exp.Max(this=col.copy())] \
                if f.kind in ("int", "float") else [exp.Null(), exp.Null()]
            aggs += [exp.Count(this=exp.Distinct(expressions=[col])), *ends,
                     exp.Count(this=col.copy())]
        row = self.public(exp.select(*aggs).from_(relation.source("_p")), relation.tables)[0]
        return {f.name: (row[1 + 4 * i], row[2 + 4 * i], row[3 + 4 * i], row[0], row[4 + 4 * i])
                for i, f in enumerate(fields)}

    def repetitions(self, relation: Relation, columns: list) -> int:
        """The most rows of the public ``relation`` that share one value of ``columns``, none
        of them NULL (a NULL key meets no row; review s18, R5: 2,000 NULL keys refused a
        join that meets one row)."""
        if self.public is None:
            return 1
        cols = [column(c) for c in columns]
        counts = exp.select(exp.alias_(exp.Count(this=exp.Star()), "_n", quoted=True)).from_(
            relation.source("_p")).where(exp.and_(*[
                exp.Not(this=exp.Is(this=c.copy(), expression=exp.Null())) for c in cols])
            ).group_by(*cols)
        most = exp.select(exp.Max(this=column("_n"))).from_(exp.Subquery(
            this=counts, alias=exp.TableAlias(this=exp.to_identifier("_c"))))
        return int(self.public(most, relation.tables)[0][0] or 0)

    def join_rows(self, left: Relation, lcols: list, right: Relation, rcols: list) -> int:
        """The number of rows of an equi-join of two public relations (each of bounded size),
        counted from each side's key counts without building the join."""
        if self.public is None:
            return 0

        def counts(rel, cols, alias):
            keys = [exp.alias_(column(c), f"_k{i}", quoted=True) for i, c in enumerate(cols)]
            sub = exp.select(*keys, exp.alias_(exp.Count(this=exp.Star()), "_n", quoted=True)
                             ).from_(rel.source("_p")).group_by(*[column(c) for c in cols])
            return exp.Subquery(this=sub, alias=exp.TableAlias(this=exp.to_identifier(alias)))
        on = None
        for i in range(len(lcols)):
            eq = exp.EQ(this=exp.column(f"_k{i}", "_a", quoted=True),
                        expression=exp.column(f"_k{i}", "_b", quoted=True))
            on = eq if on is None else exp.and_(on, eq)
        total = exp.select(exp.Sum(this=exp.Mul(this=exp.column("_n", "_a", quoted=True),
                                                 expression=exp.column("_n", "_b", quoted=True)))
                           ).from_(counts(left, lcols, "_a")).join(counts(right, rcols, "_b"), on=on)
        return int(self.public(total, left.tables + right.tables)[0][0] or 0)

    def values(self, node: exp.Values, alias=None) -> tuple:
        """An inline table: public rows of literals, typed by their literals (a long list of
        one integer per row is one node, ``dpsql.frontend.literal_lists``: its values are
        integers, typed as one)."""
        alias = alias or node.args.get("alias")
        listed = rows_in(node)
        rows = None if listed is not None else \
            [t.expressions if isinstance(t, exp.Tuple) else [t] for t in node.expressions]
        width = 1 if rows is None else len(rows[0])
        if alias is None or len(alias.columns) != width:
            fail(f"a VALUES list needs a name and {width} column name(s): "
                 "(VALUES (...), ...) AS name(col1, col2)")
        if rows is not None and any(len(r) != width for r in rows):
            fail("every row of a VALUES list must have the same number of values")
        names = [c.name for c in alias.columns]
        if rows is None:
            count, kinds, known = len(listed), ["int"], {names[0]: (list(listed), len(listed))}
            content = [node.expressions[0].copy()]
        else:
            count, (kinds, known) = len(rows), _column_kinds(rows, names)
            content = [exp.Tuple(expressions=[c.copy() for c in r]) for r in rows]
        fields, projections = {}, []
        for i, (name, kind) in enumerate(zip(names, kinds)):
            cells = [r[i] for r in rows or [] if not isinstance(r[i], exp.Null)]
            longest = max((len(str(c.this).encode()) for c in cells), default=0) \
                if kind == "string" and all(isinstance(c, exp.Literal) for c in cells) else None
            fields[name.lower()] = Field(name, kind, origin="VALUES", text=longest)
            projections.append(exp.alias_(exp.Cast(this=exp.column(f"_c{i}", quoted=True),
                                                   to=exp.DataType.build(ENGINE_TYPES[kind])),
                                          name, quoted=True))
        inline = exp.Values(expressions=content,
                            alias=exp.TableAlias(this=exp.to_identifier("_v"), columns=[
                                exp.to_identifier(f"_c{i}", quoted=True) for i in range(width)]))
        sql = exp.select(*projections).from_(inline)
        base = Table("", "values", {}, public=True)
        relation = Relation(base, fields, None, 0, True, sql, [f"VALUES {alias.name}: public, "
                            f"{count} row(s)"], "public", (), rows=count)
        if self.public is not None:
            self.read_public(relation, known)
        return relation, {alias.name.lower()}

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

    # -- one SELECT (or UNION ALL of them) inside FROM/WITH ------------------------
    def body(self, tree, env: dict, name: str) -> Relation:
        if isinstance(tree, exp.Union) and not isinstance(tree, (exp.Intersect, exp.Except)):
            if tree.args.get("distinct"):
                fail(f"UNION (without ALL) in {name!r} is not supported: removing duplicate "
                     "rows merges rows of different persons; write UNION ALL")
            if any(tree.args.get(k) for k in ("order", "limit", "offset", "with_", "with")):
                fail(f"ORDER BY, LIMIT or WITH around the UNION ALL in {name!r} is not supported")
            parts = []
            for side in (tree.this, tree.expression):
                side = side.this if isinstance(side, exp.Subquery) else side
                parts.append(self.body(side, env, name))
            return union_all(parts, name)
        if isinstance(tree, (exp.Intersect, exp.Except)):
            fail(f"{tree.key.upper()} over private rows is not supported (in {name!r}): whether "
                 "one person's row is kept would depend on other persons' rows")
        if not isinstance(tree, exp.Select):
            fail(f"{name!r} must be a SELECT")
        return self.select(tree, env, name)

    def select(self, tree: exp.Select, env: dict, name: str) -> Relation:
        if tree.args.get("limit") is not None or tree.args.get("offset") is not None:
            fail(f"LIMIT/OFFSET inside {name!r} is not supported: which rows it keeps would "
                 "depend on other persons' rows")
        unknown = sorted(k for k, v in tree.args.items() if v and k not in ROW_CLAUSES | {"joins"})
        if unknown:
            fail(f"{', '.join(k.upper() for k in unknown)} is not supported inside {name!r}")
        child, qualifiers, tree = self.from_clause(tree, env)
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
        binder = Binder(child.table(), qualifiers, child.fanout)
        grouped = tree.args.get("group") is not None or tree.args.get("having") is not None or any(
            isinstance(n, exp.AggFunc) for item in tree.expressions for n in item.walk())
        if grouped:
            return per_person(tree, child, binder, name)
        return select_rows(tree, child, binder, name)


def _without_nulls(relation: Relation) -> Relation:
    """A public table's rows with no NULL in the columns read as holding none: a plan is
    cached for the session, and one planned before the owner put a NULL there would count
    a value it does not hold (the middle of the column's range) for that row."""
    checks = [exp.Not(this=exp.Is(this=column(f.name), expression=exp.Null()))
              for f in relation.visible() if f.nullable is False]
    return filtered(relation, exp.and_(*checks) if checks else None)


def _names(relation: Relation, scope: dict) -> tuple:
    """(qualifiers, column names) of a FROM item, as ``dpsql.plan.comma`` reads them."""
    return ({q for q in scope if q}, {f.name.lower() for f in relation.visible()})


def resolve(tree: exp.Select, metadata, public=None) -> tuple:
    """(relation, scope, tree) that the top-level query aggregates; ``tree`` without the
    semi-joins of its WHERE, which the relation applies."""
    relation, scope, tree = Resolver(metadata, public).from_clause(tree, {}, person=True)
    if relation.unit == "public":
        fail("the query reads public tables only (public: true or VALUES): it needs no "
             "privacy, so dpsql does not answer it and spends nothing; query the tables "
             "directly")
    return relation, scope, tree


def _column_kinds(rows: list, names: list) -> tuple:
    """(the type of each column of a VALUES list's ``rows``, by its literals; field name ->
    its non-NULL values and row count, for the int and text columns)."""
    from ..frontend.typecheck import Checker
    kinds_of, known = [], {}
    checker = Checker({}, clause="VALUES")
    for i, name in enumerate(names):
        kinds = set()
        for r in rows:
            cell = r[i]
            if not isinstance(cell, (exp.Literal, exp.Null, exp.Boolean, exp.Neg)) or (
                    isinstance(cell, exp.Neg) and not isinstance(cell.this, exp.Literal)):
                fail(f"VALUES: {cell.sql(ANALYST_DIALECT)[:40]} is not a literal")
            kind = checker.check(cell)[1]
            if kind != "null":
                kinds.add(kind)
        if kinds == {"int", "float"}:
            kinds = {"float"}
        if len(kinds) > 1:
            fail(f"VALUES: column {name!r} mixes {', '.join(sorted(kinds))}; write one type")
        kind = kinds.pop() if kinds else "string"
        kinds_of.append(kind)
        listed = _listed_values([r[i] for r in rows], kind)
        if listed is not None:
            known[name] = (listed, len(rows))
    return kinds_of, known


def _listed_values(cells: list, kind: str) -> list | None:
    """The non-NULL values of a VALUES column of whole numbers or text, as the engine reads
    them (BIGINT, VARCHAR: the same Python values), or None for other columns (read from the
    engine). Reading a long list's values back from the engine rendered it twice more."""
    if kind not in ("int", "string"):
        return None
    out = []
    for cell in cells:
        if isinstance(cell, exp.Null):
            continue
        negative = isinstance(cell, exp.Neg)
        literal = cell.this if negative else cell
        if not isinstance(literal, exp.Literal):
            return None
        if kind == "string":
            if not literal.is_string or negative:
                return None
            out.append(literal.this)
        elif literal.is_string or not literal.this.isdigit() or not literal.this.isascii():
            return None
        else:
            out.append(-int(literal.this) if negative else int(literal.this))
    return out
