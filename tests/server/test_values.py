"""Values in PostgreSQL messages: text output, type OIDs and bound parameters.

The text output is also compared with what a real PostgreSQL writes for the same
values (floats at every exponent, timestamps, booleans), and parameter decoding
with what it reads, so clients parse dpsql's rows as they parse PostgreSQL's.
"""
import datetime as dt
import decimal
import math
import struct

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings, strategies as st

import dpsql
from dpsql.server import values as v
from dpsql.server.values import ParameterError, decode_param, text_value, type_oid

FLOATS = [0.0, -0.0, 1.0, -1.5, 0.1, 1 / 3, 100.0, 123.456, 1e-4, 1.5e-5, 1e-5, 99999.5,
          1e14, 123456789012345.0, 1e15, 1.5e15, 1e16, 1e22, 1.7976931348623157e308, 5e-324,
          2.5e-310, 0.30000000000000004, 12345.678e10]


def test_text_of_scalars():
    assert text_value(None) is None
    assert text_value(True) == b"t" and text_value(False) == b"f"
    assert text_value(np.bool_(True)) == b"t"
    assert text_value(-42) == b"-42" and text_value(np.int64(7)) == b"7"
    assert text_value("héllo") == "héllo".encode()
    assert text_value(pd.NA) is None and text_value(pd.NaT) is None
    assert text_value(b"\x01\xff") == b"\\x01ff"


def test_text_of_floats():
    assert text_value(math.nan) == b"NaN"
    assert text_value(math.inf) == b"Infinity" and text_value(-math.inf) == b"-Infinity"
    assert text_value(1.0) == b"1" and text_value(-0.0) == b"-0"
    assert text_value(0.1) == b"0.1" and text_value(1e15) == b"1e+15"
    assert text_value(1e14) == b"100000000000000" and text_value(1.5e-5) == b"1.5e-05"
    assert text_value(np.float64(2.5)) == b"2.5"


@settings(max_examples=300, deadline=None)
@given(st.floats(allow_nan=False, allow_infinity=False))
def test_float_text_round_trips(x):
    assert float(text_value(x)) == x


def test_text_of_numeric_dates_and_times():
    assert text_value(decimal.Decimal("1E+2")) == b"100"
    assert text_value(decimal.Decimal("-0.0100")) == b"-0.0100"
    assert text_value(decimal.Decimal("NaN")) == b"NaN"
    assert text_value(dt.date(2024, 2, 29)) == b"2024-02-29"
    assert text_value(dt.datetime(2024, 1, 2, 3, 4, 5)) == b"2024-01-02 03:04:05"
    assert text_value(dt.datetime(33, 1, 2, 3, 4, 5, 120000)) == b"0033-01-02 03:04:05.12"
    assert text_value(pd.Timestamp("2024-01-02 03:04:05.000001")) == b"2024-01-02 03:04:05.000001"
    utc = dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=dt.timezone.utc)
    assert text_value(utc) == b"2024-01-02 03:04:05+00"
    india = dt.timezone(dt.timedelta(hours=5, minutes=30))
    assert text_value(dt.datetime(2024, 1, 2, tzinfo=india)) == b"2024-01-02 00:00:00+05:30"


def test_type_oids():
    assert type_oid("int64") == type_oid("Int64") == type_oid(int) == 20
    assert type_oid(np.dtype("float64")) == type_oid("Float64") == type_oid(float) == 701
    assert type_oid("object") == type_oid(str) == type_oid("string") == 25
    assert type_oid(bool) == type_oid("boolean") == 16
    assert type_oid("datetime64[ns]") == type_oid(pd.Series([pd.Timestamp(0)]).dtype) == 1114
    assert type_oid("datetime64[ns, UTC]") == 1184
    assert type_oid("date") == 1082 and type_oid(decimal.Decimal) == 1700
    assert v.text_field("x", 20) == ("x", 20, 8, -1, 0)
    assert v.text_field("x", 25) == ("x", 25, -1, -1, 0)


@pytest.mark.parametrize("raw, oid, fmt, expected", [
    (None, 23, 0, None), (b" 42 ", 23, 0, 42), (b"-32768", 21, 0, -32768),
    (b"9223372036854775807", 20, 0, 9223372036854775807),
    (b"1.5", 701, 0, 1.5), (b"-Infinity", 701, 0, -math.inf), (b"1e3", 700, 0, 1000.0),
    (b"0.1", 700, 0, struct.unpack("!f", struct.pack("!f", 0.1))[0]),
    (b"abc", 25, 0, "abc"), (b"abc", 1043, 0, "abc"), (b"abc", 0, 0, "abc"),
    (b"yes", 16, 0, True), (b"OFF", 16, 0, False), (b"t", 16, 0, True), (b"0", 16, 0, False),
    (b"12.50", 1700, 0, decimal.Decimal("12.50")), (b"2024-02-29", 1082, 0, dt.date(2024, 2, 29)),
    (b"2024-01-02 03:04:05", 1114, 0, dt.datetime(2024, 1, 2, 3, 4, 5)),
    (b"\x00\x07", 21, 1, 7), (b"\xff\xff\xff\xfe", 23, 1, -2), (struct.pack("!q", -3), 20, 1, -3),
    (struct.pack("!f", 0.5), 700, 1, 0.5), (struct.pack("!d", 0.1), 701, 1, 0.1),
    (b"\x01", 16, 1, True), (b"\x00", 16, 1, False), ("é".encode(), 25, 1, "é"),
])
def test_decode_param(raw, oid, fmt, expected):
    assert decode_param(raw, oid, fmt) == expected


def test_binary_parameters_as_psycopg_sends_them():
    """Review 28, F5: psycopg's ordinary ``%s`` sends a ``Decimal`` (and an ``int`` beyond
    int8), a ``date`` and a naive ``datetime`` in binary; each is read as its text is."""
    from psycopg.adapt import PyFormat, Transformer     # the test extra's: CI always runs this
    transformer = Transformer()
    values = [decimal.Decimal("12.50"), decimal.Decimal("-0.0001"), decimal.Decimal("0"),
              decimal.Decimal("123456789012345678901234.5678"), 10 ** 19, -10 ** 25,
              decimal.Decimal("1E-20"), decimal.Decimal("1.23E+5"), decimal.Decimal("Infinity"),
              dt.date(2024, 2, 29), dt.date(1, 1, 1), dt.date(9999, 12, 31),
              dt.datetime(2024, 1, 2, 3, 4, 5, 6), dt.datetime(1969, 7, 20, 20, 17, 40)]
    for value in values:
        dumper = transformer.get_dumper(value, PyFormat.BINARY)
        got = decode_param(bytes(dumper.dump(value)), dumper.oid, 1)
        assert got == value and type(got) is type(value if not isinstance(value, int)
                                                  else decimal.Decimal(value)), value
    assert decode_param(struct.pack("!hhHh", 0, 0, 0xC000, 0), 1700, 1).is_nan()


def test_decode_param_nan():
    assert math.isnan(decode_param(b"NaN", 701, 0))
    assert decode_param(b"NaN", 1700, 0).is_nan()


@pytest.mark.parametrize("raw, oid, fmt, sqlstate", [
    (b"12a", 23, 0, "22P02"), (b"1_000", 20, 0, "22P02"), (b"32768", 21, 0, "22003"),
    (b"9223372036854775808", 20, 0, "22003"), (b"\xd9\xa3", 23, 0, "22P02"),
    (b"1e400", 701, 0, "22003"), (b"1e-400", 701, 0, "22003"), (b"1e39", 700, 0, "22003"),
    (b"1.5.2", 701, 0, "22P02"), (b"maybe", 16, 0, "22P02"), (b"o", 16, 0, "22P02"),
    (b"1e999999999999999999999", 1700, 0, "22003"), (b"x", 1700, 0, "22P02"),
    (b"2024-02-30", 1082, 0, "22008"), (b"02/03/2024", 1082, 0, "22P02"),
    (b"\xff", 25, 0, "22021"), (b"a\0b", 25, 0, "22021"),
    (b"\x00\x07\x00", 21, 1, "22P03"), (b"", 20, 1, "22P03"),
    (b"1", 1186, 1, "0A000"), (b"1", 600, 0, "0A000"), (b"1", 23, 2, "22023"),
    (b"1", 1082, 1, "22P03"), (b"\x7f\xff\xff\xff", 1082, 1, "22008"),
    (struct.pack("!q", 2 ** 63 - 1), 1114, 1, "22008"), (b"\x00" * 7, 1114, 1, "22P03"),
    (struct.pack("!hhHhH", 1, 0, 0, 0, 10000), 1700, 1, "22P03"),     # a digit over 9,999
    (struct.pack("!hhHh", 2, 0, 0, 0), 1700, 1, "22P03"),             # digits missing
    (struct.pack("!hhHhH", 1, 0, 0x1234, 0, 1), 1700, 1, "22P03"),    # no such sign
])
def test_decode_param_refusals(raw, oid, fmt, sqlstate):
    with pytest.raises(ParameterError) as raised:
        decode_param(raw, oid, fmt)
    assert raised.value.sqlstate == sqlstate
    assert isinstance(raised.value, dpsql.Error) and "\n" not in str(raised.value)


@settings(max_examples=300, deadline=None)
@given(raw=st.binary(max_size=12),
       oid=st.sampled_from([0, 16, 20, 21, 23, 25, 700, 701, 1043, 1082, 1114, 1700, 17]),
       fmt=st.sampled_from([0, 1, 2]))
def test_random_parameters_raise_only_parameter_errors(raw, oid, fmt):
    try:
        decode_param(raw, oid, fmt)
    except ParameterError:
        pass


# ---------------------------------------------------------------- against PostgreSQL

def test_float_text_matches_postgresql(postgres):
    with postgres.connect() as con:
        for x in FLOATS + [-x for x in FLOATS] + [math.nan, math.inf, -math.inf]:
            theirs = con.execute("SELECT CAST(%s AS float8)::text", [repr(x)]).fetchone()[0]
            assert text_value(x) == theirs.encode(), x


def test_datetime_text_matches_postgresql(postgres):
    stamps = [dt.datetime(2024, 1, 2, 3, 4, 5), dt.datetime(1, 1, 1),
              dt.datetime(9999, 12, 31, 23, 59, 59, 999999), dt.datetime(2000, 2, 29, 0, 0, 0, 500)]
    with postgres.connect() as con:
        for stamp in stamps:
            theirs = con.execute("SELECT CAST(%s AS timestamp)::text",
                                 [stamp.isoformat()]).fetchone()[0]
            assert text_value(stamp) == theirs.encode()
            theirs = con.execute("SELECT CAST(%s AS date)::text",
                                 [stamp.date().isoformat()]).fetchone()[0]
            assert text_value(stamp.date()) == theirs.encode()


def test_parameter_reading_matches_postgresql(postgres):
    cases = [("bool", t) for t in ("t", "TRUE", " yes ", "of", "on", "n", "1", "tr", "o", "2")]
    cases += [("float8", t) for t in ("1e-400", " 1.5 ", "-inf", "Infinity", ".5", "5.", "1e")]
    cases += [("int2", t) for t in ("32767", "32768", " -5 ", "+3", "1.0")]
    with postgres.connect(autocommit=True) as con:
        oids = {"bool": 16, "float8": 701, "int2": 21}
        for type_name, text in cases:
            try:
                theirs = con.execute(f"SELECT CAST(%s AS {type_name})", [text]).fetchone()[0]
            except Exception:
                theirs = "refused"
            try:
                ours = decode_param(text.encode(), oids[type_name], 0)
            except ParameterError:
                ours = "refused"
            assert ours == theirs, (type_name, text)
