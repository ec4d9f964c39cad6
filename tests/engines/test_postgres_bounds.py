"""The bounds estimate on PostgreSQL (issue 36): the same bins as on DuckDB, and a column
holding infinity or NaN is binned, not a failure (a strict cast of its logarithm failed, and
a failure that one person's value decides would tell). Fails on the code before issue 36."""
from __future__ import annotations

import pytest

import dpsql

pytestmark = pytest.mark.filterwarnings("ignore:dpsql. no budget set")
META = {"": {"b36": {"t": {"row_privacy": True, "x": {"type": "int"}, "y": {"type": "float"}}}}}


def test_bounds_on_postgres_match_the_bins_and_survive_infinity(postgres):
    with postgres.connect(autocommit=True) as con:
        con.execute("CREATE SCHEMA b36; CREATE TABLE b36.t (x bigint, y double precision); "
                    "INSERT INTO b36.t SELECT 40 + g % 50, (g % 50) * 1e-6 + 1e-6 "
                    "FROM generate_series(1, 2000) g; "
                    "INSERT INTO b36.t SELECT NULL, 'Infinity' FROM generate_series(1, 300); "
                    "INSERT INTO b36.t SELECT NULL, 'NaN' FROM generate_series(1, 300)")
    with postgres.connect() as con:
        reader = dpsql.from_connection(con, META)
        lo, hi = reader.estimate_bounds("b36.t", "x", 1.0)           # 40 .. 89
        assert lo in (16, 32) and hi in (127, 255)
        lo, hi = reader.estimate_bounds("b36.t", "y", 1.0)           # 1e-6 .. 5e-5, inf, NaN
        assert 2.0 ** -21 <= lo <= 2.0 ** -19 and hi == 1.7976931348623157e308
        assert reader.spent == (2.0, 0.0)
