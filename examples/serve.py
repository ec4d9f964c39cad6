"""dpsql serve: the data owner starts the server; the analyst connects with psycopg.

Starts `dpsql serve` on a copy of examples/deployment.yaml whose socket, ledgers and audit log
are in a new temporary directory, on a port the system says is free (so that two runs, or
another server, never meet), asks two questions as the analyst alice, reads her spending,
stops the server and removes the directory. A real deployment keeps its ledgers and log.
"""
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import psycopg
import yaml

HERE = Path(__file__).resolve().parent


def free_port() -> int:
    """A port no one listens on now (the system's pick for a socket bound to port 0)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def deployment(where: Path, port: int) -> Path:
    """examples/deployment.yaml with its files in ``where`` and its socket on ``port``."""
    config = yaml.safe_load((HERE / "deployment.yaml").read_text())
    config["metadata"] = str(HERE / config["metadata"])
    config["tables"] = {name: str(HERE / path) for name, path in config["tables"].items()}
    config["ledger"] = str(where / "ledgers")
    config["audit_log"] = str(where / "audit.jsonl")
    config["listen"] = {"unix_socket": str(where), "port": port}
    path = where / "deployment.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


where = Path(tempfile.mkdtemp(prefix="dpsql-serve-example-"))
port = free_port()
server = subprocess.Popen([sys.executable, "-m", "dpsql", "serve", "--config",
                           str(deployment(where, port))], stderr=subprocess.PIPE, text=True)
try:
    print(server.stderr.readline().strip())              # dpsql serve: listening on ...
    with psycopg.connect(host=str(where), port=port, user="alice", password="alice's secret",
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
    shutil.rmtree(where, ignore_errors=True)
