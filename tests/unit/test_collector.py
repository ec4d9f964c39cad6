"""Planning pauses Python's garbage collector (dpsql.api.collector, issue 34). Threads that
plan back to back, as a server's workers do, must not keep it paused for good: the cycles
their plans leave would pile up without bound (an analyst's statements would grow the
server until its memory limit stopped everyone's)."""
import gc
import threading
import time

import pytest

from dpsql.api import collector
from dpsql.api.collector import EVERY_S, collector_paused


@pytest.fixture(autouse=True)
def pausing(monkeypatch):
    monkeypatch.setattr(collector, "PAUSE", True)     # as a library user's process has it


def test_overlapping_plans_still_collect_their_garbage():
    full = []

    def count(phase, info):
        if phase == "start" and info["generation"] == 2:
            full.append(1)

    stop = threading.Event()

    def long_plan():                      # one thread always planning
        with collector_paused():
            stop.wait(12 * EVERY_S)

    holder = threading.Thread(target=long_plan)
    gc.callbacks.append(count)
    try:
        holder.start()
        time.sleep(0.05)
        # Others plan back to back meanwhile, until two full collections came or 10 periods
        # passed (2.5 periods, as before, were too short for a loaded CI worker: 1 of 2).
        end = time.monotonic() + 10 * EVERY_S
        while time.monotonic() < end and len(full) < 2:
            with collector_paused():
                [[] for _ in range(100)]
            time.sleep(0.01)
        assert not gc.isenabled()         # still paused: the long plan goes on
        assert len(full) >= 2
    finally:
        stop.set()
        holder.join()
        gc.callbacks.remove(count)
    assert gc.isenabled()


def test_a_server_plans_with_the_collector_running():
    """While a dpsql serve runs in the process (``serving``): no pause, so no pass over a
    plan's millions of young objects at its end, holding the interpreter lock for seconds
    (issue 33's thirty-second review: another analyst's select 1 waited 19.6 s). Two
    servers overlapping: the pause comes back only when both have stopped."""
    collector.serving(True)
    collector.serving(True)
    try:
        collector.serving(False)
        with collector_paused():
            assert gc.isenabled()
    finally:
        collector.serving(False)
    with collector_paused():
        assert not gc.isenabled()
