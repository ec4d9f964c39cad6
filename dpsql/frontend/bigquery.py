"""BigQuery's differential-privacy syntax, read from sqlglot's tokens (step 1).

Owns: reading ``SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (name = value, ...)`` and the
per-aggregate ``contribution_bounds_per_group => (lo, hi)`` and
``contribution_bounds_per_row => (lo, hi)`` of BigQuery (and GoogleSQL), which sqlglot
cannot parse; the query's privacy that the options set; and the canonical text of such a
query (its release key and ledger record). What the syntax means for the plan is
``dpsql.plan.contributions``; docs/sql.md, "BigQuery's differential-privacy syntax", is
the reference.

How: the query is tokenized as for any query (sqlglot's DuckDB tokenizer, tokens carry
their offsets). ``extract`` finds the clause right after the outer ``SELECT`` and each
bound as the last argument of an aggregate call in the outer SELECT list, checks every
token of them, and removes exactly those tokens; the rest is parsed as usual (nothing is
ever cut out of the text by pattern). ``attach`` then hangs the options on the parsed
tree (``tree.meta``) and each bound on its aggregate node, found by the offset of the
function's name (sqlglot records it on the node), one to one, or refuses.

Decisions (everything here is analyst-controlled, so every token is checked):
* The clause is only accepted right after the outer SELECT (paren depth 0): BigQuery
  allows it nowhere else; in a subquery, a CTE or a part of a UNION ALL it is refused.
  ``WITH ANONYMIZATION`` (BigQuery's legacy spelling) is refused with a pointer.
* Options: ``epsilon`` and ``delta`` are number literals (an optional sign and a number:
  no expressions, strings, NULL, NaN or infinities) within dpsql's per-query range;
  ``max_groups_contributed`` a whole-number literal from 1 to 2^63 - 1;
  ``privacy_unit_column`` a column name (optionally qualified). Unknown or repeated
  options are refused naming the option. All are optional; ``OPTIONS`` may be left out.
* Bounds: two number literals with ``lo <= hi``; ``contribution_bounds_per_group`` on
  COUNT, SUM and AVG and ``contribution_bounds_per_row`` on VAR_POP, STDDEV_POP and
  PERCENTILE_CONT, as in BigQuery, plus dpsql's other numeric aggregates that BigQuery's
  GoogleSQL reads per row (VARIANCE, VAR_SAMP, STDDEV, STDDEV_SAMP, MEDIAN,
  PERCENTILE_DISC). BigQuery has no per-row bounds on COUNT/SUM/AVG, so neither has dpsql
  (the message says how to clamp rows in SQL). Bounds need the clause.
* The options only set what a caller could set anyway: ``epsilon``/``delta`` are this
  query's ``Privacy`` (the session's mechanisms and split kept), checked by the budget
  and, on the server, by the analyst's per-query cap (``sql_privacy``). In a session
  sized in rho (zCDP) they are refused.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

import sqlglot
from sqlglot import exp
from sqlglot.tokens import TokenType

from ..errors import ProgrammingError, QueryError
from ..privacy.params import MAX_QUERY_EPSILON, Privacy
from ..privacy.spend import MIN_QUERY_EPSILON
from .dialect import ANALYST_DIALECT

CLAUSE = "dpsql_bigquery"
"""Key of ``tree.meta`` holding the query's ``Clause``."""
BOUND = "dpsql_bound"
"""Key of an aggregate node's ``meta`` holding its ``Bound``."""
OPTIONS = ("epsilon", "delta", "max_groups_contributed", "privacy_unit_column")
PER_GROUP, PER_ROW = "contribution_bounds_per_group", "contribution_bounds_per_row"
GROUP_FUNCTIONS = {"count": exp.Count, "sum": exp.Sum, "avg": exp.Avg}
ROW_FUNCTIONS = {"var_pop": exp.VariancePop, "stddev_pop": exp.StddevPop,
                 "percentile_cont": exp.PercentileCont, "variance": exp.Variance,
                 "var_samp": exp.Variance, "stddev": exp.Stddev, "stddev_samp": exp.StddevSamp,
                 "median": exp.Median, "percentile_disc": exp.PercentileDisc}
MAX_INT = 2 ** 63 - 1
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_$]*$")
_OPEN = (TokenType.L_PAREN, TokenType.L_BRACKET, TokenType.L_BRACE)
_CLOSE = (TokenType.R_PAREN, TokenType.R_BRACKET, TokenType.R_BRACE)


@dataclass(frozen=True)
class Bound:
    """One ``contribution_bounds_per_group|row => (lo, hi)`` of an aggregate call."""

    kind: str             # "group" or "row"
    lo: int | float
    hi: int | float
    function: str         # the aggregate's name as written, lower case
    start: int            # offset of that name in the query text
    where: str            # " (line L, column C)"

    @property
    def name(self) -> str:
        return PER_GROUP if self.kind == "group" else PER_ROW

    def text(self) -> str:
        return f"{self.name} => ({_number_text(self.lo)}, {_number_text(self.hi)})"


@dataclass
class Clause:
    """The query's ``WITH DIFFERENTIAL_PRIVACY OPTIONS (...)`` and its bounds."""

    options: dict = field(default_factory=dict)   # name -> float | int | tuple of names
    bounds: list = field(default_factory=list)
    where: str = ""
    per_unit: bool = False        # set by dpsql.plan.contributions: aggregated per person

    def unit_column(self) -> str | None:
        parts = self.options.get("privacy_unit_column")
        return ".".join(parts) if parts else None

    def options_text(self) -> str:
        """The options in a fixed order and form (part of the query's canonical text)."""
        out = []
        for name in OPTIONS:
            if name in self.options:
                value = self.options[name]
                text = ".".join(value).lower() if name == "privacy_unit_column" else \
                    _number_text(value)
                out.append(f"{name} = {text}")
        return f"WITH DIFFERENTIAL_PRIVACY OPTIONS ({', '.join(out)})"


def _number_text(value) -> str:
    if isinstance(value, int):
        return str(value)
    return str(int(value)) if value.is_integer() and abs(value) < 1e16 else repr(value)


def _at(token) -> str:
    return f" (line {token.line}, column {token.col})"


def _word(token) -> str:
    return token.text.lower() if token.token_type not in (TokenType.STRING, TokenType.NUMBER) else ""


# ----------------------------------------------------------------- tokens

def _depths(tokens: list) -> list:
    """The bracket depth before each token (never below 0)."""
    depths, depth = [], 0
    for tok in tokens:
        if tok.token_type in _CLOSE:
            depth = max(depth - 1, 0)
        depths.append(depth)
        if tok.token_type in _OPEN:
            depth += 1
    return depths


def extract(tokens: list) -> tuple:
    """(tokens without BigQuery's clause and bounds, the ``Clause`` or None)."""
    words = {_word(t) for t in tokens}
    if not words & {"differential_privacy", "anonymization", PER_GROUP, PER_ROW}:
        return tokens, None
    depths = _depths(tokens)
    removed: set = set()
    clause, region = _clause(tokens, depths, removed)
    bounds = []
    for i, tok in enumerate(tokens):
        if _word(tok) in (PER_GROUP, PER_ROW) and i + 1 < len(tokens) \
                and tokens[i + 1].token_type == TokenType.FARROW:
            bounds.append(_bound(tokens, depths, i, clause, region, removed))
    if clause is None:
        return tokens, None
    clause.bounds = bounds
    return [t for i, t in enumerate(tokens) if i not in removed], clause


def _clause(tokens: list, depths: list, removed: set) -> tuple:
    """(the Clause or None, (first, end) token indexes of the outer SELECT list)."""
    clause, region = None, None
    for i, tok in enumerate(tokens):
        if not (tok.token_type == TokenType.SELECT and i + 2 < len(tokens)
                and tokens[i + 1].token_type == TokenType.WITH
                and _word(tokens[i + 2]) in ("differential_privacy", "anonymization")):
            continue
        if _word(tokens[i + 2]) == "anonymization":
            raise QueryError(f"WITH ANONYMIZATION{_at(tokens[i + 1])} is BigQuery's legacy "
                             "syntax; write WITH DIFFERENTIAL_PRIVACY OPTIONS (...)")
        if depths[i] != 0 or clause is not None:
            raise QueryError(
                f"WITH DIFFERENTIAL_PRIVACY{_at(tokens[i + 1])} is allowed only right after "
                "the outer SELECT of the query, once (as in BigQuery), not in a subquery, a "
                "CTE or a part of a UNION ALL; put it on the outer SELECT, or ask each part "
                "as its own query")
        end, options = _options(tokens, i + 3)
        removed.update(range(i + 1, end))
        clause = Clause(options, where=_at(tokens[i + 1]))
        stop = next((j for j in range(end, len(tokens)) if depths[j] == 0
                     and tokens[j].token_type == TokenType.FROM), len(tokens))
        region = (end, stop)
    return clause, region


def _options(tokens: list, i: int) -> tuple:
    """(index after ``OPTIONS (...)``, the options) from ``tokens[i]`` on."""
    if i >= len(tokens) or _word(tokens[i]) != "options":
        return i, {}
    if i + 1 >= len(tokens) or tokens[i + 1].token_type != TokenType.L_PAREN:
        raise QueryError(f"OPTIONS{_at(tokens[i])} must be followed by (name = value, ...)")
    options: dict = {}
    i += 2
    while True:
        if i >= len(tokens):
            raise QueryError("WITH DIFFERENTIAL_PRIVACY OPTIONS ( is never closed; end it "
                             "with )")
        tok = tokens[i]
        if tok.token_type == TokenType.R_PAREN and not options:
            return i + 1, options
        name = _word(tok)
        if not _NAME.match(tok.text):
            raise QueryError(f"expected an option name ({', '.join(OPTIONS)}) in WITH "
                             f"DIFFERENTIAL_PRIVACY OPTIONS{_at(tok)}, not {tok.text[:40]!r}")
        if name not in OPTIONS:
            shown = tok.text[:40]
            raise QueryError(f"unknown option {shown!r} in WITH DIFFERENTIAL_PRIVACY OPTIONS"
                             f"{_at(tok)}; dpsql reads {', '.join(OPTIONS)}")
        if name in options:
            raise QueryError(f"the option {name} is given twice{_at(tok)}; give it once")
        if i + 1 >= len(tokens) or tokens[i + 1].token_type != TokenType.EQ:
            raise QueryError(f"the option {name}{_at(tok)} must be written {name} = value")
        options[name], i = _option_value(name, tokens, i + 2)
        if i < len(tokens) and tokens[i].token_type == TokenType.COMMA:
            i += 1
            continue
        if i < len(tokens) and tokens[i].token_type == TokenType.R_PAREN:
            return i + 1, options
        where = _at(tokens[i]) if i < len(tokens) else " (at the end of the query)"
        raise QueryError(f"the option {name} must be a single literal, followed by , or )"
                         f"{where}; expressions are not allowed in OPTIONS")


def _option_value(name: str, tokens: list, i: int) -> tuple:
    """(value, index after it) of one option, checked."""
    if name == "privacy_unit_column":
        return _column_name(tokens, i)
    if name == "max_groups_contributed":
        tok = tokens[i] if i < len(tokens) else None
        text = tok.text if tok is not None and tok.token_type == TokenType.NUMBER else ""
        if not (text.isdigit() and len(text) <= 19 and 1 <= int(text) <= MAX_INT):
            shown = tok.text[:40] if tok is not None else "nothing"
            where = _at(tok) if tok is not None else ""
            raise QueryError(f"max_groups_contributed = {shown}{where} must be a whole number "
                             f"from 1 to {MAX_INT} (the most groups one person may add rows to)")
        return int(text), i + 1
    value, end = _number(tokens, i, f"the option {name}")
    value = float(value)
    if name == "epsilon" and not MIN_QUERY_EPSILON <= value <= MAX_QUERY_EPSILON:
        raise QueryError(f"epsilon = {value:g}{_at(tokens[i])} is outside dpsql's per-query "
                         f"range [{MIN_QUERY_EPSILON:g}, {MAX_QUERY_EPSILON:g}]: below it the "
                         "noise answers nothing, above it the release protects no one "
                         "(BigQuery's epsilon = 1e20 without noise has no dpsql equivalent)")
    if name == "delta" and not 0 <= value < 1:
        raise QueryError(f"delta = {value:g}{_at(tokens[i])} must be in [0, 1)")
    return value, end


def _number(tokens: list, i: int, what: str) -> tuple:
    """(int or finite float, index after it) of an optionally signed number literal."""
    sign = 1
    if i < len(tokens) and tokens[i].token_type in (TokenType.DASH, TokenType.PLUS):
        sign = -1 if tokens[i].token_type == TokenType.DASH else 1
        i += 1
    point = ""           # ``.5``: the tokenizer reads a dot, then the number 5
    if i + 1 < len(tokens) and tokens[i].token_type == TokenType.DOT \
            and tokens[i + 1].token_type == TokenType.NUMBER \
            and tokens[i].end + 1 == tokens[i + 1].start and tokens[i + 1].text[:1].isdigit():
        point, i = ".", i + 1
    if i >= len(tokens) or tokens[i].token_type != TokenType.NUMBER:
        got = f"{tokens[i].text[:40]!r}{_at(tokens[i])}" if i < len(tokens) else "nothing"
        raise QueryError(f"{what} must be a number literal, not {got}")
    text = point + tokens[i].text.replace("_", "")
    try:
        if text.isdigit():
            if len(text) > 40:
                raise ValueError(text)
            value = int(text)
            value = value if value < 2 ** 53 else float(value)
        else:
            value = float(text)
    except (ValueError, OverflowError):
        raise QueryError(f"{what} must be a number literal, not {tokens[i].text[:40]!r}"
                         f"{_at(tokens[i])}") from None
    if not math.isfinite(value):
        raise QueryError(f"{what}{_at(tokens[i])} must be a finite number")
    return sign * value, i + 1


def _column_name(tokens: list, i: int) -> tuple:
    """(name parts, index after them) of ``privacy_unit_column = [t.]column``."""
    parts = []
    while True:
        tok = tokens[i] if i < len(tokens) else None
        if tok is None or tok.token_type in (TokenType.STRING, TokenType.NUMBER, TokenType.NULL,
                                             TokenType.TRUE, TokenType.FALSE) \
                or not (tok.token_type == TokenType.IDENTIFIER or _NAME.match(tok.text)):
            got = f"{tok.text[:40]!r}{_at(tok)}" if tok is not None else "nothing"
            raise QueryError(f"privacy_unit_column must name a column (e.g. privacy_unit_column "
                             f"= pid), not {got}")
        parts.append(tok.text)
        i += 1
        if i < len(tokens) and tokens[i].token_type == TokenType.DOT and len(parts) < 4:
            i += 1
            continue
        return tuple(parts), i


def _bound(tokens: list, depths: list, i: int, clause, region, removed: set) -> Bound:
    """Check one ``, contribution_bounds_... => (lo, hi)`` at ``tokens[i]``; mark it removed."""
    name, tok = _word(tokens[i]), tokens[i]
    if clause is None:
        raise QueryError(f"{name}{_at(tok)} is BigQuery's differential-privacy syntax: write "
                         "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (...) ... for it")
    if not (region[0] <= i < region[1]):
        raise QueryError(f"{name}{_at(tok)} is allowed only on an aggregate of the outer "
                         "SELECT list (as in BigQuery), not in WHERE, HAVING, ORDER BY or a "
                         "subquery")
    opened = next((j for j in range(i - 1, -1, -1) if depths[j] == depths[i] - 1
                   and tokens[j].token_type == TokenType.L_PAREN), None)
    function = _word(tokens[opened - 1]) if opened else ""
    if tokens[i - 1].token_type != TokenType.COMMA or not opened or i - 1 <= opened:
        raise QueryError(f"{name}{_at(tok)} must follow the aggregate's argument, as its last "
                         "argument: AVG(x, contribution_bounds_per_group => (0, 100))")
    kinds = GROUP_FUNCTIONS if name == PER_GROUP else ROW_FUNCTIONS
    if function not in kinds:
        raise QueryError(_wrong_function(name, function, tok))
    if i + 2 >= len(tokens) or tokens[i + 2].token_type != TokenType.L_PAREN:
        raise QueryError(f"{name}{_at(tok)} must be followed by => (lower, upper)")
    lo, j = _number(tokens, i + 3, f"the lower bound of {name}")
    if j >= len(tokens) or tokens[j].token_type != TokenType.COMMA:
        raise QueryError(f"{name}{_at(tok)} takes two numbers: => (lower, upper)")
    hi, j = _number(tokens, j + 1, f"the upper bound of {name}")
    if j >= len(tokens) or tokens[j].token_type != TokenType.R_PAREN:
        raise QueryError(f"{name}{_at(tok)} takes two numbers: => (lower, upper)")
    if j + 1 >= len(tokens) or tokens[j + 1].token_type != TokenType.R_PAREN \
            or depths[j + 1] != depths[opened]:
        raise QueryError(f"{name}{_at(tok)} must be the last argument of {function.upper()}(...)")
    if lo > hi:
        raise QueryError(f"{name} => ({_number_text(lo)}, {_number_text(hi)}){_at(tok)}: the "
                         "lower bound is above the upper bound")
    removed.update(range(i - 1, j + 1))
    fn = tokens[opened - 1]
    return Bound("group" if name == PER_GROUP else "row", lo, hi, function, fn.start, _at(fn))


def _wrong_function(name: str, function: str, tok) -> str:
    shown = function.upper() or "this call"
    if name == PER_ROW and function in GROUP_FUNCTIONS:
        return (f"{name}{_at(tok)}: BigQuery's {shown} takes contribution_bounds_per_group "
                f"(per person and group); to clamp each row instead write {shown}(LEAST("
                "GREATEST(x, lower), upper))")
    if name == PER_GROUP and function in ROW_FUNCTIONS:
        return (f"{name}{_at(tok)}: {shown} clamps rows: write contribution_bounds_per_row "
                "=> (lower, upper)")
    return (f"{name}{_at(tok)} is not accepted on {shown}: contribution_bounds_per_group goes "
            "on COUNT, SUM and AVG; contribution_bounds_per_row on VAR_POP, STDDEV_POP, "
            "PERCENTILE_CONT, VARIANCE, STDDEV, MEDIAN and PERCENTILE_DISC")


# ----------------------------------------------------------------- the tree

def _nodes(item: exp.Expression):
    """The nodes of a SELECT item, not entering subqueries."""
    stack = [item]
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, (exp.Select, exp.Subquery)):
            stack.extend(node.iter_expressions())


def attach(tree: exp.Expression, clause: Clause | None) -> exp.Expression:
    """Hang ``clause`` on ``tree`` and each bound on its aggregate node (one to one)."""
    if clause is None:
        return tree
    if isinstance(tree, exp.SetOperation):
        raise QueryError(f"WITH DIFFERENTIAL_PRIVACY{clause.where} is allowed on one SELECT, "
                         "not on a UNION ALL of queries: ask each part as its own query")
    if not isinstance(tree, exp.Select):
        return tree            # not a query: refused as such by the caller
    for bound in clause.bounds:
        found = [n for item in tree.expressions for n in _nodes(item)
                 if n.meta.get("start") == bound.start and not isinstance(n, exp.Identifier)]
        kind = (GROUP_FUNCTIONS if bound.kind == "group" else ROW_FUNCTIONS)[bound.function]
        if len(found) != 1 or not isinstance(found[0], kind) or BOUND in found[0].meta:
            raise QueryError(f"{bound.name}{bound.where}: dpsql cannot match it to one "
                             f"{bound.function.upper()} of the outer SELECT list; write it as "
                             f"the last argument of {bound.function.upper()}(x, ...)")
        node = found[0]
        _check_bounded(node, bound)
        node.meta[BOUND] = bound
    tree.meta[CLAUSE] = clause
    return tree


def _check_bounded(node: exp.Expression, bound: Bound) -> None:
    name, where = bound.function.upper(), bound.where
    if isinstance(node.parent, exp.Filter):
        raise QueryError(f"{bound.name}{where}: {name}(...) FILTER (WHERE ...) cannot take "
                         "contribution bounds (BigQuery has no FILTER); put the condition in "
                         f"WHERE, or inside {name} as CASE WHEN condition THEN x END")
    if isinstance(node.parent, exp.WithinGroup):
        raise QueryError(f"{bound.name}{where}: write {name}(x, p, {bound.name} => (lo, hi)) "
                         "as BigQuery does, not WITHIN GROUP (ORDER BY x)")
    if isinstance(node.this, exp.Distinct):
        raise QueryError(f"{bound.name}{where}: {name}(DISTINCT ...) cannot take contribution "
                         "bounds (BigQuery has none)")
    if node.this is None:
        raise QueryError(f"{bound.name}{where}: {name} needs an argument before the bounds")


def clause_of(tree: exp.Expression) -> Clause | None:
    return tree.meta.get(CLAUSE) if tree is not None and tree._meta else None


def bound_of(node: exp.Expression) -> Bound | None:
    return node.meta.get(BOUND) if node._meta else None


# ----------------------------------------------------------------- privacy

def query_privacy(tree: exp.Expression, privacy: Privacy) -> Privacy:
    """This query's privacy: ``privacy`` with the clause's epsilon and delta, if any."""
    clause = clause_of(tree)
    return privacy if clause is None else _with_options(clause, privacy)


def _with_options(clause: Clause, privacy: Privacy) -> Privacy:
    given = {k: clause.options[k] for k in ("epsilon", "delta") if k in clause.options}
    if not given:
        return privacy
    if privacy.rho is not None:
        raise QueryError(f"WITH DIFFERENTIAL_PRIVACY OPTIONS ({', '.join(given)} = ...): this "
                         "session sizes queries in rho (zCDP), so an epsilon or delta cannot "
                         "set a query's privacy; leave them out of OPTIONS (the query then "
                         "costs the session's rho), or ask in an epsilon session")
    try:
        return Privacy(epsilon=given.get("epsilon", privacy.epsilon),
                       delta=given.get("delta", privacy.delta), mechanisms=privacy.mechanisms,
                       split=privacy.split)
    except ProgrammingError as err:
        raise QueryError(f"WITH DIFFERENTIAL_PRIVACY OPTIONS: {err}") from None


def sql_privacy(sql: str, privacy: Privacy) -> Privacy:
    """The privacy ``sql`` would be answered at: ``privacy`` with its OPTIONS applied.

    For callers that must check the privacy before the query is planned (the server's
    per-query cap): the same tokenizer and checks as parsing, so they cannot disagree.
    A query that does not tokenize is left to the parser to refuse."""
    if not isinstance(sql, str) or len(sql) > 100_000:
        return privacy
    try:
        tokens = sqlglot.Dialect.get_or_raise(ANALYST_DIALECT).tokenize(sql)
    except (MemoryError, QueryError):
        raise
    except Exception:  # noqa: BLE001 - the parser refuses it with its own message
        return privacy
    _, clause = extract(tokens)
    return privacy if clause is None else _with_options(clause, privacy)


# ----------------------------------------------------------------- canonical text

def render(tree: exp.Expression, dialect: str = ANALYST_DIALECT, own: bool = False) -> str:
    """The query's text as dpsql read it, with BigQuery's clause and bounds in a fixed
    form (release keys and the ledger compare it), or plain ``tree.sql`` without them.
    ``own``: ``tree`` is the caller's copy, which sqlglot's generator may then use
    without copying it again."""
    clause = clause_of(tree)
    if clause is None:
        return tree.sql(dialect, copy=not own)
    copy = tree.copy()
    for node in list(copy.walk()):
        bound = bound_of(node)
        if bound is not None:
            args = [a.copy() for a in (node.this, node.args.get("expression")) if a is not None]
            node.replace(exp.Anonymous(this=bound.function.upper(), expressions=args + [
                exp.Kwarg(this=exp.var(bound.name), expression=exp.Tuple(
                    expressions=[_literal(bound.lo), _literal(bound.hi)]))]))
    with_ = copy.args.get("with_")
    copy.set("with_", None)
    copy.comments = None
    body = copy.sql(dialect, copy=False)
    if not body.startswith("SELECT"):
        raise QueryError("dpsql could not render the query with its DIFFERENTIAL_PRIVACY "
                         "clause; please report it")
    text = f"SELECT {clause.options_text()}{body[len('SELECT'):]}"
    return f"{with_.sql(dialect)} {text}" if with_ is not None else text


def _literal(value) -> exp.Expression:
    number = exp.Literal.number(_number_text(abs(value)))
    return exp.Neg(this=number) if value < 0 else number
