"""The property tests of tests/properties/ on an engine other than DuckDB.

An engine's test module defines a fixture ``on_engine`` that makes
``tests.properties.test_properties.bind`` open its sessions on that engine, and takes the
two tests from ``property_tests(settings)``. Properties: only dpsql errors escape, refusals
are free and do not depend on the data, and neighbouring data sets fail alike
(tests/properties/test_properties.py says how).
"""
from __future__ import annotations

import os

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tests.properties.test_properties as properties
from tests.properties.strategies import neighbour, scenarios


def engine_settings(examples: int):
    return settings(max_examples=examples, deadline=None, database=None,
                    derandomize=os.environ.get("DPSQL_HYPOTHESIS_DERANDOMIZE", "1") != "0",
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.filter_too_much,
                                           HealthCheck.function_scoped_fixture])


def property_tests(examples: int) -> tuple:
    """(refusals test, neighbours test), each running ``examples`` examples."""
    @engine_settings(examples)
    @given(st.data())
    def refusals(on_engine, data):
        scn = data.draw(scenarios(), label="scenario")
        properties.check_refusals(scn, data.draw(properties.query_lists(scn), label="queries"))

    @engine_settings(examples)
    @given(st.data())
    def neighbours(on_engine, data):
        scn = data.draw(scenarios(), label="scenario")
        qs = data.draw(properties.query_lists(scn), label="queries")
        kept, removed = neighbour(data.draw, scn)
        properties.check_neighbours(scn, qs, kept, removed)

    return refusals, neighbours
