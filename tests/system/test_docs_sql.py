"""docs/sql.md's aggregate tables agree with the code: every aggregate the Supported table
names is answered, every one the Refused table names is refused, and every aggregate in the
planner's registry (dpsql.plan.aggregates.REGISTRY) is named in the Supported table."""
import re

import pandas as pd
import pytest
import sqlglot

import dpsql
from dpsql.plan.aggregates import REGISTRY
from tests.paths import DATA, ROOT

TEXT = (ROOT / "docs" / "sql.md").read_text("utf-8")
SUPPORTED = TEXT[TEXT.index("## Supported"):TEXT.index("### Types come from")]
REFUSED = TEXT[TEXT.index("## Refused, and why"):TEXT.index("## Group keys")]
CALL = re.compile(r"`([A-Z_]+)(?:\(|`)")
NAMES = sorted({n for n in CALL.findall(SUPPORTED.split("| `agg(...) FILTER")[0])})
REFUSED_NAMES = sorted(set(CALL.findall(REFUSED.split("aggregates not listed")[1].split("\n")[0])))


def _call(name: str) -> str:
    if name in ("QUANTILE_CONT", "QUANTILE_DISC", "QUANTILE", "APPROX_QUANTILE"):
        return f"{name}(age, 0.5)"
    if name in ("PERCENTILE_CONT", "PERCENTILE_DISC"):
        return f"{name}(0.5) WITHIN GROUP (ORDER BY age)"
    if name == "COUNT":
        return "COUNT(age)"
    if name in ("CORR", "COVAR_POP", "COVAR_SAMP", "REGR_SLOPE", "REGR_INTERCEPT"):
        return f"{name}(income, age)"
    return f"{name}(age)"


@pytest.fixture(scope="module")
def reader():
    return dpsql.from_df(pd.read_csv(DATA / "PUMS.csv"), DATA / "PUMS.yaml",
                         privacy=dpsql.Privacy(epsilon=1.0))


def test_the_tables_name_aggregates():
    assert len(NAMES) >= 15 and {"COUNT", "SUM", "MEDIAN", "MIN"} <= set(NAMES)
    assert "STRING_AGG" in REFUSED_NAMES and "MODE" not in REFUSED_NAMES   # MODE: a selection


@pytest.mark.parametrize("name", NAMES)
def test_every_supported_aggregate_is_answered(reader, name):
    sql = f"SELECT {_call(name)} AS v FROM PUMS.PUMS"
    assert reader.get_privacy_cost(sql)[0] > 0


@pytest.mark.parametrize("name", REFUSED_NAMES)
def test_every_refused_aggregate_is_refused(reader, name):
    with pytest.raises(dpsql.QueryError):
        reader.get_privacy_cost(f"SELECT {name}(age) AS v FROM PUMS.PUMS")


def test_every_planned_aggregate_is_documented():
    documented = set()
    for name in NAMES:
        node = sqlglot.parse_one(f"SELECT {_call(name)}", read="duckdb").expressions[0]
        documented |= {type(n) for n in node.walk()}
    missing = [k.__name__ for k in REGISTRY if k not in documented]
    assert not missing, f"aggregates the planner knows but docs/sql.md does not list: {missing}"
