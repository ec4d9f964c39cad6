"""Refused queries raise QueryError naming the problem, and cost nothing."""
import pytest

import dpsql


@pytest.fixture()
def reader(pums_reader):
    return pums_reader(privacy=dpsql.Privacy(epsilon=1.0), budget=dpsql.Budget(2.0))


REFUSED = [
    ("DELETE FROM PUMS.PUMS", "only SELECT"),
    ("DROP TABLE PUMS.PUMS", "only SELECT"),
    ("SELECT COUNT(*) FROM PUMS.PUMS; SELECT 1", "one SQL statement"),
    ("SELECT * FROM PUMS.PUMS", "raw rows"),
    ("SELECT age FROM PUMS.PUMS", "neither grouped nor aggregated"),
    ("SELECT sex, age, COUNT(*) FROM PUMS.PUMS GROUP BY sex", "neither grouped nor aggregated"),
    ("SELECT SUM(educ) FROM PUMS.PUMS", "numeric column"),
    ("SELECT SUM(SUM(age)) FROM PUMS.PUMS", "nested aggregates"),
    ("SELECT COUNT(*) FROM PUMS.Nope", "unknown table"),
    ("SELECT COUNT(nope) FROM PUMS.PUMS", "unknown column"),
    ("SELECT COUNT(*) FROM PUMS.PUMS WHERE age > (SELECT AVG(age) FROM PUMS.PUMS)", "subqueries"),
    ("SELECT COUNT(*) FROM PUMS.PUMS WHERE COUNT(*) > 3", "not allowed in WHERE"),
    ("SELECT STRING_AGG(sex, ',') FROM PUMS.PUMS", "not supported"),
    ("SELECT SUM(age / (age - 30)) FROM PUMS.PUMS", "divisor can be 0"),
    ("SELECT COUNT(*) FROM PUMS.PUMS a JOIN PUMS.PUMS b ON a.age = b.age", "row-privacy"),
    ("SELECT COUNT(*) OVER () FROM PUMS.PUMS", "window"),
    ("SELECT COUNT(*) FROM PUMS.PUMS LIMIT -1", "LIMIT"),
    ("SELEC COUNT(*) FROM PUMS.PUMS", ""),
    ("SELECT COUNT(*) FROM PUMS.PUMS WHERE no_such_function(age) > 1", "NO_SUCH_FUNCTION() is not allowed"),
]


@pytest.mark.parametrize("sql,fragment", REFUSED)
def test_refused_and_free(reader, sql, fragment):
    with pytest.raises(dpsql.QueryError) as err:
        reader.execute_df(sql)
    assert fragment in str(err.value)
    assert reader.spent == (0.0, 0.0)


def test_sum_without_bounds_names_the_column(data_dir, pums):
    meta = dpsql.Metadata.load(data_dir / "PUMS.yaml").to_dict()
    del meta["PUMS"]["PUMS"]["PUMS"]["income"]["upper"]
    r = dpsql.from_df(pums, meta, privacy=dpsql.Privacy(epsilon=1.0))
    with pytest.raises(dpsql.QueryError, match="income.*no lower and upper bound"):
        r.execute_df("SELECT AVG(income) FROM PUMS.PUMS")


def test_errors_name_their_position(reader):
    with pytest.raises(dpsql.QueryError, match=r"line 1, column \d+"):
        reader.execute_df("SELECT COUNT(nope) FROM PUMS.PUMS")


def test_unknown_keys_need_delta(pums, data_dir):
    r = dpsql.from_df(pums, data_dir / "PUMS.yaml", privacy=dpsql.Privacy(epsilon=1.0, delta=0.0))
    with pytest.raises(dpsql.QueryError, match="threshold.*delta > 0"):
        r.execute_df("SELECT educ, COUNT(*) FROM PUMS.PUMS GROUP BY educ")
    assert r.spent == (0.0, 0.0)
    # without GROUP BY, delta = 0 is fine
    assert len(r.execute_df("SELECT COUNT(*) AS n FROM PUMS.PUMS")) == 1


def test_errors_share_one_tree():
    assert issubclass(dpsql.QueryError, dpsql.ProgrammingError)
    assert issubclass(dpsql.MetadataError, dpsql.ProgrammingError)
    assert issubclass(dpsql.BudgetExceededError, dpsql.OperationalError)
    for cls in (dpsql.QueryError, dpsql.MetadataError, dpsql.BudgetExceededError):
        assert issubclass(cls, dpsql.Error)


def test_value_dependent_failures_are_guarded(data_dir):
    """A cast that fails on one cell must not raise (that would reveal the cell)."""
    import pandas as pd
    df = pd.DataFrame({"x": ["1", "2", "oops"] * 100, "age": [30] * 300})
    meta = {"": {"S": {"T": {"row_privacy": True, "x": {"type": "string"},
                             "age": {"type": "int", "lower": 0, "upper": 100}}}}}
    r = dpsql.from_df(df, meta, privacy=dpsql.Privacy(epsilon=50.0))
    n = r.execute_df("SELECT COUNT(*) AS n FROM S.T WHERE CAST(x AS INT) + 1 > 1 AND 10 / (age - 30) < 5").n[0]
    assert abs(n) < 2        # every row's predicate is NULL, not an error


def test_parameters_never_change_the_shape(reader):
    for sql, params in [("SELECT sex, COUNT(*) FROM PUMS.PUMS GROUP BY ?", (1,)),
                        ("SELECT sex, COUNT(*) FROM PUMS.PUMS GROUP BY sex ORDER BY ? DESC", (2,)),
                        ("SELECT COUNT(*) FROM PUMS.PUMS WHERE age > ?", (float("inf"),)),
                        ("SELECT COUNT(*) FROM PUMS.PUMS WHERE age > ?", (float("nan"),))]:
        with pytest.raises(dpsql.QueryError):
            reader.execute_df(sql, params)
    assert reader.spent == (0.0, 0.0)


def test_budget_spent_message(pums, data_dir):
    r = dpsql.from_df(pums, data_dir / "PUMS.yaml", privacy=dpsql.Privacy(epsilon=1.0),
                      budget=dpsql.Budget(1.0))
    r.execute_df("SELECT COUNT(*) AS n FROM PUMS.PUMS")
    with pytest.raises(dpsql.BudgetExceededError, match="session budget .* is spent"):
        r.execute_df("SELECT COUNT(*) AS n FROM PUMS.PUMS", replay=False)


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_sampling_clause_is_not_silently_dropped(pums_reader):
    reader = pums_reader(privacy=dpsql.Privacy(epsilon=1.0, delta=1e-6))
    with pytest.raises(dpsql.QueryError):
        # Today: USING SAMPLE is dropped and the count of all 1000 rows is released.
        reader.execute_df("SELECT COUNT(*) AS n FROM PUMS.PUMS USING SAMPLE 10 ROWS")
