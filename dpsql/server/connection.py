"""One client connection: the PostgreSQL protocol's state machine over asyncio streams.

Owns: the order of messages on one connection: TLS negotiation, SCRAM-SHA-256 authentication
(an unknown user is indistinguishable from a wrong password), the simple and the extended
query protocol (statements, portals, error recovery at Sync), and cancel keys. Statements
run on the server's worker pool (``dpsql.server.queries``); this module only moves bytes. A
client that breaks the protocol loses its own connection, never anything else."""
from __future__ import annotations

import asyncio
import functools
import time
from typing import NamedTuple

from .. import errors
from . import protocol as p
from .queries import analyst_text, duck_oid, required_params
from .scram import MECHANISM, AuthenticationFailed, ScramExchange
from .statements import Result, ServerError, SessionState, opened, split_statements, sqlstate
from .values import TEXT, UNKNOWN, decode_bind, text_field

AUTH_TIMEOUT_S = 10.0
"""Seconds a client has to read or write one message before it has authenticated (the
whole negotiation and authentication has the deployment's ``auth_timeout_s``)."""

INLINE_TEXT = 4096
"""Characters of an analyst's text the event loop reads itself; more: ``Server.off_loop``."""

MAX_NAME = 63
"""Longest prepared statement or portal name (PostgreSQL's identifiers: 63 bytes). Names
were not counted by any limit: 255 statements and 64 portals named with 1,000,000
characters each grew the server by 300 MB a connection (ninth review of issue 33)."""


class Closed(Exception):
    """The connection is over (the client left, or broke the protocol)."""


class Connection:
    """The state of one client: its analyst, prepared statements, portals, cancel key."""

    def __init__(self, server, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                 client: str, tcp: bool) -> None:
        self.server, self.reader, self.writer = server, reader, writer
        self.client, self.tcp, self.tls = client, tcp, False
        self.pid, self.secret = None, None        # the cancel key, once authenticated
        self.limits = server.deployment.limits
        self.waiting = None                       # stops the wait for the analyst's turn
        self.arrived = None                       # loop time the last message was read
        self.busy = False                         # a statement was read and not answered
        self.progressed = time.monotonic()        # last authentication step (Server._evict)
        self.task = None
        self.state: SessionState | None = None
        self.statements: dict = {}
        self.portals: dict = {}
        self.failed = False            # extended protocol: skip to Sync after an error

    # -- bytes ------------------------------------------------------------------------
    async def _read(self, n: int, timeout: float | None) -> bytes:
        try:
            if timeout is None:
                return await self.reader.readexactly(n)
            return await asyncio.wait_for(self.reader.readexactly(n), timeout)
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.TimeoutError):
            raise Closed() from None

    async def _startup_packet(self) -> object:
        header = await self._read(4, AUTH_TIMEOUT_S)
        length = p.read_length(header, p.MAX_STARTUP)
        return p.parse_startup(await self._read(length - 4, AUTH_TIMEOUT_S))

    async def _message(self, timeout: float | None) -> object:
        """The next message. Before authentication one is at most ``p.MAX_STARTUP``
        bytes (a SCRAM message of 1 MB cost the event loop 100 ms, without credentials:
        ninth review of issue 33); after, at most ``max_message_bytes``, and one longer
        than INLINE_TEXT is parsed in a worker in the analyst's turn (a Bind of 32,767
        parameters took the event loop 62-110 ms)."""
        kind = await self._read(1, timeout)
        limit = self.server.deployment.limits["max_message_bytes"] if self.state else \
            p.MAX_STARTUP
        length = p.read_length(await self._read(4, timeout), limit)
        body = await self._read(length - 4, timeout)
        self.arrived = asyncio.get_running_loop().time()
        try:
            if self.state is None or length <= INLINE_TEXT:
                return p.parse_message(kind, body)
            self.state.cancel_requested, self.busy = False, True     # a cancel now stops it
            return await self.server.off_loop(self, p.parse_message, kind, body)
        except errors.Error as err:   # its turn never came (timeout, cancel), or malformed
            if isinstance(err, p.ProtocolError) and (self.state is None or kind not in p.ANSWERABLE):
                raise
            return _Unread(kind, err)

    async def _send(self, *chunks: bytes) -> None:
        self.writer.write(b"".join(chunks))
        try:
            await self.writer.drain()
        except ConnectionError:
            raise Closed() from None

    async def _fatal(self, code: str, message: str) -> None:
        await self._send(p.error_response("FATAL", code, message))
        raise Closed()

    # -- the connection ---------------------------------------------------------------
    async def serve(self) -> None:
        try:
            # One deadline for everything before authentication (PostgreSQL's
            # authentication_timeout): a client cannot hold a slot by trickling bytes.
            if await asyncio.wait_for(self._start(), self.limits["auth_timeout_s"]):
                await self._loop()
        except (Closed, asyncio.TimeoutError):
            pass
        except p.ProtocolError as err:
            try:
                await self._send(p.error_response("FATAL", err.sqlstate, str(err)))
            except Closed:
                pass
        finally:
            self.busy = False
            self.server.forget(self)
            self.writer.close()

    async def _start(self) -> bool:
        """Negotiate and authenticate; False if the client left (also when the server
        stops it: asyncio's wait_for would leave a Closed raised then unretrieved, one
        traceback per connection in the owner's log)."""
        try:
            startup = await self._negotiate()
            return startup is not None and await self._authenticate(startup)
        except Closed:
            return False

    def _progress(self) -> None:
        """An authentication step done: TLS, startup, SCRAM begun."""
        self.progressed = time.monotonic()

    def drop(self) -> None:
        """Close a connection that has not authenticated (the pool of those is full)."""
        transport = self.writer.transport
        if transport is not None:
            transport.abort()          # its serve() then reads EOF and ends as usual

    def stop_statement(self) -> None:
        """A cancel: stop this session's statement, waiting for its turn or running. The
        flag is set first and the worker sets its interrupt before it reads the flag, so
        a cancel between the two is seen by one of them."""
        if self.state is None or not self.busy:
            return                       # idle: a cancel does nothing (as in PostgreSQL)
        self.state.cancel_requested = True
        waiting, interrupt = self.waiting, self.state.interrupt   # (the worker clears it)
        stop = waiting if waiting is not None else interrupt
        if stop is not None:
            stop()

    async def _negotiate(self):
        """The Startup message, after TLS if asked; None for a cancel request."""
        tls_context = self.server.tls_context
        asked = set()
        while True:
            message = await self._startup_packet()
            if isinstance(message, (p.SSLRequest, p.GSSENCRequest)):
                if type(message) in asked or self.tls:
                    raise p.ProtocolError("encryption was already negotiated on this connection")
                asked.add(type(message))
            if isinstance(message, p.SSLRequest) and tls_context is not None and not self.tls:
                await self._send(p.SSL_YES)
                plain = self.writer.transport
                try:
                    await asyncio.wait_for(self.writer.start_tls(tls_context), AUTH_TIMEOUT_S)
                except (OSError, asyncio.TimeoutError, AttributeError):
                    # AttributeError: asyncio's start_tls (3.11) when the connection ends
                    # during the handshake (a client leaving, or the pool dropping it) leaves
                    # the writer without a transport, and its __del__ fails: two tracebacks
                    # per connection in the owner's log (fourth review of issue 33, F6).
                    if self.writer.transport is None:
                        self.writer._transport = plain
                    raise Closed() from None
                self.tls = True
                self._progress()
            elif isinstance(message, (p.SSLRequest, p.GSSENCRequest)):
                await self._send(p.SSL_NO)
            elif isinstance(message, p.CancelRequest):
                self.server.cancel(message.pid, message.secret)
                return None
            else:
                break
        if tls_context is not None and not self.tls and self.tcp:   # TCP only (docs)
            await self._fatal("28000", "this server requires TLS: connect with sslmode=require")
        return message

    async def _authenticate(self, startup) -> bool:
        user = startup.params.get("user")
        if not user:
            await self._fatal("28000", "no user name given in the startup message")
        self._progress()
        account = self.server.accounts.by_name.get(user)
        exchange = ScramExchange(account.analyst.verifier if account else None,
                                 username=user, server_secret=self.server.secret)
        await self._send(p.negotiation(startup), p.authentication_sasl([MECHANISM]))
        try:
            first = await self._password()
            mechanism, response = p.sasl_initial(first)
            if mechanism != MECHANISM or response is None:
                raise AuthenticationFailed("unsupported SASL mechanism", "28000")
            self._progress()
            await self._send(p.authentication_sasl_continue(exchange.first(response)))
            final = exchange.final(await self._password())
        except AuthenticationFailed as err:
            if err.sqlstate != "28P01":          # the protocol was broken, not the password
                await self._fatal(err.sqlstate, str(err))
            await self._fatal("28P01", f'password authentication failed for user "{user}"')
        refused = self.server.admit(self, account)
        if refused is not None:
            await self._fatal("53300", refused)
        self.pid, self.secret = self.server.new_key(self)
        self.server.authenticated(self, account.analyst.name)
        try:        # the startup's options (-c statement_timeout=5s) are SETs, refused as FATAL
            self.state = opened(account, self.server.catalog, self.client, startup.params,
                                self.server.deployment.privacy)
        except ServerError as err:
            await self._fatal(err.sqlstate, str(err))
        status = [p.parameter_status(k, v) for k, v in self.server.parameters(user).items()]
        await self._send(p.authentication_sasl_final(final), p.authentication_ok(), *status,
                         p.backend_key_data(self.pid, self.secret), p.ready_for_query("I"))
        return True

    async def _password(self) -> bytes:
        message = await self._message(AUTH_TIMEOUT_S)
        if not isinstance(message, p.Password):
            raise AuthenticationFailed("expected a SASL response", "08P01")
        return message.data

    async def _loop(self) -> None:
        idle = self.server.deployment.limits.get("idle_timeout_s")
        while True:
            try:
                message = await self._message(idle)
            except p.ProtocolError as err:
                await self._send(p.error_response("FATAL", err.sqlstate, str(err)))
                return
            if isinstance(message, p.Terminate):
                return
            if not self.busy:              # (already busy: parsed in a worker, ``_message``)
                self.state.cancel_requested, self.busy = False, True
            try:
                await self._dispatch(message)
            finally:
                self.busy = False

    async def _dispatch(self, message) -> None:
        if isinstance(message, _Unread):
            if message.kind == b"Q":
                await self._error(message.error)
                await self._send(p.ready_for_query(self._status()))
            elif not self.failed:
                self.failed = True
                await self._error(message.error)
        elif isinstance(message, p.Query):
            await self._simple(message.sql)
        elif isinstance(message, p.Sync):
            self.failed = False
            if not self.state.in_transaction:
                self.portals.clear()     # portals end with their transaction
            await self._send(p.ready_for_query(self._status()))
        elif not self.failed:
            try:
                await self._extended(message)
            except errors.Error as err:
                self.failed = True
                await self._error(err)

    def _status(self) -> str:
        if self.state.aborted:
            return "E"
        return "T" if self.state.in_transaction else "I"

    async def _error(self, err: BaseException) -> None:
        if self.state is not None and self.state.in_transaction:
            self.state.aborted = True      # as PostgreSQL: until ROLLBACK (or ROLLBACK TO)
        if isinstance(err, errors.Error):
            text = analyst_text(err)
        else:
            text = "internal error in dpsql serve (reported in the server's log)"
            self.server.log_internal(err)
        await self._send(p.error_response("ERROR", sqlstate(err), text))

    async def _run(self, sql: str, params=None) -> Result:
        return await self.server.run(self, sql, params)

    def _check_size(self, sql: str) -> None:
        """Statements longer than ``max_statement_bytes`` are refused before anything
        reads them (parsing is the slowest step a statement's size controls)."""
        limit = self.limits["max_statement_bytes"]
        if len(sql) > limit:
            raise _Refused(f"the statement is too long ({len(sql):,} characters; this "
                           f"server takes at most {limit:,})", "54000")

    # -- simple query -----------------------------------------------------------------
    async def _simple(self, sql: str) -> None:
        try:
            self._check_size(sql)
        except _Refused as err:
            await self._error(err)
            await self._send(p.ready_for_query(self._status()))
            return
        try:
            statements = await self._read_text(split_statements, sql)
        except errors.Error as err:
            await self._error(err)
            await self._send(p.ready_for_query(self._status()))
            return
        if not statements:
            await self._send(p.empty_query_response(), p.ready_for_query(self._status()))
            return
        for statement in statements:
            try:
                result = await self._run(statement)
                chunks = self._result(result, describe=True)
            except Exception as err:   # noqa: BLE001 - every failure is one ErrorResponse
                await self._error(err)
                break
            await self._send(*chunks)
        await self._send(p.ready_for_query(self._status()))

    def _result(self, result: Result, describe: bool, rows=None) -> list:
        out = []
        if result.tag == "EMPTY":
            return [p.empty_query_response()]
        if result.notice:
            out.append(p.notice_response("WARNING", result.notice_code, result.notice))
        if describe and result.columns:
            out.append(self._description(result))
        out.extend(result.rows if rows is None else rows)     # DataRow messages already
        out.append(p.command_complete(result.tag))
        return out

    @staticmethod
    def _description(result: Result) -> bytes:
        return p.row_description([text_field(name, duck_oid(kind)) for name, kind in result.columns])

    # -- extended query ---------------------------------------------------------------
    async def _extended(self, message) -> None:
        for key in ("name", "portal", "statement"):
            name = getattr(message, key, "")
            if len(name) > MAX_NAME:
                raise _Refused(f"the {key if key != 'name' else 'statement or portal'} name "
                               f"is too long ({len(name):,} characters; at most {MAX_NAME})",
                               "42622")
        if isinstance(message, p.Parse):
            await self._prepare(message)
            await self._send(p.parse_complete())
        elif isinstance(message, p.Bind):
            await self._bind(message)
        elif isinstance(message, p.Describe):
            await self._describe(message)
        elif isinstance(message, p.Execute):
            await self._execute(message)
        elif isinstance(message, p.Close):
            (self.statements if message.kind == "S" else self.portals).pop(message.name, None)
            await self._send(p.close_complete())
        elif isinstance(message, p.Flush):
            await self._send()
        else:
            raise p.ProtocolError(f"unexpected {type(message).__name__} message")

    async def _read_text(self, function, sql: str):
        """``function(sql)``: in the event loop for a short text, else off it
        (``Server.off_loop``)."""
        if len(sql) <= INLINE_TEXT:
            return function(sql)
        return await self.server.off_loop(self, function, sql)

    async def _prepare(self, message: p.Parse) -> None:
        """Keep a prepared statement, within the connection's limits on their number and
        their total size (the unnamed one replaces itself, as a named one does)."""
        self._check_size(message.sql)
        kept = {k: v for k, v in self.statements.items() if k != message.name}
        if len(kept) >= self.limits["max_prepared"]:
            raise _Refused(f"too many prepared statements on this connection (at most "
                           f"{self.limits['max_prepared']}); DEALLOCATE or Close some", "54000")
        size = sum(len(v.sql) for v in kept.values()) + len(message.sql)
        if size > self.limits["max_prepared_bytes"]:
            raise _Refused("the prepared statements of this connection are too large in all "
                           f"(at most {self.limits['max_prepared_bytes']:,} characters); "
                           "Close some", "54000")
        needed = await self._read_text(required_params, message.sql)
        self.statements[message.name] = _Prepared(message.sql, message.param_types, needed)

    async def _bind(self, bind: p.Bind) -> None:
        statement = self.statements.get(bind.statement)
        if statement is None:
            raise _Refused(f'prepared statement "{bind.statement}" does not exist', "26000")
        if any(bind.result_format(i) != 0 for i in range(max(len(bind.result_formats), 1))):
            raise _Refused("dpsql serve sends results in text format only", "0A000")
        types = statement.param_types
        needed = statement.needed
        if len(bind.params) != needed:
            raise _Refused(f"bind message supplies {len(bind.params)} parameters, but prepared "
                           f"statement \"{bind.statement}\" requires {needed}", "08P01")
        if bind.portal not in self.portals and len(self.portals) >= self.limits["max_portals"]:
            raise _Refused(f"too many open portals on this connection (at most "
                           f"{self.limits['max_portals']}); Close some or Sync", "54000")
        # a portal keeps its parameters: they count toward max_portal_bytes (tenth review:
        # 64 Binds of 32,767 parameters each kept 160-230 MB a connection)
        size = sum(64 + len(raw or b"") for raw in bind.params)
        self.portals.pop(bind.portal, None)
        if self._held() + size > self.limits["max_portal_bytes"]:
            raise _Refused(self._too_much(self.limits["max_portal_bytes"]), "54000")
        decode = functools.partial(decode_bind, bind, types)
        values = decode() if size <= INLINE_TEXT else await self.server.off_loop(self, decode)
        self.portals[bind.portal] = {"sql": statement.sql, "params": values, "result": None,
                                     "sent": 0, "size": size}
        await self._send(p.bind_complete())

    async def _describe(self, describe: p.Describe) -> None:
        if describe.kind == "S":
            statement = self.statements.get(describe.name)
            if statement is None:
                raise _Refused(f'prepared statement "{describe.name}" does not exist', "26000")
            types = list(statement.param_types) + [UNKNOWN] * statement.needed   # $1..$n
            count = max(statement.needed, len(statement.param_types))    # (review 13)
            oids = [t if t != UNKNOWN else TEXT for t in types[:count]]
            await self._send(p.parameter_description(oids), p.no_data())
            return
        portal = self._portal(describe.name)
        result = await self._portal_result(portal)
        await self._send(self._description(result) if result.columns else p.no_data())

    async def _execute(self, execute: p.Execute) -> None:
        portal = self._portal(execute.portal)
        result = await self._portal_result(portal)
        if result.tag == "EMPTY":
            await self._send(p.empty_query_response())
            return
        start = portal["sent"]
        stop = len(result.rows) if execute.max_rows <= 0 else start + execute.max_rows
        rows = result.rows[start:stop]
        portal["sent"] = start + len(rows)
        chunks = list(rows)                # DataRow messages, encoded in the worker
        if result.notice and start == 0:
            chunks.insert(0, p.notice_response("WARNING", result.notice_code, result.notice))
        if portal["sent"] < len(result.rows):
            await self._send(*chunks, p.portal_suspended())
        else:       # a portal run to its end keeps no rows (executed again, it sends none)
            portal["result"], portal["sent"] = Result(result.tag, result.columns), 0
            await self._send(*chunks, p.command_complete(result.tag))

    def _portal(self, name: str) -> dict:
        portal = self.portals.get(name)
        if portal is None:
            raise _Refused(f'portal "{name}" does not exist', "34000")
        return portal

    async def _portal_result(self, portal: dict) -> Result:
        """The portal's result, run on first use. The rows open portals keep (inside a
        transaction, until it ends) are at most ``max_portal_bytes`` in all: past it a
        portal is refused before it runs (free), and a free result that would pass it is
        not kept (eighth review of issue 33: 64 portals of an 8 MB catalog result each,
        in three transactions, grew the server by 1.6 GB)."""
        if portal["result"] is None:
            limit = self.limits["max_portal_bytes"]
            if self._held() >= limit:
                raise _Refused(self._too_much(limit), "54000")
            result = await self._run(portal["sql"], portal["params"])
            if result.cost is None and self._held() + result.size > limit:
                raise _Refused(self._too_much(limit), "54000")
            portal["result"] = result      # a charged result is kept: it was paid for
        return portal["result"]

    def _held(self) -> int:
        """Bytes the open portals keep: their parameters and their rows."""
        return sum(q["size"] + (q["result"].size if q["result"] is not None else 0)
                   for q in self.portals.values())

    @staticmethod
    def _too_much(limit: int) -> str:
        return (f"the open portals of this connection hold too much (their parameters and "
                f"rows: at most {limit:,} bytes in all); fetch them to their end, Close "
                "them, or end the transaction")


class _Unread(NamedTuple):
    """A long message whose turn to be parsed never came: answered with ``error``."""
    kind: bytes
    error: Exception


class _Prepared(NamedTuple):
    """A prepared statement: its text, parameter types, and how many parameters it
    needs (counted once at Parse, not at every Bind)."""
    sql: str
    param_types: tuple
    needed: int


class _Refused(errors.ProgrammingError):
    def __init__(self, message: str, code: str) -> None:
        super().__init__(message)
        self.sqlstate = code
