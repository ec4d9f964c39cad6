"""The ledger refuses what is not a ledger file and locks the file, not a name.

Each test attacks one way around the ledger: two names of one file (hard links,
a symlink), and paths that are not regular files (a FIFO, a device, a directory,
an empty file, a symlink to a FIFO, a dangling symlink). None may overspend, and
none may be written to, replaced or created through.
"""
import multiprocessing
import os
import stat
import subprocess
import sys

import pytest

from dpsql.errors import BudgetExceededError, LedgerError
from dpsql.privacy.ledger import Ledger
from dpsql.privacy.params import Budget

from tests.paths import DATA


def on_disk(directory):
    """What is in a directory: name, file type, size, inode and link target."""
    out = []
    for name in sorted(os.listdir(directory)):
        st = os.lstat(os.path.join(directory, name))
        target = os.readlink(os.path.join(directory, name)) if stat.S_ISLNK(st.st_mode) else None
        out.append((name, stat.S_IFMT(st.st_mode), st.st_size, st.st_ino, target))
    return out


# ------------------------------------------------------------- two names, one file

def _charge_through_both_names(names, first, barrier, queue):
    """Charge 0.1 until refused, alternating between the two names of one ledger."""
    ledgers = [Ledger(name) for name in names]
    # A long query text takes milliseconds to encode, write and read back: it
    # widens the gap between reading the total and appending, so a lock that
    # two names do not share shows.
    query = "SELECT COUNT(*) AS n FROM t -- " + "x" * 300_000
    barrier.wait()
    n = 0
    while True:
        try:
            ledgers[(first + n) % 2].charge(0.1, 0, query)
        except BudgetExceededError:
            break
        n += 1
    queue.put(n)


def test_hard_links_to_one_ledger_share_its_lock_and_never_overspend(tmp_path):
    # With a lock named after the path (FILE.lock), each name had its own lock:
    # 16 processes charged 1.2 to a budget of 1.0 through two hard links.
    rounds, nproc = 3, 12
    # spawn, not fork: a forked child copied the xdist worker's threads (Spark's gateway,
    # servers) and segfaulted while collecting garbage (CI of 2026-11-28)
    ctx = multiprocessing.get_context("spawn")
    for r in range(rounds):
        real, other = tmp_path / f"r{r}.ledger", tmp_path / f"r{r}-hardlink.ledger"
        led = Ledger(real, Budget(1.0))  # room for exactly 10 charges of 0.1
        os.link(real, other)
        barrier, queue = ctx.Barrier(nproc), ctx.Queue()
        procs = [ctx.Process(target=_charge_through_both_names,
                             args=((str(real), str(other)), i % 2, barrier, queue))
                 for i in range(nproc)]
        for p in procs:
            p.start()
        counts = [queue.get(timeout=60) for _ in procs]
        for p in procs:
            p.join(timeout=60)
            assert p.exitcode == 0
        recs = led.records()
        assert sum(counts) == len(recs) == 10, f"round {r}: {len(recs)} charges of 0.1"
        assert led.spent()[0] <= 1.0 * (1 + 1e-12)
        assert Ledger(other).spent() == led.spent()
    assert not list(tmp_path.glob("*.lock"))


def test_a_symlink_to_a_ledger_is_the_same_ledger_and_shares_its_budget(tmp_path):
    real, link = tmp_path / "s.ledger", tmp_path / "link.ledger"
    a = Ledger(real, Budget(1.0))
    link.symlink_to(real)
    b = Ledger(link, Budget(1.0))
    a.charge(0.4, 0, "through the real name")
    b.charge(0.4, 0, "through the symlink")
    assert a.spent() == b.spent() == (0.8, 0.0)
    with pytest.raises(BudgetExceededError):
        b.charge(0.3, 0, "too much")
    with pytest.raises(LedgerError, match="fixed when it is created"):
        Ledger(link, Budget(2.0))
    assert link.is_symlink() and os.readlink(link) == str(real)  # not replaced by a file
    # The lock is the file's own: no lock file is left next to it.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.ledger", "s.ledger"]
    assert stat.S_IMODE(real.stat().st_mode) == 0o600


# ------------------------------------------------------------- not a ledger file

def test_a_fifo_is_refused_and_left_in_place(tmp_path):
    fifo = tmp_path / "pipe.ledger"
    os.mkfifo(fifo)
    before = on_disk(tmp_path)
    for budget in (Budget(1.0), None):
        with pytest.raises(LedgerError, match="is a FIFO"):
            Ledger(fifo, budget)   # no reader or writer: must not hang either
    assert on_disk(tmp_path) == before and stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_a_device_node_dev_null_is_refused_and_left_a_device():
    before = os.stat("/dev/null")
    assert stat.S_ISCHR(before.st_mode)
    for budget in (Budget(1.0), None):
        with pytest.raises(LedgerError, match="/dev/null is a character device"):
            Ledger("/dev/null", budget)
    after = os.stat("/dev/null")
    assert stat.S_ISCHR(after.st_mode) and after.st_rdev == before.st_rdev
    assert after.st_ino == before.st_ino
    assert not os.path.lexists("/dev/null.lock")


def test_a_directory_is_refused_and_left_empty(tmp_path):
    directory = tmp_path / "dir.ledger"
    directory.mkdir()
    before = on_disk(tmp_path)
    for budget in (Budget(1.0), None):
        with pytest.raises(LedgerError, match="is a directory"):
            Ledger(directory, budget)
    assert on_disk(tmp_path) == before and os.listdir(directory) == []


def test_an_existing_empty_file_is_refused_not_made_a_ledger(tmp_path):
    empty = tmp_path / "empty.ledger"
    empty.write_bytes(b"")
    os.chmod(empty, 0o644)
    before = on_disk(tmp_path)
    for budget in (Budget(1.0), None):
        with pytest.raises(LedgerError, match="is an empty file.*never overwrites"):
            Ledger(empty, budget)
    assert on_disk(tmp_path) == before
    assert empty.read_bytes() == b"" and stat.S_IMODE(empty.stat().st_mode) == 0o644


def test_a_symlink_to_a_fifo_is_refused(tmp_path):
    fifo, link = tmp_path / "pipe", tmp_path / "link.ledger"
    os.mkfifo(fifo)
    link.symlink_to(fifo)
    before = on_disk(tmp_path)
    for budget in (Budget(1.0), None):
        with pytest.raises(LedgerError, match="symbolic link to .*pipe.* is a FIFO"):
            Ledger(link, budget)
    assert on_disk(tmp_path) == before and stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_a_dangling_symlink_is_refused_and_its_target_not_created(tmp_path):
    target, link = tmp_path / "target.ledger", tmp_path / "link.ledger"
    link.symlink_to(target)
    before = on_disk(tmp_path)
    for budget in (Budget(1.0), None):
        with pytest.raises(LedgerError, match="dangling symbolic link"):
            Ledger(link, budget)
    assert on_disk(tmp_path) == before and not os.path.lexists(target)


def test_the_cli_refuses_an_empty_file_and_a_fifo_as_ledger(tmp_path):
    empty, fifo = tmp_path / "empty.ledger", tmp_path / "pipe.ledger"
    empty.write_bytes(b"")
    os.mkfifo(fifo)
    before = on_disk(tmp_path)
    query = [sys.executable, "-m", "dpsql", "query", "--metadata", str(DATA / "PUMS.yaml"),
             "--table", f"PUMS.PUMS={DATA / 'PUMS.csv'}", "--epsilon", "0.5",
             "--budget", "1", "--ledger", str(empty), "SELECT COUNT(*) AS n FROM PUMS.PUMS"]
    proc = subprocess.run(query, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 5 and proc.stdout == ""
    assert "ledger error" in proc.stderr and "is an empty file" in proc.stderr
    show = subprocess.run([sys.executable, "-m", "dpsql", "ledger", "show", str(fifo)],
                          capture_output=True, text=True, timeout=120)
    assert show.returncode == 5 and "is a FIFO" in show.stderr
    assert on_disk(tmp_path) == before and empty.read_bytes() == b""
