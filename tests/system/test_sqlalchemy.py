"""The SQLAlchemy dialect (dpsql.api.sqlalchemy) through real engines on tests/data.

An engine is made from connect_args and from a URL, tables and columns are reflected
from the metadata, pandas.read_sql runs through an engine without a warning, refused
queries surface as SQLAlchemy errors wrapping dpsql's, and every query is charged once
(transactions, pings and pooling send nothing to dpsql and spend nothing).
"""
import os
import subprocess
import sys
import warnings

import duckdb
import pandas as pd
import pytest

import dpsql

import sqlalchemy as sa  # noqa: E402 - in the test extra: a missing one fails, never skips

from tests.paths import DATA, ROOT  # noqa: E402

PUMS_CSV, PUMS_META = str(DATA / "PUMS.csv"), str(DATA / "PUMS.yaml")
COUNT = "SELECT COUNT(*) AS n FROM PUMS.PUMS"
BY_SEX = "SELECT sex, COUNT(*) AS n FROM PUMS.PUMS GROUP BY sex ORDER BY sex"


def pums_engine(budget=None, **kw):
    args = dict(metadata=PUMS_META, tables={"PUMS.PUMS": PUMS_CSV},
                privacy=dpsql.Privacy(epsilon=0.5),
                budget=budget if budget is not None else dpsql.Budget(epsilon=10.0))
    return sa.create_engine("dpsql://", connect_args=args, **kw)


def spent(engine) -> tuple:
    with engine.connect() as c:
        return c.connection.dbapi_connection.spent


def strict_read_sql(sql, engine, **kw):
    """pandas.read_sql with every warning an error."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return pd.read_sql(sql, engine, **kw)


def dpsql_error(exc):
    """The dpsql error inside pandas' DatabaseError and SQLAlchemy's DBAPIError."""
    if isinstance(exc, pd.errors.DatabaseError):
        exc = exc.__cause__
    assert isinstance(exc, sa.exc.DBAPIError), exc
    return exc.orig


@pytest.fixture
def engine():
    engine = pums_engine()
    yield engine
    engine.dispose()


def test_the_dialect_is_registered_without_reinstalling():
    from dpsql.api.sqlalchemy import DpsqlDialect
    assert sa.dialects.registry.load("dpsql") is DpsqlDialect
    assert sa.make_url("dpsql://").get_dialect() is DpsqlDialect


def test_importing_dpsql_needs_no_sqlalchemy():
    code = ("import sys; sys.modules['sqlalchemy'] = None\n"
            "import dpsql\n"
            "assert 'dpsql.api.sqlalchemy' not in sys.modules\n"
            "print(dpsql.connect.__name__)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=dict(os.environ, PYTHONPATH=str(ROOT)), timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "connect"


def test_pandas_read_sql_through_an_engine_warns_nothing_and_charges_once(engine):
    frame = strict_read_sql(BY_SEX, engine)
    assert list(frame.columns) == ["sex", "n"] and list(frame["sex"]) == ["0", "1"]
    assert abs(frame["n"].sum() - 1000) < 60
    assert spent(engine)[0] == pytest.approx(0.5)           # once, not once per step
    again = strict_read_sql(BY_SEX, engine)                 # the same release, free
    pd.testing.assert_frame_equal(again, frame)
    assert spent(engine)[0] == pytest.approx(0.5)
    params = strict_read_sql(sa.text("SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE age > :age"),
                             engine, params={"age": 30})
    exact = int((pd.read_csv(PUMS_CSV)["age"] > 30).sum())
    assert abs(params["n"].iloc[0] - exact) < 40
    assert spent(engine)[0] == pytest.approx(1.0)


def test_engine_from_a_url_over_a_duckdb_file(tmp_path):
    db = tmp_path / "data.duckdb"
    setup = duckdb.connect(str(db))
    setup.execute("CREATE SCHEMA PUMS")
    setup.execute("CREATE TABLE PUMS.PUMS AS SELECT * REPLACE (CAST(income AS BIGINT) AS income) "
                  "FROM read_csv(?)", [PUMS_CSV])     # as the metadata says: no cast, no warning
    setup.close()
    engine = sa.create_engine(f"dpsql:///{db}?metadata={PUMS_META}&epsilon=0.25"
                              "&budget_epsilon=0.5&budget_delta=1e-5")
    frame = strict_read_sql(COUNT, engine)
    assert abs(frame["n"].iloc[0] - 1000) < 60
    assert spent(engine) == (pytest.approx(0.25), 0.0)
    strict_read_sql("SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE age > 40", engine)
    with pytest.raises(pd.errors.DatabaseError) as info:     # the URL's budget is spent
        strict_read_sql("SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE age > 50", engine)
    assert isinstance(info.value.__cause__, sa.exc.OperationalError)
    assert isinstance(dpsql_error(info.value), dpsql.BudgetExceededError)
    engine.dispose()
    writer = duckdb.connect(str(db))     # dispose() closed the read-only file
    writer.close()


def test_engine_from_a_url_over_csv_tables_with_a_ledger(tmp_path):
    ledger = tmp_path / "s.ledger"
    url = (f"dpsql:///?metadata={PUMS_META}&table=PUMS.PUMS={PUMS_CSV}&epsilon=0.5"
           f"&budget_epsilon=1&ledger={ledger}")
    engine = sa.create_engine(url)
    strict_read_sql(COUNT, engine)
    engine.dispose()
    other = sa.create_engine(url)    # another engine (another session) on the same ledger
    with pytest.raises(pd.errors.DatabaseError) as info:
        strict_read_sql("SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE age > 1", other)
        strict_read_sql("SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE age > 2", other)
    assert isinstance(dpsql_error(info.value), dpsql.BudgetExceededError)
    assert spent(other)[0] == pytest.approx(1.0)
    other.dispose()


def test_a_url_may_name_the_budgets_accountant():
    """Issue 37: budget_accountant=pld composes the session with dp-accounting's PLD."""
    engine = sa.create_engine(f"dpsql:///?metadata={PUMS_META}&table=PUMS.PUMS={PUMS_CSV}"
                              "&epsilon=0.02&budget_epsilon=0.5&budget_accountant=pld")
    for age in range(30):                 # 25 by basic composition
        strict_read_sql(f"SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE age > {age}", engine)
    eps, delta = spent(engine)
    assert eps <= 0.5 and delta == 1e-6
    with engine.connect() as c:
        assert c.connection.dbapi_connection.reader.accountant.budget.accountant == "pld"
    engine.dispose()
    with pytest.raises(dpsql.ProgrammingError, match="accountant must be one of"):
        sa.create_engine(f"dpsql:///?metadata={PUMS_META}&budget_epsilon=1"
                         "&budget_accountant=moments")


def test_connect_args_take_precedence_over_the_url():
    engine = sa.create_engine(f"dpsql:///?metadata={PUMS_META}&epsilon=5",
                              connect_args={"tables": {"PUMS.PUMS": PUMS_CSV},
                                            "privacy": dpsql.Privacy(epsilon=0.1),
                                            "budget": dpsql.Budget(epsilon=1.0)})
    strict_read_sql(COUNT, engine)
    assert spent(engine)[0] == pytest.approx(0.1)
    engine.dispose()


@pytest.mark.parametrize("url,match", [
    ("dpsql:///?metadata=m.yaml&epsilom=1", "unknown parameter"),
    ("dpsql:///?metadata=m.yaml&epsilon=lots", "not a number"),
    ("dpsql:///?metadata=m.yaml&table=PUMS.PUMS", "schema.table=path"),
    ("dpsql://host/db.duckdb?metadata=m.yaml", "no host"),
    ("dpsql:///?metadata=a.yaml&metadata=b.yaml", "once"),
])
def test_a_bad_url_raises_a_dpsql_error(url, match):
    with pytest.raises(dpsql.InterfaceError, match=match):
        sa.create_engine(url)


def test_reflection_comes_from_the_metadata(tmp_path, engine):
    insp = sa.inspect(engine)
    assert insp.get_schema_names() == ["PUMS"]
    assert insp.get_table_names(schema="PUMS") == ["PUMS"]
    assert insp.get_table_names() == ["PUMS"]          # the metadata's one schema
    assert insp.get_table_names(schema="other") == []
    columns = {c["name"]: c["type"] for c in insp.get_columns("PUMS", schema="PUMS")}
    assert list(columns) == ["age", "sex", "educ", "race", "income", "married"]
    assert isinstance(columns["age"], sa.Integer) and isinstance(columns["sex"], sa.String)
    assert insp.has_table("PUMS", schema="PUMS") and insp.has_table("pums", schema="pums")
    assert not insp.has_table("nope", schema="PUMS") and not insp.has_table(COUNT)
    with pytest.raises(sa.exc.NoSuchTableError):
        insp.get_columns("nope", schema="PUMS")
    assert spent(engine) == (0.0, 0.0)                 # reflection reads no data


def test_reflected_types_cover_every_metadata_type():
    meta = {"db": {"s": {"t": {"row_privacy": True, "i": {"type": "int"},
                               "f": {"type": "float"}, "b": {"type": "boolean"},
                               "ts": {"type": "datetime"},
                               "v": {"type": "string"}}}}}
    frame = pd.DataFrame({"i": [1], "f": [1.0], "b": [True],
                          "ts": pd.to_datetime(["2020-01-01 10:00"]), "v": ["x"]})
    engine = sa.create_engine("dpsql://", connect_args={"metadata": meta,
                                                        "tables": {"s.t": frame}})
    types = {c["name"]: type(c["type"]) for c in sa.inspect(engine).get_columns("t", "s")}
    assert types == {"i": sa.Integer, "f": sa.Float, "b": sa.Boolean, "ts": sa.DateTime,
                     "v": sa.String}
    from dpsql.api.sqlalchemy import _TYPES
    from dpsql.metadata.model import COLUMN_TYPES
    assert set(_TYPES) == set(COLUMN_TYPES)
    engine.dispose()


def test_a_reflected_table_queried_with_sqlalchemy_core(engine):
    with engine.connect() as c:
        table = sa.Table("PUMS", sa.MetaData(), schema="PUMS", autoload_with=c)
        query = sa.select(table.c.sex, sa.func.count().label("n")).group_by(table.c.sex)
        rows = sorted(c.execute(query).fetchall())
    assert [r[0] for r in rows] == ["0", "1"] and abs(sum(r[1] for r in rows) - 1000) < 60
    assert spent(engine)[0] == pytest.approx(0.5)


def test_a_refused_query_raises_a_sqlalchemy_error_wrapping_dpsqls(engine):
    with engine.connect() as c:
        with pytest.raises(sa.exc.ProgrammingError) as info:
            c.exec_driver_sql("SELECT age FROM PUMS.PUMS")
    assert isinstance(info.value.orig, dpsql.QueryError)
    with pytest.raises(pd.errors.DatabaseError) as info:   # pandas wraps SQLAlchemy's
        strict_read_sql("SELECT income FROM PUMS.PUMS", engine)
    assert isinstance(dpsql_error(info.value), dpsql.QueryError)
    assert spent(engine) == (0.0, 0.0)                 # refused queries cost nothing


def test_transactions_and_pings_are_no_ops_that_spend_nothing():
    engine = pums_engine(pool_pre_ping=True)
    with engine.begin() as c:                          # BEGIN ... COMMIT
        c.exec_driver_sql(COUNT).fetchall()
    with engine.connect() as c:
        c.exec_driver_sql(COUNT).fetchall()            # a replay: free
        c.rollback()                                   # does nothing, refunds nothing
        c.commit()
        trans = c.begin()
        trans.rollback()
        assert c.connection.dbapi_connection.spent[0] == pytest.approx(0.5)
    engine.dispose()


def test_pooled_connections_of_an_engine_spend_from_one_budget():
    budget = dpsql.Budget(epsilon=10.0)
    engine = pums_engine(budget=budget)
    with engine.connect() as a, engine.connect() as b:
        assert a.connection.dbapi_connection is not b.connection.dbapi_connection
        a.exec_driver_sql("SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE age > 1").fetchall()
        b.exec_driver_sql("SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE age > 2").fetchall()
    assert budget.spent[0] == pytest.approx(1.0)
    engine.dispose()
    url_engine = sa.create_engine(f"dpsql:///?metadata={PUMS_META}&table=PUMS.PUMS={PUMS_CSV}"
                                  "&epsilon=0.5&budget_epsilon=0.5")
    with url_engine.connect() as a, url_engine.connect() as b:
        a.exec_driver_sql(COUNT).fetchall()
        with pytest.raises(sa.exc.OperationalError) as info:   # one Budget for the URL
            b.exec_driver_sql("SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE age > 2")
    assert isinstance(info.value.orig, dpsql.BudgetExceededError)
    url_engine.dispose()
