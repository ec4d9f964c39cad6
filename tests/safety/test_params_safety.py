"""Hostile DB-API parameters (issue 7, case 7), on real DuckDB and tests/data.

A parameter is bound into the parsed tree as a literal rendered from its value
by its base type's own methods; only exact types are accepted, so a subclass
whose ``str()`` is SQL can never reach the SQL that DuckDB runs. Every refusal
is a free QueryError that names the parameter's position.
"""
import datetime
import decimal

import numpy as np
import pandas as pd
import pytest

import dpsql
from dpsql.frontend.parse import parse_query, typed_params

from tests.paths import DATA

PUMS_CSV, PUMS_META = DATA / "PUMS.csv", DATA / "PUMS.yaml"
AGE_OVER = "SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE age > ?"
PAYLOAD = "1) OR (SELECT 1 FROM read_csv('/etc/passwd'))--"


class EvilInt(int):
    __str__ = __repr__ = lambda self: PAYLOAD  # noqa: E731
    __format__ = lambda self, spec: PAYLOAD  # noqa: E731


class EvilFloat(float):
    __str__ = __repr__ = lambda self: PAYLOAD  # noqa: E731
    __format__ = lambda self, spec: PAYLOAD  # noqa: E731


class EvilStr(str):
    __str__ = __repr__ = lambda self: PAYLOAD  # noqa: E731


class EvilDecimal(decimal.Decimal):
    __str__ = __repr__ = lambda self: PAYLOAD  # noqa: E731
    __format__ = lambda self, spec: PAYLOAD  # noqa: E731


class Recorder:
    """Wraps a DuckDB connection and records every string passed to it."""

    def __init__(self, con):
        self._con, self.seen = con, []

    def __getattr__(self, name):
        attr = getattr(self._con, name)
        if not callable(attr):
            return attr

        def call(*args, **kwargs):
            self.seen.extend(a for a in args if isinstance(a, str))
            return attr(*args, **kwargs)
        return call


@pytest.fixture
def reader(pums_reader):
    r = pums_reader(privacy=dpsql.Privacy(epsilon=10.0), budget=dpsql.Budget(10_000.0))
    r.engine.con = Recorder(r.engine.con)
    return r


def exact(condition) -> int:
    df = pd.read_csv(PUMS_CSV)
    return int(condition(df).sum())


def refused(reader, value, *words, position=1, sql=AGE_OVER):
    """The value is refused by execute_df, get_privacy_cost and explain; nothing spent."""
    params = [30] * (position - 1) + [value]
    sql = sql + " AND age > ?" * (position - 1)
    for call in (reader.execute_df, reader.get_privacy_cost, reader.explain):
        with pytest.raises(dpsql.QueryError) as info:
            call(sql, params)
        message = str(info.value)
        assert f"parameter {position}" in message, message
        for word in words:
            assert word in message, message
    assert reader.spent == (0.0, 0.0)
    return message


# ----------------------------------------------------------------- injection

def test_int_subclass_with_sql_str_is_refused(reader):
    message = refused(reader, EvilInt(1), "subclass of int", "accepted types")
    assert PAYLOAD not in message
    # Refused before anything reached DuckDB: no SQL naming the file was ever sent.
    assert not any("passwd" in sql for sql in reader.engine.con.seen)
    # The same value as a plain int is answered; its SQL goes through the recorder.
    n = reader.execute_df(AGE_OVER, (int(EvilInt(30)),)).n[0]
    assert abs(n - exact(lambda d: d.age > 30)) < 40
    assert reader.engine.con.seen and not any("passwd" in sql for sql in reader.engine.con.seen)


def test_int_subclass_with_sql_str_is_refused_by_the_dbapi_cursor():
    con = dpsql.connect(metadata=str(PUMS_META), tables={"PUMS.PUMS": str(PUMS_CSV)},
                        privacy=dpsql.Privacy(epsilon=1.0), budget=dpsql.Budget(10.0))
    cur = con.cursor()
    with pytest.raises(dpsql.QueryError, match="parameter 2 .*subclass of int"):
        cur.execute("SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE age > ? AND income > ?",
                    (1, EvilInt(0)))
    assert con.spent == (0.0, 0.0) and cur.description is None
    con.close()


def test_float_subclass_with_sql_repr_is_refused(reader):
    refused(reader, EvilFloat(1.5), "subclass of float")


def test_str_subclass_with_sql_str_is_refused(reader):
    refused(reader, EvilStr("1"), "subclass of str", sql="SELECT COUNT(*) AS n FROM PUMS.PUMS "
            "WHERE CAST(sex AS VARCHAR) = ?")


def test_decimal_subclass_is_refused(reader):
    refused(reader, EvilDecimal(1), "subclass of Decimal")


def test_pandas_timestamp_is_refused_as_a_datetime_subclass(reader):
    refused(reader, pd.Timestamp("2020-01-01"), "subclass of datetime", "plain datetime")


def test_string_parameter_holding_sql_is_one_literal(reader):
    sql = "SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE CAST(educ AS VARCHAR) = ?"
    for text in ("9' OR '1'='1", "9'); SELECT * FROM read_csv('/etc/passwd'); --", "\\'",
                 "9$$ OR $$1"):
        assert abs(reader.execute_df(sql, (text,)).n[0]) < 40  # equals no education code
    # The quote is doubled: the text stays inside one string literal.
    sent = [s for s in reader.engine.con.seen if "passwd" in s]
    assert sent and not any("read_csv('/etc/passwd')" in s for s in sent)


# ----------------------------------------------------------------- values refused

def test_decimal_nan_parameter_is_query_error(reader):
    for value in (decimal.Decimal("NaN"), decimal.Decimal("sNaN"), decimal.Decimal("-Infinity")):
        refused(reader, value, "not finite")


def test_decimal_with_huge_exponent_is_query_error(reader):
    refused(reader, decimal.Decimal("1E+100000000"), "exponent")


def test_huge_int_is_query_error(reader):
    refused(reader, 10 ** 5000, "more than 900 digits")


def test_float_nan_and_infinity_are_query_errors(reader):
    for value in (float("nan"), float("-inf"), np.float64("inf"), np.float32("nan")):
        refused(reader, value, "finite")


def test_string_with_nul_is_query_error(reader):
    refused(reader, "a\x00b", "NUL")


def test_string_with_lone_surrogate_is_query_error(reader):
    refused(reader, "a\ud800", "Unicode")


def test_timezone_aware_datetime_is_query_error(reader):
    aware = datetime.datetime(2020, 1, 1, tzinfo=datetime.timezone.utc)
    refused(reader, aware, "has a time zone", "without a time zone")


def test_numpy_nat_is_query_error(reader):
    refused(reader, np.datetime64("NaT"), "NaT")


def test_unsupported_types_are_query_errors_naming_the_position(reader):
    for value in ([1], (1,), {1}, b"1", object(), np.complex128(1), np.longdouble(1),
                  np.timedelta64(1, "D"), datetime.time(1, 2), int):
        refused(reader, value, "accepted types", position=2)


def test_parameters_given_as_mapping_or_string_are_query_errors(reader):
    with pytest.raises(dpsql.QueryError, match="qmark"):
        reader.execute_df(AGE_OVER, {"age": 30})
    with pytest.raises(dpsql.QueryError, match="sequence"):
        reader.execute_df(AGE_OVER, "3")
    with pytest.raises(dpsql.QueryError, match="sequence"):
        reader.execute_df(AGE_OVER, 3)
    assert reader.spent == (0.0, 0.0)


def test_named_and_numbered_placeholders_are_query_errors(reader):
    for sql in ("SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE age > $1",
                "SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE age > $age",
                "SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE age > :age"):
        with pytest.raises(dpsql.QueryError, match="paramstyle is qmark"):
            reader.execute_df(sql, (30,))
    assert reader.spent == (0.0, 0.0)


# ----------------------------------------------------------------- values accepted

def test_every_accepted_type_binds_by_value(reader):
    over_30 = exact(lambda d: d.age > 30)
    for value in (30, 30.0, decimal.Decimal("30"), decimal.Decimal("30.50"), np.int64(30),
                  np.int8(30), np.uint16(30), np.float16(30), np.float32(30.5), np.float64(30)):
        n = reader.execute_df(AGE_OVER, (value,)).n[0]
        assert abs(n - over_30) < 40, value
    sex_1 = exact(lambda d: d.sex == 1)
    sql = "SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE CAST(sex AS VARCHAR) = ?"
    for value in ("1", np.str_("1")):
        assert abs(reader.execute_df(sql, (value,)).n[0] - sex_1) < 40
    sql = "SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE (age > 30) = ?"
    for value in (True, np.bool_(True)):
        assert abs(reader.execute_df(sql, (value,)).n[0] - over_30) < 40
    sql = "SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE ? < ? AND age > 30"
    for pair in ((datetime.date(2020, 1, 1), datetime.date(2030, 1, 1)),
                 (datetime.datetime(2020, 1, 1, 10, 30), datetime.datetime(2030, 1, 1)),
                 (np.datetime64("2020-01-01"), np.datetime64("2030-01-01T00:00:00.5"))):
        assert abs(reader.execute_df(sql, pair).n[0] - over_30) < 40
    assert abs(reader.execute_df("SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE ? IS NULL",
                                 (None,)).n[0] - 1000) < 40


def test_values_are_rendered_by_their_base_type():
    def bound(value):
        return parse_query("SELECT ? AS v FROM t", (value,)).sql("duckdb")
    assert bound(-5) == "SELECT (-5) AS v FROM t"
    assert bound(-0.0) == "SELECT (-0.0) AS v FROM t"
    assert bound(decimal.Decimal("-2.50")) == "SELECT (-2.50) AS v FROM t"
    assert bound(decimal.Decimal("1E+3")) == "SELECT 1000 AS v FROM t"
    assert bound(1e300) == "SELECT 1e+300 AS v FROM t"
    assert bound(np.float32(0.5)) == "SELECT 0.5 AS v FROM t"
    assert bound(True) == "SELECT TRUE AS v FROM t"
    assert bound("it's") == "SELECT 'it''s' AS v FROM t"
    assert bound(datetime.datetime(2020, 1, 2, 3, 4, 5, 6)) == \
        "SELECT CAST('2020-01-02 03:04:05.000006' AS TIMESTAMP) AS v FROM t"
    assert bound(np.datetime64("2020-01-02")) == "SELECT CAST('2020-01-02' AS DATE) AS v FROM t"


def test_negative_parameters_stay_one_operand(reader):
    # age - -5 pasted as text would be `age --5`, a comment.
    n = reader.execute_df("SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE age - ? > 35", (-5,)).n[0]
    assert abs(n - exact(lambda d: d.age > 30)) < 40


def test_plan_cache_key_distinguishes_parameter_types():
    values = [1, 1.0, True, decimal.Decimal(1), np.int64(1), np.float64(1), np.bool_(True)]
    keys = [typed_params([v])[1] for v in values]
    assert len(set(keys)) == len(values)
    assert typed_params(None) == (None, None)
    params, key = typed_params(iter([1, "a"]))  # read once, kept as a tuple
    assert params == (1, "a") and key == ((int, "1"), (str, "'a'"))


def test_refused_parameter_is_query_error_in_the_plan_cache_key(reader):
    for value in (EvilInt(1), decimal.Decimal("NaN"), [1], object()):
        with pytest.raises(dpsql.QueryError, match="parameter 1"):
            reader._plan(AGE_OVER, (value,))
    assert reader.spent == (0.0, 0.0)


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_plan_cache_distinguishes_parameter_types(pums_reader):
    reader = pums_reader(privacy=dpsql.Privacy(epsilon=5.0, delta=1e-6))
    sql = "SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE married = ?"
    first = reader._sql(reader._plan(sql, [1]))[0]
    # 1 == True and hash(1) == hash(True): a cache keyed by value would reuse the plan
    # for 1 (married = '1') for True, which compares a string with a boolean: refused.
    with pytest.raises(dpsql.QueryError, match="boolean"):
        reader._plan(sql, [True])
    assert reader._sql(reader._plan(sql, [1.0]))[0] != first
