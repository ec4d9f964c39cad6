"""Transactions through the wire as PostgreSQL runs them (twelfth review of issue 33, its
open points): a failed statement aborts the transaction until ROLLBACK or ROLLBACK TO
SAVEPOINT (25P02, status 'E'); ROLLBACK TO SAVEPOINT undoes the SETs after it; SET
TRANSACTION and SET SESSION CHARACTERISTICS are answered; a NULL float is NULL, not NaN.

The same script runs on a real PostgreSQL and on dpsql serve, and each statement must give
the same SQLSTATE, the same transaction status and the same SHOW value on both. Each test
failed on the code before its fix."""
import math

import psycopg
import pytest

import dpsql
from psycopg.pq import TransactionStatus

from tests.server.serving import Served, spent, write_deployment

SCRIPT = [
    "SET application_name = 'before'",
    "COMMIT",                                   # WARNING 25P01, no transaction
    "BEGIN",
    "BEGIN",                                    # WARNING 25001
    "SET application_name = 'a'",
    "SAVEPOINT s1",
    "SET application_name = 'b'",
    "SAVEPOINT s2",
    "SET LOCAL application_name = 'c'",
    "SHOW application_name",
    "ROLLBACK TO SAVEPOINT s2",
    "SHOW application_name",                    # b
    "ROLLBACK TO s1",
    "SHOW application_name",                    # a
    "ROLLBACK TO s2",                           # 3B001: s2 ended with the rollback to s1
    "SHOW application_name",                    # 25P02: aborted
    "SET application_name = 'x'",               # 25P02
    "RELEASE s1",                               # 25P02
    "ROLLBACK TO SAVEPOINT s1",                 # recovers
    "SHOW application_name",                    # a
    "RELEASE SAVEPOINT s1",
    "ROLLBACK TO s1",                           # 3B001
    "COMMIT",                                   # of an aborted transaction: ROLLBACK
    "SHOW application_name",                    # before
    "SAVEPOINT outside",                        # 25P01
    "ROLLBACK TO outside",                      # 25P01
    "RELEASE outside",                          # 25P01
    "SET TRANSACTION ISOLATION LEVEL SERIALIZABLE",     # WARNING 25P01 outside a block
    "BEGIN",
    "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY, NOT DEFERRABLE",
    "SHOW transaction_isolation",
    "SHOW transaction isolation level",
    "COMMIT",
    "SHOW transaction_isolation",
    "SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL SERIALIZABLE",
    "SHOW default_transaction_isolation",
    "SHOW transaction_isolation",               # the default, outside a transaction
    "SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY",
    "SET TRANSACTION BANANA",                   # 42601
    "BEGIN ISOLATION LEVEL SERIALIZABLE, READ ONLY",
    "SHOW transaction_isolation",               # serializable
    "COMMIT",
    "BEGIN ISOLATION LEVEL BANANA",             # 42601
    "BEGIN",
    "SAVEPOINT \"Quoted Name\"",
    "ROLLBACK TO \"Quoted Name\"",
    "ROLLBACK TO quoted_name",                  # 3B001
    "ROLLBACK",
    # fourteenth review: quoted setting values were kept with their quotes
    "SET application_name = $$dollar quoted$$",
    "SHOW application_name",
    "SET application_name = $q$tagged 'q'$q$",
    "SHOW application_name",
    "SET application_name = E'tab\\there \\x41 \\u00e9 it\\'s'",
    "SHOW application_name",
    "SET application_name = 'it''s'",
    "SHOW application_name",
    "SET application_name TO plain_word",
    "SHOW application_name",
    "SHOW application_name /* a /* nested */ comment */",
    # fourteenth review: pg_settings and current_setting() showed the defaults
    "SELECT setting FROM pg_settings WHERE name = 'application_name'",
    "SELECT current_setting('application_name')",
    "BEGIN ISOLATION LEVEL SERIALIZABLE",
    "SELECT setting FROM pg_settings WHERE name = 'transaction_isolation'",
    "ROLLBACK",
    "SELECT setting FROM pg_settings WHERE name = 'transaction_isolation'",
    # sixteenth review: SET ... TO DEFAULT, an unterminated nested comment
    "SET application_name TO DEFAULT",
    "SHOW application_name",
    "SELECT 1 /* a /* b */",                    # 42601
    # review 43, F3: a session's timeouts were echoed by SHOW and nothing else
    "SHOW statement_timeout",
    "SET statement_timeout = 100",
    "SHOW statement_timeout",
    "SELECT current_setting('statement_timeout')",
    "SET statement_timeout = '2s'",
    "SHOW statement_timeout",
    "SET statement_timeout TO '60000'",
    "SHOW statement_timeout",
    "SET statement_timeout = '1.5s'",
    "SHOW statement_timeout",
    "SET statement_timeout = 'banana'",         # 22023
    "SET statement_timeout = '-1'",             # 22023
    "SET lock_timeout = '3s'",
    "SHOW lock_timeout",
    "RESET statement_timeout",
    "SHOW statement_timeout",
    "SET idle_in_transaction_session_timeout = '1min'",
    "SHOW idle_in_transaction_session_timeout",
]


def _outcome(con, sql: str) -> tuple:
    try:
        cur = con.execute(sql)
        rows = cur.fetchall() if cur.description else None
        state = "00000"
    except psycopg.Error as err:
        state, rows = err.sqlstate, None
    return sql, state, rows, con.info.transaction_status.name


def _run_script(con) -> list:
    return [_outcome(con, sql) for sql in SCRIPT]


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    server = Served(write_deployment(tmp_path_factory.mktemp("transactions")))
    yield server
    server.stop()


def test_a_transaction_script_runs_as_on_postgresql(served, postgres):
    with postgres.connect(autocommit=True) as pg:
        pg.execute("SET default_transaction_read_only = on")   # as dpsql serve is
        want = _run_script(pg)
    with psycopg.connect(served.dsn(), autocommit=True) as con:
        got = _run_script(con)
    assert got == want
    assert any(state == "25P02" for _, state, _, _ in got)      # the script reaches each case
    assert any(status == "INERROR" for *_, status in got)


SLOW = "SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE age > {} AND (" + " OR ".join(
    f"age + {i} = {i + 40}" for i in range(100)) + ")"
"""A statement that plans for about 0.15 s (a timer of 1 ms may fire up to Python's thread
switch interval, 5 ms, late: a statement of a few ms could finish first)."""


def test_a_sessions_shorter_statement_timeout_applies(served):
    """Review 43, F3: SET statement_timeout was accepted and had no effect. A session's own
    timeout shorter than the owner's stops its statements (57014); 0 or RESET leaves the
    owner's."""
    sql = "SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE age > {}"    # fresh: never a replay
    slow = SLOW                     # plans for about 0.15 s: a 50 ms timer fires in it
    with psycopg.connect(served.dsn(), autocommit=True) as con:
        con.execute("SET dpsql.epsilon = 0.01")        # the module's statements share a budget
        con.execute("SET statement_timeout = 50")      # the SET and RESET after it fit
        with pytest.raises(psycopg.errors.QueryCanceled):
            con.execute(slow.format(-31))
        con.execute("SET statement_timeout = 0")
        assert con.execute(sql.format(-32)).fetchone()[0] > 0
        con.execute("SET statement_timeout = '50ms'")
        with pytest.raises(psycopg.errors.QueryCanceled):
            con.execute(slow.format(-33))
        con.execute("RESET statement_timeout")
        assert con.execute(sql.format(-34)).fetchone()[0] > 0


@pytest.mark.parametrize("options, name, shown", [
    ("-c statement_timeout=2s", "statement_timeout", "2s"),
    ("-cstatement_timeout=250", "statement_timeout", "250ms"),
    ("--statement-timeout=1min", "statement_timeout", "1min"),
    ("-c application_name=two\\ words -c lock_timeout=3s", "application_name", "two words"),
    ("-c dpsql.epsilon=0.25", "dpsql.epsilon", "0.25"),
])
def test_startup_options_are_applied_as_sets(served, options, name, shown):
    """Review 44, F1: the startup packet's options (libpq's PGOPTIONS, a DSN's options=)
    were ignored, so a client's own statement_timeout given there never applied."""
    with psycopg.connect(served.dsn(), options=options, autocommit=True) as con:
        assert con.execute(f"SHOW {name}").fetchone()[0] == shown


@pytest.mark.parametrize("options, said", [
    ("-c statement_timeout=abc", "invalid value for parameter"),
    ("-c statement_timeout=-1", "invalid value for parameter"),
    ("-c no_such_setting=1", "unrecognized configuration parameter"),
    ("-c dpsql.epsilon=-1", "must be a positive number"),
    ("-x", "invalid command-line argument"),
])
def test_startup_options_that_set_cannot_take_are_refused(served, options, said):
    with pytest.raises(psycopg.OperationalError, match=said):
        psycopg.connect(served.dsn(), options=options)


def test_a_startup_statement_timeout_applies(served):
    with psycopg.connect(served.dsn(), options="-c statement_timeout=1 -c dpsql.epsilon=0.01",
                         autocommit=True) as con:
        with pytest.raises(psycopg.errors.QueryCanceled):
            con.execute(SLOW.format(-35))


def test_read_write_is_refused_as_by_a_read_only_server(served):
    with psycopg.connect(served.dsn(), autocommit=True) as con:
        for sql, state in (("START TRANSACTION READ WRITE", "25006"),     # as a standby
                           ("COMMIT PREPARED 'x'", "55000"), ("PREPARE TRANSACTION 'x'", "55000"),
                           ("SET application_name = '" + "x" * 2000 + "'", "22023")):
            with pytest.raises(psycopg.Error) as caught:       # review 14
                con.execute(sql)
            assert caught.value.sqlstate == state, sql
        con.execute("BEGIN")
        with pytest.raises(psycopg.Error) as caught:
            con.execute("SET TRANSACTION READ WRITE")
        assert caught.value.sqlstate == "25006"
        assert con.info.transaction_status == TransactionStatus.INERROR


def test_a_refused_query_aborts_its_transaction_and_the_rest_costs_nothing(served):
    before = spent(served.deployment, "alice")
    with psycopg.connect(served.dsn()) as con:       # not autocommit: psycopg sends BEGIN
        with pytest.raises(psycopg.Error) as caught:
            con.execute("SELECT SUM(nonexistent) AS s FROM PUMS.PUMS")
        assert caught.value.sqlstate.startswith("42")
        for sql in ("SELECT COUNT(*) AS n FROM PUMS.PUMS", "SELECT 1", "SHOW dpsql.spent"):
            with pytest.raises(psycopg.Error) as caught:
                con.execute(sql)
            assert caught.value.sqlstate == "25P02"
        con.rollback()
        assert con.execute("SELECT COUNT(*) AS n FROM PUMS.PUMS").fetchall()[0][0] > 0
    assert spent(served.deployment, "alice") > before      # the one query after the rollback


def test_a_null_float_arrives_as_null(served):
    with psycopg.connect(served.dsn(), autocommit=True) as con:
        con.execute("SET dpsql.epsilon = 1")
        rows = con.execute(
            "SELECT sex, CASE WHEN sex = '1' THEN AVG(income) END AS a FROM PUMS.PUMS "
            "GROUP BY sex ORDER BY sex").fetchall()
    value = dict(rows)
    assert value["0"] is None
    assert isinstance(value["1"], float) and not math.isnan(value["1"])


def test_describe_of_a_statement_counts_its_parameters(served):
    """Thirteenth review: Describe (statement) listed only the parameter types the client
    declared at Parse, usually none, so asyncpg refused to pass any (it reads the count)."""
    import struct

    from tests.server.serving import PASSWORDS
    from tests.server.test_serve_attacks import SYNC, Raw, frame, parse

    def described(sql, types=()):
        raw.send(parse(sql, types), frame(b"D", b"S\0"), SYNC)
        payload = next(body for kind, body in raw.until(b"Z") if kind == b"t")
        count = struct.unpack("!h", payload[:2])[0]
        return list(struct.unpack(f"!{count}i", payload[2:]))

    raw = Raw(served)
    try:
        raw.login("alice", PASSWORDS["alice"])
        sql = "SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE age > $1 AND sex = $2"
        assert described(sql) == [25, 25]                                   # text
        assert described("SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE age > $1", [20]) == [20]
    finally:
        raw.s.close()


@pytest.mark.parametrize("sql, statements", [
    ("select 1; select $$a;b$$; select 2", ["select 1", "select $$a;b$$", "select 2"]),
    ("select $x$ a;$$;b $x$ ; select 4", ["select $x$ a;$$;b $x$", "select 4"]),
    ("select E'a\\';b'; select 3", ["select E'a\\';b'", "select 3"]),
    ("select a$b$c; select 5", ["select a$b$c", "select 5"]),
    ("select $1; select $2", ["select $1", "select $2"]),
    # fourteenth review: PostgreSQL nests block comments
    ("select 1 /* a /* b */ ; */; select 2", ["select 1 /* a /* b */ ; */", "select 2"]),
    ("/* x /* y */ ; */ select 6", ["/* x /* y */ ; */ select 6"]),
])
def test_statements_split_outside_dollar_quoted_and_escape_strings(sql, statements):
    """Thirteenth review: a ``;`` inside ``$$...$$`` or ``E'...\\'...'`` split the statement."""
    from dpsql.server.queries import qmark
    from dpsql.server.statements import split_statements
    assert split_statements(sql) == statements
    assert qmark("select $1, $$ $2 $$, $1", [5]) == ("select ?, $$ $2 $$, ?", [5, 5])
    assert qmark("select $1 /* $2 /* $3 */ $4 */", [5]) == ("select ? /* $2 /* $3 */ $4 */", [5])
    with pytest.raises(dpsql.QueryError, match="unterminated"):     # sixteenth review
        split_statements("select 7 /* unclosed /* */ ; select 8")


def test_the_session_privacy_is_shown_before_any_set(served):
    """Sixteenth review: SHOW dpsql.epsilon said "unrecognized" until the analyst SET it."""
    with psycopg.connect(served.dsn(), autocommit=True) as con:
        epsilon = con.execute("SHOW dpsql.epsilon").fetchone()[0]
        assert float(epsilon) > 0 and con.execute("SHOW dpsql.delta").fetchone()[0] != ""
        con.execute("SET dpsql.epsilon = 0.125")
        assert con.execute("SHOW dpsql.epsilon").fetchone() == ("0.125",)
        shown = ("SELECT setting FROM pg_settings WHERE name = 'dpsql.epsilon' UNION ALL "
                 "SELECT current_setting('dpsql.epsilon')")
        assert con.execute(shown).fetchall() == [("0.125",), ("0.125",)]    # seventeenth review
        con.execute("SET dpsql.epsilon TO DEFAULT")
        assert con.execute("SHOW dpsql.epsilon").fetchone() == (epsilon,)
        assert con.execute(shown).fetchall() == [(epsilon,), (epsilon,)]
        for value in ("1_0", "'infinity'", "0x1", "1e999", "'١'", "'0.５'"):   # PostgreSQL's only
            with pytest.raises(psycopg.Error) as caught:
                con.execute(f"SET dpsql.epsilon TO {value}")
            assert caught.value.sqlstate in ("22023", "42601"), value
        with pytest.raises(psycopg.Error, match='unrecognized configuration parameter "no.such"'):
            con.execute("SELECT current_setting('no.such')")


def test_a_dollar_quoted_string_is_named_as_written(served):
    with psycopg.connect(served.dsn(), autocommit=True) as con:
        with pytest.raises(psycopg.Error) as caught:
            con.execute("SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE educ = $$a;b$$; SELECT 1")
    assert "dollar-quoted string" in str(caught.value) and "RAWSTRING" not in str(caught.value)


@pytest.mark.parametrize("minor, options", [(2, []), (1, ["_pq_.test_option"]), (0, ["_pq_.x"])])
def test_a_newer_minor_protocol_version_is_negotiated_down(served, minor, options):
    """Thirteenth review: a client asking for protocol 3.2 (libpq 18 with
    max_protocol_version=latest) was refused; PostgreSQL answers NegotiateProtocolVersion
    (3.0 and the options it does not know), then authenticates."""
    import struct

    from tests.server.test_serve_attacks import Raw, cstr
    raw = Raw(served)
    try:
        body = struct.pack("!i", (3 << 16) | minor) + cstr("user") + cstr("alice")
        body += b"".join(cstr(o) + cstr("on") for o in options) + b"\0"
        raw.s.sendall(struct.pack("!i", len(body) + 4) + body)
        kind, payload = raw.recv()
        assert kind == b"v"
        newest, count = struct.unpack("!ii", payload[:8])
        assert newest == 0 and count == len(options)
        assert payload[8:].split(b"\0")[:count] == [o.encode() for o in options]
        assert raw.recv()[0] == b"R"                                   # then SCRAM, as usual
    finally:
        raw.s.close()


def test_a_plain_3_0_startup_gets_no_negotiation(served):
    from tests.server.test_serve_attacks import Raw
    raw = Raw(served)
    try:
        raw.startup("alice")
        assert raw.recv()[0] == b"R"
    finally:
        raw.s.close()


def test_a_null_text_key_arrives_as_null(served):
    """Fourteenth review: pandas' missing text (NaN) was sent as the text 'NaN'."""
    with psycopg.connect(served.dsn(), autocommit=True) as con:
        con.execute("SET dpsql.epsilon = 1")
        rows = con.execute("SELECT NULLIF(sex, '1') AS k, COUNT(*) AS n FROM PUMS.PUMS "
                           "GROUP BY NULLIF(sex, '1')").fetchall()
    assert sorted(k is None for k, _ in rows) == [False, True]
    assert "NaN" not in [k for k, _ in rows]


@pytest.mark.parametrize("sql", ["SELECT 1/0", "SELECT 0/0", "SELECT 1.0/0.0", "SELECT 5 % 0"])
def test_a_catalog_division_by_zero_is_22012_as_on_postgresql(served, postgres, sql):
    """Fourteenth review: queries without FROM answered 1/0 as Infinity and 0/0 as NaN."""
    states = []
    for connect in (lambda: postgres.connect(autocommit=True),
                    lambda: psycopg.connect(served.dsn(), autocommit=True)):
        with connect() as con:
            states.append(_outcome(con, sql)[1])
    assert states == ["22012", "22012"]
