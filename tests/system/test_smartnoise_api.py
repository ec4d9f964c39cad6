"""SmartNoise SQL's reader API in dpsql (issue 36, point 4): what has a meaning here works
as SmartNoise documents it, the rest is refused with a dpsql.NotSupportedError that says
what to do instead (docs/smartnoise.md). Every test fails on the code before the issue
(AttributeError, TypeError or a psycopg AttributeError)."""
from __future__ import annotations

import pandas as pd
import pytest

import dpsql
from tests.paths import DATA

pytestmark = pytest.mark.filterwarnings("ignore:dpsql. no budget set")
SQL = "SELECT sex, COUNT(*) AS n, SUM(age) AS total, AVG(age) AS mean FROM PUMS.PUMS GROUP BY sex"


@pytest.fixture()
def reader():
    return dpsql.from_df(pd.read_csv(DATA / "PUMS.csv"), DATA / "PUMS.yaml",
                         privacy=dpsql.Privacy(epsilon=1.0, alphas=[0.05, 0.01]))


def test_execute_with_accuracy_has_smartnoise_shape_and_costs_one_release(reader):
    rows = reader.execute_with_accuracy(SQL)
    names, accuracy_names = rows[0]
    assert names == ("sex", "n", "total", "mean")
    assert accuracy_names == [("sex_95", "n_95", "total_95", "mean_95"),
                              ("sex_99", "n_99", "total_99", "mean_99")]
    assert len(rows) == 3 and reader.spent[0] == pytest.approx(1.0)
    at95 = reader.execute_with_accuracy_df(SQL, 0.05)       # the same release, replayed
    for (values, (acc95, acc99)), (_, row) in zip(rows[1:], at95.iterrows()):
        assert values == (row["sex"], row["n"], row["total"], row["mean"])
        assert acc95[0] is None and acc99[0] is None            # a key has no noise
        for i, name in enumerate(("n", "total", "mean"), start=1):
            assert acc95[i] == pytest.approx((row[f"{name}_hi"] - row[f"{name}_lo"]) / 2)
            assert acc99[i] > acc95[i]
    assert reader.execute(SQL, accuracy=True) == rows           # SmartNoise's flag
    assert reader.odometer.k == 1 and reader.odometer.spent == reader.spent


def test_get_simple_accuracy_runs_nothing_and_matches_the_intervals(reader):
    sql = ("SELECT COUNT(*) AS n, SUM(age) AS total, 2 * SUM(age) + 1 AS twice, AVG(age) AS mean, "
           "MEDIAN(age) AS middle FROM PUMS.PUMS")
    simple = reader.get_simple_accuracy(sql, 0.05)
    assert reader.spent == (0.0, 0.0) and reader.odometer.k == 0
    assert simple[3] is None and simple[4] is None             # depend on the data
    out = reader.execute_with_accuracy_df(sql, 0.05)
    for i, name in enumerate(("n", "total", "twice")):
        assert simple[i] == pytest.approx((out[f"{name}_hi"][0] - out[f"{name}_lo"][0]) / 2)
    assert simple[2] == pytest.approx(2 * simple[1])
    assert reader.get_simple_accuracy("SELECT sex, COUNT(*) AS n FROM PUMS.PUMS GROUP BY sex",
                                      0.05)[0] is None


def test_the_odometer_is_a_view_of_the_spending(reader):
    odometer = reader.odometer
    assert odometer.k == 0 and odometer.spent == (0.0, 0.0)
    reader.execute("SELECT COUNT(*) AS n FROM PUMS.PUMS")
    reader.execute("SELECT COUNT(*) AS n FROM PUMS.PUMS")                  # a replay: free
    reader.execute("SELECT COUNT(*) AS n FROM PUMS.PUMS", replay=False)
    assert odometer.k == 2 and odometer.spent == reader.spent == pytest.approx((2.0, 0.0))
    for call in (odometer.reset, lambda: odometer.spend(dpsql.Privacy())):
        with pytest.raises(dpsql.NotSupportedError, match="charges|budget"):
            call()
    assert "2 release(s)" in repr(odometer)


def test_privacy_takes_smartnoise_alphas_and_neighboring():
    assert dpsql.Privacy(epsilon=0.5, delta=1e-6, alphas=[0.05]).alphas == [0.05]
    assert dpsql.Privacy(neighboring="addremove").neighboring == "addremove"
    for bad in ([0.0], [1.5], "0.05", [True]):
        with pytest.raises(dpsql.ProgrammingError, match="alphas"):
            dpsql.Privacy(alphas=bad)
    with pytest.raises(dpsql.NotSupportedError, match="half the epsilon"):
        dpsql.Privacy(neighboring="substitute")


def test_refused_options_say_what_to_do_and_cost_nothing(reader):
    with pytest.raises(dpsql.NotSupportedError, match="SUM\\(x\\) and COUNT\\(x\\)"):
        reader.execute(SQL, postprocess=False)
    with pytest.raises(dpsql.NotSupportedError, match="truncating"):
        reader.execute(SQL, pre_aggregated=[("sex", "n"), ("0", 500)])
    with pytest.raises(dpsql.NotSupportedError, match="explain"):
        reader.parse_query_string(SQL)
    with pytest.raises(dpsql.ProgrammingError, match="unexpected keyword"):
        reader.execute(SQL, bogus=1)
    assert reader.spent == (0.0, 0.0)


def test_metadata_from_file_from_dict_and_from_():
    meta = dpsql.Metadata.from_file(str(DATA / "PUMS.yaml"))
    with open(DATA / "PUMS.yaml", encoding="utf-8") as f:
        assert dpsql.Metadata.from_file(f) == meta
    assert dpsql.Metadata.from_dict(meta.to_dict()) == meta
    assert dpsql.Metadata.from_(meta) is meta and dpsql.Metadata.from_(DATA / "PUMS.yaml") == meta
    with pytest.raises(dpsql.MetadataError):
        dpsql.Metadata.from_file(3)


def test_a_psycopg2_connection_is_refused_with_how_to_pass_a_psycopg_3_one():
    # SmartNoise's from_connection example passes a psycopg2 connection; dpsql's PostgreSQL
    # engine needs psycopg 3 (before: AttributeError: ... has no attribute 'transaction').
    class connection:
        def cursor(self):
            raise AssertionError("dpsql must not use a psycopg2 connection")
    connection.__module__ = "psycopg2.extensions"
    meta = DATA / "PUMS.yaml"
    with pytest.raises(dpsql.NotSupportedError, match=r"psycopg\.connect\(\*\*conn\.get_dsn_parameters"):
        dpsql.from_connection(connection(), meta)
    with pytest.raises(dpsql.NotSupportedError, match="psycopg 3"):
        dpsql.connect(connection(), metadata=meta)
