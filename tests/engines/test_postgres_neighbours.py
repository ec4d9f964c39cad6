"""On PostgreSQL, neighbouring data sets: truncation, group truncation, a private join, the
threshold and a quantile cost no more privacy than charged.

Two databases on the test server hold the same tables, one without person X (and all of
X's rows). X sits far beyond every bound, so a bound the PostgreSQL plan failed to
enforce would show in the outcome buckets; ``tests/neighbours/harness.py`` compares their
frequencies with Clopper-Pearson bounds (family-wise false alarm < 1e-6).
"""
from __future__ import annotations

import pytest

import dpsql
from tests.engines.neighbour_checks import (  # noqa: F401 - collected here, on this engine
    DELTA,
    EPSILON,
    META,
    X,
    tables,
    test_enough_runs_to_fail,
    test_truncation_to_max_ids,
    test_group_truncation_to_max_groups_and_rows,
    test_private_join_on_the_person,
    test_a_key_of_one_person_is_thresholded,
    test_quantile_of_one_persons_extreme,
    test_work_confined_to_one_persons_row_is_refused_for_free,
    test_work_at_the_bound_takes_the_same_time,
    test_work_on_a_persons_stored_rows_is_cut_first,
    test_a_heavy_query_reads_at_most_max_ids_rows_of_a_person)
from tests.servers import create_database, load_frame

RUNS = 120
pytestmark = pytest.mark.filterwarnings("ignore:dpsql. no budget set")


@pytest.fixture(scope="module")
def runs():
    return RUNS


@pytest.fixture(scope="module")
def readers(postgres):
    out, cons = {}, []
    for name, with_x in (("with X", True), ("without", False)):
        con = create_database(postgres, "nb_with" if with_x else "nb_without")
        for table, frame in tables(with_x).items():
            load_frame(con, META, table, frame)
        cons.append(con)
        out[name] = dpsql.from_connection(con, META, privacy=dpsql.Privacy(
            epsilon=EPSILON, delta=DELTA))
    yield out
    for con in cons:
        con.close()


def test_a_guarded_statement_is_cut_first_and_a_plain_one_filters_first(readers):
    """PostgreSQL's guards cost more than the cost model prices (exact NUMERIC for float
    arithmetic, casts of text), so any statement with one reads each person's rows cut to
    max_ids first; one without keeps "filter, then cut", as on DuckDB (cutting every
    statement first made the user-level benchmark 4.4x its floor instead of 1.2x). The
    timed neighbours above run the guarded forms on X's 500 stored rows."""
    from tests.engines.neighbour_checks import GUARDED_FLOATS, GUARDED_OVERFLOW
    reader = readers["with X"]
    for sql in (GUARDED_FLOATS, GUARDED_OVERFLOW, "SELECT COUNT(*) AS n FROM s.r WHERE y + 1 > 3",
                "SELECT COUNT(*) AS n FROM s.r WHERE CAST(s AS BIGINT) IS NULL",
                "SELECT COUNT(*) AS n FROM s.r WHERE SQRT(y) > 3"):
        assert "cut to max_ids" in reader.explain(sql), sql
    plain = "SELECT COUNT(*) AS n FROM s.r WHERE s = 'c'"
    assert "cut to max_ids" not in reader.explain(plain)
    # filter, then cut: X's 3 rows of 'c' among 500 are all counted (cut first, 3 random
    # rows of 500 would rarely be those 3)
    large = dpsql.Privacy(epsilon=1e5, delta=DELTA)
    counts = [r.execute_df(plain, privacy=large).n[0] for r in readers.values()]
    assert abs(counts[0] - counts[1] - 3) < 1, counts


WIDE_META = {"": {"w": {"r": {
    "max_ids": 3, "pid": {"type": "int", "private_id": True},
    "x": {"type": "int", "lower": 0, "upper": 100},
    **{c: {"type": "string", "max_length": 256} for c in ("a", "b", "c", "d")}}}}}


@pytest.fixture(scope="module")
def wide(postgres):
    """Two databases: 1,000 persons of one narrow row each; the second also holds X with
    20,000 stored rows whose four text columns are 256 characters of random code points
    each (incompressible: PostgreSQL TOASTs them)."""
    import random
    import pandas as pd
    rng = random.Random(28)
    base = pd.DataFrame({"pid": range(1, 1001), "x": [i % 51 for i in range(1000)],
                         **{c: ["v"] * 1000 for c in "abcd"}})
    text = "".join(chr(rng.randrange(0x1000, 0x9000)) for _ in range(256))
    heavy = pd.DataFrame({"pid": [X] * 20_000, "x": [100] * 20_000,
                          **{c: [text] * 20_000 for c in "abcd"}})
    yield from _neighbours(postgres, WIDE_META, "w.r", "wide_", base, heavy)


def _neighbours(postgres, meta, table, prefix, base, heavy):
    """Readers of two databases, ``base`` ("without") and ``base`` with ``heavy``."""
    import pandas as pd
    out, cons = {}, []
    for name, frame in (("without", base), ("with X", pd.concat([base, heavy]))):
        con = create_database(postgres, prefix + name.replace(" ", "_"))
        load_frame(con, meta, table, frame)
        con.commit()
        cons.append(con)
        out[name] = dpsql.from_connection(con, meta, privacy=dpsql.Privacy(epsilon=1.0))
    yield out
    for con in cons:
        con.close()


def test_a_cut_first_statement_reads_only_the_columns_it_uses(wide):
    """Review 28, F1 (High): a guarded statement, cut first, stored every column of each
    stored row (its typed relation was read twice, so PostgreSQL materialised it, every
    column computed): with X's 20,000 rows of 256-character text, `AVG(x) WHERE x + 1 > 3`,
    which reads no text, took +0.23-0.26 s over the wire. Now the cut carries the columns the
    statement reads, and the typed relation is inlined: measured +0.02 s. Checked on the
    engine's SQL, and timed: the fastest of 7 runs with X within 0.12 s of the fastest
    without (+0.21 s before)."""
    import time
    sql = "SELECT AVG(x) AS m FROM w.r WHERE x + 1 > 3"
    text = wide["with X"].explain(sql)
    assert "cut to max_ids" in text
    cut = text[text.index("_dpsql_cut0"):]
    assert '"a"' not in cut and '"d"' not in cut, text
    best = {}
    for _ in range(7):
        for name, reader in wide.items():
            started = time.perf_counter()
            reader.execute_df(sql, replay=False)
            best[name] = min(best.get(name, 9.0), time.perf_counter() - started)
    assert best["with X"] - best["without"] < 0.12, best


LONG_META = {"": {"w": {"l": {
    "max_ids": 3, "pid": {"type": "int", "private_id": True},
    "x": {"type": "int", "lower": 0, "upper": 100}, "a": {"type": "string"}}}}}


@pytest.fixture(scope="module")
def long_cell(postgres):
    """Two databases: 1,000 persons of one short row each; the second also holds X, whose
    one row's text is 48 MB (far over max_length 256: it reads as NULL)."""
    import os
    import pandas as pd
    base = pd.DataFrame({"pid": range(1, 1001), "x": [i % 51 for i in range(1000)],
                         "a": ["v"] * 1000})
    heavy = pd.DataFrame({"pid": [X], "x": [100], "a": [os.urandom(24 << 20).hex()]})
    yield from _neighbours(postgres, LONG_META, "w.l", "long_", base, heavy)


def test_an_over_long_cell_is_never_read(long_cell):
    """Review 44, F2 (High): a cell over max_length reads as NULL, but LENGTH read all of it
    (PostgreSQL de-TOASTed 200 MB in 0.32 s) on the rows a cheap predicate let through, so
    the time of `WHERE x = 100 AND a = 'v'` said whether X's x is 100 (age and income were
    read in 7 and 20 timed statements). The typed relation now tests the cell's bytes
    (octet_length reads the TOAST header) before its characters. Fastest of 7: the
    statement that reaches X's row is within 0.04 s of one that does not, with X and
    without (a 48 MB cell read took about 0.08 s more)."""
    import time
    best = {}
    for _ in range(7):
        for name, reader in long_cell.items():
            for x in (99, 100):
                sql = f"SELECT COUNT(*) AS n FROM w.l WHERE x = {x} AND a = 'v'"
                started = time.perf_counter()
                reader.execute_df(sql, replay=False)
                key = (name, x)
                best[key] = min(best.get(key, 9.0), time.perf_counter() - started)
    assert best[("with X", 100)] - best[("with X", 99)] < 0.04, best
    assert best[("with X", 100)] - best[("without", 100)] < 0.04, best
