"""Planning without the cyclic garbage collector's full passes.

Owns: ``collector_paused``, the scope in which a reader plans a query. A plan is built
from sqlglot trees whose nodes point to their parents (reference cycles): planning a large
query allocates hundreds of thousands of them, and every few thousand allocations Python's
collector ran, each full pass walking every object of the process (pandas, DuckDB, the
session's caches): a quarter to a third of the time a large plan took (issue 34). The
collector is paused while any thread plans and resumes when the last one is done (unless
the application had disabled it itself); the cycles a plan leaves are collected by its
next pass, once. Threads planning back to back (a server's workers) could keep it paused
for good while their plans' cycles pile up: a plan that ends while others still plan, more
than ``EVERY_S`` after the collector last ran, collects once. (Collecting after every plan
a second apart cost a test worker with a large heap 0.2 s a plan, in CI.)
"""
from __future__ import annotations

import gc
import threading
import time
from contextlib import contextmanager

EVERY_S = 1.0
PAUSE = True
"""Whether planning pauses the collector; never while a ``dpsql serve`` runs in the process
(``serving``): when the pause ended
after a large plan, the young generation it had let grow (millions of a plan's nodes) was
collected in one pass that held the interpreter lock for seconds, where no statement's
timeout and no other analyst's ``select 1`` could run (issue 33's thirty-second review:
another analyst's ``select 1`` waited 19.6 s; reproduced at 2.9 s and timeouts 2.7 s late
with four sessions of 8-list quantile UNIONs, 1.0-1.5 s and 0.2 s late without the pause)."""
_lock = threading.Lock()
_servers = 0             # dpsql serve instances running in this process (serving())
_planning = 0            # threads planning now
_resume = False          # whether the collector was enabled when the first one began
_collected = time.monotonic()


def serving(started: bool) -> None:
    """A server started (True) or stopped (False): while any runs, planning never pauses.
    When the first starts, what the process holds by then (modules, metadata, engines) is
    moved out of the collector's sight (``gc.freeze``): each full pass walked it again, and
    with each plan's cycles a full pass came every two seconds and held the interpreter
    lock for 0.3-1.1 s on a 350,000-object server (another analyst's ``select 1`` waited up
    to 2.9 s: issue 33's thirty-third review). It is unfrozen when the last one stops."""
    global _servers
    with _lock:
        before = _servers
        _servers = _servers + 1 if started else max(_servers - 1, 0)
        if before == 0 and _servers == 1:
            gc.collect()
            gc.freeze()
        elif before == 1 and _servers == 0:
            gc.unfreeze()


@contextmanager
def collector_paused():
    global _planning, _resume, _collected
    if not PAUSE or _servers:
        yield
        return
    with _lock:
        if _planning == 0:
            _resume = gc.isenabled()
            gc.disable()
        _planning += 1
    try:
        yield
    finally:
        with _lock:
            _planning -= 1
            now, due = time.monotonic(), False
            if _planning == 0:          # the collector runs on its own again
                _collected = now
                if _resume:
                    gc.enable()
            elif _resume and now - _collected > EVERY_S:    # paused for a second: collect
                due, _collected = True, now
        if due:
            gc.collect()
