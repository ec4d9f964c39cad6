"""The PostgreSQL v3 message layer, byte for byte.

Encoders are checked against bytes written by hand from the "Message Formats"
chapter of the PostgreSQL documentation; decoders against frontend messages built
here the same way, then fed truncated, garbled and random bytes, from which only a
``ProtocolError`` may come out.
"""
import struct

import pytest
from hypothesis import given, settings, strategies as st

import dpsql
from dpsql.server import protocol as p
from dpsql.server.protocol import ProtocolError
from dpsql.server.values import INT8, text_field


def frame(kind: bytes, payload: bytes) -> bytes:
    return kind + struct.pack("!i", len(payload) + 4) + payload


def cstr(text: str) -> bytes:
    return text.encode() + b"\0"


# ---------------------------------------------------------------- backend encoders

def test_ready_for_query():
    assert p.ready_for_query("I") == b"Z\x00\x00\x00\x05I"
    assert p.ready_for_query("T") == b"Z\x00\x00\x00\x05T"
    assert p.ready_for_query("E") == b"Z\x00\x00\x00\x05E"
    with pytest.raises(dpsql.Error):
        p.ready_for_query("X")


def test_command_complete_and_empty_query():
    assert p.command_complete("SELECT 1") == b"C\x00\x00\x00\x0dSELECT 1\x00"
    assert p.empty_query_response() == b"I\x00\x00\x00\x04"


def test_authentication_messages():
    assert p.authentication_ok() == b"R\x00\x00\x00\x08\x00\x00\x00\x00"
    assert p.authentication_cleartext() == b"R\x00\x00\x00\x08\x00\x00\x00\x03"
    sasl = p.authentication_sasl(["SCRAM-SHA-256"])
    assert sasl == b"R\x00\x00\x00\x17\x00\x00\x00\x0aSCRAM-SHA-256\x00\x00"
    assert p.authentication_sasl_continue(b"r=abc") == b"R\x00\x00\x00\x0d\x00\x00\x00\x0br=abc"
    assert p.authentication_sasl_final(b"v=xy") == b"R\x00\x00\x00\x0c\x00\x00\x00\x0cv=xy"


def test_session_start_messages():
    assert p.parameter_status("client_encoding", "UTF8") == (
        b"S\x00\x00\x00\x19client_encoding\x00UTF8\x00")
    assert p.backend_key_data(1234, -5) == (
        b"K\x00\x00\x00\x0c\x00\x00\x04\xd2\xff\xff\xff\xfb")
    assert p.SSL_NO == b"N" and p.SSL_YES == b"S"


def test_row_description_one_int8_field():
    expected = (b"T\x00\x00\x00\x1a" b"\x00\x01" b"n\x00"
                b"\x00\x00\x00\x00" b"\x00\x00"      # table OID, column number
                b"\x00\x00\x00\x14" b"\x00\x08"      # int8, 8 bytes
                b"\xff\xff\xff\xff" b"\x00\x00")     # no modifier, text format
    assert p.row_description([("n", 20, 8, -1, 0)]) == expected
    assert p.row_description([text_field("n", INT8)]) == expected


def test_data_row_with_null():
    assert p.data_row([b"42", None, b""]) == (
        b"D\x00\x00\x00\x14\x00\x03" b"\x00\x00\x00\x0242" b"\xff\xff\xff\xff" b"\x00\x00\x00\x00")


def test_error_response_fields_in_order():
    expected = frame(b"E", b"SERROR\x00VERROR\x00C42601\x00Msyntax error\x00"
                           b"Dat the end\x00Hadd FROM\x00P7\x00\x00")
    assert p.error_response("ERROR", "42601", "syntax error", detail="at the end",
                            hint="add FROM", position=7) == expected
    assert p.error_response("FATAL", "28P01", "no") == (
        b"E\x00\x00\x00\x1eSFATAL\x00VFATAL\x00C28P01\x00Mno\x00\x00")
    assert p.notice_response("NOTICE", "00000", "hi") == (
        b"N\x00\x00\x00\x20SNOTICE\x00VNOTICE\x00C00000\x00Mhi\x00\x00")


def test_error_response_survives_a_nul_in_the_message():
    assert b"\\0" in p.error_response("ERROR", "XX000", "a\0b")


def test_extended_query_answers():
    assert p.parse_complete() == b"1\x00\x00\x00\x04"
    assert p.bind_complete() == b"2\x00\x00\x00\x04"
    assert p.close_complete() == b"3\x00\x00\x00\x04"
    assert p.no_data() == b"n\x00\x00\x00\x04"
    assert p.portal_suspended() == b"s\x00\x00\x00\x04"
    assert p.parameter_description([23, 25]) == (
        b"t\x00\x00\x00\x0e\x00\x02\x00\x00\x00\x17\x00\x00\x00\x19")
    assert p.parameter_description([]) == b"t\x00\x00\x00\x06\x00\x00"


def test_encoders_raise_only_dpsql_errors():
    with pytest.raises(dpsql.Error):
        p.backend_key_data(1 << 40, 0)
    with pytest.raises(dpsql.Error):
        p.command_complete("a\0b")


# ---------------------------------------------------------------- startup packets

def startup_body(params: dict, version: int = 196608) -> bytes:
    return struct.pack("!i", version) + b"".join(
        cstr(k) + cstr(v) for k, v in params.items()) + b"\0"


def test_startup_round_trip():
    body = startup_body({"user": "alice", "database": "pums", "application_name": "psql"})
    assert p.parse_startup(body) == p.Startup(196608, {
        "user": "alice", "database": "pums", "application_name": "psql"})


def test_ssl_gss_and_cancel_requests():
    assert p.parse_startup(struct.pack("!i", 80877103)) == p.SSLRequest()
    assert p.parse_startup(struct.pack("!i", 80877104)) == p.GSSENCRequest()
    assert p.parse_startup(struct.pack("!iii", 80877102, 42, -7)) == p.CancelRequest(42, -7)


@pytest.mark.parametrize("body", [
    b"", b"\x00\x03", startup_body({}, version=0x00020000), startup_body({}, version=0x00040000),
    startup_body({"user": "a"})[:-1],                  # no final terminator
    struct.pack("!i", 196608) + b"user\0alice",        # value without NUL
    struct.pack("!i", 196608) + b"user\0\xff\xfe\0\0",  # not UTF-8
    struct.pack("!i", 80877103) + b"x",                # SSLRequest with extra bytes
    struct.pack("!ii", 80877102, 1),                   # CancelRequest truncated
    startup_body({"user": "a"}) + b"junk",
])
def test_bad_startup_packets(body):
    with pytest.raises(ProtocolError) as raised:
        p.parse_startup(body)
    assert "\n" not in str(raised.value) and raised.value.sqlstate


def test_protocol_error_is_a_dpsql_operational_error():
    assert issubclass(ProtocolError, dpsql.errors.OperationalError)
    assert ProtocolError("x").sqlstate == "08P01"


def test_read_length():
    assert p.read_length(b"\x00\x00\x00\x04") == 4
    assert p.read_length(struct.pack("!i", p.MAX_MESSAGE)) == p.MAX_MESSAGE
    for bad in (b"\x00\x00\x00\x03", b"\xff\xff\xff\xff", struct.pack("!i", p.MAX_MESSAGE + 1),
                b"\x00\x00", b""):
        with pytest.raises(ProtocolError):
            p.read_length(bad)
    assert p.read_length(struct.pack("!i", 100), limit=100) == 100


def test_frame_buffer_splits_any_chunking():
    stream = (struct.pack("!i", 8) + struct.pack("!i", 80877103)
              + frame(b"Q", cstr("SELECT 1")) + frame(b"S", b""))
    for size in (1, 3, len(stream)):
        buffer = p.FrameBuffer()
        got, startup = [], None
        for at in range(0, len(stream), size):
            buffer.feed(stream[at:at + size])
            if startup is None:
                startup = buffer.next_startup()
            while startup is not None and (message := buffer.next_message()) is not None:
                got.append(p.parse_message(*message))
        assert p.parse_startup(startup) == p.SSLRequest()
        assert got == [p.Query("SELECT 1"), p.Sync()]


def test_frame_buffer_refuses_oversized_messages():
    buffer = p.FrameBuffer(limit=100)
    buffer.feed(b"Q" + struct.pack("!i", 101))
    with pytest.raises(ProtocolError):
        buffer.next_message()


# ---------------------------------------------------------------- typed messages

def bind_body(portal="", statement="s1", formats=(0, 1), params=(b"7", None),
              results=(1,)) -> bytes:
    body = cstr(portal) + cstr(statement) + struct.pack(f"!h{len(formats)}h", len(formats),
                                                        *formats)
    body += struct.pack("!h", len(params))
    for value in params:
        body += struct.pack("!i", -1) if value is None else struct.pack("!i", len(value)) + value
    return body + struct.pack(f"!h{len(results)}h", len(results), *results)


BIND_HEAD, NO_RESULTS = cstr("") + cstr("s") + struct.pack("!h", 0), struct.pack("!h", 0)
GOOD = {
    b"Q": (cstr("SELECT 1"), p.Query("SELECT 1")),
    b"P": (cstr("s1") + cstr("SELECT $1") + struct.pack("!hi", 1, 23),
           p.Parse("s1", "SELECT $1", (23,))),
    b"B": (bind_body(), p.Bind("", "s1", (0, 1), (b"7", None), (1,))),
    b"D": (b"S" + cstr("s1"), p.Describe("S", "s1")),
    b"E": (cstr("") + struct.pack("!i", 0), p.Execute("", 0)),
    b"C": (b"P" + cstr("c"), p.Close("P", "c")),
    b"S": (b"", p.Sync()),
    b"H": (b"", p.Flush()),
    b"X": (b"", p.Terminate()),
    b"p": (b"secret\0", p.Password(b"secret\0")),
}


@pytest.mark.parametrize("kind", list(GOOD))
def test_message_round_trip(kind):
    body, message = GOOD[kind]
    assert p.parse_message(kind, body) == message


@pytest.mark.parametrize("kind", [k for k in GOOD if GOOD[k][0] and k != b"p"])
def test_every_truncation_is_refused(kind):
    body = GOOD[kind][0]
    for end in range(len(body)):
        with pytest.raises(ProtocolError):
            p.parse_message(kind, body[:end])


@pytest.mark.parametrize("kind", [k for k in GOOD if k != b"p"])
def test_extra_bytes_are_refused(kind):
    with pytest.raises(ProtocolError, match="extra bytes"):
        p.parse_message(kind, GOOD[kind][0] + b"\0")


@pytest.mark.parametrize("kind, body", [
    (b"Q", b"SELECT \xff\0"),                                      # not UTF-8
    (b"D", b"X" + cstr("s")),                                      # bad subtype
    (b"C", b"" + cstr("s")),                                       # missing subtype
    (b"P", cstr("s") + cstr("q") + struct.pack("!h", -1)),         # 65,535 types, none sent
    (b"P", cstr("s") + cstr("q") + struct.pack("!hi", 2, 23)),     # count too big
    (b"B", bind_body(formats=(0, 1, 0))),                          # formats vs params
    (b"B", bind_body(formats=(2,))),                               # unknown format code
    (b"B", BIND_HEAD + struct.pack("!hi", 1, -2) + NO_RESULTS),    # length below -1
    (b"B", BIND_HEAD + struct.pack("!hi", 1, 1 << 30) + b"abc" + NO_RESULTS),  # oversized
])
def test_garbled_messages(kind, body):
    with pytest.raises(ProtocolError):
        p.parse_message(kind, body)


@pytest.mark.parametrize("kind", [b"d", b"c", b"f", b"F", b"Z", b"?", b"\0", b""])
def test_unsupported_and_unknown_types(kind):
    with pytest.raises(ProtocolError):
        p.parse_message(kind, b"")


def test_bind_formats_per_parameter():
    one = p.parse_message(b"B", bind_body(formats=(1,), params=(b"a", b"b"), results=()))
    assert one.param_format(0) == one.param_format(1) == 1 and one.result_format(3) == 0
    two = p.parse_message(b"B", bind_body(formats=(0, 1), params=(b"a", b"b")))
    assert (two.param_format(0), two.param_format(1)) == (0, 1)


def test_sasl_initial_response():
    data = cstr("SCRAM-SHA-256") + struct.pack("!i", 5) + b"n,,xy"
    assert p.sasl_initial(data) == ("SCRAM-SHA-256", b"n,,xy")
    assert p.sasl_initial(cstr("SCRAM-SHA-256") + struct.pack("!i", -1)) == (
        "SCRAM-SHA-256", None)
    for bad in (b"SCRAM", data[:-1], data + b"!", cstr("M") + struct.pack("!i", -5)):
        with pytest.raises(ProtocolError):
            p.sasl_initial(bad)


@settings(max_examples=300, deadline=None)
@given(kind=st.sampled_from([bytes([b]) for b in b"QPBDECSHXpdcfFZ"]) | st.binary(max_size=2),
       body=st.binary(max_size=64))
def test_random_messages_raise_only_protocol_errors(kind, body):
    try:
        p.parse_message(kind, body)
    except ProtocolError:
        pass


@settings(max_examples=300, deadline=None)
@given(kind=st.sampled_from(list(GOOD)), data=st.data())
def test_mutated_messages_raise_only_protocol_errors(kind, data):
    body = bytearray(GOOD[kind][0])
    for _ in range(data.draw(st.integers(1, 4))):
        if body:
            body[data.draw(st.integers(0, len(body) - 1))] = data.draw(st.integers(0, 255))
    try:
        p.parse_message(kind, bytes(body))
    except ProtocolError:
        pass


@settings(max_examples=300, deadline=None)
@given(head=st.sampled_from([196608, 80877103, 80877104, 80877102, 0, -1]),
       tail=st.binary(max_size=64))
def test_random_startup_packets_raise_only_protocol_errors(head, tail):
    try:
        p.parse_startup(struct.pack("!i", head) + tail)
    except ProtocolError:
        pass
    for body in (tail, tail[:3]):
        try:
            p.parse_startup(body)
        except ProtocolError:
            pass


@settings(max_examples=200, deadline=None)
@given(data=st.binary(max_size=64))
def test_random_sasl_initial_raise_only_protocol_errors(data):
    try:
        p.sasl_initial(data)
    except ProtocolError:
        pass


def test_a_negative_row_limit_is_every_row_as_in_postgresql():
    """Sixteenth review of issue 33: it was 08P01; PostgreSQL runs the portal to its end."""
    assert p.parse_message(b"E", cstr("") + struct.pack("!i", -1)).max_rows == 0
