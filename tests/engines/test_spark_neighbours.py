"""On Spark, neighbouring data sets: truncation, group truncation, a private join, the
threshold and a quantile cost no more privacy than charged.

Two sets of DataFrames hold the same tables, one without person X (and all of X's rows).
X sits far beyond every bound, so a bound the Spark plan failed to enforce would show in
the outcome buckets; ``tests/neighbours/harness.py`` compares their frequencies with
Clopper-Pearson bounds (family-wise false alarm < 1e-6).
"""
from __future__ import annotations

import pytest

import dpsql
from tests.engines.neighbour_checks import (  # noqa: F401 - collected here, on this engine
    DELTA,
    EPSILON,
    META,
    tables,
    test_enough_runs_to_fail,
    test_truncation_to_max_ids,
    test_group_truncation_to_max_groups_and_rows,
    test_private_join_on_the_person,
    test_a_key_of_one_person_is_thresholded,
    test_quantile_of_one_persons_extreme,
    test_work_confined_to_one_persons_row_is_refused_for_free,
    test_a_heavy_query_reads_at_most_max_ids_rows_of_a_person)

RUNS = 60          # >= runs_needed(EPSILON, DELTA, 4) = 53: enough to fail; Spark runs are slow
pytestmark = pytest.mark.filterwarnings("ignore:dpsql. no budget set")


@pytest.fixture(scope="module")
def runs():
    return RUNS


SCHEMAS = {"s.t": "pid bigint, g string, k string, x bigint", "s.p": "pid bigint, sex string",
           "s.v": "pid bigint, cost bigint", "s.gt": "pid bigint, g string",
           "s.w": "pid bigint, x bigint", "s.r": "pid bigint, x bigint, y double, s string"}


@pytest.fixture(scope="module")
def readers(spark):
    out = {}
    for name, with_x in (("with X", True), ("without", False)):
        frames = {table: spark.createDataFrame(list(frame.itertuples(index=False, name=None)),
                                               SCHEMAS[table]).cache()
                  for table, frame in tables(with_x).items()}
        out[name] = dpsql.from_connection(spark, META, tables=frames, privacy=dpsql.Privacy(
            epsilon=EPSILON, delta=DELTA))
    return out
