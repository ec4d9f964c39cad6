"""Run one attack query on neighbouring data sets and test what the analyst sees.

A differentially private query must give about the same distribution of
*outcomes* on two data sets that differ in one person: for every set B of
outcomes, P1(B) <= e^epsilon * P2(B) + delta and the other way round, where
(epsilon, delta) is what the query was charged. An outcome here is everything
the analyst can observe: the released values (bucketed by the caller), a
refusal (``dpsql.QueryError``, which must cost nothing), any other failure, and,
when asked for, the time taken (in coarse buckets).

Two rules are checked:

- A refusal is free, so whether a query is refused (and with which message)
  may depend on the query and the metadata only: if any run on either data set
  is refused, every run on both must be refused with the same message, and
  ``reader.spent`` must not move. This is deterministic, so a few runs suffice.
- Otherwise the counts of each outcome bucket are compared with one-sided
  Clopper-Pearson bounds: the test fails if the lower confidence bound of
  p2(B) exceeds e^epsilon * (upper bound of p1(B)) + delta, or the symmetric
  inequality. Each bound is taken at confidence 1 - FAMILY_ALPHA / (4 * K),
  K the declared number of buckets (Bonferroni over the K buckets, both
  directions, and the two bounds of each comparison), so on a correct
  implementation a comparison raises a false alarm with probability below
  FAMILY_ALPHA whatever the outcome distributions are.
"""
from __future__ import annotations

import contextlib
import math
import time
from collections import Counter
from dataclasses import dataclass, field

from scipy.stats import beta

import dpsql

FAMILY_ALPHA = 1e-6
"""Bound on the probability that one comparison fails on a correct implementation."""

MAX_BUCKETS = 32
"""Default declared size of the outcome space (for the Bonferroni correction)."""

# The person the attacks single out: the richest row of tests/data/PUMS.csv,
# the only one with this (age, income).
PERSON_AGE, PERSON_INCOME = 37, 420500
PERSON = f"age = {PERSON_AGE} AND income = {PERSON_INCOME}"


def cp_upper(c: int, n: int, alpha: float) -> float:
    """One-sided Clopper-Pearson upper bound on p from c successes in n, level 1 - alpha."""
    if c >= n:
        return 1.0
    return float(beta.ppf(1.0 - alpha, c + 1, n - c))


def cp_lower(c: int, n: int, alpha: float) -> float:
    """One-sided Clopper-Pearson lower bound on p from c successes in n, level 1 - alpha."""
    if c <= 0:
        return 0.0
    return float(beta.ppf(alpha, c, n - c + 1))


def runs_needed(epsilon: float, delta: float = 0.0, buckets: int = MAX_BUCKETS) -> int:
    """The fewest runs per data set with which an outcome seen always on one side and
    never on the other is flagged (useful to size a test so it can fail)."""
    alpha = FAMILY_ALPHA / (4 * buckets)
    n = 1
    while cp_lower(n, n, alpha) <= math.exp(epsilon) * cp_upper(0, n, alpha) + delta:
        n += 1
    return n


@dataclass
class Side:
    """What one data set gave: outcome counts and the largest charge of one run."""

    name: str
    counts: Counter = field(default_factory=Counter)
    runs: int = 0
    epsilon: float = 0.0
    delta: float = 0.0

    def add(self, label, cost) -> None:
        self.counts[label] += 1
        self.runs += 1
        self.epsilon = max(self.epsilon, cost[0])
        self.delta = max(self.delta, cost[1])


def time_bucket(seconds: float) -> str:
    """Coarse time buckets: under 50 ms, 50-500 ms, 0.5-5 s, longer."""
    for edge, name in ((0.05, "<50ms"), (0.5, "<500ms"), (5.0, "<5s")):
        if seconds < edge:
            return name
    return ">=5s"


def outcome(reader, sql: str, bucket, timed: bool = False):
    """(label, (epsilon, delta) charged) of one run of ``sql`` on ``reader``."""
    before = reader.spent
    start = time.perf_counter()
    try:
        result = reader.execute_df(sql, replay=False)
    except dpsql.QueryError as err:
        label = ("refused", str(err))
        assert reader.spent == before, (
            f"a refusal must cost nothing, but spent went from {before} to {reader.spent}: {err}")
    except Exception as err:  # noqa: BLE001 - any failure is an outcome the analyst sees
        label = ("failed", type(err).__name__)
    else:
        label = ("answer", bucket(result))
    elapsed = time.perf_counter() - start
    if timed:
        label = label + (time_bucket(elapsed),)
    after = reader.spent
    return label, (after[0] - before[0], after[1] - before[1])


def _describe(a: Side, b: Side) -> str:
    labels = sorted(set(a.counts) | set(b.counts), key=repr)
    rows = [f"  {str(label)[:150]}: {a.name} {a.counts[label]}/{a.runs}, "
            f"{b.name} {b.counts[label]}/{b.runs}" for label in labels]
    return "\n".join(rows)


def assert_indistinguishable(a: Side, b: Side, epsilon: float | None = None,
                             delta: float | None = None, buckets: int = MAX_BUCKETS,
                             what: str = "") -> None:
    """Fail if some bucket is seen more often on one side than (epsilon, delta) allows.

    ``epsilon``/``delta`` default to the largest charge of one run on either side;
    pass 0, 0 to compare the same data set stored two ways (no charge can excuse a
    difference then)."""
    eps = max(a.epsilon, b.epsilon) if epsilon is None else epsilon
    dlt = max(a.delta, b.delta) if delta is None else delta
    labels = set(a.counts) | set(b.counts)
    assert len(labels) <= buckets, (
        f"{what}: {len(labels)} distinct outcomes but only {buckets} declared buckets; "
        f"bucket more coarsely:\n{_describe(a, b)}")
    alpha = FAMILY_ALPHA / (4 * buckets)
    for label in labels:
        for one, two in ((a, b), (b, a)):
            upper = cp_upper(one.counts[label], one.runs, alpha)
            lower = cp_lower(two.counts[label], two.runs, alpha)
            assert lower <= math.exp(eps) * upper + dlt, (
                f"{what}: outcome {str(label)[:200]} is seen {two.counts[label]}/{two.runs} times "
                f"on {two.name} but {one.counts[label]}/{one.runs} on {one.name}; at least "
                f"{lower:.3g} against at most {upper:.3g}, more than e^{eps:g} * {upper:.3g} + "
                f"{dlt:g} allows (family-wise false alarm < {FAMILY_ALPHA:g}).\n"
                f"All outcomes:\n{_describe(a, b)}")


def check_refusals(a: Side, b: Side, what: str = "") -> bool:
    """A refusal may depend on the query alone: refused everywhere alike, or nowhere.

    Returns True if every run was refused (identically)."""
    refusals = [label for side in (a, b) for label in side.counts if label[0] == "refused"]
    if not refusals:
        return False
    labels = {label[:2] for label in set(a.counts) | set(b.counts)}   # without the time
    assert len(labels) == 1, (
        f"{what}: a free refusal must not depend on the data, but the outcomes differ:\n"
        f"{_describe(a, b)}")
    return True


def attack(readers: dict, sql: str, bucket=lambda df: "answered", runs: int = 40,
           timed: bool = False, quick: int = 3, epsilon: float | None = None,
           delta: float | None = None, buckets: int = MAX_BUCKETS) -> tuple:
    """Run ``sql`` ``runs`` times on each of the two readers (interleaved) and check.

    ``readers``: {name: Reader}, exactly two. ``bucket``: result DataFrame -> a
    hashable, coarse label. If after ``quick`` rounds every run was the same
    refusal, the rest is skipped unless ``timed`` (refusals are deterministic).
    Returns the two Sides, for further assertions."""
    (name_a, reader_a), (name_b, reader_b) = readers.items()
    a, b = Side(name_a), Side(name_b)
    what = f"{sql[:160]!r} on {name_a} vs {name_b}"
    if timed:   # a first run pays for imports and caches, on both sides alike
        outcome(reader_a, sql, bucket)
        outcome(reader_b, sql, bucket)
    for i in range(runs):
        order = ((a, reader_a), (b, reader_b)) if i % 2 == 0 else ((b, reader_b), (a, reader_a))
        for side, reader in order:
            side.add(*outcome(reader, sql, bucket, timed))
        check_refusals(a, b, what)
        if not timed and i + 1 >= quick and check_refusals(a, b, what):
            return a, b
    if not check_refusals(a, b, what) or timed:
        assert_indistinguishable(a, b, epsilon, delta, buckets, what)
    return a, b


def round_to(value, step: float):
    """A number as a coarse bucket (NaN and None kept apart)."""
    if value is None:
        return None
    value = float(value)
    if math.isnan(value):
        return "nan"
    return round(value / step) * step


@contextlib.contextmanager
def address_space_limit(extra_bytes: int = 3 * 2 ** 30):
    """Cap this process's address space at its current size plus ``extra_bytes``.

    An attack that makes the engine allocate tens of gigabytes then fails at
    once with an out-of-memory error instead of exhausting the machine. The
    previous limit is restored on exit. A no-op where RLIMIT_AS is unknown."""
    try:
        import resource
        with open("/proc/self/status") as status:
            size = next(int(line.split()[1]) * 1024 for line in status
                        if line.startswith("VmSize:"))
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    except (ImportError, OSError, StopIteration, ValueError, AttributeError):
        yield
        return
    limit = size + extra_bytes
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def neighbour_readers(meta, base, extra, epsilon: float, delta: float = 1e-6) -> dict:
    """Readers on ``base`` with the person's rows ``extra`` added, and on ``base`` alone
    (pandas frames; the keys name the sides in failure messages)."""
    import pandas as pd

    privacy = dpsql.Privacy(epsilon=epsilon, delta=delta)
    return {name: dpsql.from_df(frame, meta, privacy=privacy)
            for name, frame in (("with the person", pd.concat([base, extra], ignore_index=True)),
                                ("without", base))}
