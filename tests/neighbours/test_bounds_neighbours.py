"""The bounds estimate on neighbouring data sets: no more privacy loss than charged.

The person sits where one row matters most: in a power of two far from the rest of the
data, whose count is one row (or, with max_ids = 2, two rows) below the threshold a lone
range needs. Whether the estimate's upper bound reaches that range is the outcome; its
frequencies on the two tables are compared with Clopper-Pearson bounds at a family-wise
false alarm below 1e-6 (``tests/neighbours/harness.py``), so a correct estimate never
fails, and one that skips the noise of empty bins, or noises them for one row when a
person has two, does. The outcomes are the few the thresholds allow; the old estimate
(permute-and-flip over log cells, bounds such as 1e+17) fails on that alone.
"""
from __future__ import annotations

import pandas as pd
import pytest

import dpsql
from dpsql.api.bounds import NoBoundsError
from dpsql.mechanisms.bounds import OctaveBounds
from tests.neighbours.harness import Side, assert_indistinguishable

EPSILON = 1.0
RUNS = 120
FAR = 5000                      # in [4096, 8191], far above the bulk at 50 ([32, 63])
BUCKETS = 4
pytestmark = pytest.mark.filterwarnings("ignore:dpsql. no budget set")


def _bucket(reader) -> tuple:
    before = reader.spent
    try:
        lo, hi = reader.estimate_bounds("s.t", "x", EPSILON)
    except NoBoundsError:
        label = "none"
    else:
        label = ("far" if 4096 <= hi <= 2 ** 14 else "near" if hi in (63, 127) else f"upper {hi}",
                 "bulk" if lo in (16, 32) else f"lower {lo}")
    after = reader.spent
    return label, (after[0] - before[0], after[1] - before[1])


def _attack(frames: dict, meta: dict) -> tuple:
    (name_a, frame_a), (name_b, frame_b) = frames.items()
    readers = [dpsql.from_df(frame_a, meta), dpsql.from_df(frame_b, meta)]
    a, b = Side(name_a), Side(name_b)
    for i in range(RUNS):
        for side, reader in ((a, readers[0]), (b, readers[1]))[::1 if i % 2 == 0 else -1]:
            side.add(*_bucket(reader))
    assert a.epsilon == pytest.approx(EPSILON) and a.delta == 0
    assert_indistinguishable(a, b, buckets=BUCKETS, what="estimate_bounds")
    for side in (a, b):      # both outcomes are common: the person's row is at the threshold
        assert side.counts[("far", "bulk")] >= RUNS // 10 and side.counts[("near", "bulk")] >= RUNS // 10, side.counts
    return a, b


def test_one_row_at_the_threshold_of_a_far_range():
    need = OctaveBounds.calibrate(True, 1, EPSILON).min_count
    base = pd.DataFrame({"x": [50] * 300 + [FAR] * (need - 1)})
    with_person = pd.concat([base, pd.DataFrame({"x": [FAR]})], ignore_index=True)
    meta = {"": {"s": {"t": {"row_privacy": True, "x": {"type": "int"}}}}}
    _attack({"with the person": with_person, "without": base}, meta)


def test_a_person_with_five_rows_counts_for_max_ids():
    # max_ids = 2: the person's five rows are truncated to two, and the noise is scaled for
    # two rows per person; the far range then sits two rows below its threshold.
    need = OctaveBounds.calibrate(True, 2, EPSILON).min_count
    rows = [50] * 300 + [FAR] * (need - 2)
    base = pd.DataFrame({"pid": range(len(rows)), "x": rows})
    person = pd.DataFrame({"pid": [10 ** 6] * 5, "x": [FAR] * 5})
    meta = {"": {"s": {"t": {"max_ids": 2, "pid": {"type": "int", "private_id": True},
                             "x": {"type": "int"}}}}}
    _attack({"with the person": pd.concat([base, person], ignore_index=True), "without": base},
            meta)
