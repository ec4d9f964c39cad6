"""A zero divisor of /, // or % is NULL (docs/sql.md), on DuckDB whatever its version: DuckDB
2's / gives +-infinity and NaN, and the PostgreSQL engine gave NULL, so the same query
answered differently by engine (thirteenth review of issue 33). The PostgreSQL and Spark
engines run the same lines of tests/sql/accept_pums.sql and must agree with DuckDB."""
import pandas as pd
import pytest

import dpsql
from tests.paths import DATA

WHERE = ["(age / 0) IS NULL", "(income / (age - age)) IS NULL", "(age // 0.0) IS NULL",
         "(CAST(age AS DOUBLE) % 0.0) IS NULL", "(age % 0) IS NULL", "(5 / 0) IS NULL",
         "(0 / 0) IS NULL", "(-0.0 / 0) IS NULL", "NOT isinf(COALESCE(age / 0, 0))"]


@pytest.fixture(scope="module")
def reader():
    frame = pd.read_csv(DATA / "PUMS.csv")
    with pytest.warns(UserWarning):
        return dpsql.from_df(frame, str(DATA / "PUMS.yaml"), privacy=dpsql.Privacy(epsilon=1e4))


@pytest.mark.parametrize("where", WHERE)
def test_a_zero_divisor_is_null(reader, where):
    n = reader.execute_df(f"SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE {where}").iloc[0, 0]
    assert n == 1000


def test_a_nonzero_divisor_divides(reader):
    n = reader.execute_df("SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE age / 2.0 = age * 0.5 "
                          "AND age % 7 = age - 7 * (age // 7)").iloc[0, 0]
    assert n == 1000
