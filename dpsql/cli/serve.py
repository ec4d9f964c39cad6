"""`dpsql serve`: run the privacy boundary, check its deployment file, or hash a password.

Owns: the command line of the server (the server itself is ``dpsql.server``). ``--check``
reads and checks the deployment file, the metadata and the data binding, prints what
would be served, and exits without listening. ``--hash-password`` reads a password
from the terminal (or one line of stdin) and prints the SCRAM-SHA-256 verifier to put in
the deployment file, so that no plain password is ever stored.
"""
from __future__ import annotations

import asyncio
import getpass
import logging
import os
import signal
import sys

from . import interrupt
from .text import EXIT_OK, ConfigurationError, UsageError
from ..errors import ProgrammingError, QueryError


def run(args) -> int:
    if args.hash_password:
        return _hash_password()
    if not args.config:
        raise UsageError("dpsql serve needs --config deployment.yaml (or --hash-password)")
    from ..server.config import ConfigError, load
    try:
        deployment = load(args.config)
    except ConfigError as err:
        raise ConfigurationError(str(err)) from None
    if args.check:
        return _check(deployment)
    return asyncio.run(_serve(deployment))


def _hash_password() -> int:
    from ..server.scram import make_verifier
    if sys.stdin.isatty():
        password = getpass.getpass("password: ")
        if password != getpass.getpass("again: "):
            raise UsageError("the two passwords differ")
    else:
        password = sys.stdin.readline().rstrip("\r\n")
    if not password:
        raise UsageError("an empty password cannot be hashed")
    print(make_verifier(password))
    return EXIT_OK


def _check(deployment) -> int:
    """Bind the data once and check every analyst's existing ledger; create nothing."""
    import os

    from ..api.session import open_session
    from ..metadata.model import Metadata
    from ..privacy.ledger import Ledger
    from ..server.accounts import Account, open_shared
    metadata = Metadata.load(deployment.metadata)
    shared = None
    try:
        shared = open_shared(deployment, metadata)        # Spark: started, then stopped
        reader, owned = open_session(metadata, tables=None if shared else deployment.tables,
                                     database=deployment.database, shared=shared)
    except ProgrammingError as err:       # tables: naming a table the metadata lacks
        if isinstance(err, QueryError):
            raise
        raise ConfigurationError(f"{deployment.path}: {err}") from None
    finally:
        if shared is not None:
            shared.close()
    if owned is not None:
        owned.close()
    for analyst in deployment.analysts.values():
        path = Account(deployment, metadata, analyst).ledger_path()[1]
        if os.path.exists(path):
            Ledger(path, analyst.budget, create=False)       # refuses a changed budget
    tables = ", ".join(sorted(t.full_name for t in metadata.tables.values()))
    where = [f"unix socket {deployment.unix_socket}"] if deployment.unix_socket else []
    where += [f"{deployment.host}:{deployment.port}"] if deployment.host else []
    print(f"ok: {deployment.path}")
    print(f"  tables: {tables}")
    if deployment.spark is not None:
        print(f"  spark: {deployment.spark.master}")
    print(f"  analysts: {', '.join(sorted(deployment.analysts))}")
    print(f"  listen: {'; '.join(where)} (TLS {'on' if deployment.tls else 'off'})")
    print(f"  ledgers: {deployment.ledger_dir}; audit log: {deployment.audit_log}")
    return EXIT_OK


async def _serve(deployment) -> int:
    from ..server.listener import Server
    server = Server(deployment)
    await server.start()
    done = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGHUP):
        loop.add_signal_handler(sig, done.set)
    interrupted = []       # Ctrl-C: the same orderly stop, then 130 (no KeyboardInterrupt inside a connection)
    loop.add_signal_handler(signal.SIGINT, lambda: (interrupted.append(1), done.set()))
    sys.stderr.write(f"dpsql serve: listening on {'; '.join(server.addresses)}\n")
    sys.stderr.flush()
    try:
        await done.wait()
    finally:
        await server.stop()
    left = (f" (left {server.stuck} statement(s) or connection(s) still running: the log "
            "has their stacks)" if server.stuck else "")
    sys.stderr.write(f"dpsql serve: stopped{left}\n")
    code = EXIT_OK
    if interrupted:
        interrupt.say(sys.stderr.write)
        code = interrupt.EXIT_INTERRUPTED
    if server.stuck:        # the interpreter would wait for their worker threads forever
        logging.shutdown()
        sys.stderr.flush()
        sys.stdout.flush()
        os._exit(code)
    return code
