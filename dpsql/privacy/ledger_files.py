"""The ledger's file: creating one without ever replacing anything, and naming what a
path holds when it is not a ledger (``dpsql.privacy.ledger`` reads and appends)."""
from __future__ import annotations

import contextlib
import os
import stat
import tempfile

from ..errors import LedgerError

_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISSOCK, "a socket"))


def kind(mode: int) -> str:
    """What a file of ``mode`` is, for a message."""
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def create(path: str, header: bytes) -> None:
    """Create the ledger at ``path``, never replacing a file: the header goes into a temp
    file hard-linked to the path. ``os.link`` fails if anything (even a dangling symlink)
    is there; then the caller checks what it is."""
    directory = os.path.dirname(path)
    try:
        fd, tmp = tempfile.mkstemp(prefix=".dpsql-ledger-", dir=directory)
    except OSError as e:
        raise LedgerError(f"cannot create the ledger {path}: {e.strerror}; check the "
                          "directory exists and is writable") from None
    try:
        try:
            os.fchmod(fd, 0o600)   # it records every query: readable by its owner only
            os.write(fd, header)
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            os.link(tmp, path)
        except FileExistsError:
            return                 # something is there now: the caller checks what
        except OSError as e:
            raise LedgerError(f"cannot create the ledger {path}: {e.strerror}; a ledger "
                              "needs a local POSIX file system (hard links, flock)") from None
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
    fsync_dir(directory)


def fsync_dir(directory: str) -> None:
    with contextlib.suppress(OSError):
        dfd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
