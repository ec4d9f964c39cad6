"""Type a row-level expression by the allow-list, and make it total.

Owns: applying ``dpsql.frontend.allowed`` to a bound expression tree. Every node is
looked up in the allow-list (anything else is refused by name, for free), given
a type derived from the metadata types of the columns it reads and from its
literals (never from the data), and rewritten so that evaluating it can never
raise on any row: literals get fixed types, literals compared with another
type are converted now, casts become TRY_CAST, and the nodes that can fail on
some values are wrapped in TRY(...). The result is the tree the engine runs.
Literals and their plan-time conversions are ``dpsql.frontend.literals``; constant number
arithmetic, computed exactly at plan time, ``dpsql.frontend.decimals``; the rules of dates,
times and intervals ``dpsql.frontend.temporal``.
"""
from __future__ import annotations

from typing import Callable

from sqlglot import exp

from . import decimals, temporal
from .ranges import cannot_fail
from .allowed import (CAST_REFUSED, CAST_TARGETS, ENGINE_TYPES, NUMERIC, TEMPORAL, as_written,
                      entry_for, name_of, spelled, type_written)
from .dialect import ANALYST_DIALECT
from .literal_lists import expanded, listed, listed_in
from .literals import (INT64, _convert_literal, _literal_value, _refuse,  # noqa: F401 - re-exported
                       _temporal_literal, float_literal, int_literal, number_literal)

MAX_PATTERN = 100           # characters of a LIKE pattern
MAX_STRING_LITERAL = 1000   # characters of a string literal or string parameter
Typed = tuple  # (expression, type name)


def _annotated(node: exp.Expression, kind: str) -> exp.Expression:
    """``node`` with its engine type recorded (sqlglot's ``.type``), so that an engine's
    dialect can compile a guard by the type it protects (``dpsql.plan.dialect``)."""
    engine_type = _data_type(kind)
    if engine_type is not None:
        node.type = engine_type
        if isinstance(node, exp.Try) and node.this.type is None:
            node.this.type = engine_type
    return node


_DATA_TYPES: dict = {}


def _data_type(kind: str):
    """The sqlglot DataType of a language type, built once (building one parses its name:
    a tenth of a millisecond per literal of a long IN list). Nodes share it: a copy of
    a node copies its type, and no step changes a type in place."""
    if kind not in _DATA_TYPES:
        name = ENGINE_TYPES.get(kind)
        _DATA_TYPES[kind] = exp.DataType.build(name) if name is not None else None
    return _DATA_TYPES[kind]


def guard(node: exp.Expression) -> exp.Expression:
    """``node``, NULL where evaluating it would raise: sqlglot's neutral ``exp.Try``, which
    each engine's dialect compiles (DuckDB: ``TRY(...)``)."""
    return exp.Try(this=node)


def _class(kind: str) -> str:
    """Types that compare with each other without a run-time cast share a class."""
    if kind in NUMERIC:
        return "number"
    if kind in TEMPORAL:
        return "temporal"
    return kind


def _ends_in_escape(pattern: str, escape: str) -> bool:
    i = 0
    while i < len(pattern):
        if pattern[i] == escape:
            if i + 1 == len(pattern):
                return True
            i += 1
        i += 1
    return False


class Checker:
    """Types and guards the expressions of one clause.

    ``columns``: lower-case column name -> language type (from the metadata).
    ``leaf``: optional callback for nodes typed by the caller (aggregates and
    group keys in post-processing); it returns a type, or None to go on.
    """

    def __init__(self, columns: dict, leaf: Callable | None = None, clause: str = "WHERE"):
        self.columns, self.leaf, self.clause = columns, leaf, clause

    def _at(self, node: exp.Expression) -> str:
        """Where a literal is, for messages: its line and column if known, and the clause."""
        while isinstance(node, (exp.Paren, exp.Neg)) and not node.meta:
            node = node.this
        meta = node.meta or {}
        if "line" in meta:      # sqlglot's column is the token's last one
            col = meta["col"] - (meta["end"] - meta["start"]) if "start" in meta else meta["col"]
            return f" (line {meta['line']}, column {col}, in {self.clause})"
        return f" (in {self.clause})"

    # -- entry points ----------------------------------------------------------
    def check(self, node: exp.Expression) -> Typed:
        if self.leaf is not None:
            kind = self.leaf(node)
            if kind is not None:
                return _annotated(node, kind), kind
        entry = entry_for(node)
        if entry is None:
            _refuse(f"{name_of(node)} is not allowed in {self.clause} "
                    f"({as_written(node)[:80]}); dpsql accepts only the functions and "
                    "operators listed in docs/sql.md, whose failures it can rule out")
        out, kind = getattr(self, "_" + entry.rule)(node)
        return _annotated(out, kind), kind

    def predicate(self, node: exp.Expression) -> exp.Expression:
        out, kind = self.check(node)
        if kind not in ("boolean", "null"):
            _refuse(f"{self.clause} needs a boolean condition, but {node.sql(ANALYST_DIALECT)[:80]} "
                    f"is of type {kind}; compare it with something (e.g. = 1)")
        return out

    # -- helpers ------------------------------------------------------------
    def _unify(self, operands: list, context: str) -> tuple[list, str]:
        """Operands of one type: literals converted to the others' type at plan time."""
        typed = [self.check(o) for o in operands]
        anchors = {k for o, (_, k) in zip(operands, typed)
                   if k != "null" and _literal_value(o) is None}
        if not anchors:
            anchors = {k for _, k in typed if k != "null"}
        classes = {_class(k) for k in anchors}
        if len(classes) > 1:
            shown = ", ".join(sorted(anchors))
            _refuse(f"{context}: operands of different types ({shown}); CAST one of them so "
                    "that they agree")
        if not classes:
            return [n for n, _ in typed], "null"
        target = sorted(anchors)[0] if len(anchors) == 1 else (
            "float" if classes == {"number"} else "datetime")
        out = []
        for original, (node, kind) in zip(operands, typed):
            if kind != "null" and _class(kind) != _class(target):
                node, kind = _convert_literal(original, target, context) if _literal_value(
                    original) is not None else _refuse(f"{context}: cannot compare {kind} with {target}")
            if kind == "date" and target == "datetime":
                # DuckDB would cast implicitly, and that cast raises for dates past year
                # 294247 (which TRY_CAST can produce): cast here, where failure is NULL.
                node = exp.TryCast(this=node, to=exp.DataType.build("TIMESTAMP"))
            out.append(node)
        return out, target

    def _need(self, node, kind: str, allowed: set, what: str) -> None:
        if kind != "null" and kind not in allowed:
            _refuse(f"{what} needs {' or '.join(sorted(allowed))}, but "
                    f"{node.sql(ANALYST_DIALECT)[:80]} is of type {kind} (in {self.clause})")

    def _args(self, node, keys=("this", "expression")) -> list:
        return [(k, node.args.get(k)) for k in keys if isinstance(node.args.get(k), exp.Expression)]

    def _rebuild(self, node, typed_args: dict) -> exp.Expression:
        """``node`` with its checked children; other arguments copied (not deep-copying
        the children it replaces keeps long AND/OR chains linear)."""
        new = type(node)()
        for key, value in node.args.items():
            if key in typed_args:
                new.set(key, typed_args[key])
            elif isinstance(value, exp.Expression):
                new.set(key, value.copy())
            elif isinstance(value, list):
                new.set(key, [v.copy() if isinstance(v, exp.Expression) else v for v in value])
            else:
                new.set(key, value)
        return new

    def _only(self, node, keys: set) -> None:
        extra = sorted(k for k, v in node.args.items() if v not in (None, False, []) and k not in keys)
        if extra:
            _refuse(f"{name_of(node)} with {', '.join(extra)} is not supported (in {self.clause})")

    # -- rules ----------------------------------------------------------------
    def _column(self, node):
        kind = self.columns.get(node.name.lower())
        if kind is None:
            _refuse(f"unknown column {node.sql(ANALYST_DIALECT)} in {self.clause}")
        return node.copy(), kind

    def _literal(self, node):
        if isinstance(node, exp.Null):
            return node.copy(), "null"
        if isinstance(node, exp.Boolean):
            return node.copy(), "boolean"
        if node.is_string:
            if len(node.this) > MAX_STRING_LITERAL:
                _refuse(f"a string literal or parameter may have at most {MAX_STRING_LITERAL} "
                        f"characters (in {self.clause}): the time a row takes must not grow "
                        "with values the query builds")
            return node.copy(), "string"
        return number_literal(node.this, where=self._at(node))

    def _paren(self, node):
        inner, kind = self.check(node.this)
        # An analyst's TRY(x) is brackets: x is total already, and each engine compiles
        # the typecheck's own guards (DuckDB's TRY is a timing channel: engines/duckdb/guards).
        return exp.Paren(this=inner), kind

    def _logic(self, node):
        self._only(node, {"this", "expression"})
        parts = {}
        for key, child in self._args(node):
            out, kind = self.check(child)
            self._need(child, kind, {"boolean"}, spelled(node))
            parts[key] = out
        return self._rebuild(node, parts), "boolean"

    def _compare(self, node):
        if listed_in(node) is not None:
            return self._listed_in(node)
        name = spelled(node)
        truth = decimals.compared(node)          # number constants only: decided exactly
        if truth is not None:
            return truth, "boolean"
        if isinstance(node, exp.In):
            self._only(node, {"this", "expressions"})
            operands = [node.this] + list(node.expressions)
        elif isinstance(node, exp.Between):
            self._only(node, {"this", "low", "high"})
            operands = [node.this, node.args["low"], node.args["high"]]
        else:
            self._only(node, {"this", "expression"})
            operands = [node.this, node.expression]
        out, _ = self._unify(operands, f"{name} in {self.clause}")
        if isinstance(node, exp.In):
            return exp.In(this=out[0], expressions=out[1:]), "boolean"
        if isinstance(node, exp.Between):
            return exp.Between(this=out[0], low=out[1], high=out[2]), "boolean"
        return type(node)(this=out[0], expression=out[1]), "boolean"

    def _listed_in(self, node):
        """``x IN (<a long list of integers>)`` (``dpsql.frontend.literal_lists``): compared
        with a number, the list is typed once, as its values would be one by one."""
        self._only(node, {"this", "expressions"})
        if _literal_value(node.this) is None:
            this, kind = self.check(node.this)
            if kind in NUMERIC:
                return exp.In(this=this, expressions=[
                    _annotated(listed(listed_in(node), typed=True), "int")]), "boolean"
        return self._compare(expanded(node))

    def _is(self, node):
        self._only(node, {"this", "expression"})
        inner, kind = self.check(node.this)
        if not isinstance(node.expression, exp.Null):
            self._need(node.this, kind, {"boolean"}, "IS TRUE/IS FALSE")
        return exp.Is(this=inner, expression=node.expression.copy()), "boolean"

    def _like(self, node):
        if isinstance(node, exp.Escape):
            escape = node.expression
            if not (isinstance(escape, exp.Literal) and escape.is_string and len(escape.this) == 1
                    and escape.this.isascii()):
                # DuckDB wants one byte, and raises only when a row reaches the LIKE.
                _refuse("the ESCAPE of LIKE must be one ASCII character, as a string literal")
            pattern = node.this.expression
            if isinstance(pattern, exp.Literal) and _ends_in_escape(pattern.this, escape.this):
                # DuckDB raises this only when a row's value reaches the pattern's end,
                # with an error TRY does not catch: it must be refused here.
                _refuse(f"the LIKE pattern '{pattern.this}' ends with its escape character "
                        f"'{escape.this}'; escape a character or remove it")
            if not isinstance(node.this, (exp.Like, exp.ILike)):
                _refuse(f"ESCAPE is only allowed after LIKE or ILIKE (in {self.clause})")
            inner, _ = self._like(node.this)
            if isinstance(inner, exp.Not):       # NOT LIKE ... ESCAPE c
                return exp.Not(this=exp.Escape(this=inner.this, expression=escape.copy())), "boolean"
            return exp.Escape(this=inner, expression=escape.copy()), "boolean"
        self._only(node, {"this", "expression", "negate"})
        pattern = node.expression
        if not (isinstance(pattern, exp.Null) or (isinstance(pattern, exp.Literal) and pattern.is_string)):
            _refuse(f"the pattern of {spelled(node)} must be a string literal (in {self.clause})")
        if isinstance(pattern, exp.Literal) and len(pattern.this) > MAX_PATTERN:
            # A general pattern costs len(value) x len(pattern) on each row that reaches it.
            _refuse(f"a LIKE pattern may have at most {MAX_PATTERN} characters (in {self.clause})")
        value, kind = self.check(node.this)
        self._need(node.this, kind, {"string"}, spelled(node))
        out = type(node)(this=value, expression=pattern.copy())
        return (exp.Not(this=out) if node.args.get("negate") else out), "boolean"

    def _case(self, node):
        if isinstance(node, exp.If):
            conds, results, default = [node.this], [node.args.get("true")], node.args.get("false")
            operand = None
        else:
            self._only(node, {"this", "ifs", "default"})
            operand = node.args.get("this")
            conds = [i.this for i in node.args.get("ifs") or []]
            results = [i.args.get("true") for i in node.args.get("ifs") or []]
            default = node.args.get("default")
        if operand is not None:
            out, _ = self._unify([operand] + conds, f"CASE in {self.clause}")
            operand, conds = out[0], out[1:]
        else:
            conds = [self.predicate_in(c, "CASE WHEN") for c in conds]
        branches = results + ([default] if default is not None else [])
        values, kind = self._unify(branches, f"the results of CASE in {self.clause}")
        ifs = [exp.If(this=c, true=v) for c, v in zip(conds, values)]
        new = exp.Case(ifs=ifs, default=values[len(ifs)] if default is not None else None)
        if operand is not None:
            new.set("this", operand)
        return new, kind

    def predicate_in(self, node, what: str) -> exp.Expression:
        out, kind = self.check(node)
        self._need(node, kind, {"boolean"}, what)
        return out

    def _same(self, node):
        if isinstance(node, exp.Nullif):
            args = [node.this, node.expression]
        else:
            args = [node.this] + list(node.expressions)
        out, kind = self._unify([a for a in args if a is not None], f"{name_of(node)} in {self.clause}")
        if isinstance(node, exp.Nullif):
            return exp.Nullif(this=out[0], expression=out[1]), kind
        if len(out) == 1:       # GREATEST(x) is x (Spark refuses one argument: review 27)
            return out[0], kind
        # Anonymous: sqlglot would expand GREATEST/LEAST into NULL-guarding CASEs.
        name = {exp.Coalesce: "COALESCE", exp.Greatest: "GREATEST", exp.Least: "LEAST"}[type(node)]
        return exp.Anonymous(this=name, expressions=out), kind

    def _cast(self, node):
        to = node.args["to"]
        target = CAST_TARGETS.get(to.this)
        if target is None or to.args.get("kind"):
            _refuse(f"CAST to {type_written(to)} is not allowed (in {self.clause}); cast to "
                    "BIGINT, DOUBLE, VARCHAR, BOOLEAN, DATE or TIMESTAMP")
        literal = _literal_value(node.this)
        if literal is not None:
            kind = "string" if literal[0] == "string" else "number"
            if target in TEMPORAL and kind == "string":
                return _temporal_literal(literal[1], target), target
            if target in NUMERIC:
                where = self._at(node.this)
                text = literal[2]
                value, vkind = (number_literal(literal[1], where=where) if kind == "string"
                                else number_literal(text.lstrip("-"), text.startswith("-"), where))
                if target == "float" and vkind == "int":
                    value = float_literal(float(literal[1] if kind == "string" else literal[2]))
                if target == "int" and vkind == "float":
                    return exp.TryCast(this=value, to=exp.DataType.build("BIGINT")), "int"
                return value, target
        inner, kind = self.check(node.this)
        if (kind, target) in CAST_REFUSED:
            _refuse(f"CAST of {'an' if kind[:1] in 'aeiou' else 'a'} {kind} to "
                    f"{type_written(to)} is not supported (in {self.clause})")
        if kind == target:
            return inner, kind
        if to.this in (exp.DataType.Type.TINYINT, exp.DataType.Type.SMALLINT, exp.DataType.Type.INT):
            inner = exp.TryCast(this=inner, to=exp.DataType.build(to.this.value))
        return exp.TryCast(this=inner, to=exp.DataType.build(ENGINE_TYPES[target])), target

    def _arith(self, node):
        if temporal.has_interval(node):
            return temporal.interval_rule(self, node)
        folded = decimals.folded(node)           # number constants only: computed exactly
        if folded is not None:
            return folded
        parts, kinds = {}, []
        for key, child in self._args(node):
            out, kind = self.check(child)
            if kind in TEMPORAL:
                _refuse(f"{spelled(node)} of a date or timestamp ({node.sql(ANALYST_DIALECT)[:80]}): "
                        "count the time between two with DATE_DIFF('day', a, b), or move one by "
                        "an INTERVAL literal (t + INTERVAL 30 DAY)")
            self._need(child, kind, NUMERIC, spelled(node))
            parts[key], _ = out, kinds.append(kind)
        kind = "float" if "float" in kinds else "int" if "int" in kinds else "null"
        if isinstance(node, (exp.Div, exp.IntDiv, exp.Mod)):
            parts["expression"] = decimals.nonzero(parts["expression"])
        if isinstance(node, exp.IntDiv) and kind == "float":
            # DuckDB divides doubles with // (242.5 // 100 is 2.425); dpsql's // is floor
            # division for every number, so that x // 10 is a bucket whatever x's type.
            division = exp.Div(this=parts["this"], expression=parts["expression"])
            return guard(exp.Floor(this=guard(division))), kind
        new = self._rebuild(node, parts)
        if kinds == ["int", "int"] and not isinstance(node, exp.Div) and cannot_fail(new, self.columns):
            return new, kind
        return guard(new), kind

    def _div(self, node):
        out, _ = self._arith(node)
        return out, "float"

    def _neg(self, node):
        if _literal_value(node) is not None:
            return number_literal(node.this.this, negative=True, where=self._at(node.this))
        folded = decimals.folded(node)
        if folded is not None:
            return folded
        inner, kind = self.check(node.this)
        self._need(node.this, kind, NUMERIC, "-")
        new = exp.Neg(this=inner)
        if kind == "int" and cannot_fail(new, self.columns):
            return new, kind
        return guard(new), kind

    def _unary(self, node, allowed: set, result: str | None, what: str = "", extra=()) -> Typed:
        self._only(node, {"this"} | set(extra))
        inner, kind = self.check(node.this)
        self._need(node.this, kind, allowed, what or name_of(node))
        return self._rebuild(node, {"this": inner}), result or kind

    def _numeric_same(self, node):
        out, kind = self._unary(node, NUMERIC, None)
        return guard(out), kind

    def _numeric_int(self, node):
        out, _ = self._unary(node, NUMERIC, "int")
        return guard(out), "int"

    def _round(self, node):
        self._only(node, {"this", "decimals"})
        decimals = node.args.get("decimals")
        inner, kind = self.check(node.this)
        self._need(node.this, kind, NUMERIC, "ROUND")
        new = exp.Round(this=inner)
        if decimals is not None:
            lit = _literal_value(decimals)
            if lit is None or lit[0] != "number" or not lit[2].lstrip("-").isdigit() \
                    or len(lit[2]) > 5 or abs(int(lit[2])) > 30:
                _refuse("the digits of ROUND(x, n) must be an integer literal from -30 to 30")
            new.set("decimals", int_literal(int(lit[2])))
        return guard(new), kind

    def _numeric_float(self, node):
        parts = {}
        for key, child in self._args(node):
            out, kind = self.check(child)
            self._need(child, kind, NUMERIC, name_of(node))
            parts[key] = out
        self._only(node, {"this", "expression"})
        return guard(self._rebuild(node, parts)), "float"

    def _float_bool(self, node):
        return self._unary(node, NUMERIC, "boolean")

    def _string_same(self, node):
        if isinstance(node, exp.Trim):
            self._only(node, {"this", "position"})
        return self._unary(node, {"string"}, None, extra=("position",))

    def _string_int(self, node):
        return self._unary(node, {"string"}, "int")

    def _substring(self, node):
        keys = ("this", "start", "length") if isinstance(node, exp.Substring) else ("this", "expression")
        self._only(node, set(keys))
        parts = {}
        for key, child in self._args(node, keys):
            out, kind = self.check(child)
            self._need(child, kind, {"string"} if key == "this" else {"int"}, name_of(node))
            parts[key] = out
        return guard(self._rebuild(node, parts)), "string"

    def _string_pair(self, node, keys):
        self._only(node, set(keys))
        parts = {}
        for key, child in self._args(node, keys):
            out, kind = self.check(child)
            self._need(child, kind, {"string"}, name_of(node))
            parts[key] = out
        return self._rebuild(node, parts)

    def _string_pair_int(self, node):
        return self._string_pair(node, ("this", "substr")), "int"

    def _string_pair_bool(self, node):
        return self._string_pair(node, ("this", "expression")), "boolean"

    def _concat(self, node):
        if isinstance(node, exp.DPipe):
            return self._string_pair(node, ("this", "expression", "safe")), "string"
        self._only(node, {"expressions", "safe", "coalesce"})
        args = [self.check(a)[0] for a in node.expressions]
        # Anonymous: sqlglot prints CONCAT as ||, which has other NULL and type rules.
        return exp.Anonymous(this="CONCAT", expressions=args), "string"

    # dates and times: dpsql.frontend.temporal
    _part, _extract, _date_int = temporal.part, temporal.extract_rule, temporal.date_int_rule
    _trunc, _interval, _date_diff = temporal.trunc_rule, temporal.interval_rule, temporal.date_diff_rule


def check(node: exp.Expression, columns: dict, clause: str = "WHERE", leaf=None) -> Typed:
    """(guarded expression, type) of a row-level expression; raises QueryError if refused."""
    return Checker(columns, leaf, clause).check(node)


def predicate(node: exp.Expression, columns: dict, clause: str = "WHERE", leaf=None) -> exp.Expression:
    return Checker(columns, leaf, clause).predicate(node)
