"""SCRAM-SHA-256 password authentication, the server's side (RFC 5802, RFC 7677).

Owns: the stored password verifier (PostgreSQL's ``SCRAM-SHA-256$...`` format, so
a ``pg_authid.rolpassword`` can be reused as is) and the two-round exchange that
proves a client knows the password without it crossing the wire. As PostgreSQL
does: no channel binding (only "SCRAM-SHA-256" is advertised; a client asking for
binding is refused), the SCRAM user name is ignored (the startup packet names the
user), and an unknown user runs the whole exchange against a fake verifier derived
from a server secret, so it fails exactly as a wrong password does. Failures are
``AuthenticationFailed``; a stored verifier that cannot be read is a
``VerifierError`` that never quotes the verifier's secret parts.
"""
from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets
import stringprep
import unicodedata
from dataclasses import dataclass, field

from ..errors import OperationalError, ProgrammingError

MECHANISM = "SCRAM-SHA-256"
DEFAULT_ITERATIONS = 4096
SALT_BYTES = 16
KEY_BYTES = 32
_PROCESS_SECRET = secrets.token_bytes(32)
"""Default secret for fake verifiers: stable for the life of the process."""


class AuthenticationFailed(OperationalError):
    """The client did not prove it knows the password (``sqlstate`` 28P01), or sent a
    malformed SCRAM message (08P01)."""

    def __init__(self, message: str, sqlstate: str = "28P01") -> None:
        super().__init__(message)
        self.sqlstate = sqlstate


class VerifierError(ProgrammingError):
    """A stored SCRAM verifier is malformed; the message says which part."""


@dataclass(frozen=True)
class Verifier:
    """What the server stores for a password: never the password itself."""
    iterations: int
    salt: bytes
    stored_key: bytes = field(repr=False)
    server_key: bytes = field(repr=False)

    def as_text(self) -> str:
        """PostgreSQL's stored form ``SCRAM-SHA-256$<i>:<salt>$<StoredKey>:<ServerKey>``."""
        return (f"{MECHANISM}${self.iterations}:{_b64(self.salt)}$"
                f"{_b64(self.stored_key)}:{_b64(self.server_key)}")


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode("ascii")


def _unb64(text: str) -> bytes | None:
    try:
        return base64.b64decode(text.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError, ValueError):
        return None


def _hmac(key: bytes, message: bytes) -> bytes:
    return hmac.new(key, message, hashlib.sha256).digest()


def saslprep(password: str) -> bytes:
    """The password's bytes for hashing, as PostgreSQL's pg_saslprep prepares them.

    RFC 4013 with the stdlib's RFC 3454 tables: ASCII stays as is; otherwise non-ASCII
    spaces become spaces, "mapped to nothing" characters go, NFKC normalises (with
    Python's Unicode version, as PostgreSQL uses its own), and a result with prohibited
    or unassigned characters or broken bidi rules falls back to the raw UTF-8 bytes.
    """
    raw = password.encode("utf-8", "surrogatepass")
    if password.isascii():
        return raw
    mapped = "".join(" " if stringprep.in_table_c12(c) else c for c in password
                     if not stringprep.in_table_b1(c))
    text = unicodedata.normalize("NFKC", mapped)
    if any(_prohibited(c) for c in text) or not _bidi_ok(text):
        return raw
    return text.encode("utf-8")


def _prohibited(c: str) -> bool:
    return any(check(c) for check in (
        stringprep.in_table_a1, stringprep.in_table_c12, stringprep.in_table_c21_c22,
        stringprep.in_table_c3, stringprep.in_table_c4, stringprep.in_table_c5,
        stringprep.in_table_c6, stringprep.in_table_c7, stringprep.in_table_c8,
        stringprep.in_table_c9))


def _bidi_ok(text: str) -> bool:
    """RFC 3454 section 6: right-to-left text has no left-to-right characters and
    starts and ends with a right-to-left character."""
    if not any(stringprep.in_table_d1(c) for c in text):
        return True
    return (not any(stringprep.in_table_d2(c) for c in text)
            and stringprep.in_table_d1(text[0]) and stringprep.in_table_d1(text[-1]))


def make_verifier(password: str, salt: bytes | None = None,
                  iterations: int = DEFAULT_ITERATIONS) -> str:
    """A new verifier for ``password`` in PostgreSQL's stored format (random salt)."""
    if not 1 <= iterations < 1 << 31:
        raise VerifierError("the SCRAM iteration count must be between 1 and 2^31 - 1")
    salt = secrets.token_bytes(SALT_BYTES) if salt is None else bytes(salt)
    salted = hashlib.pbkdf2_hmac("sha256", saslprep(password), salt, iterations)
    stored_key = hashlib.sha256(_hmac(salted, b"Client Key")).digest()
    return Verifier(iterations, salt, stored_key, _hmac(salted, b"Server Key")).as_text()


def parse_verifier(text: str) -> Verifier:
    """The Verifier in a stored ``SCRAM-SHA-256$...`` string, or a VerifierError."""
    if not isinstance(text, str) or not text.startswith(MECHANISM + "$"):
        raise VerifierError("a password verifier must start with 'SCRAM-SHA-256$' "
                            "(make one with PostgreSQL or dpsql.server.scram.make_verifier)")
    parts = text[len(MECHANISM) + 1:].split("$")
    if len(parts) != 2 or parts[0].count(":") != 1 or parts[1].count(":") != 1:
        raise VerifierError("a SCRAM verifier must read SCRAM-SHA-256$<iterations>:<salt>"
                            "$<StoredKey>:<ServerKey>")
    count, salt_text = parts[0].split(":")
    if not (count.isascii() and count.isdigit()) or not 1 <= int(count) < 1 << 31:
        raise VerifierError("the SCRAM verifier's iteration count is not a positive integer")
    salt = _unb64(salt_text)
    if not salt:
        raise VerifierError("the SCRAM verifier's salt is not base64")
    stored_key, server_key = (_unb64(p) for p in parts[1].split(":"))
    for name, key in (("StoredKey", stored_key), ("ServerKey", server_key)):
        if key is None or len(key) != KEY_BYTES:
            raise VerifierError(f"the SCRAM verifier's {name} is not {KEY_BYTES} bytes "
                                "of base64")
    return Verifier(int(count), salt, stored_key, server_key)


def mock_verifier(username: str, server_secret: bytes,
                  iterations: int = DEFAULT_ITERATIONS) -> Verifier:
    """A fake verifier for an unknown user: the same salt for the same name on every
    attempt (a changing salt would tell the user does not exist); no password fits."""
    name = username.encode("utf-8", "surrogatepass")
    salt = _hmac(server_secret, b"salt\0" + name)[:SALT_BYTES]
    return Verifier(iterations, salt, _hmac(server_secret, b"stored\0" + name),
                    _hmac(server_secret, b"server\0" + name))


def _malformed(what: str) -> AuthenticationFailed:
    return AuthenticationFailed(f"malformed SCRAM message: {what}", "08P01")


def _printable(text: str) -> bool:
    """RFC 5802 ``printable``: ASCII 0x21-0x7E except the comma."""
    return text != "" and all(0x21 <= ord(c) <= 0x7E and c != "," for c in text)


def _attribute(part: str, name: str) -> str:
    if not part.startswith(name + "="):
        raise _malformed(f"expected attribute '{name}'")
    return part[2:]


def _extensions(parts: list) -> None:
    for part in parts:
        if len(part) < 2 or not part[0].isascii() or not part[0].isalpha() or part[1] != "=":
            raise _malformed("invalid attribute")


def _text(message: bytes) -> str:
    try:
        return bytes(message).decode("utf-8")
    except (UnicodeDecodeError, TypeError):
        raise _malformed("not UTF-8") from None


class ScramExchange:
    """One SCRAM-SHA-256 authentication: ``first`` answers the client-first message,
    ``final`` checks the proof and returns the server-final message.

    ``verifier`` None means the user is unknown: the exchange runs on
    ``mock_verifier(username, server_secret)`` and ``final`` always fails.
    ``server_nonce`` fixes the server's nonce part (tests only).
    """

    def __init__(self, verifier: Verifier | None, nonce_bytes: int = 18, *,
                 username: str = "", server_secret: bytes | None = None,
                 server_nonce: str | None = None) -> None:
        self.doomed = verifier is None
        self.verifier = verifier or mock_verifier(username, server_secret or _PROCESS_SECRET)
        nonce = server_nonce or _b64(secrets.token_bytes(nonce_bytes))
        if not _printable(nonce):
            raise VerifierError("a SCRAM server nonce must be printable ASCII without ','")
        self.server_nonce = nonce
        self.state = "start"

    def first(self, client_first: bytes) -> bytes:
        """The server-first message for the client-first message."""
        if self.state != "start":
            raise _malformed("client-first message out of order")
        self.state = "failed"
        text = _text(client_first)
        self.gs2_header, self.client_first_bare, client_nonce = _read_client_first(text)
        self.nonce = client_nonce + self.server_nonce
        v = self.verifier
        self.server_first = f"r={self.nonce},s={_b64(v.salt)},i={v.iterations}"
        self.state = "first"
        return self.server_first.encode("ascii")

    def final(self, client_final: bytes) -> bytes:
        """The server-final message, or AuthenticationFailed when the proof is wrong."""
        if self.state != "first":
            raise _malformed("client-final message out of order")
        self.state = "failed"
        text = _text(client_final)
        without_proof, proof = _read_client_final(text, self.gs2_header, self.nonce)
        auth = ",".join((self.client_first_bare, self.server_first, without_proof))
        auth_message = auth.encode("utf-8")
        signature = _hmac(self.verifier.stored_key, auth_message)
        client_key = bytes(a ^ b for a, b in zip(proof, signature))
        matches = hmac.compare_digest(hashlib.sha256(client_key).digest(),
                                      self.verifier.stored_key)
        if self.doomed or not matches:
            raise AuthenticationFailed("password authentication failed")
        self.state = "done"
        return ("v=" + _b64(_hmac(self.verifier.server_key, auth_message))).encode("ascii")


def _read_client_first(text: str) -> tuple[str, str, str]:
    """(gs2 header, client-first-message-bare, client nonce) of a client-first message."""
    if text.startswith("p="):
        raise AuthenticationFailed("channel binding is not supported: the server offers "
                                   "SCRAM-SHA-256 only", "08P01")
    if not text.startswith(("n,", "y,")):
        raise _malformed("unexpected channel-binding flag")
    flag, authzid, *rest = text.split(",", 2)
    if authzid != "":
        raise AuthenticationFailed("authorization identities (a=) are not supported", "0A000")
    if not rest:
        raise _malformed("missing client-first-message-bare")
    bare = rest[0]
    parts = bare.split(",")
    if parts[0].startswith("m="):
        raise AuthenticationFailed("SCRAM extension m= is not supported", "0A000")
    _attribute(parts[0], "n")
    if len(parts) < 2:
        raise _malformed("missing nonce")
    nonce = _attribute(parts[1], "r")
    if not _printable(nonce):
        raise _malformed("invalid nonce")
    _extensions(parts[2:])
    return f"{flag},,", bare, nonce


def _read_client_final(text: str, gs2_header: str, nonce: str) -> tuple[str, bytes]:
    """(client-final-message-without-proof, proof) of a client-final message, checked
    against the channel-binding header and nonce of the first round."""
    without_proof, sep, proof_text = text.rpartition(",p=")
    if not sep:
        raise _malformed("missing proof")
    parts = without_proof.split(",")
    binding = _unb64(_attribute(parts[0], "c"))
    if binding != gs2_header.encode("ascii"):
        raise _malformed("unexpected channel binding")
    if len(parts) < 2 or not hmac.compare_digest(
            _attribute(parts[1], "r").encode("utf-8"), nonce.encode("utf-8")):
        raise _malformed("nonce mismatch")
    _extensions(parts[2:])
    proof = _unb64(proof_text)
    if proof is None or len(proof) != KEY_BYTES:
        raise _malformed("invalid proof")
    return without_proof, proof
