"""Property-based tests: random metadata, random data in every storage type, and queries
from the whole grammar dpsql accepts (plus constructs it must refuse).

Three properties, over every generated query (``tests/strategies.py`` draws them):

(a) nothing but a ``dpsql.Error`` ever escapes ``reader.execute_df``, ``reader.explain``,
    ``reader.get_privacy_cost`` (nor ``from_df``/``from_connection`` binding the data);
(b) a refusal happens before any data is read: it spends nothing, and the same query is
    refused identically on an EMPTY table with the same metadata and storage; planning
    (``explain``, ``get_privacy_cost``) gives the same text and cost on both;
(c) neighbouring data sets (the data without one random row, or without one random
    person's rows when the table has a private_id) never differ in whether a query
    fails: both succeed, or both raise the same exception class with the same message.
    (Failing or not on the real and the empty table must agree too: the empty table is
    reached from the real one by removing rows one person at a time.)

500 examples by default (250 per test), derandomized so that CI is stable; the file
runs in about two minutes on a 2-core machine. More examples, e.g. 10^5:

    DPSQL_HYPOTHESIS_EXAMPLES=100000 python -m pytest tests/test_properties.py

Set ``DPSQL_HYPOTHESIS_DERANDOMIZE=0`` to draw fresh examples on every run, and
``DPSQL_HYPOTHESIS_EXCLUDE=objmix,parquet`` (storage types or bindings, see
tests/strategies.py) to hunt past a known finding.
"""
from __future__ import annotations

import os
import tempfile
import warnings

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import dpsql
from strategies import Scenario, bind, neighbour, queries, scenarios

EXAMPLES = int(os.environ.get("DPSQL_HYPOTHESIS_EXAMPLES", "500"))
SETTINGS = settings(
    max_examples=max(1, EXAMPLES // 2),         # two tests share the budget
    deadline=None,
    derandomize=os.environ.get("DPSQL_HYPOTHESIS_DERANDOMIZE", "1") != "0",
    database=None,                              # write nothing into the repository
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                           HealthCheck.filter_too_much],
)
QUERIES_PER_EXAMPLE = 3


def outcome(call) -> tuple:
    """('ok',) or (exception class name, message) for a dpsql error; anything else
    escapes, failing property (a)."""
    try:
        call()
    except dpsql.Error as err:
        return type(err).__name__, str(err)
    return ("ok",)


def failed(result: tuple) -> bool:
    return result[0] != "ok"


def refusal(result: tuple) -> bool:
    """A refusal: any dpsql error but a failure while running (OperationalError), which
    dpsql charges because it happened after the data was read."""
    return failed(result) and result[0] not in ("OperationalError", "BudgetExceededError")


def bind_outcome(scn: Scenario, keep, tmpdir: str, tag: str) -> tuple:
    """(reader or None, outcome of binding); the path of a temporary file is hidden
    from messages, so that the same failure on two files compares equal."""
    box = {}
    result = outcome(lambda: box.setdefault("reader", bind(scn, keep, os.path.join(tmpdir, tag), tag)))
    if failed(result):
        result = (result[0], result[1].replace(os.path.join(tmpdir, tag), "<dir>").replace(tag, "<tag>"))
    return box.get("reader"), result


def report(scn: Scenario, query, frame=None, **outcomes) -> str:
    lines = ["", scn.describe(frame), f"query = {query!r}"]
    lines += [f"{name} -> {value!r}" for name, value in outcomes.items()]
    return "\n".join(lines)


def check_refusals(scn: Scenario, qs: list) -> None:
    """(a) and (b) for the queries ``qs``: on the real table and on an empty one with the
    same metadata and storage."""
    with tempfile.TemporaryDirectory() as tmp, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for tag in ("real", "empty"):
            os.mkdir(os.path.join(tmp, tag))
        real, bound_real = bind_outcome(scn, None, tmp, "real")
        empty, bound_empty = bind_outcome(scn, [], tmp, "empty")
        assert bound_real == bound_empty, "binding depends on the data" + report(
            scn, None, real=bound_real, empty=bound_empty)
        if real is None:
            event("binding refused")
            return
        for q in qs:
            before = real.spent
            for method in ("get_privacy_cost", "explain"):
                on_real = outcome(lambda: getattr(real, method)(q.sql, q.params))
                on_empty = outcome(lambda: getattr(empty, method)(q.sql, q.params))
                assert on_real == on_empty, f"{method} depends on the data" + report(
                    scn, q, real=on_real, empty=on_empty)
                assert real.spent == before, f"{method} spent budget" + report(scn, q)
            on_real = outcome(lambda: real.execute_df(q.sql, q.params))
            event(f"execute_df: {on_real[0]}")
            if refusal(on_real):
                assert real.spent == before, "a refusal spent budget" + report(
                    scn, q, real=on_real, spent=(before, real.spent))
            on_empty = outcome(lambda: empty.execute_df(q.sql, q.params))
            if failed(on_real) or failed(on_empty):
                assert on_real == on_empty, "failing depends on the data" + report(
                    scn, q, real=on_real, empty=on_empty)


def check_neighbours(scn: Scenario, qs: list, kept: list, removed: str) -> None:
    """(a) and (c) for the queries ``qs``: on the data and on its rows ``kept``."""
    with tempfile.TemporaryDirectory() as tmp, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for tag in ("full", "nbr"):
            os.mkdir(os.path.join(tmp, tag))
        full, bound_full = bind_outcome(scn, None, tmp, "full")
        nbr, bound_nbr = bind_outcome(scn, kept, tmp, "nbr")
        assert bound_full == bound_nbr, f"binding fails on one neighbour (removed {removed})" + \
            report(scn, None, full=bound_full, neighbour=bound_nbr)
        if full is None:
            event("binding refused")
            return
        for q in qs:
            on_full = outcome(lambda: full.execute_df(q.sql, q.params))
            on_nbr = outcome(lambda: nbr.execute_df(q.sql, q.params))
            event(f"execute_df: {on_full[0]}")
            if failed(on_full) or failed(on_nbr):
                assert on_full == on_nbr, f"neighbours differ in failing (removed {removed})" + \
                    report(scn, q, full=on_full, neighbour=on_nbr)


@SETTINGS
@given(st.data())
def test_refusals_are_free_and_do_not_depend_on_data(data):
    """(a) and (b): on the real table and on an empty one with the same metadata."""
    scn = data.draw(scenarios(), label="scenario")
    check_refusals(scn, data.draw(st.lists(queries(scn), min_size=1, max_size=QUERIES_PER_EXAMPLE),
                                  label="queries"))


@SETTINGS
@given(st.data())
def test_neighbours_fail_alike(data):
    """(a) and (c): the data, and the data without one row (or one person)."""
    scn = data.draw(scenarios(), label="scenario")
    qs = data.draw(st.lists(queries(scn), min_size=1, max_size=QUERIES_PER_EXAMPLE), label="queries")
    kept, removed = neighbour(data.draw, scn)
    check_neighbours(scn, qs, kept, removed)
