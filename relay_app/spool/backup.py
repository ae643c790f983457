"""`relay-app spool backup PATH`: a copy of the spool file taken while the relay runs, with
SQLite's online backup. A `cp` of a WAL-mode file while the relay writes can be torn (the
file and its -wal companion copied at different moments); this copy is one consistent
snapshot, checked with `PRAGMA integrity_check` before it is put in place. The relay's writers
go on meanwhile (a WAL reader does not block them). For a spool in PostgreSQL, pg_dump is the
tool."""

from __future__ import annotations

import contextlib
import os
import sqlite3
from dataclasses import dataclass

from ..core.errors import SpoolError, SpoolMissing

# The relay's writers wait at most this long for the backup's brief locks.
BUSY_TIMEOUT = 10.0


@dataclass(frozen=True)
class Backup:
    path: str
    pending: int
    dead: int
    size: int  # bytes


def back_up(spool_path: str, target: str) -> Backup:
    """Copy the spool at `spool_path` into the new file `target` (never over an existing one).
    Raises SpoolMissing, or SpoolError saying what went wrong; nothing is left at `target`
    unless the copy is whole."""
    if not os.path.exists(spool_path):
        raise SpoolMissing(f"there is no spool at {spool_path}")
    if os.path.exists(target):
        raise SpoolError(f"{target} exists already: give the path of a new file")
    partial = f"{target}.partial"
    try:
        _copy(spool_path, partial)
        counts = _checked(partial)
        os.replace(partial, target)
    except (sqlite3.Error, OSError) as exc:
        with contextlib.suppress(OSError):
            os.unlink(partial)
        raise SpoolError(f"the spool could not be backed up to {target}: {exc}") from None
    return Backup(target, counts[0], counts[1], os.path.getsize(target))


def _copy(spool_path: str, partial: str) -> None:
    # Only its owner may read the copy: it holds the alerts' texts, as the spool does.
    descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    os.close(descriptor)
    source = sqlite3.connect(f"file:{spool_path}?mode=ro", uri=True, timeout=BUSY_TIMEOUT)
    try:
        copy = sqlite3.connect(partial)
        try:
            source.backup(copy)  # all pages in one step: one snapshot, however busy the spool
            copy.execute("PRAGMA journal_mode = DELETE")  # one file, nothing beside it
            copy.commit()
        finally:
            copy.close()
    finally:
        source.close()
    with open(partial, "rb+") as written:
        os.fsync(written.fileno())


def _checked(path: str) -> tuple[int, int]:
    """The copy's pending and dead alerts, once it passes SQLite's integrity check."""
    copy = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        [verdict] = copy.execute("PRAGMA integrity_check").fetchone()
        if verdict != "ok":
            raise SpoolError(f"the copy failed SQLite's integrity check: {verdict}")
        rows = dict(copy.execute("SELECT state, count(*) FROM jobs GROUP BY state").fetchall())
        return int(rows.get("pending", 0)), int(rows.get("dead", 0))
    finally:
        copy.close()
