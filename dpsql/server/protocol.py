"""The PostgreSQL frontend/backend protocol, version 3.0, as bytes.

Owns: the bytes of the PostgreSQL v3 protocol: decoding what a client sends
(startup packets, typed messages) and encoding what the server answers
(authentication, row descriptions, data rows, errors); the values inside rows
and parameters are ``values``' business. Pure functions over bytes,
no sockets: the server loop reads frames and hands them here, so every byte a
client controls is checked in one place, and malformed input always ends as a
``ProtocolError`` (never an IndexError or a struct.error). Message formats follow
the "Message Formats" chapter of the PostgreSQL documentation.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass

from ..errors import InternalError, OperationalError

MAX_MESSAGE = 1 << 20
"""Default limit on one message's length (the length field includes itself)."""
MAX_STARTUP = 10_000
"""Limit on a startup packet's length, as PostgreSQL's MAX_STARTUP_PACKET_LENGTH."""
PROTOCOL_3_0 = 196608
SSL_REQUEST_CODE, GSSENC_REQUEST_CODE, CANCEL_REQUEST_CODE = 80877103, 80877104, 80877102
SSL_NO, SSL_YES = b"N", b"S"
"""The one-byte answers to SSLRequest (and GSSENCRequest: ``SSL_NO``)."""


ANSWERABLE = frozenset((b"Q", b"P", b"B", b"D", b"E", b"C"))
"""Message kinds whose whole frame, with a malformed body, is answered with an ERROR after
authentication, as PostgreSQL's "insufficient data left in message", the connection going
on as after any error (to Sync in the extended protocol). Closing it at once lost the
answer: the client's Sync, unread, reset the socket (fifteenth review of issue 33)."""


class ProtocolError(OperationalError):
    """The client broke the protocol; the connection cannot go on.

    ``sqlstate`` is the SQLSTATE to report (08P01 protocol_violation unless said).
    """

    def __init__(self, message: str, sqlstate: str = "08P01") -> None:
        super().__init__(message)
        self.sqlstate = sqlstate


# ---------------------------------------------------------------- frontend messages

@dataclass(frozen=True)
class SSLRequest:
    """The client asks for TLS (answer ``SSL_NO`` or ``SSL_YES``)."""


@dataclass(frozen=True)
class GSSENCRequest:
    """The client asks for GSSAPI encryption (answer ``SSL_NO``)."""


@dataclass(frozen=True)
class CancelRequest:
    pid: int
    secret: int


@dataclass(frozen=True)
class Startup:
    version: int
    params: dict


@dataclass(frozen=True)
class Query:
    sql: str


@dataclass(frozen=True)
class Parse:
    name: str
    sql: str
    param_types: tuple


@dataclass(frozen=True)
class Bind:
    portal: str
    statement: str
    param_formats: tuple
    params: tuple
    result_formats: tuple

    def param_format(self, index: int) -> int:
        """The format code of parameter ``index`` (none given: text; one: for all)."""
        return _format_at(self.param_formats, index)

    def result_format(self, index: int) -> int:
        """The format code of result column ``index``."""
        return _format_at(self.result_formats, index)


@dataclass(frozen=True)
class Describe:
    kind: str
    name: str


@dataclass(frozen=True)
class Execute:
    portal: str
    max_rows: int


@dataclass(frozen=True)
class Close:
    kind: str
    name: str


@dataclass(frozen=True)
class Sync:
    pass


@dataclass(frozen=True)
class Flush:
    pass


@dataclass(frozen=True)
class Terminate:
    pass


@dataclass(frozen=True)
class Password:
    """A 'p' message: read ``data`` with ``sasl_initial`` or as a SASLResponse."""
    data: bytes


def _format_at(formats: tuple, index: int) -> int:
    if not formats:
        return 0
    return formats[0] if len(formats) == 1 else formats[index]


class _Reader:
    """Reads a message body field by field; any overrun is a ProtocolError."""

    def __init__(self, body: bytes, what: str) -> None:
        self.body, self.at, self.what = bytes(body), 0, what

    def take(self, n: int) -> bytes:
        if n < 0 or self.at + n > len(self.body):
            raise ProtocolError(f"{self.what} message is truncated")
        out = self.body[self.at:self.at + n]
        self.at += n
        return out

    def int16(self) -> int:
        return struct.unpack("!h", self.take(2))[0]

    def int32(self) -> int:
        return struct.unpack("!i", self.take(4))[0]

    def cstring(self) -> str:
        end = self.body.find(b"\0", self.at)
        if end < 0:
            raise ProtocolError(f"{self.what} message has a string without its NUL terminator")
        raw, self.at = self.body[self.at:end], end + 1
        return _utf8(raw, self.what)

    def count(self) -> int:
        """A count of parameters, types or formats: unsigned, as PostgreSQL reads it (up to
        65,535 parameters; read signed, 32,768 types closed the connection, review 14)."""
        return struct.unpack("!H", self.take(2))[0]

    def end(self) -> None:
        if self.at != len(self.body):
            raise ProtocolError(f"{self.what} message has {len(self.body) - self.at} extra bytes")


def _utf8(raw: bytes, what: str) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ProtocolError(f"{what} message has text that is not UTF-8", "22021") from None


def read_length(header: bytes, limit: int = MAX_MESSAGE) -> int:
    """The length in a 4-byte message header, checked: 4 <= length <= limit."""
    if len(header) != 4:
        raise ProtocolError("a message length needs 4 bytes")
    length = struct.unpack("!i", header)[0]
    if length < 4 or length > limit:
        raise ProtocolError(f"invalid message length {length} (limit {limit})")
    return length


class FrameBuffer:
    """Splits a byte stream into messages, whatever sizes it arrives in.

    ``feed`` the bytes read; ``next_startup`` (before the startup is done) and
    ``next_message`` return one frame's body (and type) or None when incomplete.
    """

    def __init__(self, limit: int = MAX_MESSAGE) -> None:
        self.data, self.limit = bytearray(), limit

    def feed(self, data: bytes) -> None:
        self.data += data

    def next_startup(self) -> bytes | None:
        return self._frame(0, MAX_STARTUP)

    def next_message(self) -> tuple[bytes, bytes] | None:
        if not self.data:
            return None
        kind = bytes(self.data[:1])
        body = self._frame(1, self.limit)
        return None if body is None else (kind, body)

    def _frame(self, start: int, limit: int) -> bytes | None:
        if len(self.data) < start + 4:
            return None
        length = read_length(bytes(self.data[start:start + 4]), limit)
        if len(self.data) < start + length:
            return None
        body = bytes(self.data[start + 4:start + length])
        del self.data[:start + length]
        return body


def parse_startup(body: bytes):
    """An untyped first packet (its length already read): SSLRequest, GSSENCRequest,
    CancelRequest or Startup (protocol 3.0 only)."""
    r = _Reader(body, "startup")
    code = r.int32()
    if code in (SSL_REQUEST_CODE, GSSENC_REQUEST_CODE):
        r.end()
        return SSLRequest() if code == SSL_REQUEST_CODE else GSSENCRequest()
    if code == CANCEL_REQUEST_CODE:
        pid, secret = r.int32(), r.int32()
        r.end()
        return CancelRequest(pid, secret)
    if code >> 16 != 3:     # 3.x is negotiated down to 3.0 (``negotiation``), as PostgreSQL
        raise ProtocolError(f"unsupported frontend protocol {code >> 16}.{code & 0xFFFF}: "
                            "the server supports 3.0", "0A000")
    params = {}
    while (name := r.cstring()) != "":
        params[name] = r.cstring()
    r.end()
    return Startup(code, params)


def _parse_parse(r: _Reader) -> Parse:
    name, sql = r.cstring(), r.cstring()
    types = tuple(r.int32() for _ in range(r.count()))
    return Parse(name, sql, types)


def _formats(r: _Reader) -> tuple:
    formats = tuple(r.int16() for _ in range(r.count()))
    bad = [f for f in formats if f not in (0, 1)]
    if bad:
        raise ProtocolError(f"unsupported format code: {bad[0]}", "22023")
    return formats


def _parse_bind(r: _Reader) -> Bind:
    portal, statement = r.cstring(), r.cstring()
    param_formats = _formats(r)
    params = []
    for _ in range(r.count()):
        size = r.int32()
        if size < -1:
            raise ProtocolError(f"Bind message has a negative parameter length {size}")
        params.append(None if size == -1 else r.take(size))
    if len(param_formats) > 1 and len(param_formats) != len(params):
        raise ProtocolError(f"Bind message has {len(param_formats)} parameter formats but "
                            f"{len(params)} parameters")
    return Bind(portal, statement, param_formats, tuple(params), _formats(r))


def _kind(r: _Reader, what: str) -> str:
    kind = r.take(1)
    if kind not in (b"S", b"P"):
        raise ProtocolError(f"invalid {what} message subtype {kind!r}")
    return kind.decode()


def _parse_execute(r: _Reader) -> Execute:
    portal, max_rows = r.cstring(), r.int32()
    return Execute(portal, max(max_rows, 0))     # as PostgreSQL: 0 or less is every row


_PARSERS = {
    b"Q": ("Query", lambda r: Query(r.cstring())),
    b"P": ("Parse", _parse_parse),
    b"B": ("Bind", _parse_bind),
    b"D": ("Describe", lambda r: Describe(_kind(r, "Describe"), r.cstring())),
    b"E": ("Execute", _parse_execute),
    b"C": ("Close", lambda r: Close(_kind(r, "Close"), r.cstring())),
    b"S": ("Sync", lambda r: Sync()),
    b"H": ("Flush", lambda r: Flush()),
    b"X": ("Terminate", lambda r: Terminate()),
    b"p": ("Password", lambda r: Password(r.take(len(r.body)))),
}
_REFUSED = {b"d": "CopyData", b"c": "CopyDone", b"f": "CopyFail", b"F": "FunctionCall"}


def parse_message(kind: bytes, body: bytes):
    """The typed frontend message ``kind`` (one byte) with ``body`` (after the length)."""
    if kind in _REFUSED:
        raise ProtocolError(f"{_REFUSED[kind]} messages are not supported", "0A000")
    if kind not in _PARSERS:
        raise ProtocolError(f"invalid frontend message type {kind!r}")
    what, parse = _PARSERS[kind]
    r = _Reader(body, what)
    message = parse(r)
    r.end()
    return message


def sasl_initial(data: bytes) -> tuple[str, bytes | None]:
    """(mechanism, initial response) from a SASLInitialResponse's body; the response
    is None when the client sent length -1 (no initial response)."""
    r = _Reader(data, "SASLInitialResponse")
    mechanism, size = r.cstring(), r.int32()
    if size < -1:
        raise ProtocolError(f"SASLInitialResponse has a negative length {size}")
    response = None if size == -1 else r.take(size)
    r.end()
    return mechanism, response


# ---------------------------------------------------------------- backend messages

def _pack(layout: str, *values) -> bytes:
    try:
        return struct.pack(layout, *values)
    except struct.error as e:
        raise InternalError(f"a protocol field is out of range: {e}") from None


def _message(kind: bytes, payload: bytes = b"") -> bytes:
    return kind + _pack("!i", len(payload) + 4) + payload


def _cstr(text: str) -> bytes:
    raw = text.encode("utf-8")
    if b"\0" in raw:
        raise InternalError("a protocol string cannot hold a NUL character")
    return raw + b"\0"


def authentication_ok() -> bytes:
    return _message(b"R", _pack("!i", 0))


def authentication_cleartext() -> bytes:
    return _message(b"R", _pack("!i", 3))


def authentication_sasl(mechanisms) -> bytes:
    return _message(b"R", _pack("!i", 10) + b"".join(_cstr(m) for m in mechanisms) + b"\0")


def authentication_sasl_continue(data: bytes) -> bytes:
    return _message(b"R", _pack("!i", 11) + data)


def authentication_sasl_final(data: bytes) -> bytes:
    return _message(b"R", _pack("!i", 12) + data)


def parameter_status(name: str, value: str) -> bytes:
    return _message(b"S", _cstr(name) + _cstr(value))


def backend_key_data(pid: int, secret: int) -> bytes:
    return _message(b"K", _pack("!ii", pid, secret))


def ready_for_query(status: str) -> bytes:
    """ReadyForQuery: 'I' idle, 'T' in a transaction, 'E' in a failed transaction."""
    if status not in ("I", "T", "E"):
        raise InternalError(f"invalid transaction status {status!r}")
    return _message(b"Z", status.encode())


def row_description(fields) -> bytes:
    """RowDescription of (name, type_oid, type_size, type_modifier, format) fields."""
    out = [_pack("!h", len(fields))]
    for name, oid, size, modifier, fmt in fields:
        out.append(_cstr(name) + _pack("!ihihih", 0, 0, oid, size, modifier, fmt))
    return _message(b"T", b"".join(out))


def data_row(values) -> bytes:
    """DataRow of already encoded values (None is NULL)."""
    out = [_pack("!h", len(values))]
    for value in values:
        out.append(_pack("!i", -1) if value is None
                   else _pack("!i", len(value)) + bytes(value))
    return _message(b"D", b"".join(out))


def command_complete(tag: str) -> bytes:
    return _message(b"C", _cstr(tag))


def empty_query_response() -> bytes:
    return _message(b"I")


def _fields(severity, sqlstate, message, detail, hint, position) -> bytes:
    pairs = [(b"S", severity), (b"V", severity), (b"C", sqlstate), (b"M", message),
             (b"D", detail), (b"H", hint), (b"P", None if position is None else str(position))]
    return b"".join(code + _cstr(str(text).replace("\0", "\\0"))
                    for code, text in pairs if text is not None) + b"\0"


def error_response(severity: str, sqlstate: str, message: str, detail: str | None = None,
                   hint: str | None = None, position: int | None = None) -> bytes:
    """ErrorResponse (fields S, V, C, M and, when given, D, H, P)."""
    return _message(b"E", _fields(severity, sqlstate, message, detail, hint, position))


def notice_response(severity: str, sqlstate: str, message: str, detail: str | None = None,
                    hint: str | None = None, position: int | None = None) -> bytes:
    """NoticeResponse, the same fields as ErrorResponse."""
    return _message(b"N", _fields(severity, sqlstate, message, detail, hint, position))


def parse_complete() -> bytes:
    return _message(b"1")


def bind_complete() -> bytes:
    return _message(b"2")


def close_complete() -> bytes:
    return _message(b"3")


def no_data() -> bytes:
    return _message(b"n")


def portal_suspended() -> bytes:
    return _message(b"s")


def parameter_description(oids) -> bytes:
    return _message(b"t", _pack(f"!H{len(oids)}I", len(oids), *oids))


def negotiation(startup: Startup) -> bytes:
    """NegotiateProtocolVersion when the client asked for a minor version above 0 or for
    protocol options (``_pq_.*``): the server speaks 3.0 and knows none of them (PostgreSQL
    refuses nothing here; the thirteenth review's client asking for 3.2 was refused)."""
    options = [name for name in startup.params if name.startswith("_pq_.")]
    if startup.version == PROTOCOL_3_0 and not options:
        return b""
    return _message(b"v", _pack("!ii", 0, len(options)) + b"".join(_cstr(o) for o in options))
