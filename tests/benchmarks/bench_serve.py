"""dpsql serve benchmark: the latency a query gains through the wire, and the throughput of
small queries with 1, 8 and 32 concurrent clients.

Usage: python tests/benchmarks/bench_serve.py [--repeat 50] [--seconds 5]

A server (``dpsql serve`` in a subprocess, unix socket, PUMS's 1,000 rows) and the same
deployment in process (a Reader with the same metadata, data and privacy) answer the same
fresh queries (each a new release: a replay would time a lookup). Latency: median of
``--repeat`` queries each way. Throughput: queries per second with N psycopg clients,
each a different analyst (one analyst's statements run one at a time by design).
Not part of the test suite.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
import warnings

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))

import psycopg  # noqa: E402

import dpsql  # noqa: E402
from dpsql.server.scram import make_verifier  # noqa: E402
from tests.server.serving import Process, write_deployment  # noqa: E402

QUERY = "SELECT COUNT(*) AS n, AVG(age) AS a FROM PUMS.PUMS WHERE income > {i}"


def _analysts(n: int) -> dict:
    return {f"c{i}": {"password": make_verifier("pw"), "budget": {"epsilon": 1e6}}
            for i in range(n)}


def latency(served: Process, where: str, repeat: int) -> tuple:
    # In process as the server runs it: the same budget, and a ledger charged before
    # each result is returned.
    reader = dpsql.from_df({"PUMS.PUMS": os.path.join(where, "PUMS.csv")},
                           os.path.join(where, "PUMS.yaml"), privacy=dpsql.Privacy(epsilon=0.5),
                           budget=dpsql.Budget(epsilon=1e6),
                           ledger=os.path.join(where, "in_process.jsonl"))
    local, wire = [], []
    with psycopg.connect(served.dsn("c0", "pw"), autocommit=True) as con:
        for i in range(repeat + 5):
            start = time.perf_counter()
            reader.execute_df(QUERY.format(i=i))
            local.append(time.perf_counter() - start)
            start = time.perf_counter()
            con.execute(QUERY.format(i=i)).fetchall()
            wire.append(time.perf_counter() - start)
    return statistics.median(local[5:]), statistics.median(wire[5:])


def throughput(served: Process, clients: int, seconds: float) -> float:
    done = [0] * clients
    stop = time.monotonic() + seconds

    def client(k: int) -> None:
        with psycopg.connect(served.dsn(f"c{k}", "pw"), autocommit=True) as con:
            i = 0
            while time.monotonic() < stop:
                con.execute(QUERY.format(i=100_000 * k + i)).fetchall()
                i += 1
            done[k] = i

    threads = [threading.Thread(target=client, args=(k,)) for k in range(clients)]
    start = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sum(done) / (time.monotonic() - start)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=5.0)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    where = tempfile.mkdtemp()
    path = write_deployment(where, analysts=_analysts(32),
                            limits={"workers": 4, "max_sessions_per_analyst": 4})
    served = Process(path)
    try:
        local, wire = latency(served, where, args.repeat)
        print(f"latency, 1,000 rows (median of {args.repeat}): in process {local * 1e3:.2f} ms, "
              f"through the wire {wire * 1e3:.2f} ms, extra {(wire - local) * 1e3:.2f} ms")
        for clients in (1, 8, 32):
            rate = throughput(served, clients, args.seconds)
            print(f"throughput, {clients:2d} client(s): {rate:7.1f} queries/s")
    finally:
        served.stop()


if __name__ == "__main__":
    main()
