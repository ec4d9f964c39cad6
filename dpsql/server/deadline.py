"""A statement's deadline and its client's cancel: stop it at whatever step it is in.

Owns: stopping one statement that runs in a worker thread. A statement has two
phases. While it is *interruptible* (parsing, planning, the dry run, a catalog
query: nothing touches the data or the ledger), a timeout or a cancel raises
``StatementCancelled`` inside the worker thread itself, at its next Python bytecode
(CPython's ``PyThreadState_SetAsyncExc``), and interrupts the engine call in
progress, if any, so that a long C call returns. Once the statement enters its
*critical* phase (the engine reads the data, then the charge is written), nothing
is raised into the thread any more: a timeout or cancel interrupts the engine only,
and the query is charged as docs/deployment.md says (whether a query reached the
data could depend on it; whether it finished in time could too).

The switch between the phases is made under a lock, and an exception raised but not
yet delivered is withdrawn, so an asynchronous exception is never delivered inside
the critical phase or after the statement has ended (in the worker pool's own code).
"""
from __future__ import annotations

import ctypes
import os
import sys
import threading

_set_async = ctypes.pythonapi.PyThreadState_SetAsyncExc
_set_async.argtypes = [ctypes.c_ulong, ctypes.py_object]
_set_async.restype = ctypes.c_int
_clear_async = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_ulong, ctypes.c_void_p)(
    ("PyThreadState_SetAsyncExc", ctypes.pythonapi))


class StatementCancelled(BaseException):
    """Raised inside a worker thread by a timeout or a cancel. A BaseException, so that
    no ``except Exception`` of a library on the way swallows it."""


_inside: dict = {}
"""Thread ident -> the Watch whose interruptible call that thread is in."""


class Watch:
    """The deadline and cancel of one statement running in the current thread.

    Only the calls made through ``call`` (the planner, EXPLAIN, the catalog) can receive
    the asynchronous exception: never a lock, a thread start or the ledger of the
    statement's own code. An exception that Python swallows (delivered inside a weakref
    callback or a ``__del__`` during garbage collection: "Exception ignored") is delivered
    again by ``sys.unraisablehook``; one that arrives after the call is over is caught by
    the check that follows every call."""

    def __init__(self, timeout: float, guard: "MemoryGuard | None" = None) -> None:
        self.thread = threading.get_ident()
        self.lock = threading.Lock()
        self.interruptible = False
        self.injected = False
        self.reason: str | None = None           # "timeout", "cancel" or "memory"
        self.stop_engine = None                  # interrupts the engine call in progress
        self.timer = threading.Timer(max(timeout, 0.0), self.fire, ("timeout",))
        self.timer.daemon = True
        self.guard = guard
        self.start_rss = 0
        self.closed = threading.Event()
        self.repeating = False
        self.swallowed = False                   # set by _redeliver, read by _keep_stopping

    def start(self) -> "Watch":
        self.timer.start()
        if self.guard is not None:
            self.guard.add(self)
        return self

    @property
    def fired(self) -> bool:
        return self.reason is not None

    def check(self) -> None:
        """Raise ``StatementCancelled`` if the statement was stopped."""
        if self.reason is not None:
            raise StatementCancelled()

    def fire(self, why: str) -> None:
        """A timeout, a cancel or the memory guard (from another thread): stop it."""
        with self.lock:
            if self.reason is not None:
                return
            self.reason = why
            if self.interruptible:
                _set_async(self.thread, StatementCancelled)
                self.injected = True
            repeat, self.repeating = not self.repeating, True
        if repeat:
            # The engine's stop may block (PostgreSQL's cancel opens a connection; Spark's
            # is a call into its JVM): never in the caller, which may be the server's event
            # loop. An interrupt that lands between two engine calls is lost (the engine
            # clears it when the next call starts): it is repeated until the statement ends.
            threading.Thread(target=self._keep_stopping, daemon=True).start()

    def _keep_stopping(self) -> None:
        _call(self.stop_engine)
        ticks = 0
        while not self.closed.wait(0.02):
            if self.swallowed:
                self.swallowed = False
                self.reinject()
            ticks += 1
            if ticks % 5 == 0:
                _call(self.stop_engine)

    def reinject(self) -> None:
        """Raise ``StatementCancelled`` in the statement's thread again, if it is still in
        an interruptible call (``_redeliver``)."""
        with self.lock:
            if self.interruptible and self.reason is not None:
                _set_async(self.thread, StatementCancelled)
                self.injected = True

    def engine(self, stop) -> None:
        """Set (or clear, with None) how to interrupt the engine call in progress."""
        with self.lock:
            self.stop_engine = stop

    def call(self, function, *args, **kwargs):
        """``function(*args, **kwargs)``, stopped within milliseconds by a timeout or
        cancel (``StatementCancelled``). Only for code that touches neither the data nor
        the ledger, and starts no thread."""
        with self.lock:
            self.check()
            _inside[self.thread] = self
            self.interruptible = True
        try:
            result = function(*args, **kwargs)
        except Exception:
            # An error the stop caused (the engine's interrupt during the dry run came back
            # as "the engine refuses the query: INTERRUPT Error", 42601: fifth review of
            # issue 33) is the stop: 57014, never the engine's words.
            if self.reason is not None:
                raise StatementCancelled() from None
            raise
        finally:
            self._leave()
        self.check()
        return result

    def _leave(self) -> None:
        """End an interruptible call: no exception may reach the thread after this."""
        try:
            with self.lock:
                self.interruptible = False
                if self.injected:
                    _clear_async(self.thread, None)
                    self.injected = False
        except StatementCancelled:
            pass
        _inside.pop(self.thread, None)

    def critical(self, stop) -> None:
        """Enter the phase that reads the data (``stop`` interrupts its engine). Raises
        ``StatementCancelled`` if the statement was stopped before: then nothing of it
        has run."""
        if self.guard is not None:
            self.guard.remove(self)
        with self.lock:
            self.stop_engine = stop
        self.check()

    def close(self) -> None:
        """The statement is over."""
        self.closed.set()
        self.timer.cancel()
        if self.guard is not None:
            self.guard.remove(self)
        self._leave()


def _redeliver(unraisable) -> None:
    """sys.unraisablehook: a StatementCancelled swallowed during garbage collection inside
    an interruptible call is raised again soon after by the thread that keeps stopping the
    statement (``Watch._keep_stopping``). The hook itself only sets a flag: it must not
    block, or the exception raised again arrives inside the hook, is swallowed for good
    and printed to the owner's log (the fourth review of issue 33 counted 20 such
    tracebacks; in CI a statement lost its stop that way and ran 3.5 s past a 1 s
    timeout)."""
    if unraisable.exc_type is StatementCancelled:
        watch = _inside.get(threading.get_ident())
        if watch is not None:
            watch.swallowed = True
        return
    _previous_hook(unraisable)


_previous_hook = sys.unraisablehook
sys.unraisablehook = _redeliver


def _call(stop) -> None:
    if stop is not None:
        try:
            stop()
        except Exception:   # noqa: BLE001 - an engine that cannot be interrupted now
            pass


def rss() -> int:
    """This process's resident memory in bytes (0 where /proc is not there)."""
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[1]) * _PAGE
    except (OSError, ValueError, IndexError):
        return 0


_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


class MemoryGuard:
    """Stops a statement whose free phase (parsing, planning, catalog) grows the server
    by more than ``limit`` bytes: a thread reads the resident memory every 50 ms and
    stops every interruptible statement that started ``limit`` or more below it (a
    statement that reads data is bounded by its engine's own memory limit instead). The
    memory is attributed to each such statement: when several run at once, all of them
    are stopped; they were free, and are refused with 53200."""

    def __init__(self, limit: int, period: float = 0.05) -> None:
        self.limit, self.period = limit, period
        self.watches: set = set()
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self._loop, name="dpsql-memory", daemon=True)
        self.stopped = threading.Event()
        if rss():
            self.thread.start()

    def add(self, watch: Watch) -> None:
        watch.start_rss = rss()
        with self.lock:
            self.watches.add(watch)

    def remove(self, watch: Watch) -> None:
        with self.lock:
            self.watches.discard(watch)

    def stop(self) -> None:
        self.stopped.set()

    def _loop(self) -> None:
        while not self.stopped.wait(self.period):
            with self.lock:
                watches = list(self.watches)
            if not watches:
                continue
            now = rss()
            for watch in watches:
                if now - watch.start_rss > self.limit:
                    watch.fire("memory")


def release_memory() -> None:
    """Return what a stopped statement had allocated to the system (glibc keeps freed
    memory otherwise, and the next statement's growth is measured from the total)."""
    import gc
    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass
