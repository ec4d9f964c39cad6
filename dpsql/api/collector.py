"""Planning without the cyclic garbage collector's full passes.

Owns: ``collector_paused``, the scope in which a reader plans a query. A plan is built
from sqlglot trees whose nodes point to their parents (reference cycles): planning a large
query allocates hundreds of thousands of them, and every few thousand allocations Python's
collector ran, each full pass walking every object of the process (pandas, DuckDB, the
session's caches): a quarter to a third of the time a large plan took (issue 34). The
collector is paused while any thread plans and resumes when the last one is done (unless
the application had disabled it itself); the cycles a plan leaves are collected by its
next pass, once.
"""
from __future__ import annotations

import gc
import threading
from contextlib import contextmanager

_lock = threading.Lock()
_planning = 0            # threads planning now
_resume = False          # whether the collector was enabled when the first one began


@contextmanager
def collector_paused():
    global _planning, _resume
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
            if _planning == 0 and _resume:
                gc.enable()
