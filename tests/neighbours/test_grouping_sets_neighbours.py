"""GROUP BY ROLLUP / CUBE / GROUPING SETS on neighbouring data sets: one person is in a group
of every grouping set, so the release's privacy loss is the sum over the sets, which the
split keeps at the query's epsilon (``dpsql.plan.grouping_sets``; the harness's
Clopper-Pearson bounds at p < 1e-6, fresh releases).

The test can fail: the bucket (both counts above the neighbour's values) has probability
about 0.78 with the person and 0.014 without at the right split (a ratio of e^4, the
query's epsilon); had each set been given the whole epsilon, the ratio would be about
e^8, which 1,200 runs a side flag."""
from __future__ import annotations

import pandas as pd
import pytest

from tests.neighbours.harness import attack, neighbour_readers

EPSILON = 4.0
pytestmark = [pytest.mark.filterwarnings("ignore:dpsql. no budget set"), pytest.mark.slow]
META = {"": {"s": {"t": {"row_privacy": True,
                         "g": {"type": "string", "values": ["a", "b"]}}}}}


def test_a_person_in_every_grouping_set_costs_the_query_epsilon_in_all():
    base = pd.DataFrame({"g": ["a"] * 5 + ["b"] * 5})
    readers = neighbour_readers(META, base, pd.DataFrame({"g": ["a"]}), EPSILON)
    sql = "SELECT g, COUNT(*) AS n FROM s.t GROUP BY ROLLUP(g)"

    def bucket(frame):
        counts = {None if pd.isna(g) else g: n for g, n in zip(frame.g, frame.n)}
        return counts["a"] >= 6, counts[None] >= 11

    # bounded by the query's epsilon, whatever was charged
    a, b = attack(readers, sql, bucket, runs=1200, buckets=4, epsilon=EPSILON, delta=0.0)
    assert a.epsilon == pytest.approx(EPSILON) and b.epsilon == pytest.approx(EPSILON)
