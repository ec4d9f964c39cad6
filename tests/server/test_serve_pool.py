"""The unauthenticated pool against an analyst who holds credentials (eighth review of
issue 33): their logins must not buy their flood a place before other analysts."""
import socket
import ssl
import struct

from tests.server.serving import PASSWORDS
from tests.server.test_serve_attacks import Raw
from tests.server.test_serve_boundary import _served_on_tcp, alice_under_flood


class RawTls(Raw):
    """The raw protocol client of test_serve_attacks over TLS on TCP, from a chosen
    loopback source address."""

    def __init__(self, port: int, source: str, timeout: float = 10) -> None:
        plain = socket.socket()
        plain.settimeout(timeout)
        plain.bind((source, 0))
        plain.connect(("127.0.0.1", port))
        plain.sendall(struct.pack("!II", 8, 80877103))
        assert plain.recv(1) == b"S"
        context = ssl.create_default_context()
        context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
        self.s = context.wrap_socket(plain)
        self.buf = b""


def flood_address(i: int) -> str:
    """The source addresses of FLOOD's 100 threads, and 20 more."""
    return f"127.0.{60 + i // 240}.{i % 240 + 2}"


def test_an_analysts_logins_do_not_make_their_flood_outrank_others(tmp_path):
    """Bob logged in once from each of 100 addresses, then flooded from them without
    credentials: every known address ranked alike, and alice's connects from her own
    address got through 4-7 times in 41-55. Now the addresses of the analyst with the most
    connections waiting go first; and bob's 120 logins cycle only his own remembered
    addresses (one list of 10,000 for everyone let 10,100 logins push alice's out)."""
    served, port = _served_on_tcp(tmp_path)

    def bob_logs_in_from_120_addresses():
        for i in range(120):
            raw = RawTls(port, flood_address(i))
            assert raw.login("bob", PASSWORDS["bob"])[-1][0] == b"Z"
            raw.s.close()
    try:
        results = alice_under_flood(port, bob_logs_in_from_120_addresses)
        assert results == [(1,)] * 8, results
    finally:
        served.stop()


def _portal(name: str, rows: int = 0) -> bytes:
    """Bind the unnamed statement to portal ``name`` and execute it for ``rows`` rows."""
    from tests.server.test_serve_attacks import frame
    return (frame(b"B", name.encode() + b"\0\0" + struct.pack("!hhh", 0, 0, 0))
            + frame(b"E", name.encode() + b"\0" + struct.pack("!i", rows)))


def _codes(raw) -> list:
    """The SQLSTATE of every ErrorResponse until ReadyForQuery ("00000" per Execute done)."""
    out = []
    for kind, body in raw.until(b"Z"):
        if kind == b"E":
            out.append(dict((f[:1], f[1:].decode()) for f in body.split(b"\0") if f)[b"C"])
        elif kind in (b"s", b"C"):
            out.append("00000")
    return out


def test_open_portals_keep_a_bounded_number_of_rows(tmp_path):
    """Eighth review, F4: BEGIN, then a free 8 MB catalog result executed into 64 portals
    fetched one row each: the portals kept every row until the transaction ended, 530 MB
    a connection (the server grew from 196 to 1,793 MB with three). What open portals keep
    is now at most max_portal_bytes (16 MiB) a connection; fetched to their end, they keep
    nothing."""
    from tests.server.serving import Served, write_deployment
    from tests.server.test_serve_attacks import SYNC, frame, parse
    served = Served(write_deployment(tmp_path))
    literal = "'" + "x" * 1000 + "'"
    sql = ("SELECT " + ", ".join(f"{literal} AS c{i}" for i in range(8))
           + " FROM generate_series(1, 1000)")
    try:
        raw = Raw(served)
        raw.login("carol", PASSWORDS["carol"])
        raw.send(frame(b"Q", b"BEGIN\0"))
        raw.until(b"Z")
        raw.send(parse(sql), *[_portal(f"p{i}", 1) for i in range(2)], SYNC)
        assert _codes(raw) == ["00000", "00000"]        # two of 8.1 MB are kept
        everything = frame(b"E", b"p0\0" + struct.pack("!i", 0))
        raw.send(everything, frame(b"C", b"Pp1\0"), _portal("p2", 1), _portal("p3", 1), SYNC)
        assert _codes(raw) == ["00000"] * 3       # p0 fetched to its end and p1 closed: room
        raw.send(*[_portal(f"p{i}", 1) for i in range(4, 8)], SYNC)
        # p2 and p3 are kept: the next is refused (the rest skipped to Sync; the
        # transaction is aborted, as PostgreSQL's is after an error)
        assert _codes(raw) == ["54000"]
        raw.send(frame(b"Q", b"COMMIT\0"))
        raw.until(b"Z")
        raw.s.close()
    finally:
        served.stop()


def test_long_texts_are_read_off_the_event_loop(tmp_path):
    """Eighth review, F1: 100 KB Bind messages of a prepared statement, and 100 KB blank
    Query messages, were each read character by character in the event loop (55-65 ms),
    outside any statement's timeout, turn or cancel: pipelined from 15 sessions they
    delayed another analyst's ``SELECT 1`` by up to 4 s. A text past 4,096 characters is
    now read in a worker in its analyst's turn, by the regular expression engine (0.1-2 ms
    for those two), and the parameters are counted once, at Parse. The event loop's own
    thread spent 0.83 s of CPU on these 40 messages; now under 10 ms (its clock's tick)."""
    import threading

    from tests.server.serving import Served, write_deployment
    from tests.server.test_serve_attacks import SYNC, frame, parse
    served = Served(write_deployment(tmp_path))
    loop_thread = served.thread.ident
    slashes = "SELECT COUNT(*) FROM PUMS.PUMS /" + "/" * 99_950 + "\n"
    try:
        raw = Raw(served, timeout=60)
        raw.login("carol", PASSWORDS["carol"])
        binds = [frame(b"B", b"\0\0" + struct.pack("!hhh", 0, 0, 0)) for _ in range(20)]
        blanks = [frame(b"Q", b" " * 99_990 + b"\0") for _ in range(20)]
        started = _thread_cpu(loop_thread)
        raw.send(parse(slashes), *binds, SYNC)
        raw.until(b"Z")
        raw.send(*blanks)
        for _ in blanks:
            raw.until(b"Z")
        spent = _thread_cpu(loop_thread) - started
        assert threading.active_count() > 1
        assert spent < 0.2, spent
        raw.s.close()
    finally:
        served.stop()


def _thread_cpu(ident: int) -> float:
    """CPU seconds of the thread ``ident`` of this process (Linux's /proc)."""
    import os
    native = next(t.native_id for t in __import__("threading").enumerate() if t.ident == ident)
    with open(f"/proc/self/task/{native}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
