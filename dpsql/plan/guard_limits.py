"""How many guards and conditions one statement may make an engine prepare, all its parts
together.

Owns: ``MAX_GUARDS`` and ``check_guards`` (every engine), ``MAX_PLANNED_CONDITIONS`` and
``check_conditions``, ``MAX_RELEASES`` and ``check_releases``, ``MAX_RELEASED_ROWS`` and
``check_released_rows``, and the count of one statement's
guards over its parts (a UNION ALL's parts, a query's grouping sets: each part is compiled on
its own, and each is prepared by the engine, so a limit per part let a UNION of four parts or
a CUBE of three prepare four or eight times as much: review 39, F1). A part is counted once
however often it is lowered (``lowering``), and outside a statement's scope
(``dpsql.frontend.binding.statement_work``) each tree is its own statement.
"""
from __future__ import annotations

import contextlib
import contextvars

from sqlglot import exp

from ..errors import QueryError
from ..frontend.binding import statement_count
from ..frontend.reads import expanded_conditions

MAX_GUARDS = 256
"""Most guarded operations (the typecheck's ``exp.Try``, and NULLIFs other than a divisor's,
which the divided operation's guard counts) one statement may have: each is a CASE or a lambda
the engine binds (review 26: 1,100 OR-ed NULLIFs planned for 25-43 s on Spark; DuckDB:
1,000 OR-ed guarded products took 1.7-2.0 s to prepare against 0.25 s as TRY, on a loaded
machine, and a query is prepared for its dry run and its run, up to 28 s in all; review 25's
48 kB statement of 2,046 guards took 17 s, which a statement timeout ends only between
steps)."""

_PART: contextvars.ContextVar = contextvars.ContextVar("dpsql_lowered_part", default=None)


@contextlib.contextmanager
def lowering(part: object):
    """The scope in which ``part`` (one part of a statement's plan) is lowered: its trees
    count once towards the statement's limits, as the largest of them."""
    token = _PART.set(part)
    try:
        yield
    finally:
        _PART.reset(token)


def statement_total(kind: str, count: int) -> int:
    """The statement's total of ``kind`` with ``count`` in the part being lowered."""
    part = _PART.get()
    return statement_count(kind, object() if part is None else part, count)


def check_guards(tree: exp.Expression, limit: int = MAX_GUARDS) -> None:
    """Refuse ``tree`` (for free, before anything runs) if the statement it is part of has
    more than ``limit`` guards with it."""
    guards = sum(1 for node in tree.find_all(exp.Try, exp.Nullif)
                 if not isinstance(node.parent, (exp.Div, exp.IntDiv, exp.Mod)))
    total = statement_total("guards", guards)
    if total > limit:
        raise QueryError(f"the query has {total:,} operations that need a guard (arithmetic "
                         "that could overflow, divisions, rounding, date parts, substrings), "
                         f"more than dpsql's limit of {limit:,} a query on this engine (all "
                         "its UNION ALL parts and grouping sets together), which bounds the "
                         "time the engine takes to prepare it; compute fewer of them")


MAX_PLANNED_CONDITIONS = 1024
"""Most ANDs, ORs and CASE WHENs one statement's plan may hold: each CTE's once per place that
reads it, each UNION ALL part and grouping set on its own (the text may hold 512:
``dpsql.frontend.parse.MAX_CONNECTIVES``). Engines plan conditions in more than linear time:
a CTE of 339 read by 4, 8 and 16 arms of a UNION ALL took DuckDB 2.2, 7.9 and over 20 s to
plan, PostgreSQL 2.1 and 5.9 s, Spark 5.0 s at 4 (review 40, F1; a CUBE, F3, likewise)."""


def check_conditions(part: exp.Expression) -> None:
    """Refuse ``part`` of a statement (for free, before it is planned) if the statement's
    conditions, with it, are more than MAX_PLANNED_CONDITIONS."""
    total = statement_count("conditions", part, expanded_conditions(part))
    if total > MAX_PLANNED_CONDITIONS:
        raise QueryError(f"the query has {total:,} conditions joined by AND, OR and CASE WHEN "
                         "(or operands of GREATEST, LEAST and COALESCE) once each CTE is "
                         "counted where it is read and each UNION ALL part "
                         f"and grouping set on its own, more than dpsql's limit of "
                         f"{MAX_PLANNED_CONDITIONS:,} a query, which bounds the time engines "
                         "take to plan them; read such CTEs fewer times, write alternatives "
                         "as x IN (...), or split the query")


MAX_RELEASES = 32
"""Most release queries one statement compiles: its UNION ALL parts times their grouping sets
(each is planned, compiled, dry-run and run on its own; the statistics limit counts units, not
queries). Review 40, F4: 256 queries of one COUNT each (16 parts of a CUBE of 4) took DuckDB
11.8 s and PostgreSQL 10.7 s to explain, for free; 16, 32 and 64 took Spark 2.1 s, 4.3 s and
past a 20 s timeout (Spark's own limit: 16, ``SparkEngine.max_releases``)."""


def check_releases(count: int, limit: int = MAX_RELEASES) -> None:
    """Refuse a statement (for free, before any part is planned) of more than ``limit``
    release queries."""
    if count > limit:
        raise QueryError(f"the query is {count:,} separate releases (its UNION ALL parts times "
                         "their grouping sets: each is planned and run on its own), more than "
                         f"dpsql's limit of {limit:,} a query on this engine, which bounds the "
                         "time it takes to plan them; ask for fewer grouping sets or parts, or "
                         "split the query")


MAX_RELEASED_ROWS = 20_000
"""Most rows of public key combinations one statement may release, all its UNION ALL parts
and grouping sets together (one query's grid may hold 10,000: ``dpsql.plan.lift.MAX_GRID``).
Review 40, F5: 16 parts of 4 grouping sets released 355,520 noisy counts in 14-18 s, and the
noise and the answer for that many rows took the last 1-2.6 s, past a timeout or a cancel."""


def check_released_rows(part: object, rows: int) -> None:
    """Refuse a statement (for free, while it is planned) whose parts' public key grids,
    with ``rows`` for ``part``, hold more than MAX_RELEASED_ROWS rows."""
    total = statement_count("released rows", part, rows)
    if total > MAX_RELEASED_ROWS:
        raise QueryError(f"the query releases {total:,} rows of public key combinations (all "
                         "its UNION ALL parts and grouping sets together), more than dpsql's "
                         f"limit of {MAX_RELEASED_ROWS:,} a query, which bounds the time an "
                         "answer takes to release; group by fewer keys or parts, or filter "
                         "the key values in WHERE")
