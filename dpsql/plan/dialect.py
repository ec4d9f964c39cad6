"""What a bounded plan needs of an engine's SQL dialect.

Owns: the seam between the engine-neutral plan and an engine. A plan is a sqlglot
tree in which the constructs dialects spell differently are nodes of
``dpsql.plan.nodes``; an engine supplies a ``Dialect`` that compiles them
(``lower``) and renders the result (``render``). Everything else in the plan is
plain sqlglot, transpiled by sqlglot's own generator for ``name``. To add an
engine's dialect: subclass, set ``name``, implement the two truncations, and check
that sqlglot renders ``exp.Try`` (NULL where evaluation would raise),
``exp.UnixMicros``, ``exp.TryCast``, ``exp.Uuid`` and ``exp.Rand`` for it
(override ``lower`` to rewrite any it does not).
"""
from __future__ import annotations

import hashlib
import math
import struct

import sqlglot
from sqlglot import exp

from ..errors import QueryError
from ..frontend.literal_lists import cast_of, listed_in, rows_in
from ..frontend.literals import int_literal
from ..frontend.typecheck import _annotated
from .guard_limits import MAX_GUARDS, check_guards, lowering
from .nodes import Truncated, TruncatedGroups
from .parens import bracketed
from .prune import prune
from ..frontend.params import literal
from .rewrite import data_type, with_source


class Dialect:
    """One engine's SQL: the compilation of the plan's engine-neutral nodes."""

    name: str = ""
    """The sqlglot dialect the plan is rendered in."""

    def truncated(self, node: Truncated) -> exp.Select:
        raise NotImplementedError

    def truncated_groups(self, node: TruncatedGroups) -> exp.Select:
        raise NotImplementedError

    def lower(self, tree: exp.Expression) -> exp.Expression:
        """``tree`` (unchanged) with every engine-neutral node replaced by this engine's
        construct, in a copy."""
        return self.lowered(tree.copy())

    def lowered(self, tree: exp.Expression) -> exp.Expression:
        """``lower`` in place, for a tree of the caller's own (a fresh copy): what an
        engine overrides to rewrite the whole plan."""
        return self.compile_nodes(tree)

    def compile_nodes(self, tree: exp.Expression) -> exp.Expression:
        """``tree`` with its truncations compiled, in place (a truncation's rows are
        compiled as they are: copying each nested truncation's rows again would make
        compiling a plan quadratic in its depth)."""
        def compile_node(node):
            if isinstance(node, Truncated):
                return self.truncated(node)
            if isinstance(node, TruncatedGroups):
                return self.truncated_groups(node)
            return node
        return tree.transform(compile_node, copy=False)

    def render(self, tree: exp.Expression, pretty: bool = False) -> str:
        return self.sql(self.lower(tree), pretty)

    def sql(self, lowered: exp.Expression, pretty: bool = False) -> str:
        """The text of a tree already ``lower``ed, which it consumes (sqlglot's generator
        may rewrite it in place instead of copying it first)."""
        return bracketed(lowered).sql(self.name, pretty=pretty, copy=False)

    def sql_over(self, tree: exp.Select, typed: dict, nulls: dict, check,
                 heads: list | None = None) -> tuple:
        """(the engine SQL of the plan ``tree`` over the ``typed`` relations, the same plan
        over the dry run's rows of ``nulls``): both name -> SELECT, read as the first CTEs.
        ``typed`` is consumed; ``nulls`` is not (an engine keeps them: ``dpsql.engines.
        relations``), nor are ``heads``, the texts of the dry run's first CTEs
        (``stand_in(nulls)``, which an engine keeps too).

        The plan is copied, lowered and rendered once (``check`` sees it lowered): the two
        texts differ only in those first CTEs, rendered on their own. Rendering a large plan
        twice doubled the time it took to compile. The plan counts once towards its
        statement's limits (``dpsql.plan.guard_limits``) however often it is lowered."""
        with lowering(tree):
            lowered = self.lowered(with_source(tree, typed))
            check(lowered)
            count = len(typed)
            if count:
                prune(lowered, count)
            bracketed(lowered)
            real = [cte.sql(self.name) for cte in lowered.args["with_"].expressions[:count]]
            dry = self.stand_in(nulls) if heads is None else heads
            text = lowered.sql(self.name, copy=False)       # bracketed above
            head = "WITH " + ", ".join(real)
            if count and len(dry) == count and text.startswith(head):
                return text, "WITH " + ", ".join(dry) + text[len(head):]
            return text, self.sql(self.lowered(with_source(tree, _copies(nulls))))

    def stand_in(self, nulls: dict) -> list:
        """The texts of the dry run's first CTEs, over ``nulls`` (name -> SELECT, not
        changed), each lowered and rendered on its own."""
        stand_in = bracketed(self.lowered(with_source(exp.select(exp.Literal.number(1)),
                                                      _copies(nulls))))
        return [cte.sql(self.name) for cte in stand_in.args["with_"].expressions[:len(nulls)]]


def _copies(relations: dict) -> dict:
    return {name: relation.copy() for name, relation in relations.items()}


def total(node: exp.Expression) -> exp.Expression:
    """The rule of a node that cannot raise on any value of its operands' types: the node."""
    return node


OPAQUE = (exp.Identifier, exp.Var, exp.DataType, exp.DataTypeParam)
"""Parts of a node that are not values (names, date parts, type names): never compiled."""
SEALED = (exp.Interval,)
"""Values whose parts are not values: an INTERVAL literal (the plan checked its count and
unit)."""
PLAN_ONLY = (exp.AggFunc, exp.Window, exp.Query, exp.Subquery)
"""The plan's aggregates and subqueries: never an analyst's row-level node, and what they
hold is the analyst's only where typed itself."""


def type_name(node: exp.Expression) -> str | None:
    """The engine-neutral type of a typed node (BIGINT, DOUBLE, VARCHAR, BOOLEAN, TIMESTAMP,
    DATE, INTERVAL), or None."""
    kind = node.type
    if kind is None or kind.is_type("unknown"):
        return None
    return kind.sql("duckdb").upper().split("(")[0]


MAX_COMPILED_NODES = 10_000
"""Most nodes the rules of ``apply_rules`` may add to a plan, beyond 4 per node of the plan.
A guard reads its operands more than once (a CASE that tests a value, then computes with
it), so nested guards grow exponentially with the depth of an expression; past this, the
query is refused (for free: it depends on the query alone) rather than compiled and
rendered at a size that would take the server minutes."""


def apply_rules(tree: exp.Expression, rules: dict, refusal, plan_rules: dict | None = None,
                max_guards: int | None = None) -> exp.Expression:
    """``tree`` with each node compiled by its rule, deepest first (reversed breadth-first
    order), so that a rule sees its operands compiled (and typed); every node is visited
    once. How the engines without ``TRY`` make the analyst's expressions total
    (``dpsql.engines.postgres.dialect``, ``dpsql.engines.spark.dialect``).

    A node of an analyst's expression (``analyst_nodes``: typed by the typecheck, or inside
    such a node, typed here by what it computes) is compiled by its entry in ``rules``: a
    function of the node (``total`` for a node that cannot raise), or a dict from its
    type (``type_name``) to such a function. A node without an entry, or of a type its
    entry does not name, is refused: ``refusal(node)`` is the QueryError raised, before
    anything runs. Other nodes are the plan's own (clamps, fixed point, truncation, which
    work on values the plan bounded): ``plan_rules`` may compile them, else they are
    rendered as they are. ``max_guards``: the engine's own limit, if under MAX_GUARDS."""
    check_guards(tree, max_guards or MAX_GUARDS)
    _expand_lists(tree)
    analyst = analyst_nodes(tree)
    known = {id(node): node for node in tree.walk()}     # (kept alive: ids stay unique)
    added, limit = 0, MAX_COMPILED_NODES + 4 * len(known)
    for node in reversed(list(tree.walk(bfs=True))):
        if id(node) in analyst:
            rule = rule_of(rules, node)
            if rule is None:
                raise refusal(node)
        else:
            rule = (plan_rules or {}).get(type(node))
            if rule is None:
                continue
        parent, key, index = node.parent, node.arg_key, node.index
        new = rule(node)
        if new is node:
            continue
        added += _new_nodes(new, known)
        if added > limit:
            raise QueryError("the query's expressions are too large once every operation in "
                             "them is guarded on this engine; nest fewer operations")
        if not isinstance(node, exp.Binary):  # a function compiled to an operator: parenthesized
            new = grouped(new)
        if new.type is None and node.type is not None:
            new.type = node.type.copy()       # the parent's rule reads its operands' types
        if parent is None:
            tree = new
        else:
            parent.set(key, new, index=index)
    return tree


def _expand_lists(tree: exp.Expression) -> None:
    """Each list of integers (``dpsql.frontend.literal_lists``) as the typed literals it
    stands for, in place: an engine without TRY compiles each by its rule. The planner's
    lists (a key filter's IN, a key grid's VALUES: ``cast_of``) become the ``TRY_CAST``s
    they stand for; a VALUES list of the analyst's is rendered as its rows as written."""
    for node in list(tree.find_all(exp.In, exp.Values)):
        cast = cast_of(node)
        if isinstance(node, exp.Values):
            if cast is not None:
                node.set("expressions", [exp.Tuple(expressions=[item])
                                         for item in _cast_items(rows_in(node), cast)])
            continue
        values = listed_in(node)
        if values is not None:
            node.set("expressions", _cast_items(values, cast) if cast is not None else
                     [_annotated(int_literal(v), "int") for v in values])


def _cast_items(values: tuple, cast: str) -> list:
    """``TRY_CAST(value AS cast)`` of each value, as the planner writes a listed value."""
    return [exp.TryCast(this=literal(v), to=data_type(cast)) for v in values]


def _new_nodes(new: exp.Expression, known: dict) -> int:
    """The nodes of ``new`` not counted before (a rule's copies and constructs; the operands
    it reuses are known), added to ``known``."""
    fresh = [node for node in new.walk(prune=lambda n: id(n) in known) if id(node) not in known]
    known.update((id(node), node) for node in fresh)
    return len(fresh)


def rule_of(rules: dict, node: exp.Expression):
    """The rule of an analyst's node in ``rules`` (by its class, then by its type), or None."""
    entry = rules.get(type(node))
    if isinstance(entry, dict):
        return entry.get(type_name(node))
    return entry


def analyst_nodes(tree: exp.Expression) -> set:
    """The ids of the nodes of the analyst's expressions in ``tree``: those the typecheck typed
    (``dpsql.frontend.typecheck`` records the type of every expression it returns) and every
    value inside one. Those it left untyped (an operand it built, a literal, the division
    inside a float ``//``) are typed here by what they compute (``inferred_type``), so that
    no analyst's node reaches an engine without the rule of its type."""
    inside: set = set()
    for node in tree.walk(bfs=True):              # parents first
        if isinstance(node, OPAQUE + PLAN_ONLY):
            continue
        parent = node.parent
        if _recorded(node) or (parent is not None and id(parent) in inside
                               and not isinstance(parent, SEALED)):
            inside.add(id(node))
    for node in reversed(list(tree.walk(bfs=True))):   # operands first
        if id(node) in inside and type_name(node) is None:
            kind = inferred_type(node)
            if kind is not None:
                node.type = exp.DataType.build(kind)
    return inside


def _recorded(node: exp.Expression) -> bool:
    """Whether the typecheck recorded a type on ``node`` (a CAST's ``.type`` is its target
    whoever wrote it: the plan's own casts are not the analyst's)."""
    kind = getattr(node, "_type", None)
    return kind is not None and not kind.is_type("unknown")


_TEMPORAL = {"TIMESTAMP", "DATE", "INTERVAL"}
_BOOLEAN = (exp.Predicate, exp.Connector, exp.Not, exp.Escape, exp.Boolean, exp.IsNan,
            exp.IsInf, exp.StartsWith, exp.Contains)
_SAME = (exp.Paren, exp.Try, exp.Neg, exp.Abs, exp.Floor, exp.Ceil, exp.Round, exp.Trunc)
_CHOICE = (exp.Case, exp.If, exp.Coalesce, exp.Greatest, exp.Least, exp.Nullif)


def inferred_type(node: exp.Expression) -> str | None:
    """The type an untyped node of an analyst's expression computes, from its operands'
    (DuckDB's rules for the constructs the typecheck builds), or None if not known."""
    if isinstance(node, exp.Literal):
        return "VARCHAR" if node.is_string else "BIGINT" if node.is_int else "DOUBLE"
    if isinstance(node, _BOOLEAN):
        return "BOOLEAN"
    if isinstance(node, exp.Cast):                 # and TryCast
        return node.to.sql("duckdb").upper().split("(")[0]
    if isinstance(node, exp.Interval):
        return "INTERVAL"
    if isinstance(node, exp.Div):
        return "DOUBLE"
    if isinstance(node, (exp.Add, exp.Sub, exp.Mul, exp.Mod, exp.IntDiv)):
        kinds = {type_name(node.this), type_name(node.expression)}
        if kinds & _TEMPORAL:
            return "TIMESTAMP"
        return "DOUBLE" if "DOUBLE" in kinds else "BIGINT" if kinds == {"BIGINT"} else None
    if isinstance(node, _SAME):
        return type_name(node.this)
    if isinstance(node, _CHOICE):
        values = [node.this] if not isinstance(node, (exp.Case, exp.If)) else []
        values += [i.args.get("true") for i in node.args.get("ifs") or []]
        values += [node.args.get(k) for k in ("true", "false", "default")] + node.expressions
        kinds = {type_name(v) for v in values if v is not None} - {None}
        if kinds == {"DOUBLE", "BIGINT"}:
            return "DOUBLE"
        return kinds.pop() if len(kinds) == 1 else None
    return None


def grouped(node: exp.Expression) -> exp.Expression:
    """``node`` as an operand of an operator a rule builds: sqlglot renders a tree as it is,
    without the parentheses its shape needs (``Mul(Add(a, b), c)`` renders ``a + b * c``)."""
    if isinstance(node, (exp.Column, exp.Literal, exp.Paren, exp.Null, exp.Boolean)) or (
            isinstance(node, exp.Func) and not isinstance(node, exp.Binary)):
        return node
    return exp.Paren(this=node)


def int_constant(node: exp.Expression) -> int | None:
    """The value of an integer literal (possibly cast, parenthesized or negated), else None:
    a guard against its overflow can then be one comparison with a bound computed here."""
    sign = 1
    while isinstance(node, (exp.Cast, exp.Paren, exp.Neg)):
        if isinstance(node, exp.Neg):
            sign = -sign
        node = node.this
    if isinstance(node, exp.Literal) and node.is_int:
        return sign * int(node.this)
    return None


def date_diff_tree(part: str, days: exp.Expression, field_diff) -> exp.Expression:
    """DATE_DIFF('part', a, b) as DuckDB counts it (the part's boundaries from a to b), for a
    dialect without DuckDB's function (``dpsql.frontend.temporal.diff_value`` is the rule):
    built from the whole days between a and b (``days``, an integer) and the differences of
    the fields of b and a (``field_diff(name)``, name YEAR, QUARTER, MONTH, HOUR, MINUTE or
    SECOND, whole numbers): exact, with no division but the week's (truncated, as DuckDB)."""
    if part in ("year", "quarter", "month"):
        per_year = {"year": 1, "quarter": 4, "month": 12}[part]
        value = exp.Mul(this=field_diff("YEAR"), expression=exp.Literal.number(per_year))
        return value if part == "year" else exp.Add(this=value, expression=field_diff(part.upper()))
    if part == "week":
        return exp.IntDiv(this=days, expression=exp.Literal.number(7))
    value = days
    for name, factor in (("HOUR", 24), ("MINUTE", 60), ("SECOND", 60)):
        if part == "day":
            break
        value = exp.Add(this=exp.Mul(this=exp.Paren(this=value), expression=exp.Literal.number(factor)),
                        expression=field_diff(name))
        if part == name.lower():
            break
    return value


DOUBLE_MAX = 1.7976931348623157e308

SUM_BOUND = "dpsql_sum_bound"
"""Meta key of a plan SUM or AVG: (k, m), at most k values per group, each of absolute value
at most m (``dpsql.plan.per_person``): an engine whose float sums raise on overflow reads
whether they can (``dpsql.engines.postgres.sums``)."""


def away(y: float) -> float:
    """C's round of a double (half away from zero), in Python's IEEE doubles (DuckDB's ROUND;
    the guarded dialects find their bounds with it)."""
    whole = float(math.trunc(y))
    return whole + math.copysign(1.0, y) if abs(y - whole) >= 0.5 else whole


def largest_finite(f) -> float:
    """The largest DOUBLE x >= 0 with f(x) finite, for f non-decreasing on [0, max]."""
    low, high = 0, struct.unpack("<q", struct.pack("<d", DOUBLE_MAX))[0]
    while low < high:               # doubles >= 0 are ordered as their bit patterns
        mid = (low + high + 1) // 2
        if math.isinf(f(struct.unpack("<d", struct.pack("<q", mid))[0])):
            high = mid - 1
        else:
            low = mid
    return struct.unpack("<d", struct.pack("<q", low))[0]


def smallest_nonzero(f) -> float:
    """The smallest DOUBLE x > 0 with f(x) != 0, for f non-decreasing on [0, max]."""
    low, high = 1, struct.unpack("<q", struct.pack("<d", DOUBLE_MAX))[0]
    while low < high:
        mid = (low + high) // 2
        if f(struct.unpack("<d", struct.pack("<q", mid))[0]) != 0:
            high = mid
        else:
            low = mid + 1
    return struct.unpack("<d", struct.pack("<q", low))[0]


class Let(exp.Expression):
    """``expression`` (a body) with the lambda variable ``name`` bound to the value of
    ``this``, computed once: an engine whose CASE forms copy an operand they read twice
    (DuckDB's NULLIF, Spark's NULLIF and simple CASE, every guard that tests a value and
    then computes with it) reads it once through a lambda (``register_let`` says how). One
    node, rendered in one step: as three nested functions it took three more levels of
    Python's stack to render per guard, which the deepest query dpsql accepts, called 400
    frames deep, did not have (``dpsql.frontend.parse``). ``this`` may be a Tuple of two
    values (``let_pair``), bound as a two-element list."""

    arg_types = {"this": True, "expression": True, "name": True}


def _let_name(value: exp.Expression) -> str:
    """The lambda variable of a let of ``value``: named by its content, so that the same value
    binds the same name wherever it appears (DuckDB matches a SELECT expression to its GROUP BY
    by text, which two counters' names made differ: review 35's F2) and in every process (the
    ledger's fingerprint of a release includes its engine SQL). 128 bits: two different values
    of one query never share a name, and no analyst column starts with ``_dpsql``."""
    digest = hashlib.blake2b(_shape(value).encode("utf-8"), digest_size=16).hexdigest()
    return f"_dpsql_v{digest}"


def _shape(value: exp.Expression) -> str:
    """``value`` as text only an equal tree has: classes and arguments, texts quoted by
    ``repr`` (sqlglot's repr leaves identifiers unquoted: crafted names could print alike),
    no positions (SELECT's and GROUP BY's copies are one value); iterative (deep values)."""
    parts, stack = [], [value]
    while stack:
        item = stack.pop()
        if isinstance(item, tuple):          # a marker: its text, emitted as is
            parts.append(item[0])
        elif isinstance(item, Let):   # its name stands for its value: a chain is O(n)
            parts.append(f"Let[{item.args['name']}](")
            stack.extend([(")",), item.expression])
        elif isinstance(item, exp.Expression):
            parts.append(type(item).__name__ + "(")
            stack.append((")",))
            for key, arg in sorted(item.args.items(), reverse=True):
                if arg is None or (isinstance(arg, list) and not arg):
                    continue
                items = arg if isinstance(arg, list) else [arg]
                stack.extend([(";",), *reversed(items), (key + "=",)])
        else:
            parts.append(repr(item))
    return "".join(parts)


INLINE_NODES = 8
"""A value of at most this many nodes, with no Let inside, is copied into the body instead of
bound (a lambda costs DuckDB about 1.4 ms to bind, and a column or ``x + 1`` is cheaper to copy);
nested guards then copy at most this much at each level."""


def _small(value: exp.Expression) -> bool:
    nodes = 0
    for node in value.walk():
        nodes += 1
        if nodes > INLINE_NODES or isinstance(node, Let):
            return False
    return True


def let(value: exp.Expression, body) -> exp.Expression:
    """``body(v)`` with the column ``v`` bound to the value of ``value`` (a small value is
    copied into the body instead)."""
    if _small(value):
        return body(value)
    name = _let_name(value)
    return Let(this=value, expression=body(exp.column(name)), name=name)


def let_pair(a: exp.Expression, b: exp.Expression, body, element: str) -> Let:
    """``body(u, v)`` with u and v the values of a and b, both computed outside the lambda
    (``element``: the engine's function of a list and a 1-based position). A let inside
    another's body made DuckDB bind the inner lambdas again for each level (review 25's
    statement of 1,024 nested copies: 226 s to prepare)."""
    if _small(a) and _small(b):
        return body(a, b)
    value = exp.Tuple(expressions=[a, b])
    name = _let_name(value)
    u, v = (exp.Anonymous(this=element, expressions=[exp.column(name), exp.Literal.number(i)])
            for i in (1, 2))
    return Let(this=value, expression=body(u, v), name=name)


def register_let(dialect: str, template: str, listed: str) -> None:
    """Render ``Let`` in sqlglot's ``dialect`` by ``template`` ({value}, {name}, {body}),
    where a pair's value is ``listed`` ({values}: the two, separated by a comma)."""
    generator = sqlglot.Dialect.get_or_raise(dialect).generator_class

    def render(gen, node: Let) -> str:
        value = node.this
        text = (listed.format(values=", ".join(gen.sql(e) for e in value.expressions))
                if isinstance(value, exp.Tuple) else gen.sql(node, "this"))
        return template.format(value=text, name=node.args["name"],
                               body=gen.sql(node, "expression"))
    generator.TRANSFORMS = {**generator.TRANSFORMS, Let: render}
    # sqlglot builds each generator class's dispatch table once, when its first generator
    # is made: one made before this registration (a plan rendered before this engine's
    # module was imported) would not know Let ("Unsupported expression type Let").
    cache = getattr(sqlglot.generator, "_DISPATCH_CACHE", None)
    if isinstance(cache, dict):
        for cls in [c for c in cache if issubclass(c, generator)]:
            cache.pop(cls, None)
