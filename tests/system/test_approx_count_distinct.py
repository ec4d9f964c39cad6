"""APPROX_COUNT_DISTINCT(x) (BigQuery's DP SQL has it; DuckDB too) is COUNT(DISTINCT x): the
same plan, cost and sensitivity (issue 37)."""
import pytest

from tests.engines.compare import duckdb_reader

pytestmark = pytest.mark.filterwarnings("ignore:dpsql. no budget set")


@pytest.mark.parametrize("inner", ["educ", "pid", "age // 10"])
def test_the_same_release_as_count_distinct(inner):
    reader = duckdb_reader("pums")
    approx = reader._plan(f"SELECT sex, APPROX_COUNT_DISTINCT({inner}) AS d FROM PUMS.PUMS "
                          "GROUP BY sex")
    exact = reader._plan(f"SELECT sex, COUNT(DISTINCT {inner}) AS d FROM PUMS.PUMS GROUP BY sex")
    assert reader._sql(approx) == reader._sql(exact)
    assert approx.cost == exact.cost
    assert [s.l1 for s in approx.statistics] == [s.l1 for s in exact.statistics]
