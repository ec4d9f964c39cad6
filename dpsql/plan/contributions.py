"""BigQuery's differential-privacy syntax as dpsql plans it (step 2).

Owns: what the clause and bounds read by ``dpsql.frontend.bigquery`` mean for the plan.
Everything here only rewrites the query or narrows what the metadata allows: the rewritten
query is validated and bounded like any other, so privacy never rests on this module.

* **Per privacy unit** (BigQuery's COUNT, SUM and AVG "aggregate per privacy unit
  first"): a query with ``contribution_bounds_per_group`` on any aggregate, or with an
  AVG (BigQuery's AVG averages per-unit averages), becomes
  ``SELECT keys, SUM(LEAST(GREATEST(_bqv0, lo), hi)) ... FROM (SELECT keys, SUM(x) AS
  _bqv0, ... FROM <its FROM> WHERE <its WHERE> GROUP BY pid, keys) GROUP BY keys``:
  dpsql's per-person aggregation (``dpsql.plan.per_person``) with its own bounds, each
  person's value clamped to ``[lo, hi]`` (``LEAST``/``GREATEST`` derive ``[lo, hi]``
  intersected with the per-person bounds, so bounds wider than the metadata's change
  nothing). COUNT is the SUM of per-person counts, SUM the SUM of per-person sums, AVG
  the AVG of per-person averages. Every aggregate of such a query must be COUNT (not
  DISTINCT), SUM or AVG; others (VAR_POP, quantiles, FILTER) are refused: ask them in
  a query of their own. COUNT and SUM without bounds and without an AVG keep dpsql's
  row-level plan: their exact answer is the same and their sensitivity tighter.
* **Through references**: a table that reaches its person only through ``references``
  (shop.order_items: order_id -> shop.orders) is aggregated per that person: the
  per-person aggregation reads it joined along the path (``dpsql.plan.paths.path_joins``,
  reference joins the planner checks as any other) and groups by the person at its end.
* **Per row** (``contribution_bounds_per_row``): the aggregate's argument becomes
  ``LEAST(GREATEST(x, lo), hi)``, whose derived bounds are the intersection with the
  metadata's. Not combinable with the per-unit form.
* ``privacy_unit_column`` must name the privacy unit the metadata sets (a table's
  ``private_id``, or the column that references it), qualified or not; it changes
  nothing.
* ``max_groups_contributed = m`` only tightens: a per-unit query (one row per person and
  group) keeps at most m random groups per person (L1 = m rows instead of k); a table
  with ``max_groups`` in its metadata uses min(m, max_groups); without either, m = 1
  keeps one random group per person (at the same sensitivity, k rows), and any other m
  leaves the metadata's bound in force. ``explain`` says which.
"""
from __future__ import annotations

from dataclasses import replace

from sqlglot import exp

from ..errors import QueryError
from ..frontend.bigquery import Clause, bound_of, clause_of
from ..frontend.dialect import ANALYST_DIALECT
from .paths import path_joins, reaches

PER_UNIT = (exp.Count, exp.Sum, exp.Avg)
ANONYMOUS_AGGREGATES = ("var", "std", "var_samp", "variance_samp")


# ----------------------------------------------------------------- before validation

def rewrite(tree: exp.Select, metadata) -> exp.Select:
    """The query BigQuery's clause asks for, in dpsql's SQL (``tree`` itself if none)."""
    clause = clause_of(tree)
    if clause is None or not isinstance(tree, exp.Select):
        return tree
    tree = tree.copy()           # (``_unit`` finds the FROM's tables by identity in it)
    tables = _tables(tree, metadata)
    _check_unit_name(tree, clause, tables)
    clause.per_unit = False
    aggregates = _aggregates(tree)
    bounds = [bound_of(n) for n in aggregates if bound_of(n) is not None]
    group = [b for b in bounds if b.kind == "group"]
    rows = [b for b in bounds if b.kind == "row"]
    averages = [n for n in aggregates if isinstance(n, exp.Avg) and bound_of(n) is None]
    unit, path = _unit(tree, clause, tables) if group or averages else (None, None)
    if group and unit is None and path is None:
        raise QueryError(
            f"{group[0].name}{group[0].where} clamps each privacy unit's value, but "
            f"{_names(tables)} has row privacy (every row is its own unit): clamp each row "
            "with LEAST(GREATEST(x, lower), upper) instead")
    if not group and (not averages or (unit is None and path is None)):
        for node in aggregates:
            bound = bound_of(node)
            if bound is not None:
                node.set("this", _clamp(node.this, bound.lo, bound.hi))
        return tree
    if rows:
        raise QueryError(
            f"{rows[0].name}{rows[0].where} clamps rows, but this query aggregates per "
            "privacy unit (contribution_bounds_per_group, or BigQuery's AVG of per-unit "
            "averages): ask the per-row aggregates in a query of their own")
    for node in aggregates:
        if not isinstance(node, PER_UNIT) or isinstance(node.parent, exp.Filter) \
                or isinstance(node.this, exp.Distinct):
            raise QueryError(
                f"{node.sql(ANALYST_DIALECT)[:60]} cannot be combined with BigQuery's "
                "per-unit COUNT, SUM and AVG (contribution_bounds_per_group, or AVG, which "
                "averages per-unit averages) in one query: each person's rows are first "
                "aggregated per group, and only COUNT, SUM and AVG read such rows. Ask it "
                "in a query of its own")
    clause.per_unit = True
    return _per_unit(tree, unit, path, aggregates, tables)


def _aggregates(tree: exp.Select) -> list:
    """The aggregate calls of the SELECT list, HAVING and ORDER BY (not in subqueries)."""
    found, stack = [], list(tree.expressions)
    stack += [tree.args[k] for k in ("having", "order") if tree.args.get(k) is not None]
    while stack:
        node = stack.pop()
        if isinstance(node, (exp.Select, exp.Subquery)):
            continue
        if isinstance(node, exp.AggFunc) or (isinstance(node, exp.Anonymous) and str(
                node.this).lower() in ANONYMOUS_AGGREGATES):
            found.append(node)
            continue
        stack.extend(node.iter_expressions())
    return found


def _clamp(value: exp.Expression, lo, hi) -> exp.Expression:
    # As the parser builds them (ignore_nulls: SQL's LEAST/GREATEST skip NULLs).
    return exp.Least(this=exp.Greatest(this=value, expressions=[_literal(lo)], ignore_nulls=True),
                     expressions=[_literal(hi)], ignore_nulls=True)


def _literal(value) -> exp.Expression:
    number = exp.Literal.number(repr(abs(value)) if isinstance(value, float) else str(abs(value)))
    return exp.Neg(this=number) if value < 0 else number


def _tables(tree: exp.Expression, metadata) -> list:
    """(Table node, metadata Table, its person column or None, the hops that reach that
    column: ``dpsql.plan.paths.reaches``) of every table the query reads (CTE names
    excluded)."""
    ctes = {c.alias_or_name.lower() for c in tree.find_all(exp.CTE)}
    out = []
    for node in tree.find_all(exp.Table):
        if not node.name or (not node.args.get("db") and node.name.lower() in ctes):
            continue
        found = metadata.find_table(".".join(p for p in (node.catalog, node.db, node.name) if p))
        if found is not None:
            out.append((node, found, *reaches(found, metadata)))
    return out


def _names(tables: list) -> str:
    return ", ".join(dict.fromkeys(t.full_name for _, t, _, _ in tables)) or "the table"


def _units(tables: list) -> dict:
    """Lower-case person column -> "column (of table)" over the tables the query reads (a
    table that reaches its person through references: of the table that holds it)."""
    out: dict = {}
    for _, table, person, hops in tables:
        if person:
            where = (f"{hops[-1][1].full_name}, reached from {table.full_name} through "
                     f"{hops[0][0]}" if hops else table.full_name)
            out.setdefault(person.lower(), f"{person} (of {where})")
    return out


def _check_unit_name(tree: exp.Select, clause: Clause, tables: list) -> None:
    """``privacy_unit_column`` must name the metadata's privacy unit (qualified or not)."""
    parts = clause.options.get("privacy_unit_column")
    if not parts:
        return
    units = _units(tables)
    if not units:
        raise QueryError(f"privacy_unit_column = {'.'.join(parts)}: {_names(tables)} has row "
                         "privacy (every row is its own unit, set by the metadata); leave "
                         "the option out")
    qualifiers = {n.alias_or_name.lower() for n in tree.find_all(exp.Table, exp.Subquery, exp.CTE)}
    held = [t for _, t, _, _ in tables] + [h[1] for *_, hops in tables for h in hops[-1:]]
    qualifiers |= {t.full_name.lower() for t in held} | {t.name.lower() for t in held}
    qualifier = ".".join(parts[:-1]).lower()
    if parts[-1].lower() not in units or (qualifier and qualifier not in qualifiers):
        first = next(iter(units.values()))
        raise QueryError(f"privacy_unit_column = {'.'.join(parts)}: dpsql's privacy unit is set "
                         f"by the metadata: {', '.join(units.values())}; write "
                         f"privacy_unit_column = {first.split(' ')[0]} or leave the option out")


def _unit(tree: exp.Select, clause: Clause, tables: list) -> tuple:
    """(the column that names a person in the query's FROM, None), or (None, the path to
    reach it: (qualifier, hops, person) for ``dpsql.plan.paths.path_joins``) when the FROM
    reaches its person through references only; (None, None) for row privacy."""
    parts = clause.options.get("privacy_unit_column")
    source = tree.args.get("from_") or tree.args.get("from")
    direct = ([source.this] if source is not None else []) + [
        j.this for j in tree.args.get("joins") or []]
    near = [(n, p) for n, _, p, hops in tables if p and not hops and any(n is d for d in direct)]
    if parts and (near or not any(hops for *_, hops in tables)):
        keys = ("this", "table", "db", "catalog")
        return exp.Column(**{k: exp.to_identifier(n) for k, n in zip(keys, reversed(parts))}), None
    if near:
        node, person = near[0]
        return exp.column(person, table=node.alias_or_name if len(direct) > 1 else None,
                          quoted=True), None
    reached = [(n.alias_or_name, hops, p) for n, _, p, hops in tables
               if hops and any(n is d for d in direct)]
    if reached:
        return None, reached[0]
    units = _units(tables)
    inside = [(hops, p) for *_, p, hops in tables if hops]
    carried = inside[0][0][0][0] if inside else next(iter(units.values()), "").split(" ")[0]
    if units and len(direct) == 1 and inside and _exposes(tree, direct[0], carried.lower()):
        return None, (direct[0].alias_or_name, *inside[0])
    if units and len(direct) == 1 and not _exposes(tree, direct[0], next(iter(units))):
        raise QueryError("this query aggregates per privacy unit (BigQuery's COUNT, SUM and "
                         "AVG), so its FROM must carry the privacy unit's column"
                         + (" or the one through which its rows reach it" if inside else "")
                         + f": select {carried} in the CTE or subquery it reads")
    if len(units) > 1:
        raise QueryError("this query aggregates per privacy unit, and its FROM reads several "
                         f"privacy units ({', '.join(units.values())}); name the one to group "
                         "by with privacy_unit_column = ...")
    return (exp.column(next(iter(units.values())).split(" ")[0], quoted=True) if units
            else None), None


# ----------------------------------------------------------------- the per-unit query

def _per_unit(tree: exp.Select, unit, path, aggregates: list, tables: list) -> exp.Select:
    """``tree`` (a copy) as an outer aggregation over a per-person aggregation by ``unit``
    (or the person at the end of ``path``, joined along it) and the group keys (see the
    module docstring)."""
    prefix = _prefix(tree)
    joins = list(tree.args.get("joins") or [])
    if path is not None:
        unit, added = path_joins(*path, prefix)
        joins += added
    keys = _keys(tree, tables)
    for key in keys:         # as dpsql.plan.lift says it, with the key as written
        if any(c.name.lower() == unit.name.lower() for c in key.find_all(exp.Column)):
            raise QueryError(f"GROUP BY {key.sql(ANALYST_DIALECT)[:60]} uses the privacy unit's "
                             "id: releasing one group per person would publish who is in the "
                             "data; BigQuery's per-unit aggregation already groups by it")
    norms = [_norm(k) for k in keys]
    key_names = _key_names(keys, prefix, tree.expressions)
    names = [output_name(item) for item in tree.expressions]
    inner_items = [exp.alias_(k.copy(), n, quoted=True) for k, n in zip(keys, key_names)]
    columns: dict = {}
    for node in aggregates:
        inner = type(node)(this=node.this.copy())
        text = inner.sql(ANALYST_DIALECT)
        if text not in columns:
            columns[text] = f"{prefix}v{len(columns)}"
            inner_items.append(exp.alias_(inner, columns[text], quoted=True))
        value = exp.column(columns[text], quoted=True)
        bound = bound_of(node)
        if bound is not None:
            value = _clamp(value, bound.lo, bound.hi)
        node.replace((exp.Avg if isinstance(node, exp.Avg) else exp.Sum)(this=value))
    source = tree.args.get("from_") or tree.args.get("from")
    inner = exp.Select(expressions=inner_items)
    inner.set("from_", source)
    inner.set("joins", joins or None)
    inner.set("where", tree.args.get("where"))
    inner.set("group", exp.Group(expressions=[unit] + [k.copy() for k in keys]))
    alias = exp.TableAlias(this=exp.to_identifier(f"{prefix}u"))
    for key in ("from", "from_", "joins", "where", "group"):
        tree.set(key, None)
    tree.set("from_", exp.From(this=exp.Subquery(this=inner, alias=alias)))
    if keys:
        tree.set("group", exp.Group(expressions=[exp.column(n, quoted=True) for n in key_names]))

    def swap(node):
        if not isinstance(node, exp.Condition) or isinstance(node, (exp.AggFunc, exp.Literal)):
            return node          # values only (not ORDER BY's terms, aliases, names, ...)
        text = _norm(node)
        return exp.column(key_names[norms.index(text)], quoted=True) if text in norms else node

    items = []
    for item, name in zip(tree.expressions, names):
        new = item.unalias().transform(swap)
        _only_keys(new, key_names, (), "SELECT")
        if isinstance(item, exp.Alias) or not (isinstance(new, exp.Column) and new.name == name):
            new = exp.alias_(new, name, quoted=True)
        items.append(new)
    tree.set("expressions", items)
    for key in ("having", "order"):
        if tree.args.get(key) is not None:
            tree.set(key, tree.args[key].transform(swap))
            _only_keys(tree.args[key], key_names, names, key.upper().replace("ORDER", "ORDER BY"))
    return tree


def _only_keys(expr: exp.Expression, key_names: list, outputs, clause: str) -> None:
    """Outside aggregates, the per-unit query reads only group keys (and, in HAVING and
    ORDER BY, output names): say so as dpsql.plan.validate would, before the names of
    the per-person rows could appear in a message."""
    allowed = {n.lower() for n in list(key_names) + list(outputs)}
    stack = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, exp.AggFunc):
            continue
        if isinstance(node, exp.Column) and not isinstance(node.this, exp.Star) \
                and node.name.lower() not in allowed:
            raise QueryError(f"column {node.sql(ANALYST_DIALECT)} in {clause} is neither grouped "
                             "nor aggregated; dpsql releases aggregates only (add it to GROUP "
                             "BY or aggregate it)")
        stack.extend(node.iter_expressions())


def _prefix(tree: exp.Expression) -> str:
    """A name prefix that no identifier of the query starts with."""
    names = {str(i.this).lower() for i in tree.find_all(exp.Identifier)}
    prefix = "_bq"
    while any(n.startswith(prefix) for n in names):
        prefix += "_"
    return prefix


def _norm(node: exp.Expression) -> str:
    """A key's text with column qualifiers, quotes and case removed (to match
    ``p.sex`` in SELECT with ``sex`` in GROUP BY)."""
    copy = node.copy()
    for col in list(copy.find_all(exp.Column)):
        for part in ("table", "db", "catalog"):
            col.set(part, None)
    for ident in copy.find_all(exp.Identifier):
        ident.set("quoted", False)
    return copy.sql(ANALYST_DIALECT).lower()


def output_name(item: exp.Expression) -> str:
    """The output name of a SELECT item: its alias, its column's name, or its text."""
    if isinstance(item, exp.Alias):
        return item.alias
    if isinstance(item, exp.Column):
        return item.name
    return item.sql(ANALYST_DIALECT)


def _keys(tree: exp.Select, tables: list) -> list:
    """The GROUP BY keys as expressions: positions and SELECT aliases resolved as
    ``dpsql.plan.validate`` does (a name is a column before it is an alias)."""
    group = tree.args.get("group")
    if group is None:
        return []
    if any(group.args.get(a) for a in ("rollup", "cube", "grouping_sets", "all")):
        raise QueryError("GROUP BY ROLLUP, CUBE, GROUPING SETS and ALL are not supported: ask "
                         "one query per grouping")
    items = tree.expressions
    aliases = {i.alias.lower(): i.this for i in items if isinstance(i, exp.Alias)}
    columns = {c.lower() for _, t, _, _ in tables for c in t.columns}
    columns |= {output_name(i).lower() for s in tree.find_all(exp.Select) if s is not tree
                for i in s.expressions}
    keys, seen = [], set()
    for key in group.expressions:
        if isinstance(key, exp.Literal) and not key.is_string:
            if not (key.this.isdigit() and 1 <= int(key.this) <= len(items)):
                raise QueryError(f"GROUP BY {key.this} is not a position of the SELECT list "
                                 f"(1 to {len(items)})")
            key = items[int(key.this) - 1].unalias()
        elif isinstance(key, exp.Column) and not key.table and key.name.lower() in aliases \
                and key.name.lower() not in columns:
            key = aliases[key.name.lower()]
        if _norm(key) not in seen:
            seen.add(_norm(key))
            keys.append(key.copy())
    return keys


def _key_names(keys: list, prefix: str, items: list) -> list:
    """Each key's column in the per-person rows, named as the analyst would read it: its
    column's name, or the alias of the SELECT item that computes it, if no other key has
    that name; else ``<prefix>k<i>``."""
    aliases = {_norm(i.this): i.alias for i in items if isinstance(i, exp.Alias)}
    names = [k.name if isinstance(k, exp.Column) else aliases.get(_norm(k)) for k in keys]
    lower = [n.lower() for n in names if n]
    return [n if n and lower.count(n.lower()) == 1 and not n.lower().startswith(prefix)
            else f"{prefix}k{i}" for i, n in enumerate(names)]


# ----------------------------------------------------------------- after validation

def apply_options(query):
    """``query`` with ``max_groups_contributed`` applied and notes for explain."""
    clause = clause_of(query.tree)
    if clause is None:
        return query
    notes = _notes(query, clause)
    relation = query.relation
    m = clause.options.get("max_groups_contributed")
    if m is not None:
        relation, note = _max_groups(query, relation, m, clause.per_unit)
        notes.append(note)
    return replace(query, relation=relation, notes=list(query.notes) + notes)


def _notes(query, clause: Clause) -> list:
    notes = []
    given = [f"{k} = {clause.options[k]:g}" for k in ("epsilon", "delta") if k in clause.options]
    if given:
        notes.append(f"WITH DIFFERENTIAL_PRIVACY OPTIONS ({', '.join(given)}): this query's "
                     "privacy, as privacy=dpsql.Privacy(...) would set it")
    if clause.unit_column():
        notes.append(f"privacy_unit_column = {clause.unit_column()}: the metadata's privacy "
                     "unit")
    for bound in clause.bounds:
        if bound.kind == "row":
            notes.append(f"{bound.text()} on {bound.function.upper()}: each row's value is "
                         "clamped to that range, within the bounds dpsql derives")
    if clause.per_unit:
        groups = [b for b in clause.bounds if b.kind == "group"]
        notes.append(
            "COUNT, SUM and AVG per privacy unit (BigQuery's meaning): each person's rows in "
            "a group are aggregated first (the per-person aggregation in the plan), then "
            + ("clamped to contribution_bounds_per_group, then " if groups else "")
            + "summed (COUNT, SUM) or averaged (AVG) over persons")
    return notes


def _max_groups(query, relation, m: int, per_unit: bool) -> tuple:
    """(relation with at most m groups per person where that tightens, the note)."""
    head = f"max_groups_contributed = {m}"
    if not query.keys:
        return relation, f"{head}: the query has no GROUP BY, so each person is in one group"
    if relation.pid is None:
        return relation, f"{head}: row privacy: each person (row) adds to one group"
    if per_unit and relation.bounded:
        if m >= relation.k:
            return relation, (f"{head} does not tighten the metadata's bound: a person has at "
                              f"most {relation.k} per-person row(s), one per group; that holds")
        bounds = (m, 1)
    elif relation.group_bounds and not relation.bounded:
        g, r = relation.group_bounds
        if m >= g:
            return relation, (f"{head} does not tighten the metadata's max_groups = {g}; "
                              "that holds")
        bounds = (m, r)
    elif m == 1 and not relation.bounded and relation.k > 1:
        bounds = (1, relation.k)
    else:
        return relation, (f"{head} does not tighten the metadata's bound of {relation.k} "
                          "row(s) per person (without max_rows_per_group in the metadata, "
                          "those rows may all be in one group); that holds")
    steps = relation.steps + [f"{head} (BigQuery OPTIONS): at most {bounds[0]} group(s) per "
                              f"person, {bounds[1]} row(s) in each, kept at random"]
    # Per unit, a person then has at most m rows: k says so (explain, thresholds).
    k = bounds[0] if per_unit else relation.k
    out = replace(relation, group_bounds=bounds, bounded=False, held=False, steps=steps, k=k)
    return out, (f"{head}: each person adds to at most {bounds[0]} group(s) (kept at random), "
                 f"with at most {bounds[1]} row(s) in each")


def _exposes(tree: exp.Select, source: exp.Expression, name: str) -> bool:
    """Whether the CTE or subquery ``source`` of the FROM selects column ``name`` (or *);
    True when that cannot be told from the text (a nested set operation, ...)."""
    body = source.this if isinstance(source, exp.Subquery) else None
    if isinstance(source, exp.Table) and not source.args.get("db"):
        body = next((c.this for c in tree.find_all(exp.CTE)
                     if c.alias_or_name.lower() == source.name.lower()), None)
    if not isinstance(body, exp.Select):
        return True
    return any(isinstance(i, exp.Star) or (isinstance(i, exp.Column) and isinstance(i.this, exp.Star))
               or output_name(i).lower() == name for i in body.expressions)
