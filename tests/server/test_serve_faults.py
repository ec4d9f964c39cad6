"""dpsql serve under load and faults: TLS, cancel, timeout, 50 concurrent sessions, a
SIGKILL mid-query, and a client sending random protocol messages."""
from __future__ import annotations

import os
import random
import signal
import socket
import struct
import threading
import time

import duckdb
import psycopg
import pytest
import yaml

from dpsql.server.scram import make_verifier
from tests.server.serving import PASSWORDS, Process, Served, spent, write_deployment

BIG_ROWS = 20_000_000
BIG_META = {"big": {"big": {"t": {"max_ids": 2, "pid": {"type": "int", "private_id": True},
                                   "x": {"type": "int", "lower": 0, "upper": 100}}}}}
SLOW = "SELECT COUNT(*) AS n, AVG(x) AS a FROM big.t"


def big_deployment(where, **overrides) -> str:
    """A deployment over BIG_ROWS rows of about three per person (queries take seconds)."""
    os.makedirs(where, exist_ok=True)
    data = os.path.join(where, "big.parquet")
    duckdb.execute(f"COPY (SELECT range // 3 AS pid, (random() * 100)::BIGINT AS x "
                   f"FROM range({BIG_ROWS})) TO '{data}'")
    with open(os.path.join(where, "big.yaml"), "w") as f:
        yaml.safe_dump(BIG_META, f)
    overrides.setdefault("limits", {"statement_timeout_s": 60, "workers": 4})
    return write_deployment(where, metadata="big.yaml", tables={"big.t": "big.parquet"},
                            **overrides)


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    served = Process(big_deployment(tmp_path_factory.mktemp("big")))
    try:
        yield served
    finally:
        served.stop()


def test_tls_is_required_on_tcp(tmp_path):
    served = Served(write_deployment(tmp_path, tls=True))
    try:
        tcp = dict(host="127.0.0.1", port=served.port, user="alice", password=PASSWORDS["alice"],
                   dbname="dpsql")
        with pytest.raises(psycopg.OperationalError, match="requires TLS"):
            psycopg.connect(**tcp, sslmode="disable")
        with psycopg.connect(**tcp, sslmode="require", autocommit=True) as con:
            assert con.info.pgconn.ssl_in_use
            assert con.execute("SELECT COUNT(*) FROM PUMS.PUMS").fetchone()[0] > 900
    finally:
        served.stop()


def test_cancel_interrupts_and_the_session_goes_on(big):
    with psycopg.connect(big.dsn(), autocommit=True) as con:
        con.execute("SET dpsql.epsilon = 0.01")
        con.execute("SELECT COUNT(*) FROM big.t WHERE x < 0")        # planned once, fast
        before = spent(big.deployment, "alice")
        timer = threading.Timer(0.3, con.cancel)
        timer.start()
        start = time.monotonic()
        with pytest.raises(psycopg.errors.QueryCanceled):
            con.execute(SLOW)
        assert time.monotonic() - start < 5
        # It reached the data: charged, whether or not it would have finished.
        assert spent(big.deployment, "alice") == pytest.approx(before + 0.01)
        assert con.execute("SHOW dpsql.budget").fetchone()[0].startswith("epsilon=3")


def test_statement_timeout(tmp_path):
    served = Served(big_deployment(tmp_path, limits={"statement_timeout_s": 0.3}))
    try:
        with psycopg.connect(served.dsn(), autocommit=True) as con:
            con.execute("SET dpsql.epsilon = 0.01")
            with pytest.raises(psycopg.errors.QueryCanceled, match="statement timeout"):
                con.execute(SLOW)
            assert con.execute("SELECT 1").fetchone()[0] == 1
    finally:
        served.stop()


def test_fifty_concurrent_sessions_account_exactly(tmp_path):
    """10 analysts x 5 sessions, each firing queries at 0.05 until refused: every pool ends
    full or below its budget, and each ledger equals what its sessions were told."""
    analysts = {f"a{i}": {"password": make_verifier("pw"), "budget": {"epsilon": 1.0}}
                for i in range(10)}
    served = Served(write_deployment(tmp_path, analysts=analysts,
                                     limits={"workers": 4, "max_sessions": 64}))
    told = {name: [] for name in analysts}
    unexpected: list = []
    lock = threading.Lock()

    def session(name: str, k: int) -> None:
        with psycopg.connect(served.dsn(name, "pw"), autocommit=True) as con:
            con.execute("SET dpsql.epsilon = 0.05")
            for i in range(40):
                try:
                    con.execute(f"SELECT COUNT(*) FROM PUMS.PUMS WHERE age > {k * 40 + i}")
                except psycopg.errors.ConfigurationLimitExceeded:     # 53400: budget spent
                    return
                except psycopg.Error as err:
                    with lock:
                        unexpected.append(err)
                    return
                with lock:
                    told[name].append(0.05)

    try:
        threads = [threading.Thread(target=session, args=(n, k)) for n in analysts for k in range(5)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        assert not unexpected
        for name in analysts:
            ledger = spent(served.deployment, name)
            assert ledger == pytest.approx(sum(told[name]))
            assert ledger <= 1.0 + 1e-9 and len(told[name]) == 20      # 20 x 0.05 = the budget
    finally:
        served.stop()


def test_sigkill_mid_query_loses_nothing_and_counts_nothing_twice(tmp_path):
    path = big_deployment(tmp_path)
    served = Process(path)
    try:
        with psycopg.connect(served.dsn(), autocommit=True) as con:
            con.execute("SET dpsql.epsilon = 0.1")
            con.execute("SELECT COUNT(*) FROM big.t WHERE x < 0")
        told = 0.1
        with psycopg.connect(served.dsn(), autocommit=True) as con:
            con.execute("SET dpsql.epsilon = 0.2")
            threading.Timer(0.5, served.kill).start()
            with pytest.raises(psycopg.OperationalError):
                con.execute(SLOW)
    finally:
        served.kill()
    after_kill = spent(served.deployment, "alice")
    # The answered query is on disk; the killed one is charged or not, never twice.
    assert after_kill in (pytest.approx(told), pytest.approx(told + 0.2))
    served = Process(path)
    try:
        with psycopg.connect(served.dsn(), autocommit=True) as con:
            shown = con.execute("SHOW dpsql.spent").fetchone()[0]
            assert shown.startswith(f"epsilon={after_kill:.6g}")
            con.execute("SET dpsql.epsilon = 0.1")
            con.execute("SELECT COUNT(*) FROM big.t WHERE x > 50")
        assert spent(served.deployment, "alice") == pytest.approx(after_kill + 0.1)
    finally:
        served.stop()


def test_ctrl_c_stops_the_server_after_its_query_is_recorded(tmp_path):
    """SIGINT (Ctrl-C in the terminal running `dpsql serve`) ends it with 130, one line,
    no traceback, and the ledger holds what was answered."""
    served = Process(write_deployment(tmp_path))
    try:
        with psycopg.connect(served.dsn(), autocommit=True) as con:
            con.execute("SET dpsql.epsilon = 0.25")
            con.execute("SELECT COUNT(*) FROM PUMS.PUMS")
        served.proc.send_signal(signal.SIGINT)
        code = served.proc.wait(30)
        err = served.proc.stderr.read()
    finally:
        served.kill()
    assert code == 130 and "Traceback" not in err and err.endswith("dpsql: interrupted\n"), (
        code, err)
    assert spent(served.deployment, "alice") == pytest.approx(0.25)


def _garbage(rng: random.Random) -> bytes:
    kind = rng.choice(b"QPBDESCHXpdcfF?\x00Z")
    body = bytes(rng.getrandbits(8) for _ in range(rng.randrange(0, 64)))
    length = rng.choice([len(body) + 4, rng.randrange(0, 2 ** 31), 3, len(body)])
    return bytes([kind]) + struct.pack("!I", length % 2 ** 32) + body


def test_random_protocol_messages_never_stop_the_server(tmp_path):
    served = Served(write_deployment(tmp_path))
    rng = random.Random(7)
    path = os.path.join(served.socket_dir, ".s.PGSQL.5432")
    try:
        with psycopg.connect(served.dsn("bob"), autocommit=True) as other:
            deadline = time.monotonic() + 4
            sent = 0
            while time.monotonic() < deadline:
                with socket.socket(socket.AF_UNIX) as s:
                    s.settimeout(2)
                    s.connect(path)
                    if rng.random() < 0.5:       # a valid startup first, then garbage
                        params = b"user\x00alice\x00database\x00dpsql\x00\x00"
                        s.sendall(struct.pack("!II", len(params) + 8, 196608) + params)
                    else:
                        s.sendall(struct.pack("!I", rng.randrange(0, 2 ** 32)) + rng.randbytes(20))
                    try:
                        for _ in range(rng.randrange(1, 5)):
                            s.sendall(_garbage(rng))
                        s.recv(4096)
                    except OSError:
                        pass
                sent += 1
            assert sent > 20
            assert other.execute("SHOW dpsql.budget").fetchone()[0] == "epsilon=0.5, delta=1e-06"
        with psycopg.connect(served.dsn(), autocommit=True) as con:
            assert con.execute("SELECT 1").fetchone()[0] == 1
    finally:
        served.stop()
