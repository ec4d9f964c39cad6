"""The read-only PEP 249 connector, through real connections on tests/data.

Covers what applies to a read-only connector from the dbapi20 compliance
suite (module globals, exception tree, type objects and constructors,
description, rowcount, fetch*, arraysize, close semantics) plus what dpsql
adds: the connection is a privacy session, parameters are bound as literals,
nothing is ever refunded, and pandas.read_sql works.
"""
import os
import subprocess
import sys
import time
import warnings

import duckdb
import pandas as pd
import pytest

import dpsql
from dpsql.api import dbapi

from tests.paths import DATA, ROOT

PUMS_CSV, PUMS_META = str(DATA / "PUMS.csv"), str(DATA / "PUMS.yaml")
COUNT = "SELECT COUNT(*) AS n FROM PUMS.PUMS"
BY_MARRIED = ("SELECT married, COUNT(*) AS n, AVG(age) AS age FROM PUMS.PUMS "
              "GROUP BY married ORDER BY married")


def open_pums(**kw):
    kw.setdefault("privacy", dpsql.Privacy(epsilon=1.0))
    kw.setdefault("budget", dpsql.Budget(epsilon=100.0, delta=1e-6))
    return dpsql.connect(metadata=PUMS_META, tables={"PUMS.PUMS": PUMS_CSV}, **kw)


@pytest.fixture
def con():
    con = open_pums()
    yield con
    if not con.closed:
        con.close()


# ----------------------------------------------------------------- module

def test_module_globals_and_exception_tree():
    for module in (dbapi, dpsql):
        assert module.apilevel == "2.0" and module.paramstyle == "qmark"
        assert module.threadsafety in (0, 1, 2, 3)
    assert dpsql.connect is not None
    for name in ("Warning", "Error", "InterfaceError", "DatabaseError", "DataError",
                 "OperationalError", "IntegrityError", "InternalError", "ProgrammingError",
                 "NotSupportedError"):
        assert getattr(dbapi, name) is getattr(dpsql, name) is getattr(dpsql.errors, name)
    assert issubclass(dpsql.Warning, Exception) and issubclass(dpsql.Error, Exception)
    for name in ("InterfaceError", "DatabaseError"):
        assert issubclass(getattr(dpsql, name), dpsql.Error)
    for name in ("DataError", "OperationalError", "IntegrityError", "InternalError",
                 "ProgrammingError", "NotSupportedError"):
        assert issubclass(getattr(dpsql, name), dpsql.DatabaseError)
    assert issubclass(dpsql.QueryError, dpsql.ProgrammingError)
    assert issubclass(dpsql.MetadataError, dpsql.ProgrammingError)
    assert issubclass(dpsql.BudgetExceededError, dpsql.OperationalError)


def test_type_objects_and_constructors():
    stamp = time.mktime((2002, 12, 25, 13, 45, 30, 0, 0, -1))
    assert dbapi.Date(2002, 12, 25) == dbapi.DateFromTicks(stamp)
    assert dbapi.Time(13, 45, 30) == dbapi.TimeFromTicks(stamp)
    assert dbapi.Timestamp(2002, 12, 25, 13, 45, 30) == dbapi.TimestampFromTicks(stamp)
    assert dbapi.Binary(b"x") == b"x"
    assert dbapi.NUMBER == "BIGINT" and dbapi.NUMBER == "DOUBLE" and dbapi.NUMBER != "VARCHAR"
    assert dbapi.STRING == "VARCHAR" and dbapi.DATETIME == "TIMESTAMP"
    assert dbapi.BINARY == "BLOB" and dbapi.ROWID != "BIGINT"


def test_exceptions_are_connection_attributes(con):
    for name in ("Warning", "Error", "InterfaceError", "DatabaseError", "DataError",
                 "OperationalError", "IntegrityError", "InternalError", "ProgrammingError",
                 "NotSupportedError"):
        assert getattr(con, name) is getattr(dpsql, name)


# ----------------------------------------------------------------- cursor

def test_issue_example_with_qmark_parameters(con):
    cur = con.cursor()
    assert cur.description is None and cur.rowcount == -1 and cur.arraysize == 1
    with pytest.raises(dpsql.Error):
        cur.fetchone()  # nothing executed yet
    assert cur.execute("SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE age > ? AND sex = ?",
                       (30, 1)) is cur
    assert len(cur.description) == 1 and len(cur.description[0]) == 7
    assert cur.description[0][0] == "n" and cur.description[0][1] == dbapi.NUMBER
    assert cur.rowcount == 1
    (n,) = cur.fetchone()
    exact = pd.read_csv(PUMS_CSV).query("age > 30 and sex == 1").shape[0]
    assert isinstance(n, (int, float)) and abs(n - exact) < 40
    assert cur.fetchone() is None and cur.fetchall() == [] and cur.fetchmany(3) == []


def test_fetch_methods_mix_and_honour_arraysize(con):
    cur = con.cursor()
    cur.execute(BY_MARRIED)
    assert [d[0] for d in cur.description] == ["married", "n", "age"]
    assert cur.description[1][1] == dbapi.NUMBER and cur.description[2][1] == dbapi.NUMBER
    assert cur.rowcount == 2 and cur.rownumber == 0
    assert len(cur.fetchmany()) == 1  # default arraysize 1
    assert len(cur.fetchmany(5)) == 1 and cur.fetchall() == [] and cur.rownumber == 2
    cur.execute(BY_MARRIED)
    cur.arraysize = 2
    rows = cur.fetchmany()
    assert len(rows) == 2 and all(len(r) == 3 for r in rows) and cur.fetchmany() == []
    cur.execute(BY_MARRIED)
    first, rest = cur.fetchone(), cur.fetchall()
    assert len(rest) == 1 and cur.fetchall() == [] and cur.rownumber == 2
    by_key = {int(r[0]): r for r in [first, *rest]}
    assert abs(by_key[0][1] - 451) < 60 and abs(by_key[1][1] - 549) < 60
    assert all(isinstance(v, (int, float, str)) for r in by_key.values() for v in r)
    cur.execute(BY_MARRIED)
    assert len(list(cur)) == 2  # iteration
    with pytest.raises(dpsql.ProgrammingError):
        cur.fetchmany(-1)


def test_sql_null_is_returned_as_none():
    con = dpsql.connect(metadata=str(DATA / "PUMS_dup.yaml"),
                        tables={"PUMS.PUMS": str(DATA / "PUMS_null.csv")},
                        privacy=dpsql.Privacy(10.0, 1e-6), budget=dpsql.Budget(30.0))
    cur = con.cursor()
    cur.execute("SELECT NULLIF(COUNT(*), COUNT(*)) AS x FROM PUMS.PUMS")
    assert cur.fetchall() == [(None,)]
    # PUMS_null has persons whose `married` is NULL: their group's key is None.
    cur.execute("SELECT married, COUNT(*) AS n FROM PUMS.PUMS GROUP BY married")
    keys = [row[0] for row in cur.fetchall()]
    assert None in keys and {str(k) for k in keys if k is not None} == {"0", "1"}
    con.close()


def test_a_failed_query_clears_the_previous_result_and_costs_nothing(con):
    cur = con.cursor()
    cur.execute(COUNT)
    spent = con.spent
    with pytest.raises(dpsql.QueryError):
        cur.execute("SELECT * FROM PUMS.PUMS")
    assert cur.description is None and cur.rowcount == -1
    with pytest.raises(dpsql.Error):
        cur.fetchall()
    with pytest.raises(dpsql.ProgrammingError):  # wrong number of parameters
        cur.execute("SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE age > ?", (1, 2))
    with pytest.raises(dpsql.ProgrammingError, match="sequence"):
        cur.execute("SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE age > ?", "7")
    with pytest.raises(dpsql.ProgrammingError, match="sequence"):
        cur.execute("SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE age > ?", {"age": 7})
    assert con.spent == spent


def test_a_parameter_is_a_literal_and_cannot_change_the_query(con):
    cur = con.cursor()
    # Pasted into the text this would count every row; bound, it is one string
    # that equals no education code.
    cur.execute("SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE CAST(educ AS VARCHAR) = ?",
                ("9' OR '1'='1",))
    (n,) = cur.fetchone()
    assert abs(n) < 40
    cur.execute("SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE CAST(educ AS VARCHAR) = ?", ("9",))
    exact = int((pd.read_csv(PUMS_CSV)["educ"] == 9).sum())
    assert abs(cur.fetchone()[0] - exact) < 40 and exact > 200


def test_refused_operations_spend_nothing(con):
    cur = con.cursor()
    cur.execute(COUNT)
    spent = con.spent
    with pytest.raises(dpsql.NotSupportedError, match="executemany"):
        cur.executemany("SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE age > ?", [(1,), (2,)])
    with pytest.raises(dpsql.NotSupportedError):
        cur.callproc("lower", ("X",))
    with pytest.raises(dpsql.NotSupportedError, match="never refunded"):
        con.rollback()
    con.commit()  # nothing to commit
    cur.setinputsizes(25)
    cur.setoutputsize(1000)
    cur.setoutputsize(2000, 0)
    assert con.spent == spent and cur.rowcount == 1  # the result is still there


def test_closed_cursor_and_connection_raise_interface_error():
    con = open_pums()
    cur, other = con.cursor(), con.cursor()
    cur.close()
    cur.close()  # closing a cursor twice is harmless
    for call in (lambda: cur.execute(COUNT), cur.fetchone, cur.fetchall,
                 lambda: cur.fetchmany(1)):
        with pytest.raises(dpsql.InterfaceError):
            call()
    con.close()
    for call in (lambda: other.execute(COUNT), con.cursor, con.commit, con.rollback,
                 con.close, lambda: con.spent):
        with pytest.raises(dpsql.InterfaceError):
            call()


def test_connection_as_context_manager_closes_it():
    with open_pums() as con:
        with con.cursor() as cur:
            cur.execute(COUNT)
        with pytest.raises(dpsql.InterfaceError):
            cur.fetchone()
    assert con.closed


@pytest.mark.parametrize("bad", [[1], {1}, {"a": 1}], ids=["list", "set", "dict"])
def test_dbapi_unbindable_parameter_is_a_programming_error(bad):
    """A parameter that cannot be bound is the caller's mistake (ProgrammingError), not a
    dpsql bug (InternalError 'please report it'), and costs nothing."""
    con = dpsql.connect(metadata=DATA / "PUMS.yaml", tables={"PUMS.PUMS": DATA / "PUMS.csv"},
                        privacy=dpsql.Privacy(1.0), budget=dpsql.Budget(5.0))
    cur = con.cursor()
    with pytest.raises(dpsql.Error) as info:
        cur.execute("SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE age > ?", (bad,))
    assert isinstance(info.value, (dpsql.ProgrammingError, dpsql.InterfaceError)), info.value
    assert con.spent == (0.0, 0.0)
    con.close()


# ----------------------------------------------------------------- sessions

def test_the_connection_is_a_session_with_one_budget():
    con = open_pums(privacy=dpsql.Privacy(epsilon=0.6), budget=dpsql.Budget(1.0))
    a, b = con.cursor(), con.cursor()
    a.execute(COUNT)
    assert con.spent[0] == pytest.approx(0.6)
    b.execute(COUNT)  # another cursor, the same session: the same query is a free replay
    assert con.spent[0] == pytest.approx(0.6) and b.fetchall() == a.fetchall()
    with pytest.raises(dpsql.BudgetExceededError, match="nothing was run or spent"):
        b.execute(COUNT + " WHERE age > 0")   # a new query does not fit
    assert con.spent[0] == pytest.approx(0.6) and b.description is None
    assert con.reader.get_privacy_cost(COUNT)[0] == pytest.approx(0.6)
    con.close()


def test_a_ledger_keeps_the_budget_across_connections(tmp_path):
    ledger = tmp_path / "session.ledger"
    first = open_pums(privacy=dpsql.Privacy(epsilon=0.6), budget=dpsql.Budget(1.0),
                      ledger=ledger)
    first.cursor().execute(COUNT)
    first.close()
    # A new connection (or process) cannot escape the budget, nor raise it.
    second = open_pums(privacy=dpsql.Privacy(epsilon=0.6), budget=None, ledger=str(ledger))
    assert second.spent[0] == pytest.approx(0.6)
    second.cursor().execute(COUNT)               # the same query: replayed from the ledger, free
    assert second.spent[0] == pytest.approx(0.6)
    with pytest.raises(dpsql.BudgetExceededError):
        second.cursor().execute(COUNT.replace("COUNT(*)", "COUNT(age)"))
    with pytest.raises(dpsql.OperationalError, match="fixed"):
        open_pums(budget=dpsql.Budget(50.0), ledger=ledger)
    from dpsql.privacy.ledger import Ledger
    # One charge; the second connection's replay is listed, costing 0.
    assert [(r.query, r.replay) for r in Ledger(ledger).records()] == [(COUNT, False), (COUNT, True)]
    assert Ledger(ledger).records()[1].epsilon == 0.0


def test_connect_to_a_duckdb_file_read_only_and_close_releases_it(tmp_path):
    db = str(tmp_path / "data.duckdb")
    setup = duckdb.connect(db)
    setup.execute("CREATE SCHEMA PUMS")
    setup.execute("CREATE TABLE PUMS.PUMS AS SELECT * FROM read_csv(?)", [PUMS_CSV])
    setup.close()
    con = dpsql.connect(db, metadata=PUMS_META, privacy=dpsql.Privacy(1.0),
                        budget=dpsql.Budget(10.0))
    cur = con.cursor()
    cur.execute(COUNT)
    assert abs(cur.fetchone()[0] - 1000) < 40
    con.close()
    writer = duckdb.connect(db)  # possible only once dpsql let go of the file
    assert writer.execute("SELECT COUNT(*) FROM PUMS.PUMS").fetchone() == (1000,)
    writer.close()
    # An open DuckDB connection is used as is, and left open by close().
    mine = duckdb.connect(db, read_only=True)
    with dpsql.connect(mine, metadata=PUMS_META, budget=dpsql.Budget(10.0)) as con:
        assert abs(con.cursor().execute(COUNT).fetchone()[0] - 1000) < 40
    assert mine.execute("SELECT COUNT(*) FROM PUMS.PUMS").fetchone() == (1000,)
    mine.close()
    with pytest.raises(dpsql.OperationalError, match="not found"):
        dpsql.connect(str(tmp_path / "missing.duckdb"), metadata=PUMS_META)
    with pytest.raises(dpsql.InterfaceError, match="either"):
        dpsql.connect(db, metadata=PUMS_META, tables={"PUMS.PUMS": PUMS_CSV})
    with pytest.raises(dpsql.MetadataError):
        dpsql.connect(metadata={"bad": 1}, tables={"PUMS.PUMS": PUMS_CSV})


def test_dbapi_pandas_and_cursor_share_one_ledger_across_processes(tmp_path):
    """Passing check kept as evidence: two processes using DB-API connections on one ledger
    never overspend it (budget 2.5, six queries of epsilon 1 -> exactly two released)."""
    ledger = tmp_path / "s.ledger"
    code = (
        "import sys, warnings, dpsql; warnings.simplefilter('ignore')\n"
        f"con = dpsql.connect(metadata={str(DATA / 'PUMS.yaml')!r}, "
        f"tables={{'PUMS.PUMS': {str(DATA / 'PUMS.csv')!r}}}, privacy=dpsql.Privacy(1.0), "
        f"ledger={str(ledger)!r}, budget=dpsql.Budget(2.5))\n"
        "ok = 0\n"
        "for i in range(3):\n"
        "    try:\n"
        # Each process asks its own queries: one process's release is the other's free
        # replay otherwise (the same query through the same ledger).
        "        con.cursor().execute(f'SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE age > "
        "{10 * int(sys.argv[1]) + i}'); ok += 1\n"
        "    except dpsql.BudgetExceededError:\n"
        "        pass\n"
        "print(ok)\n")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    procs = [subprocess.Popen([sys.executable, "-c", code, str(k)], stdout=subprocess.PIPE,
                              text=True, env=env) for k in range(2)]
    released = sum(int(p.communicate(timeout=120)[0]) for p in procs)
    assert released == 2
    from dpsql.privacy.ledger import Ledger
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        led = Ledger(ledger)
    assert len(led.records()) == 2 and led.spent()[0] <= 2.5


# ----------------------------------------------------------------- pandas

def test_pandas_read_sql_works_on_a_connection(con):
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="pandas only supports SQLAlchemy")
        frame = pd.read_sql(BY_MARRIED, con)
        params = pd.read_sql("SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE age > ?", con,
                             params=(30,))
        chunks = list(pd.read_sql(BY_MARRIED, con, chunksize=1))
    assert list(frame.columns) == ["married", "n", "age"] and len(frame) == 2
    assert abs(frame["age"].mean() - 44.8) < 10
    exact = int((pd.read_csv(PUMS_CSV)["age"] > 30).sum())
    assert abs(params["n"].iloc[0] - exact) < 40
    assert [len(c) for c in chunks] == [1, 1]
