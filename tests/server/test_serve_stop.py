"""Stopping ``dpsql serve`` (SIGTERM) while statements run: each is cancelled, as in
PostgreSQL's fast shutdown, and the stop is bounded even by a statement that never ends.
(A clean-clone CI run once saw a server that had not exited 30 s after its SIGTERM.)"""
import asyncio
import logging
import signal
import threading
import time

import psycopg

from dpsql.server import listener
from tests.server.serving import Process, Served, spent
from tests.server.test_serve_review11 import SLOW_RELEASE, _deployment, _run


def test_sigterm_cancels_a_release_in_progress_and_the_server_exits_at_once(tmp_path):
    """A release of 10-30 s of noise (after its charge): the server used to let it run to
    its end after a SIGTERM (its client already gone), and exit only then."""
    server = Process(_deployment(tmp_path, statement_timeout_s=60))
    outcome = {}
    asking = threading.Thread(target=lambda: outcome.update(
        state=_run(server, "alice", SLOW_RELEASE)[0]))
    asking.start()
    try:
        time.sleep(2.0)                     # planned (0.3 s) and charged: noise under way
        start = time.monotonic()
        server.proc.send_signal(signal.SIGTERM)
        code = server.proc.wait(30)
        took = time.monotonic() - start
    finally:
        server.stop()
        asking.join(30)
    assert code == 0, server.proc.stderr.read()
    assert took < 5.0, took
    assert outcome["state"] != "00000", outcome        # its client was told nothing released
    assert spent(server.deployment, "alice") == 1000   # charged, as any cancelled release


def test_a_statement_that_never_ends_is_left_behind_and_logged(tmp_path, monkeypatch, caplog):
    """The stop waits STOP_WAIT_S for the workers' statements, then leaves what still runs
    (``stuck``, its stack in the owner's log): the interpreter would otherwise wait for the
    worker thread forever. The statement here is a worker waiting on an event that the
    test sets only after the stop."""
    monkeypatch.setattr(listener, "STOP_WAIT_S", 1.0)
    served = Served(_deployment(tmp_path))
    never = threading.Event()
    asyncio.run_coroutine_threadsafe(_submit(served.server, never.wait), served.loop).result(5)
    try:
        with psycopg.connect(served.dsn("bob"), autocommit=True) as con:
            assert con.execute("SELECT 1 AS one").fetchone() == (1,)
        start = time.monotonic()
        with caplog.at_level(logging.ERROR, logger="dpsql.server"):
            served.stop()
        took = time.monotonic() - start
    finally:
        never.set()
    assert 1.0 <= took < 5.0, took
    assert served.server.stuck == 1
    said = " ".join(r.getMessage() for r in caplog.records)
    assert "1 statement(s) still running" in said and "dpsql-worker" in said, said
    assert "wait" in said                      # the stuck worker's stack: Event.wait


async def _submit(server, function):
    server._submit(function)


def test_an_engine_stop_that_blocks_never_holds_the_caller():
    """A statement's cancel runs its engine's stop (PostgreSQL's cancel request opens a
    connection; Spark's is a call into its JVM), and the server's stop and cancel requests
    call it from the event loop: it ran there, so an engine that did not answer held the
    loop, and every analyst, and the stop's own deadline (the review of the bounded stop,
    F3). It runs in a thread of the statement's own now, and is still called."""
    from dpsql.server.deadline import Watch
    called, release = threading.Event(), threading.Event()

    def blocking_stop():
        called.set()
        release.wait(10)

    watch = Watch(30).start()
    try:
        watch.engine(blocking_stop)
        start = time.monotonic()
        watch.fire("cancel")
        assert time.monotonic() - start < 0.5
        assert called.wait(5)                  # the engine was still told to stop
        assert watch.reason == "cancel"
    finally:
        release.set()
        watch.close()
