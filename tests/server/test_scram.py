"""SCRAM-SHA-256, the server's side: the RFC 7677 exchange byte for byte, a client
written here from RFC 5802, unknown users failing as wrong passwords do, hostile
messages, and verifiers made by PostgreSQL itself."""
import base64
import hashlib
import hmac

import pytest
from hypothesis import given, settings, strategies as st

import dpsql
from dpsql.server import scram
from dpsql.server.scram import AuthenticationFailed, ScramExchange, VerifierError

RFC_SALT = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
RFC_SERVER_NONCE = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"


def h(key: bytes, message: bytes) -> bytes:
    return hmac.new(key, message, hashlib.sha256).digest()


def login(exchange: ScramExchange, password: str, header: str = "n,,",
          nonce: str = "fyko+d2lbbFgONRv9qkxdawL") -> None:
    """A SCRAM client (RFC 5802 section 3): raises what the server raises, checks the
    server's signature when it accepts."""
    bare = f"n=,r={nonce}"
    server_first = exchange.first((header + bare).encode()).decode()
    attrs = dict(part.split("=", 1) for part in server_first.split(","))
    assert attrs["r"].startswith(nonce) and len(attrs["r"]) > len(nonce)
    salted = hashlib.pbkdf2_hmac("sha256", scram.saslprep(password),
                                 base64.b64decode(attrs["s"]), int(attrs["i"]))
    client_key = h(salted, b"Client Key")
    without_proof = f"c={base64.b64encode(header.encode()).decode()},r={attrs['r']}"
    auth = f"{bare},{server_first},{without_proof}".encode()
    proof = bytes(a ^ b for a, b in zip(client_key, h(hashlib.sha256(client_key).digest(), auth)))
    final = exchange.final(f"{without_proof},p={base64.b64encode(proof).decode()}".encode())
    assert final.decode() == "v=" + base64.b64encode(h(h(salted, b"Server Key"), auth)).decode()


def test_rfc7677_exchange():
    verifier = scram.parse_verifier(scram.make_verifier("pencil", salt=RFC_SALT))
    exchange = ScramExchange(verifier, server_nonce=RFC_SERVER_NONCE)
    assert exchange.first(b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO") == (
        b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
        b"s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096")
    assert exchange.final(
        b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
        b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=") == (
        b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=")


def test_verifier_format_and_round_trip():
    text = scram.make_verifier("pencil", salt=RFC_SALT)
    assert text.startswith("SCRAM-SHA-256$4096:W22ZaJ0SNY7soEsUEjb6gQ==$")
    verifier = scram.parse_verifier(text)
    assert verifier.as_text() == text and verifier.iterations == 4096
    assert "stored_key" not in repr(verifier)
    fresh = scram.parse_verifier(scram.make_verifier("pencil"))
    assert len(fresh.salt) == 16 and fresh.salt != RFC_SALT


def test_a_client_with_the_password_is_accepted():
    verifier = scram.parse_verifier(scram.make_verifier("correct horse", iterations=64))
    login(ScramExchange(verifier), "correct horse")
    login(ScramExchange(verifier), "correct horse", header="y,,")


def test_a_wrong_password_fails():
    verifier = scram.parse_verifier(scram.make_verifier("correct horse", iterations=64))
    with pytest.raises(AuthenticationFailed, match="password authentication failed") as raised:
        login(ScramExchange(verifier), "correct horsE")
    assert raised.value.sqlstate == "28P01"
    assert isinstance(raised.value, dpsql.OperationalError)


def test_an_unknown_user_fails_as_a_wrong_password(monkeypatch):
    known = ScramExchange(scram.parse_verifier(scram.make_verifier("pw")))
    ghost = ScramExchange(None, username="ghost", server_secret=b"k" * 32)
    again = ScramExchange(None, username="ghost", server_secret=b"k" * 32)
    other = ScramExchange(None, username="nobody", server_secret=b"k" * 32)
    firsts = [x.first(b"n,,n=,r=abc").decode() for x in (known, ghost, again, other)]
    salts = [dict(p.split("=", 1) for p in f.split(","))["s"] for f in firsts]
    assert salts[1] == salts[2] != salts[3]                  # stable per name
    assert [len(s) for s in salts] == [len(salts[0])] * 4
    assert {f.rsplit(",", 1)[1] for f in firsts} == {"i=4096"}

    def attempt(exchange):
        calls = []
        real = scram._hmac
        monkeypatch.setattr(scram, "_hmac", lambda k, m: calls.append(1) or real(k, m))
        nonce = exchange.nonce
        with pytest.raises(AuthenticationFailed) as raised:
            exchange.final(f"c=biws,r={nonce},p={base64.b64encode(b'x' * 32).decode()}".encode())
        monkeypatch.setattr(scram, "_hmac", real)
        return str(raised.value), raised.value.sqlstate, len(calls)

    assert attempt(known) == attempt(ghost)


def test_an_unknown_user_fails_even_when_the_fake_verifier_fits(monkeypatch):
    """An unknown user never gets in, even with a proof the fake verifier would accept."""
    real = scram.parse_verifier(scram.make_verifier("pw", iterations=16))
    monkeypatch.setattr(scram, "mock_verifier", lambda *args, **kwargs: real)
    login(ScramExchange(real), "pw")
    with pytest.raises(AuthenticationFailed, match="password authentication failed"):
        login(ScramExchange(None, username="ghost"), "pw")


@pytest.mark.parametrize("first", [
    b"", b"n", b"x,,n=,r=abc", b"n,a=admin,n=,r=abc", b"n,,", b"n,,r=abc", b"n,,n=u",
    b"n,,n=u,r=", b"n,,n=u,r=a\x01b", b"n,,m=ext,n=u,r=abc", b"n,,n=u,r=abc,=x",
    b"p=tls-server-end-point,,n=,r=abc", b"n,,n=u,r=\xff\xfe", "n,,n=u,r=é".encode(),
])
def test_malformed_client_first(first):
    with pytest.raises(AuthenticationFailed) as raised:
        ScramExchange(None).first(first)
    assert raised.value.sqlstate in ("08P01", "0A000")


@pytest.fixture
def started():
    exchange = ScramExchange(scram.parse_verifier(scram.make_verifier("pw", iterations=16)),
                             server_nonce="SRV")
    exchange.first(b"n,,n=,r=abc")
    return exchange


PROOF = base64.b64encode(b"\0" * 32).decode()


@pytest.mark.parametrize("final", [
    "", "c=biws,r=abcSRV", f"c=eSws,r=abcSRV,p={PROOF}", f"c=biws,r=abcXXX,p={PROOF}",
    f"c=biws,r=abc,p={PROOF}", f"r=abcSRV,c=biws,p={PROOF}", "c=biws,r=abcSRV,p=AAAA",
    "c=biws,r=abcSRV,p=not*base64", f"c=biws,p={PROOF}", f"c=!!!!,r=abcSRV,p={PROOF}",
    f"c=biws,r=abcSRV,1=x,p={PROOF}", f"c=biws,r=abcSRV,p={PROOF},x=1",
])
def test_malformed_client_final(started, final):
    with pytest.raises(AuthenticationFailed):
        started.final(final.encode())
    with pytest.raises(AuthenticationFailed, match="out of order"):
        started.final(final.encode())                   # one attempt per exchange


def test_messages_out_of_order():
    exchange = ScramExchange(None)
    with pytest.raises(AuthenticationFailed, match="out of order"):
        exchange.final(b"c=biws,r=x,p=" + PROOF.encode())
    exchange.first(b"n,,n=,r=abc")
    with pytest.raises(AuthenticationFailed, match="out of order"):
        exchange.first(b"n,,n=,r=abc")


@settings(max_examples=300, deadline=None)
@given(first=st.binary(max_size=40), final=st.binary(max_size=80))
def test_random_messages_raise_only_authentication_failed(first, final):
    exchange = ScramExchange(scram.parse_verifier(scram.make_verifier("pw", iterations=2)))
    for message in (b"n,,n=," + first, first):
        try:
            exchange.first(message)
        except AuthenticationFailed:
            continue
    for message in (f"c=biws,r={getattr(exchange, 'nonce', '')},".encode() + final, final):
        try:
            exchange.final(message)
        except AuthenticationFailed:
            pass


@pytest.mark.parametrize("text, names", [
    ("md5abcdef", "must start with"), ("SCRAM-SHA-256$4096:c2FsdA==", "must read"),
    ("SCRAM-SHA-256$x:c2FsdA==$AAAA:AAAA", "iteration count"),
    ("SCRAM-SHA-256$0:c2FsdA==$AAAA:AAAA", "iteration count"),
    ("SCRAM-SHA-256$4096:!!$AAAA:AAAA", "salt"),
    ("SCRAM-SHA-256$4096:c2FsdA==$SECRETPART:AAAA", "StoredKey"),
    ("SCRAM-SHA-256$4096:c2FsdA==$" + "A" * 43 + "=:SECRETPART", "ServerKey"),
    (None, "must start with"),
])
def test_malformed_verifiers(text, names):
    with pytest.raises(VerifierError, match=names) as raised:
        scram.parse_verifier(text)
    assert "SECRETPART" not in str(raised.value) and isinstance(raised.value, dpsql.Error)


def test_saslprep():
    assert scram.saslprep("secret pass") == b"secret pass"
    assert scram.saslprep("I\u00adX") == b"IX"                       # mapped to nothing
    assert scram.saslprep("\u2168") == b"IX"                         # NFKC
    assert scram.saslprep("a\u00a0b") == b"a b"                      # non-ASCII space
    assert scram.saslprep("\u00e9\u0007") == "\u00e9\u0007".encode()  # prohibited: raw


# ---------------------------------------------------------------- against PostgreSQL

PASSWORDS = ["secret pass", "pässwörd", "I\u00adX\u2168", "\u00e9\u0007", "\u05d0a"]


def test_postgresql_verifiers(postgres):
    """A verifier PostgreSQL made is read, accepts the right password and refuses a wrong
    one; and dpsql makes the very same verifier from the same salt."""
    with postgres.connect(autocommit=True) as con:
        con.execute("SET password_encryption = 'scram-sha-256'")
        for n, password in enumerate(PASSWORDS):
            con.execute(f"DROP ROLE IF EXISTS r{n}")
            quoted = password.replace("'", "''")
            con.execute(f"CREATE ROLE r{n} LOGIN PASSWORD '{quoted}'")
            stored = con.execute("SELECT rolpassword FROM pg_authid WHERE rolname = %s",
                                 [f"r{n}"]).fetchone()[0]
            verifier = scram.parse_verifier(stored)
            login(ScramExchange(verifier), password)
            with pytest.raises(AuthenticationFailed):
                login(ScramExchange(verifier), password + "x")
            assert scram.make_verifier(password, verifier.salt, verifier.iterations) == stored
