"""The eighth hostile review of ``dpsql serve`` (F2, F3, F5, F6, F7), through the wire.

F2: an integer of 5,000 digits (a parameter, or a ``$n`` placeholder) is a clean
SQLSTATE and the connection stays usable. F3: a rho with a delta so large that it
converts to epsilon 0 is refused at SET (22023), free. F5: messages name no Python
type, expression or engine. F6: the audit log keeps a bounded part of a long
statement, with its length and SHA-256. F7: a post-processing failure is told in
SQL's words, free, with the engine's text only in the audit log."""
import hashlib
import json
import warnings

import pandas as pd
import psycopg
import pytest

import dpsql
from tests.paths import DATA
from tests.server.serving import spent
from tests.server.test_serve_attacks import (  # noqa: F401 - served: the module's server
    EXECUTE, SYNC, Raw, bind, cstr, frame, parse, served)

BIG = b"9" * 5000


def errors_of(messages):
    """(SQLSTATE, message) of each ErrorResponse."""
    out = []
    for kind, body in messages:
        if kind == b"E":
            fields = dict((f[:1], f[1:].decode()) for f in body.split(b"\0") if f)
            out.append((fields[b"C"], fields[b"M"]))
    return out


def session(served):
    raw = Raw(served, timeout=60)
    raw.login("alice", "alice's secret")
    return raw


def extended(raw, sql, types, values):
    raw.send(parse(sql, types), bind(values), EXECUTE, SYNC)
    return errors_of(raw.until())


def simple(raw, sql):
    raw.send(frame(b"Q", cstr(sql)))
    return errors_of(raw.until())


def still_usable(raw):
    assert simple(raw, "SELECT relname FROM pg_class LIMIT 1") == []


# ---------------------------------------------------------------- F2

@pytest.mark.parametrize("oid", [20, 21, 23])
@pytest.mark.parametrize("sql", ["SELECT COUNT(*) FROM PUMS.PUMS WHERE age > $1",
                                 "SELECT relname FROM pg_class WHERE oid > $1"])
def test_f2_a_5000_digit_integer_parameter_is_22003(served, oid, sql):
    raw = session(served)
    found = extended(raw, sql, [oid], [BIG])
    assert [code for code, _ in found] == ["22003"], found
    assert "out of range" in found[0][1] and len(found[0][1]) < 200
    still_usable(raw)


def test_f2_a_placeholder_of_5000_digits_is_42601(served):
    raw = session(served)
    for sql in ("SELECT COUNT(*) FROM PUMS.PUMS WHERE age > $" + "9" * 5000,
                "SELECT $" + "9" * 5000 + " FROM pg_class"):
        found = extended(raw, sql, [20], [b"1"])
        assert [code for code, _ in found] == ["42601"], found
        assert "parameter number too large" in found[0][1]
        found = simple(raw, sql)
        assert [code for code, _ in found] == ["42601"], found
        still_usable(raw)
    found = extended(raw, "SELECT COUNT(*) FROM PUMS.PUMS WHERE age > $\u00b2", [], [])
    assert [code for code, _ in found] == ["42601"], found
    still_usable(raw)


def test_f2_a_5000_digit_limit_offset_or_position_is_42601(served):
    raw = session(served)
    big = "9" * 5000
    for sql in (f"SELECT COUNT(*) FROM PUMS.PUMS LIMIT {big}",
                f"SELECT COUNT(*) FROM PUMS.PUMS OFFSET {big}",
                f"SELECT sex, COUNT(*) FROM PUMS.PUMS GROUP BY sex ORDER BY {big}",
                f"SELECT sex, COUNT(*) FROM PUMS.PUMS GROUP BY {big}"):
        found = simple(raw, sql)
        assert [code for code, _ in found] == ["42601"], found
        assert "5,000 digits" in found[0][1]
    still_usable(raw)


# ---------------------------------------------------------------- F3

def test_f3_rho_with_a_delta_that_converts_to_epsilon_0_is_refused_at_set(served):
    before = spent(served.deployment, "alice")
    with psycopg.connect(served.dsn("alice"), autocommit=True) as con:
        con.execute("SET dpsql.rho = 0.2")
        with pytest.raises(psycopg.Error) as refused:
            con.execute("SET dpsql.delta = 0.5")
        assert refused.value.sqlstate == "22023"
        assert "epsilon 0" in str(refused.value) and "delta" in str(refused.value)
        assert con.execute("SHOW dpsql.rho").fetchone() == ("0.2",)   # the session goes on
    assert spent(served.deployment, "alice") == before
    with pytest.raises(dpsql.ProgrammingError, match="below the smallest per-query epsilon"):
        dpsql.Privacy(rho=0.2, delta=0.5)


# ---------------------------------------------------------------- F5

PYTHON_WORDS = ("Decimal", "datetime", "astimezone", "tzinfo", "None", "of type", "COMMAND",
                "DuckDB", "Python", "float")


def test_f5_messages_name_no_python_type_or_engine(served):
    raw = session(served)
    sql = "SELECT COUNT(*) FROM PUMS.PUMS WHERE age > $1"
    found = extended(raw, sql, [1700], [b"1" * 2000])
    found += extended(raw, sql, [1114], [b"2020-01-01T00:00:00+14:00"])
    found += extended(raw, sql, [701], [b"NaN"])
    for statement in ("VACUUM", "CALL x()", "PREPARE p AS SELECT 1",
                      "SELECT COUNT(*) FROM PUMS.PUMS WHERE", "SELECT COUNT(*) FROM PUMS.PUMS )"):
        found += simple(raw, statement)
    assert len(found) == 8, found
    for code, message in found:
        assert code != "XX000"
        assert not [w for w in PYTHON_WORDS if w in message], message
    assert "this statement is VACUUM" in found[3][1]
    assert "time zone" in found[1][1]


# ---------------------------------------------------------------- F6

def test_f6_audit_keeps_4096_characters_of_a_long_statement(served):
    sql = "SELECT 1 --" + "x" * 90_000
    with psycopg.connect(served.dsn("alice"), autocommit=True) as con:
        assert con.execute(sql).fetchone() == (1,)
    with open(served.deployment.audit_log) as f:
        records = [json.loads(line) for line in f]
    record = [r for r in records if r["sql"].startswith("SELECT 1 --xxx")][-1]
    assert record["sql"] == sql[:4096]
    assert record["sql_chars"] == len(sql)
    assert record["sql_sha256"] == hashlib.sha256(sql.encode()).hexdigest()
    assert all(k in record for k in ("time", "analyst", "client", "epsilon", "delta",
                                     "outcome", "sqlstate"))


# ---------------------------------------------------------------- F7

ORDER_BY_CONSTANT = "SELECT race, COUNT(*) FROM PUMS.PUMS GROUP BY race ORDER BY 1=1"


def test_f7_post_processing_failure_in_sql_words_free(served):
    before = spent(served.deployment, "alice")
    with psycopg.connect(served.dsn("alice"), autocommit=True) as con:
        with pytest.raises(psycopg.Error) as refused:
            con.execute(ORDER_BY_CONSTANT)
    message = str(refused.value)
    assert "ORDER BY a constant (" in message and "has no effect" in message
    assert "Binder" not in message and "post-processing" not in message
    assert spent(served.deployment, "alice") == before
    with open(served.deployment.audit_log) as f:
        record = [json.loads(line) for line in f][-1]
    assert record["sql"] == ORDER_BY_CONSTANT and record["epsilon"] is None
    assert "Binder Error" in record.get("detail", "")


def test_f7_in_process_too():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reader = dpsql.from_df(pd.read_csv(DATA / "PUMS.csv"), metadata=str(DATA / "PUMS.yaml"),
                               privacy=dpsql.Privacy(epsilon=1.0))
        with pytest.raises(dpsql.QueryError) as refused:
            reader.execute_df(ORDER_BY_CONSTANT)
    assert "Binder" not in str(refused.value)
    assert "ORDER BY a constant (" in str(refused.value)
    assert reader.spent[0] == 0
