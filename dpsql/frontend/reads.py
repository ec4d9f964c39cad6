"""How a statement reads its relations: nesting depth, table reads and conditions, with
each CTE counted once per place that reads it.

Owns: ``MAX_RELATION_DEPTH``, ``MAX_READS`` (checked right after parsing, before anything is
planned) and the count of a statement's conditions as the engine plans them
(``expanded_conditions``: a CTE's ANDs, ORs and CASE WHENs once per read; review 40, F1: a
CTE of 339 conditions read by 16 arms of a UNION ALL, within the text's limit of 512, planned
past a 20 s timeout). ``dpsql.plan.guard_limits`` counts them over a statement's parts.
"""
from __future__ import annotations

from sqlglot import exp

from ..errors import QueryError
from . import bigquery

MAX_READS = 32
"""Most reads of tables and VALUES lists in one plan, each CTE once per place that reads it."""
MAX_RELATION_DEPTH = 24
_CONDITIONS = (exp.Connector, exp.If)          # AND, OR, XOR, a WHEN or IF()
_CHOICES = (exp.Greatest, exp.Least, exp.Coalesce)
_OPERATIONS = (exp.Binary, exp.In, exp.Between, exp.Func, exp.Tuple)
_BOOLEAN = (exp.Predicate, exp.Connector, exp.Not, exp.Boolean)


def condition_count(node: exp.Expression) -> int:
    """How many conditions ``node`` itself joins, as an engine plans them: 1 for an AND, OR,
    XOR, WHEN or IF(); an operand after the first of GREATEST, LEAST or COALESCE (review 41,
    F1: a GREATEST of 256 LEASTs of comparisons is an OR of ANDs, and planned like one); and
    of any other operator or function, each operand after the first that is a condition
    (review 42, F1: ``(a > 1) IN (b < 1, b < 2, ...)``, ``<`` and BETWEEN of conditions)."""
    if isinstance(node, _CONDITIONS):
        return 1
    if isinstance(node, _CHOICES):
        return len(node.expressions)
    if not isinstance(node, _OPERATIONS):
        return 0
    conditions = sum(1 for child in _children(node) if _is_condition(child))
    return conditions - 1 if conditions > 1 else 0


def _is_condition(node) -> bool:
    while isinstance(node, exp.Paren):
        node = node.this
    return isinstance(node, _BOOLEAN)


def _children(node: exp.Expression):
    for value in node.args.values():
        if isinstance(value, exp.Expression):
            yield value
        elif isinstance(value, list):
            for item in value:
                if isinstance(item, exp.Expression):
                    yield item


_RELATIONS = (exp.Select, exp.SetOperation)


def _cte_lookup(with_: exp.With, name: str, before, scopes: dict):
    if id(with_) not in scopes:
        names: dict = {}
        for i, cte in enumerate(with_.expressions):
            names.setdefault(cte.alias_or_name.lower(), []).append((i, cte))
        scopes[id(with_)] = names
    visible = [cte for i, cte in scopes[id(with_)].get(name, ()) if before is None or i < before]
    return visible[-1] if visible else None


def _cte_named(table: exp.Table, scopes: dict):
    """The CTE an unqualified table name refers to, or None (a stored table): the
    nearest WITH above that defines it; in a CTE's body only earlier CTEs count."""
    if table.args.get("db") or table.args.get("catalog"):
        return None
    name = table.name.lower()
    child, node = table, table.parent
    while node is not None:
        if isinstance(node, exp.With):     # ``child`` is one of its CTEs
            before = next((i for i, cte in enumerate(node.expressions) if cte is child),
                          len(node.expressions))
            hit = _cte_lookup(node, name, before, scopes)
            if hit is not None:
                return hit
            owner = node.parent            # its WITH is searched: go on above it
            child, node = owner, owner.parent if owner is not None else None
            continue
        with_ = node.args.get("with_")
        if isinstance(with_, exp.With):
            hit = _cte_lookup(with_, name, None, scopes)
            if hit is not None:
                return hit
        child, node = node, node.parent
    return None


def _reads(query: exp.Expression, scopes: dict, own: dict | None = None) -> list:
    """The relations (SELECTs, set operations) one relation reads directly: its
    subqueries and the bodies of the CTEs it names (not its own WITH list). A CTE named
    twice is in the list twice. ``own``, if given, gets ``own[id(query)]``: (how many
    stored tables and VALUES lists it reads itself, how many conditions it has itself)."""
    found, stack, direct, conditions = [], [v for k, v in query.args.items() if k != "with_"], 0, 0
    while stack:
        value = stack.pop()
        if isinstance(value, list):
            stack.extend(value)
        elif isinstance(value, _RELATIONS):
            found.append(value)
        elif isinstance(value, exp.Table):
            cte = _cte_named(value, scopes)
            if cte is not None and isinstance(cte.this, _RELATIONS):
                found.append(cte.this)
            elif cte is None:
                direct += 1
        elif isinstance(value, exp.Expression):
            direct += isinstance(value, exp.Values)
            conditions += condition_count(value)
            stack.extend(_children(value))
    if own is not None:
        own[id(query)] = (direct, conditions)
    return found


def relation_depth(tree: exp.Expression) -> int:
    """How many relations the query nests in one another (iteratively): a SELECT is
    one level above the deepest subquery or CTE it reads; a set operation is as
    deep as its deepest part."""
    return relation_sizes(tree)[0]


def expanded_conditions(tree: exp.Expression) -> int:
    """The ANDs, ORs and CASE WHENs (or IFs) of the query with each CTE's counted once per
    place that reads it, as the plan holds them."""
    return relation_sizes(tree)[2]


def relation_sizes(tree: exp.Expression) -> tuple:
    """(nesting depth, table reads, conditions): the depth as ``relation_depth``; the reads
    count every stored table and VALUES list once per place the plan reads it, and the
    conditions every AND, OR and WHEN, each CTE expanded where it is named (so a chain of
    CTEs that each read the previous one twice doubles at every step)."""
    relations, stack = [], [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, _RELATIONS):
            relations.append(node)
        stack.extend(_children(node))
    scopes: dict = {}
    depth: dict = {}
    own: dict = {}
    total: dict = {}
    for root in relations:
        todo, open_ = [(root, None)], set()
        while todo:
            node, reads = todo.pop()
            if id(node) in depth:
                continue
            if reads is None:
                if id(node) in open_:          # a cycle (impossible in valid SQL): ignore it
                    continue
                open_.add(id(node))
                reads = _reads(node, scopes, own)
                todo.append((node, reads))
                todo.extend((r, None) for r in reads if id(r) not in depth)
            else:
                below = max((depth.get(id(r), 0) for r in reads), default=0)
                depth[id(node)] = below + (1 if isinstance(node, exp.Select) else 0)
                mine = own.get(id(node), (0, 0))
                total[id(node)] = tuple(mine[i] + sum(total.get(id(r), (0, 0))[i] for r in reads)
                                        for i in (0, 1))
    found = total.get(id(tree), (0, 0))
    return max(depth.values(), default=0), found[0], found[1]


def check_relation_depth(tree: exp.Expression) -> None:
    """Refuse a query nesting more than MAX_RELATION_DEPTH relations (CTE chains too), or
    reading tables more than MAX_READS times, before anything is planned. BigQuery's
    clause may add a level (a per-person aggregation: dpsql.plan.contributions)."""
    depth, reads, _ = relation_sizes(tree)
    depth += 1 if bigquery.clause_of(tree) is not None else 0
    if reads > MAX_READS:
        raise QueryError(
            f"the query reads tables {reads:,} times (each CTE counted once per place that "
            f"reads it), more than dpsql's limit of {MAX_READS} per query, which keeps plans "
            "small; read each CTE fewer times, or split the query")
    if depth > MAX_RELATION_DEPTH:
        raise QueryError(
            f"the query nests {depth} relations deep; dpsql allows at most "
            f"{MAX_RELATION_DEPTH} (each subquery, and each CTE read by another, is one level "
            "above what it reads; the limit keeps planning within Python's stack). Merge "
            "steps that only filter, rename or compute columns into one SELECT")
