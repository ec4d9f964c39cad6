"""Ctrl-C in the ``dpsql`` command: exit code 130 and one line, ``dpsql: interrupted``.

Owns: the process's SIGINT handling, which only the console entry point
(``dpsql.cli.main``, also behind ``python -m dpsql``) takes over. From its first line
(before pandas, DuckDB and the engine are imported, which takes most of a second)
until the command starts, and again once it has returned, a Ctrl-C ends the process
at once: there is nothing to clean up. While the command runs, a Ctrl-C raises
``KeyboardInterrupt`` as usual, so that ``finally`` blocks close files and
connections, and the command reports it (``dpsql.cli.command.main``). DuckDB turns
that interrupt into ``RuntimeError('Query interrupted')``; ``caused`` recognises it.
``dpsql.cli.command.main`` called in-process leaves its caller's handling alone.

Imports nothing but the standard library: it must run before anything heavy.
"""
from __future__ import annotations

import _thread
import contextlib
import os
import signal
import sys
import threading
import time

EXIT_INTERRUPTED = 130
MESSAGE = "dpsql: interrupted\n"
_said: list = []
_owned: list = []     # non-empty once the console entry point owns SIGINT
_received: list = []  # non-empty once a Ctrl-C raised KeyboardInterrupt in a command


def say(write=None) -> None:
    """Write ``dpsql: interrupted`` once per process (a second Ctrl-C adds nothing);
    ``write``: a text writer such as ``sys.stderr.write`` (default: fd 2 directly, which
    is safe in a signal handler)."""
    if _said:
        return
    _said.append(True)
    with contextlib.suppress(OSError, ValueError):
        write(MESSAGE) if write is not None else os.write(2, MESSAGE.encode())


def _exit_now(signum, frame) -> None:
    with contextlib.suppress(Exception):
        sys.stdout.flush()
    say()
    os._exit(EXIT_INTERRUPTED)


def _raise(signum, frame) -> None:
    _received.append(True)
    raise KeyboardInterrupt


def _unraisable(hook):
    """A ``sys.unraisablehook`` that delivers a Ctrl-C again: a ``KeyboardInterrupt``
    raised where Python ignores exceptions (a weakref callback, such as importlib's
    module-lock one, or a ``__del__``) would otherwise be printed and lost, and the
    command would run on to exit 0. Another thread marks the signal as pending again
    (in this one, the handler would run at once, inside this hook, and be ignored too); the
    main thread's handler raises it at its next check, once this hook has returned, in
    ordinary code (or, rarely, in another such callback, and then here once more)."""
    def deliver_again(unraisable):
        if isinstance(unraisable.exc_type, type) and issubclass(unraisable.exc_type,
                                                                KeyboardInterrupt):
            _thread.start_new_thread(_again, ())  # (threading.Thread waits for it here)
            return
        hook(unraisable)
    return deliver_again


def _again() -> None:
    time.sleep(0.01)   # time for the hook to return
    _thread.interrupt_main(signal.SIGINT)


def received() -> bool:
    """Whether a Ctrl-C reached this process while a command ran: then whatever the
    command failed with is the interrupt's doing (a library that swallowed the
    ``KeyboardInterrupt`` mid-import fails later, with some other error)."""
    return bool(_received)


def leave() -> None:
    """End the ``dpsql`` process with 130 once an interrupt has been reported. Not by
    returning: a Ctrl-C that landed inside a C extension's ``PyRun_String`` during an
    import leaves the interpreter's "unhandled KeyboardInterrupt" flag set, and the
    interpreter then ends the process by SIGINT (-2) whatever code ``main`` returned."""
    with contextlib.suppress(Exception):
        sys.stdout.flush()
    with contextlib.suppress(Exception):
        sys.stderr.flush()
    os._exit(EXIT_INTERRUPTED)


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def at_start() -> None:
    """The console entry point's first step: a Ctrl-C from now on exits 130 quietly."""
    if _main_thread():
        signal.signal(signal.SIGINT, _exit_now)
        _owned.append(True)


@contextlib.contextmanager
def raising():
    """While a command runs: Ctrl-C raises ``KeyboardInterrupt`` (as the default handler
    does, which ``asyncio.run`` also recognises, so that ``serve`` stops its server). Only in
    the ``dpsql`` process itself; afterwards, Ctrl-C exits quietly again."""
    if not _owned or not _main_thread():
        yield
        return
    signal.signal(signal.SIGINT, _raise)
    hook, sys.unraisablehook = sys.unraisablehook, _unraisable(sys.unraisablehook)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, _exit_now)
        sys.unraisablehook = hook


def quiet_from_now() -> None:
    """Once an interrupt is being reported, a second Ctrl-C exits at once (in the
    ``dpsql`` process only)."""
    if _owned and _main_thread():
        signal.signal(signal.SIGINT, _exit_now)


def caused(exc: BaseException) -> bool:
    """Whether ``exc`` is, or was raised while handling, a Ctrl-C: ``KeyboardInterrupt``,
    or DuckDB's form of it (``RuntimeError('Query interrupted')``, ``InterruptException``)."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, KeyboardInterrupt) or type(exc).__name__ == "InterruptException":
            return True
        if isinstance(exc, RuntimeError) and str(exc).strip() == "Query interrupted":
            return True
        exc = exc.__cause__ or exc.__context__
    return False
