"""A privacy budget ledger that outlives the process.

Owns: the on-disk record of a session's spending. A ``Ledger`` file holds the
session budget (fixed when the file is created) and every release (UTC time,
query text, epsilon, delta), one JSON object per line. Several processes may
share one file: every operation opens the ledger itself and takes an
``fcntl.flock`` on that descriptor (exclusive to charge, shared to read), so
the lock belongs to the file, not to a name: hard links and symlinks to one
ledger share it. A charge re-reads the file's total, refuses the charge if it
would pass the budget, and otherwise appends the record and ``fsync``s it, all
before it returns. The engine calls ``charge`` before it returns a result, so
no crash can ever release an answer that is not in the ledger.

Only regular files are ledgers: a directory, FIFO, device, socket, dangling
symlink or empty file is refused, never written to or replaced. A new ledger
is a complete header in a temporary file hard-linked to its name (``os.link``
never replaces anything; if it finds a file there, another process won).

Budget rule (why): a ledger exists so that a budget cannot be escaped, so its
budget can never be raised by reopening the file. The budget is written when
the file is created and is immutable afterwards; reopening with a different
budget (higher *or* lower) is an error, reopening with none uses the recorded
one. The only change allowed is setting a budget on a ledger created without
one, which only tightens what may be spent (everything already spent counts).
For a fresh budget, start a new ledger file.

File format (JSON lines)::

    {"dpsql_ledger": 1, "created": "...", "budget": {"epsilon": 3.0, "delta": 1e-06}}
    {"kind": "release", "time": "...", "query": "SELECT ...", "epsilon": 1.0, "delta": 0.0}
    {"kind": "budget", "time": "...", "budget": {...}}     (only after a null budget)
    {"kind": "stored", "time": "...", "key": "...", "noisy": [...]}   (a release's noisy
        statistics, appended after its charge, for replays: dpsql.release.report)

A release record may also carry ``key`` (dpsql.release.report.fingerprint) and ``details`` (the
release table's facts: privacy unit, mechanisms, scales, bounds, threshold). A replay (a
stored release shown again) is a release record costing 0 with ``"replay": true``: a reader
of any version counts it as a free release, so the format stays the same.

Deleting or editing the file by hand defeats it; protect it like the data.
"""
from __future__ import annotations

import contextlib
import fcntl
import json
import math
import os
import stat
import threading
from datetime import datetime, timezone

from . import ledger_files
from .composition import Tally, events_of
from .ledger_budget import budget_json, fmt_budget, read_budget, same_budget
from .records import ReleaseRecord, release_of
from .spend import ZERO, Spend, budget_message, exceeds, remaining
from .zcdp import reported
from ..errors import BudgetExceededError, LedgerError, ProgrammingError
from .params import Budget

FORMAT_VERSION = 1


Release = ReleaseRecord   # the name this module has always used
_BLOCK, REPLAY_QUERY_CHARS = 1 << 20, 200   # bytes read at a time; a replay's query kept
REPLAY_RECORDS = 100
"""Replays of one release that are recorded: later ones are free and not written, so that
free replays cannot grow the file without bound (a few hundred bytes each, twelfth review
of issue 33). The file's size is then bounded by its paid releases, which the budget bounds."""


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="microseconds")


class Ledger:
    """A session's spending in a file shared by processes (see module doc)."""

    def __init__(self, path, budget: Budget | None = None, *, create: bool = True) -> None:
        """Open the ledger at ``path``, creating it with ``budget`` if nothing
        is there (unless ``create`` is false). Anything but a regular ledger
        file is refused with ``LedgerError``, never overwritten."""
        if budget is not None and not isinstance(budget, Budget):
            raise ProgrammingError("Ledger: budget must be a dpsql.Budget or None, "
                                   f"got {type(budget).__name__}")
        if not isinstance(path, (str, os.PathLike)) or not isinstance(os.fspath(path), str):
            raise ProgrammingError("Ledger: the path must be a str or an os.PathLike of str, "
                                   f"got {type(path).__name__}")
        # The directory resolved, the last name kept: _open checks what it is.
        head, tail = os.path.split(os.path.join(os.getcwd(), os.fspath(path)))
        self.path = os.path.join(os.path.realpath(head), tail)
        self._thread_lock = threading.Lock()  # guards this object's cache across threads
        self._fd = None           # the descriptor locked by the current operation
        self._exclusive = False
        self._reset_cache()
        if create and not os.path.lexists(self.path):
            self._create(budget)
        # Only a budget to record needs the exclusive lock: a read-only
        # ledger can still be opened (and shown) without one.
        with self._locked(exclusive=budget is not None):
            self._refresh()
            recorded = self._budget
            if budget is not None:
                if recorded is None:
                    self._append({"kind": "budget", "time": _now(),
                                  "budget": budget_json(budget)})
                    self._refresh()
                elif not same_budget(recorded, budget):
                    raise LedgerError(
                        f"ledger {self.path} was created with budget {fmt_budget(recorded)}"
                        f" but {fmt_budget(budget)} was given; a ledger's budget is fixed "
                        "when it is created and can never be changed by reopening it. Open "
                        "it with the same budget or none, or start a new ledger file.")

    # -- public -----------------------------------------------------------------
    @property
    def budget(self) -> Budget | None:
        """The budget recorded in the file (re-read, so always current)."""
        with self._locked(exclusive=False):
            self._refresh()
            return self._budget

    def spent(self) -> tuple:
        """Total (epsilon, delta) of every release in the file (for a zCDP budget, the
        total rho converted at the budget's delta; PLD, RDP: the releases composed)."""
        with self._locked(exclusive=False):
            self._refresh()
            return reported(self._spent, self._budget, self._synced())

    def tally(self) -> Tally:
        """Every release's privacy events (dpsql.privacy.composition), composed as needed."""
        with self._locked(exclusive=False):
            self._refresh()
            return self._synced()

    def spending(self) -> tuple:
        """Total (epsilon, delta, rho, delta outside zCDP) of every release in the file."""
        with self._locked(exclusive=False):
            self._refresh()
            return self._spent

    def remaining(self) -> tuple | None:
        """(epsilon, delta) left, never negative; None without a budget."""
        with self._locked(exclusive=False):
            self._refresh()
            return remaining(self._spent, self._budget, self._synced())

    def records(self) -> list:
        """Every release, oldest first, as ``Release`` tuples (with their query and
        details, read from the file: the cache keeps neither)."""
        with self._locked(exclusive=False):
            self._refresh()
            known: dict = {}     # key -> its release, for the abridged replays
            return [release_of(json.loads(os.pread(self._fd, size, at)), full=True, known=known)
                    for at, size in self._lines]

    def charge(self, epsilon: float, delta: float, query: str, rho: float | None = None,
               rho_delta: float = 0.0, key: str = "", details: dict | None = None,
               events=None) -> None:
        """Atomically check and record one release.

        Raises ``BudgetExceededError`` and records nothing if the file's
        current total plus this cost would pass its budget. Returns only once
        the record is on disk (fsync), so the caller may then release. ``rho`` and
        ``rho_delta`` (delta outside zCDP) are what a zCDP budget counts; without them an
        (epsilon, delta) release counts as delta-approximately epsilon^2/2-zCDP."""
        if rho is None:
            cost = Spend.of((epsilon, delta))
        else:
            cost = Spend.of((epsilon, delta, rho, rho_delta))
        if not all(math.isfinite(c) and c >= 0 for c in cost):
            # A negative or NaN charge would refund budget: never accept one.
            raise ProgrammingError(f"ledger charge must be finite and >= 0, got {cost!r}")
        events = events_of(cost) if events is None else tuple(events)
        with self._locked(exclusive=True):
            self._refresh()
            tally = self._synced()
            if exceeds(self._spent, cost, self._budget, tally, events):
                raise BudgetExceededError(budget_message(self._spent, cost, self._budget,
                                                         tally, events))
            record = {"kind": "release", "time": _now(), "query": str(query),
                      "epsilon": cost.epsilon, "delta": cost.delta, "rho": cost.rho,
                      "rho_delta": cost.rho_delta, "events": [list(e) for e in events]}
            if key:
                record["key"] = str(key)
            if details is not None:
                record["details"] = details
            self._append(record)
            self._refresh()

    def store(self, key: str, noisy) -> None:
        """Keep a release's noisy statistics (already public) for replays, after its charge."""
        with self._locked(exclusive=True):
            self._refresh()
            self._append({"kind": "stored", "time": _now(), "key": str(key), "noisy": noisy})
            self._refresh()

    def replayed(self, query: str, key: str = "", details: dict | None = None) -> None:
        """Record that a stored release was shown again (a replay, free): a ``release``
        record costing 0 with ``"replay": true``, so the ledger's release table lists the
        same rows as a session's log. No budget check: a replay costs nothing. With a
        ``key`` it is abridged (``REPLAY_QUERY_CHARS`` of the query, no details; ``records()``
        takes them from the release replayed): free replays wrote 1 MB each before."""
        abridged = bool(key)
        record = {"kind": "release", "time": _now(),
                  "query": str(query)[:REPLAY_QUERY_CHARS] if abridged else str(query),
                  "epsilon": 0.0, "delta": 0.0, "rho": 0.0, "rho_delta": 0.0, "replay": True}
        record.update({"key": str(key), "abridged": True} if abridged else {})
        record.update({"details": details} if details is not None and not abridged else {})
        with self._locked(exclusive=True):
            self._refresh()
            if abridged and self._replays.get(str(key), 0) >= REPLAY_RECORDS:
                return
            self._append(record)
            self._refresh()

    def stored(self, key: str):
        """The noisy statistics last stored under ``key``, or None."""
        with self._locked(exclusive=False):
            self._refresh()
            found = next((where for k, *where in reversed(self._stored) if k == key), None)
            if found is None:
                return None
            return json.loads(os.pread(self._fd, found[1], found[0]))["noisy"]

    def __repr__(self) -> str:
        return f"Ledger({self.path!r})"

    def _synced(self) -> Tally:
        """The events of the records read, composed incrementally (a file read anew, or
        a dropped torn line, starts a new tally)."""
        if self._tally_n > len(self._records):
            self._tally, self._tally_n = Tally(), 0
        for record in self._records[self._tally_n:]:
            self._tally.add(record.events if record.events is not None
                            else events_of(record.cost))
        self._tally_n = len(self._records)
        return self._tally

    # -- locking and file access ---------------------------------------------------
    @contextlib.contextmanager
    def _locked(self, exclusive: bool):
        """Hold an flock on a descriptor of the ledger itself (local file systems
        only), so all its names share it, and this object's thread lock (its
        cache). If the name was moved to another file meanwhile, lock that."""
        with self._thread_lock:
            for _ in range(100):
                fd = self._open(exclusive)
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
                    if os.path.samestat(os.fstat(fd), os.stat(self.path)):
                        break
                except BaseException as e:
                    os.close(fd)
                    if isinstance(e, FileNotFoundError):
                        raise self._missing() from None
                    raise
                os.close(fd)
            else:
                raise LedgerError(f"ledger {self.path} keeps being replaced by another "
                                  "file; stop whatever rewrites it.")
            try:
                self._fd, self._exclusive = fd, exclusive
                yield
            finally:
                self._fd, self._exclusive = None, False
                os.close(fd)  # closing releases the flock

    def _open(self, exclusive: bool) -> int:
        """A descriptor on the ledger, refused unless a regular file: checked
        before opening (no device is opened), then on the descriptor itself
        (fstat) before any read or write. O_NONBLOCK: a FIFO cannot hang it."""
        flags = os.O_RDWR | os.O_APPEND if exclusive else os.O_RDONLY
        flags |= os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
        try:
            st = os.stat(self.path)
            if not stat.S_ISREG(st.st_mode):
                raise self._not_regular(st.st_mode)
            fd = os.open(self.path, flags)
        except FileNotFoundError:
            raise self._missing() from None
        except OSError as e:
            raise LedgerError(f"cannot open the ledger {self.path} for "
                              f"{'writing' if exclusive else 'reading'}: {e.strerror}; "
                              "check its permissions") from None
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            os.close(fd)
            raise self._not_regular(mode)
        return fd

    def _name(self) -> str:
        with contextlib.suppress(OSError):
            return f"{self.path} (a symbolic link to {os.readlink(self.path)})"
        return self.path

    def _not_regular(self, mode: int) -> LedgerError:
        return LedgerError(f"{self._name()} is {ledger_files.kind(mode)}, not a ledger file; dpsql "
                           "never writes to or replaces anything but a regular file. Give "
                           "the path of a ledger file, or a new path to create one.")

    def _missing(self) -> LedgerError:
        if os.path.islink(self.path):
            return LedgerError(f"{self._name()} is a dangling symbolic link; dpsql does not "
                               "create a ledger through a symlink. Give the path of a ledger "
                               "file, or a new path to create one.")
        if self._ino is None:
            return LedgerError(f"ledger {self.path} does not exist; give a ledger file.")
        return LedgerError(f"ledger {self.path} no longer exists; its spending is lost. "
                           "Restore it from a backup or start a new ledger.")

    def _create(self, budget: Budget | None) -> None:
        header = {"dpsql_ledger": FORMAT_VERSION, "created": _now(),
                  "budget": budget_json(budget)}
        ledger_files.create(self.path, (json.dumps(header) + "\n").encode())

    def _append(self, record: dict) -> None:
        """Append one line and fsync; caller holds the exclusive lock."""
        if not self._exclusive:  # an invariant, kept under python -O too
            raise RuntimeError("ledger append without the exclusive lock")
        data = (json.dumps(record) + "\n").encode()
        fd = self._fd  # O_APPEND, locked, closed by _locked
        if self._torn_at is not None:
            # A writer crashed mid-line: that charge never returned, so its
            # answer was never released; drop the fragment before appending.
            os.ftruncate(fd, self._torn_at)
            self._torn_at = None
        if self._needs_newline:
            # A complete record missing only its newline still counts.
            data = b"\n" + data
            self._needs_newline = False
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)

    def _reset_cache(self) -> None:
        self._ino = None
        self._offset = 0          # bytes of complete (newline-terminated) lines read
        self._line_no = 0
        self._budget: Budget | None = None
        self._spent = ZERO
        self._records: list = []
        self._tally, self._tally_n = Tally(), 0    # the records' events (_synced)
        # Kept in memory per record: its cost, key and events, and where its line is (a
        # server's analyst may make millions of releases; each line's query, details and
        # noisy statistics are read from the file when asked for).
        self._lines: list = []    # (offset, size) of each release record's line
        self._stored: list = []   # (key, offset, size) of stored releases
        self._replays: dict = {}  # key -> replay records of that release
        self._header_seen = False
        self._torn_at = None      # offset of a torn last line, to drop before appending
        self._needs_newline = False
        self._committed = self._snapshot()

    def _snapshot(self) -> tuple:
        return (self._line_no, self._budget, self._spent, len(self._records), self._header_seen,
                len(self._stored), len(self._lines))

    def _restore(self) -> None:
        line_no, self._budget, self._spent, n, self._header_seen, m, k = self._committed
        self._line_no = line_no
        for dropped in self._records[n:]:
            self._count_replay(dropped, -1)
        del self._records[n:]
        del self._stored[m:]
        del self._lines[k:]

    def _refresh(self) -> None:
        """Read what was appended since the last read; caller holds a lock.

        Complete lines are cached (``_committed``). A last line without its
        newline is re-read every time: if it parses it counts (being
        conservative costs nothing); if not, it is the fragment of a writer
        that crashed before its charge returned, so it was never released."""
        fd = self._fd
        st = os.fstat(fd)
        if (st.st_dev, st.st_ino) != self._ino or st.st_size < self._offset:
            self._reset_cache()  # replaced or truncated: read it all again
            self._ino = (st.st_dev, st.st_ino)
        if st.st_size == 0:
            raise LedgerError(f"{self._name()} is an empty file, not a dpsql ledger (a ledger "
                              "always starts with its header line); dpsql never overwrites "
                              "an existing file. Give a new path to create a ledger there, "
                              "or the path of a ledger file.")
        self._restore()  # forget the previous read's uncommitted last line
        self._torn_at = None
        self._needs_newline = False
        # In blocks: a 1.4 GB ledger read in one piece took 3 GB (twelfth review, issue 33)
        at, tail = self._offset, b""
        while part := os.pread(fd, _BLOCK, at):
            at += len(part)
            lines = (tail + part).split(b"\n")
            tail = lines.pop()  # b"" if the block ends with a newline
            for line in lines:
                self._line_no += 1
                self._take(self._parse(line, final=False), (self._offset, len(line)))
                self._offset += len(line) + 1
                self._committed = self._snapshot()
        if tail:
            record = self._parse(tail, final=True)
            if record is None:
                self._torn_at = self._offset
            else:
                self._line_no += 1
                self._take(record, (self._offset, len(tail)))
                self._needs_newline = True
        if not self._header_seen:
            raise self._not_a_ledger()

    def _not_a_ledger(self) -> LedgerError:
        return LedgerError(f"{self.path} is not a dpsql ledger (its first line is not a "
                           f"version {FORMAT_VERSION} ledger header); dpsql never "
                           "overwrites an existing file. Give the path of a ledger, or a "
                           "new path to create one.")

    def _parse(self, line: bytes, final: bool):
        try:
            record = json.loads(line)
            if not isinstance(record, dict):
                raise ValueError("not an object")
            return record
        except ValueError:
            if not self._header_seen:
                raise self._not_a_ledger() from None
            if final:
                return None  # torn last line of a crashed writer: never released
            raise LedgerError(f"ledger {self.path} is corrupt at line {self._line_no}: not a "
                            "JSON object; it was edited or damaged. Restore it from a "
                            "backup; it must not be repaired by deleting lines (that would "
                            "hide spending).") from None

    def _take(self, record: dict, line: tuple) -> None:
        where = f"ledger {self.path} line {self._line_no}"
        try:
            if not self._header_seen:
                if record.get("dpsql_ledger") != FORMAT_VERSION:
                    raise self._not_a_ledger()
                self._header_seen = True
                self._budget = self._read_budget(record.get("budget"))
            elif record.get("kind") == "release":
                release = release_of(record, full=False)
                self._records.append(release)
                self._count_replay(release, 1)
                self._lines.append(line)
                self._spent = self._spent + Spend(release.epsilon, release.delta, release.rho,
                                                  release.rho_delta)
            elif record.get("kind") == "stored":
                if not isinstance(record["key"], str) or not isinstance(record["noisy"], list):
                    raise ValueError("a stored release needs a key and its noisy statistics")
                self._stored.append((record["key"], *line))
            elif record.get("kind") == "budget":
                if self._budget is not None:
                    raise ValueError("a second budget record")
                self._budget = self._read_budget(record["budget"])
            else:
                raise ValueError("unknown record kind")
        except (KeyError, TypeError, ValueError, ProgrammingError) as e:
            raise LedgerError(f"{where} is not a valid ledger record ({e}); the file was "
                            "edited or damaged. Restore it from a backup.") from None

    def _count_replay(self, release, step: int) -> None:
        if release.replay and release.key:
            self._replays[release.key] = self._replays.get(release.key, 0) + step

    @staticmethod
    def _read_budget(value) -> Budget | None:
        return read_budget(value)
