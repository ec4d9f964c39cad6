"""dpsql serve: the data owner starts the server; the analyst connects with psycopg.

Starts `dpsql serve --config examples/deployment.yaml` (a unix socket in /tmp), asks two
questions as the analyst alice, reads her spending, and stops the server.
"""
import os
import subprocess
import sys
from pathlib import Path

import psycopg

HERE = Path(__file__).resolve().parent
server = subprocess.Popen([sys.executable, "-m", "dpsql", "serve", "--config",
                           str(HERE / "deployment.yaml")], stderr=subprocess.PIPE, text=True)
try:
    print(server.stderr.readline().strip())              # dpsql serve: listening on ...
    with psycopg.connect(host="/tmp", port=54329, user="alice", password="alice's secret",
                         dbname="dpsql", autocommit=True) as con:
        n = con.execute("SELECT COUNT(*) FROM PUMS.PUMS").fetchone()[0]
        print(f"rows (noisy, epsilon 0.5): {n}")
        con.execute("SET dpsql.epsilon = 0.25")
        older = con.execute("SELECT COUNT(*) FROM PUMS.PUMS WHERE age > %s", (40,)).fetchone()[0]
        print(f"older than 40 (noisy, epsilon 0.25; 40 is bound as a value): {older}")
        for sex, age in con.execute("SELECT sex, AVG(age) FROM PUMS.PUMS GROUP BY sex ORDER BY sex"):
            print(f"sex {sex}: average age {age:.1f}")
        print("alice has spent:", con.execute("SHOW dpsql.spent").fetchone()[0])
finally:
    server.terminate()
    server.wait(30)
    # The example starts afresh each time: a real deployment keeps its ledgers and log.
    for name in os.listdir("/tmp/dpsql-example-ledgers"):
        os.remove(os.path.join("/tmp/dpsql-example-ledgers", name))
