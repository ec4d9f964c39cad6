"""The server: listening sockets, TLS, limits, the worker pool and cancel keys.

Owns: what is shared by all connections of one ``dpsql serve`` process. Statements
run on a bounded thread pool (the engines release the GIL while they work), so one
slow query never stalls the protocol of the others; sessions are limited in total and
per analyst; a cancel request needs the right (pid, secret) pair. Nothing a client
sends can stop the server: every connection's failure ends at that connection.
"""
from __future__ import annotations

import asyncio
import logging
import os
import secrets
import socket
import ssl
import sys
import threading
import time
import traceback
from concurrent.futures import ThreadPoolExecutor

from ..api import collector
from ..errors import OperationalError
from .accounts import Accounts
from .catalog import PARAMETERS, Catalog
from .config import Deployment
from .connection import Connection
from .queries import Runner
from .statements import ServerError
from .timeouts import statement_timeout

log = logging.getLogger("dpsql.server")
# Logged for the operator, never shown to the analyst: nothing reaches stderr unless
# the operator configures a handler of the "dpsql" logger.
logging.getLogger("dpsql").addHandler(logging.NullHandler())
logging.getLogger("sqlglot").setLevel(logging.ERROR)   # its parse warnings are not ours to print


BACKLOG = 100
"""Connections the kernel queues for accept (asyncio's default, stated). A local loop of
connects (1,900 a second, no credentials) keeps the unix socket's queue full whatever its
size (fourth review of issue 33, F3: docs/deployment.md). A queue of 4,096 was tried and
made things worse: the server then accepted a TCP flood faster than it could turn the
connections away (2,700 a second, 12,000-16,000 open descriptors, 430-490 MB), and no
analyst's connect got through during it (fifth review: 0 of 12, against 87 of 87 with
100)."""
MAX_KNOWN = 100
"""TCP addresses remembered per analyst as having authenticated (their most recent ones):
an analyst who logs in from 10,100 addresses cycles their own, never another's (eighth
review of issue 33: with one list for all, that pushed alice's address out)."""
STOP_WAIT_S = 10.0
"""How long a stopping server waits, from the stop's start, for its connections and their
statements, once it has cancelled them: a cancelled statement ends within a second
(docs/deployment.md); what still runs after this is left behind, and the process exits
without it."""
SWITCH_INTERVAL_S = 0.0005
"""How long a thread computing (a statement being planned) may hold the interpreter lock
while another waits for it (Python's default: 5 ms). The event loop takes the lock several
times per statement it answers, so with the default another analyst's ``SELECT 1`` waited
about 100 ms (median) while one analyst's free statements were planned (fourth review)."""


class Server:
    """One deployment served: ``await start()``, then ``await stop()``."""

    def __init__(self, deployment: Deployment) -> None:
        self.deployment = deployment
        self.accounts = Accounts(deployment)
        self.accounts.preload()
        self.catalog = Catalog(self.accounts.metadata)
        self.runner = Runner(deployment, self.accounts, self.catalog)
        self.pool = ThreadPoolExecutor(deployment.limits["workers"], "dpsql-worker")
        self.secret = _stable_secret(deployment)     # mock SCRAM verifiers of unknown users
        self.tls_context = _tls_context(deployment) if deployment.tls else None
        self.sessions: dict = {}                     # pid -> authenticated Connection
        self.pending: dict = {}                      # Connection -> address, before auth
        self.known: dict = {}                        # analyst -> their addresses (LRU)
        self.owners: dict = {}                       # address -> analysts it authenticated
        self.servers: list = []
        self.addresses: list = []
        self.running: set = set()                    # the workers' futures not yet done
        self.stuck = 0                               # statements left running by stop()
        self.stopping = False

    # -- lifecycle --------------------------------------------------------------------
    async def start(self) -> None:
        d = self.deployment
        sys.setswitchinterval(SWITCH_INTERVAL_S)
        collector.serving(True)      # no collector pass holding the lock for seconds
        if d.unix_socket is not None:
            path = os.path.join(d.unix_socket, f".s.PGSQL.{d.port}")
            _free_socket(path)
            server = await asyncio.start_unix_server(
                lambda r, w: self._accept(r, w, tcp=False), path=path, backlog=BACKLOG)
            os.chmod(path, 0o660)
            self.servers.append(server)
            self.addresses.append(path)
        if d.host is not None:
            server = await asyncio.start_server(lambda r, w: self._accept(r, w, tcp=True),
                                                host=d.host, port=d.port, backlog=BACKLOG)
            self.servers.append(server)
            self.addresses += [f"{s.getsockname()[0]}:{s.getsockname()[1]}"
                               for s in server.sockets]

    @property
    def port(self) -> int:
        """The TCP port listened on (useful with ``port: 0``)."""
        for server in self.servers:
            for sock in server.sockets:
                if sock.family in (2, 10):
                    return sock.getsockname()[1]
        return self.deployment.port

    async def stop(self) -> None:
        """Stop listening, cancel every session's statement (as PostgreSQL's fast shutdown:
        one planning stops at once, one reading data has its engine interrupted and is
        charged as any cancelled query), close the connections, and wait for them and
        their statements until STOP_WAIT_S after the stop began. What still runs then is
        left behind (``stuck``; the owner's log has its stack): the process exits without
        it, rather than an interpreter waiting for its worker forever."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + STOP_WAIT_S
        self.stopping = True
        for server in self.servers:
            server.close()
        connections = list(self.sessions.values()) + list(self.pending)
        for connection in list(self.sessions.values()):
            try:
                connection.stop_statement()     # the engine's own stop runs in a thread
            except Exception as err:   # noqa: BLE001 - the stop goes on; logged
                self.log_internal(err)
        tasks = [c.task for c in connections if getattr(c, "task", None)]
        for task in tasks:           # first: a handshake cut by its writer's close would end
            task.cancel()            # its task with an error no one retrieves (a traceback)
        lingering = await _ended(tasks, deadline - loop.time(), "connection(s)")
        for connection in connections:
            connection.writer.close()
        self.pool.shutdown(wait=False, cancel_futures=True)
        self.stuck = lingering + await _ended(list(self.running), deadline - loop.time(),
                                              "statement(s)")
        # Python 3.12's wait_closed waits for every connection the server accepted.
        await _ended([asyncio.ensure_future(s.wait_closed()) for s in self.servers],
                     max(0.1, deadline - loop.time()), "listener(s)", cancel=True)
        if not self.stuck:           # (a statement left running may hold its account's lock)
            self.accounts.close()
        self.runner.guard.stop()
        collector.serving(False)

    # -- connections ------------------------------------------------------------------
    async def _accept(self, reader, writer, tcp: bool) -> None:
        """A new connection: admitted to the unauthenticated pool, which has its own
        limits and never counts against analysts' sessions. When the pool is full, or
        an address's share of it, the oldest connection (of that address) makes room:
        a client that authenticates takes milliseconds, so silent sockets cannot keep
        analysts out, and one address cannot fill the pool. Of the connections that could
        make room, the least far in authentication goes (TLS done, startup sent, SCRAM
        begun: each step costs a client more), the oldest among equals."""
        if self.stopping:            # accepted while the server closed: not served
            writer.close()
            return
        peer = writer.get_extra_info("peername")
        client = f"{peer[0]}:{peer[1]}" if tcp and peer else "unix socket"
        address = peer[0] if tcp and peer else None
        limits = self.deployment.limits
        same = [c for c, a in self.pending.items() if a == address]
        if address is not None and len(same) >= limits["max_unauthenticated_per_address"]:
            self._evict(same)               # that address's least advanced makes room
        while len(self.pending) >= limits["max_unauthenticated"]:
            self._evict(list(self.pending))
        connection = Connection(self, reader, writer, client, tcp)
        connection.task = asyncio.current_task()
        self.pending[connection] = address
        try:
            await connection.serve()
        except asyncio.CancelledError:
            pass        # the server stops: ending quietly (asyncio 3.11 logs a cancelled one)
        finally:
            self.pending.pop(connection, None)

    def _evict(self, candidates: list) -> None:
        """Drop the connection of ``candidates`` longest without an authentication step
        (``Connection.progressed``: accepted, TLS done, startup sent, SCRAM begun). A client
        that is authenticating moves on within a round trip; a flood's connections stall,
        and their last step ages. Tried and measured against the reviews of issue 33 (bob's connects
        failed while another client, without credentials, flooded):
        the oldest connection first: 3-17% (a flood of fresh connections outlived an
        analyst in a slow TLS handshake); the least far in authentication first: 6-22%
        under 64 connections stalled at "SCRAM begun" (an unknown user gets a mock
        exchange), and 94% under a flood of TLS handshakes left hanging, both outranking
        an analyst still in TLS; this rule alone, 100% under a reconnect loop from 100
        addresses (seventh review). So a connection from an address that has authenticated
        before goes only when no other is left: a flood from new addresses churns only
        itself; among known addresses, the most crowded analyst's go first
        (``_crowding``)."""
        victim = max(candidates, key=self._crowding())
        self.pending.pop(victim, None)
        victim.drop()

    def _crowding(self):
        """The eviction order (highest goes first): a connection from an address no
        analyst has authenticated from; then one from the addresses of the analyst with
        the most connections waiting (eighth review: bob logged in from 100 addresses,
        then flooded from them without credentials, and alice's connects from her own
        address got through 4-7 of 41-55 times when every known address ranked alike);
        the one longest without an authentication step among equals. An address shared
        by several analysts counts for the least crowded of them."""
        waiting: dict = {}
        for address in self.pending.values():
            for analyst in self.owners.get(address, ()):
                waiting[analyst] = waiting.get(analyst, 0) + 1

        def rank(c):
            owners = self.owners.get(self.pending.get(c), ())
            if not owners:
                return (1, 0, -c.progressed)
            return (0, min(waiting.get(a, 0) for a in owners), -c.progressed)
        return rank

    def authenticated(self, connection, analyst: str) -> None:
        """``connection`` has authenticated as ``analyst``: it leaves the unauthenticated
        pool, and its address is one of that analyst's known ones from now on (their most
        recent MAX_KNOWN)."""
        address = self.pending.pop(connection, None)
        if address is None:
            return
        mine = self.known.setdefault(analyst, {})
        mine.pop(address, None)
        mine[address] = True
        self.owners.setdefault(address, set()).add(analyst)
        if len(mine) > MAX_KNOWN:
            gone = next(iter(mine))
            del mine[gone]
            self.owners[gone].discard(analyst)
            if not self.owners[gone]:
                del self.owners[gone]

    def new_key(self, connection) -> tuple:
        while True:
            pid, secret = secrets.randbelow(2 ** 31 - 1) + 1, secrets.randbelow(2 ** 31)
            if pid not in self.sessions:
                self.sessions[pid] = connection
                return pid, secret

    def forget(self, connection) -> None:
        if self.sessions.get(connection.pid) is connection:
            del self.sessions[connection.pid]

    def admit(self, connection, account) -> str | None:
        """Why ``account`` may not open one more session, or None if it may."""
        if account is None:
            return "no such analyst"
        limits = self.deployment.limits
        if len(self.sessions) >= limits["max_sessions"]:
            return "too many connections to dpsql serve; try again later"
        same = sum(1 for c in self.sessions.values()
                   if c.state is not None and c.state.account is account)
        if same >= limits["max_sessions_per_analyst"]:
            return f'too many connections for analyst "{account.analyst.name}"'
        return None

    def cancel(self, pid: int, secret: int) -> None:
        """A cancel request: stop that session's statement (waiting or running) if the
        key matches."""
        connection = self.sessions.get(pid)
        if connection is None or not secrets.compare_digest(
                secret.to_bytes(4, "big"), connection.secret.to_bytes(4, "big")):
            return
        connection.stop_statement()

    def parameters(self, user: str) -> dict:
        out = dict(PARAMETERS)
        out["session_authorization"] = user
        return out

    async def run(self, connection, sql: str, params):
        """Run one statement: it waits for its analyst's turn here, in the event loop
        (never in a worker), then runs in a worker under what is left of its timeout."""
        state = connection.state
        account = state.account
        limits = self.deployment.limits
        self._turn(account)
        loop = asyncio.get_running_loop()
        timeout = statement_timeout(state, limits["statement_timeout_s"])
        # The timeout counts from the message's arrival: reading a long message waits for
        # the analyst's turn too (``off_loop``), and a fresh timeout per wait answered a
        # statement 15 s after its deadline (twenty-ninth review of issue 33). The next
        # statement of the same Query message counts from its own start, as PostgreSQL's.
        start = loop.time() if connection.arrived is None else min(connection.arrived,
                                                                     loop.time())
        connection.arrived = None
        try:
            await _take_turn(connection, account.turn, max(0.0, start + timeout - loop.time()))
        except ServerError as err:
            self.accounts.audit(state.user, state.client, sql, None, type(err).__name__,
                                err.sqlstate)
            raise
        # The deadline is absolute: the time a statement waits for a free worker counts
        # (the eleventh review: a `select 1` waited 20.8 s for a worker and was answered,
        # past its own 5 s timeout). loop.time() is time.monotonic().
        deadline = start + timeout
        future = self._submit(self.runner.run, state, sql, params, None, deadline)
        future.add_done_callback(lambda _: account.turn.release())
        return await asyncio.shield(future)

    def _submit(self, function, *args) -> asyncio.Future:
        """``function(*args)`` in a worker, counted in ``running`` until it ends."""
        if self.stopping:
            raise ServerError("terminating connection due to administrator command", "57P01")
        future = asyncio.get_running_loop().run_in_executor(self.pool, function, *args)
        self.running.add(future)
        future.add_done_callback(self.running.discard)
        return future

    def _turn(self, account) -> None:
        """The analyst's statement slots (``statements_per_analyst``), made on first use."""
        if account.turn is None:
            account.turn = asyncio.Semaphore(self.deployment.limits["statements_per_analyst"])

    async def off_loop(self, connection, function, *args):
        """``function(*args)``, which reads an analyst's long text (splitting a query
        string, numbering a prepared statement's parameters), in a worker and in the
        analyst's turn: the event loop spends no Python step per character of it (eighth
        review of issue 33: 100 KB Bind and Query messages, pipelined from 15 sessions,
        cost 55-65 ms each in the event loop and delayed other analysts' ``SELECT 1`` by
        up to 4 s and a cancel by 1.16 s)."""
        account = connection.state.account
        self._turn(account)
        timeout = statement_timeout(connection.state, self.deployment.limits["statement_timeout_s"])
        loop = asyncio.get_running_loop()
        left = timeout if connection.arrived is None else connection.arrived + timeout - loop.time()
        await _take_turn(connection, account.turn, max(0.0, left))
        try:
            return await self._submit(function, *args)
        finally:
            account.turn.release()

    def log_internal(self, err: BaseException) -> None:
        log.error("dpsql serve: internal error %s", type(err).__name__, exc_info=err)


async def _ended(futures: list, timeout: float, what: str, cancel: bool = False) -> int:
    """Wait at most ``timeout`` seconds for ``futures`` (connections' tasks, statements in
    workers); how many are still running then (cancelled, with ``cancel``), with their
    stacks (the worker threads' and the tasks' innermost awaits) in the owner's log."""
    if futures:
        await asyncio.wait(futures, timeout=max(0.0, timeout))
    left = [f for f in futures if not f.done()]
    if left and cancel:
        for future in left:
            future.cancel()
    elif left:
        frames = sys._current_frames()
        stacks = "".join(
            f"\n{t.name}:\n" + "".join(traceback.format_stack(frames[t.ident]))
            for t in threading.enumerate() if t.name.startswith("dpsql-worker")
            and t.ident in frames)
        stacks += "".join(f"\ntask:\n{_awaiting(f)}" for f in left if isinstance(f, asyncio.Task))
        log.error("dpsql serve: %d %s still running at the stop's deadline; the server "
                  "stops without them%s", len(left), what, stacks)
    return 0 if cancel else len(left)


def _awaiting(task: asyncio.Task) -> str:
    """Where ``task`` waits: its coroutines from the outermost to the innermost await."""
    lines, coro = [], task.get_coro()
    while coro is not None and getattr(coro, "cr_frame", None) is not None:
        code = coro.cr_frame.f_code
        lines.append(f"  {code.co_filename}:{coro.cr_frame.f_lineno} in {code.co_name}\n")
        coro = coro.cr_await
    return "".join(lines)


async def _take_turn(connection, turn: asyncio.Semaphore, timeout: float) -> None:
    """Wait for one of the analyst's statement slots, at most ``timeout`` seconds; a
    cancel request stops the wait. 57014 if the statement never got its turn."""
    loop = asyncio.get_running_loop()
    stopped = loop.create_future()
    connection.waiting = lambda: stopped.done() or stopped.set_result(None)
    if connection.state.cancel_requested:
        stopped.set_result(None)
    acquire = asyncio.ensure_future(turn.acquire())
    try:
        done, _ = await asyncio.wait({acquire, stopped}, timeout=timeout,
                                     return_when=asyncio.FIRST_COMPLETED)
    finally:
        connection.waiting = None
    if acquire in done and not stopped.done() and not connection.state.cancel_requested:
        return
    acquire.cancel()
    try:
        await acquire
    except asyncio.CancelledError:
        pass
    else:
        turn.release()
    cancelled = stopped.done() or connection.state.cancel_requested
    why = "user request" if cancelled else "statement timeout"
    raise ServerError(f"canceling statement due to {why} (it had not started: it waited "
                      "for its turn among your statements, and cost nothing)", "57014")


def _stable_secret(deployment: Deployment) -> bytes:
    """The key of unknown users' mock SCRAM salts, kept in the ledger directory (0600) so
    that it outlives restarts: a real analyst's salt never changes, so neither may a mock
    one, or a restart would tell which user names exist."""
    os.makedirs(deployment.ledger_dir, exist_ok=True)
    path = os.path.join(deployment.ledger_dir, ".server_secret")
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        with open(path, "rb") as f:
            secret = f.read()
        if len(secret) == 32:
            return secret
        raise OperationalError(f"{path} is not a dpsql server secret (32 bytes); remove it "
                               "to make a new one") from None
    secret = secrets.token_bytes(32)
    with os.fdopen(fd, "wb") as f:
        f.write(secret)
        f.flush()
        os.fsync(f.fileno())
    return secret


def _free_socket(path: str) -> None:
    """Remove the stale socket of a killed server; refuse to take a live server's."""
    if not os.path.exists(path):
        return
    probe = socket.socket(socket.AF_UNIX)
    try:
        probe.connect(path)
    except OSError:
        os.unlink(path)
        return
    finally:
        probe.close()
    raise OperationalError(f"another server is listening on {path}; stop it or choose "
                           "another port")


def _tls_context(deployment: Deployment) -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(deployment.certificate, deployment.key)
    return context
