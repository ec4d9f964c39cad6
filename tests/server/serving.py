"""A real ``dpsql serve`` for the tests: a deployment in a temporary directory, served on a
unix socket (and, with TLS, on a loopback TCP port) by a Server in a background thread,
or by the ``dpsql serve`` command in a subprocess."""
from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import signal
import threading

import yaml

from dpsql.server.config import load
from dpsql.server.listener import Server
from dpsql.server.scram import make_verifier
from tests.paths import DATA
from tests.servers import missing

PASSWORDS = {"alice": "alice's secret", "bob": "bob-pw", "carol": "carol pw"}


def write_deployment(where, tls: bool = False, **overrides) -> str:
    """A deployment over PUMS for alice (3.0, at most 1.0 per query), bob (0.5) and carol
    (a rho budget); returns the file's path."""
    os.makedirs(where, exist_ok=True)
    shutil.copy(DATA / "PUMS.yaml", os.path.join(where, "PUMS.yaml"))
    shutil.copy(DATA / "PUMS.csv", os.path.join(where, "PUMS.csv"))
    socket_dir = os.path.join(where, "sock")
    os.makedirs(socket_dir, exist_ok=True)
    config = {
        "metadata": "PUMS.yaml", "tables": {"PUMS.PUMS": "PUMS.csv"}, "ledger": "ledgers",
        "audit_log": "audit.jsonl", "listen": {"unix_socket": "sock", "port": 5432},
        "tls": "off", "privacy": {"epsilon": 0.5, "delta": 1e-6},
        "limits": {"statement_timeout_s": 30, "workers": 4},
        "analysts": {
            "alice": {"password": make_verifier(PASSWORDS["alice"]),
                      "budget": {"epsilon": 3.0, "delta": 1e-5}, "per_query": {"epsilon": 1.0}},
            "bob": {"password": make_verifier(PASSWORDS["bob"]), "budget": {"epsilon": 0.5}},
            "carol": {"password": make_verifier(PASSWORDS["carol"]),
                      "budget": {"rho": 0.5, "delta": 1e-6}, "renewal": "1d"},
        },
    }
    if tls:
        cert, key = self_signed(where)
        config["listen"] = {"unix_socket": "sock", "host": "127.0.0.1", "port": 0}
        config["tls"] = {"certificate": cert, "key": key}
    config.update(overrides)
    path = os.path.join(where, "deployment.yaml")
    with open(path, "w") as f:
        yaml.safe_dump(config, f)
    return path


def spent(deployment, analyst: str) -> float:
    """Epsilon in ``analyst``'s ledger file (0 before their first charge)."""
    from dpsql.privacy.ledger import Ledger
    path = os.path.join(deployment.ledger_dir, f"{analyst}.jsonl")
    return Ledger(path).spent()[0] if os.path.exists(path) else 0.0


def self_signed(where) -> tuple:
    if shutil.which("openssl") is None:
        missing("openssl is needed to make a test certificate")
    cert, key = os.path.join(where, "server.crt"), os.path.join(where, "server.key")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                    "-subj", "/CN=localhost", "-keyout", key, "-out", cert],
                   check=True, capture_output=True)
    return cert, key


class _Dsn:
    deployment = None

    @property
    def socket_dir(self) -> str:
        return self.deployment.unix_socket

    def dsn(self, user: str = "alice", password: str | None = None, **extra) -> str:
        password = PASSWORDS.get(user, "x") if password is None else password
        parts = {"host": self.socket_dir, "port": self.deployment.port, "user": user,
                 "password": password, "dbname": "dpsql", "sslmode": "disable"}
        parts.update(extra)
        quoted = {k: str(v).replace("\\", "\\\\").replace("'", "\\'") for k, v in parts.items()}
        return " ".join(f"{k}='{v}'" for k, v in quoted.items())


class Served(_Dsn):
    """A Server running in a thread of this process, with its own event loop. (A client
    in the same process must not call psycopg's blocking ``cancel()``, which holds the
    GIL while it waits for the server: use ``Process`` for that.)"""

    def __init__(self, path: str) -> None:
        self.deployment = load(path)
        self.server = Server(self.deployment)
        self.loop = asyncio.new_event_loop()
        started = threading.Event()

        def main():
            asyncio.set_event_loop(self.loop)
            self.loop.run_until_complete(self.server.start())
            started.set()
            self.loop.run_forever()

        self.thread = threading.Thread(target=main, daemon=True)
        self.thread.start()
        if not started.wait(30):
            raise RuntimeError("dpsql serve did not start")

    @property
    def port(self) -> int:
        return self.server.port if self.deployment.host else self.deployment.port

    def stop(self) -> None:
        asyncio.run_coroutine_threadsafe(self.server.stop(), self.loop).result(30)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(30)


class Process(_Dsn):
    """``dpsql serve --config path`` in a subprocess, started once its socket is there."""

    def __init__(self, path: str) -> None:
        self.deployment = load(path)
        # faulthandler: a server that does not stop is sent SIGABRT and prints its threads
        self.proc = subprocess.Popen([sys.executable, "-m", "dpsql", "serve", "--config", path],
                                     stderr=subprocess.PIPE, text=True,
                                     env={**os.environ, "PYTHONFAULTHANDLER": "1"})
        said = []                   # a Spark JVM's own lines come before "listening on ..."
        while not said or ("listening" not in said[-1] and said[-1]):
            said.append(self.proc.stderr.readline())
        if "listening" not in said[-1]:
            self.proc.kill()
            raise RuntimeError(f"dpsql serve did not start: {''.join(said)}"
                               f"{self.proc.stderr.read()}")

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait(20)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.send_signal(signal.SIGABRT)     # its threads' stacks, on stderr
                said = self.proc.communicate(timeout=20)[1]
                raise AssertionError(f"dpsql serve did not stop within 30 s:\n{said}") from None
