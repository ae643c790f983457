"""The durable spool: every accepted alert, in one SQLite file, from the webhook until Telegram
has it or it is declared dead.

The view writes an alert here before its first attempt (write-ahead) and deletes it once
Telegram accepts it, so a crash at any point leaves the alert on disk. Rows are leased: a worker
that works on a row owns it until `lease_until`, and other workers (of this gunicorn, or of
another relay on the host) claim only rows whose lease is free or expired. Every change is one
short statement, so several processes share the file through SQLite's own locking (WAL mode).

Durability is against process death (crash, SIGKILL, OOM, deploy): with `synchronous=NORMAL`
a commit is not flushed to the disk itself, so a power cut or kernel crash can lose the last
moments. Flushing every commit would cost an fsync on every webhook.
"""

from __future__ import annotations

import contextlib
import fcntl
import itertools
import logging
import os
import secrets
import socket
import sqlite3
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Literal

from .formatting import Message

log = logging.getLogger(__name__)

Clock = Callable[[], float]
State = Literal["pending", "dead"]

SCHEMA_VERSION = 1
# Statements take microseconds; a lock held this long means something is wrong, and the
# webhook has GlitchTip waiting.
BUSY_TIMEOUT = 1.0
# Opening (and repairing) the file is serialized between processes by a lock file.
OPEN_LOCK_TIMEOUT = 2.0
# A checkpoint copies the WAL back into the file and flushes it: milliseconds. Left to SQLite it
# runs inside whichever commit crosses its threshold, a webhook's, while that worker's other
# threads wait for the connection. So each worker's resumer thread runs one a second on a
# connection of its own (`checkpoint`), and SQLite's own stays only as a backstop.
BACKSTOP_CHECKPOINT_PAGES = 10000
WAL_SIZE_LIMIT = 16 * 1024 * 1024
_CORRUPTION_CODES = {sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB}

_SCHEMA = """
CREATE TABLE IF NOT EXISTS alerts (
    id INTEGER PRIMARY KEY AUTOINCREMENT,  -- never reused, so an id in a log stays unambiguous
    state TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'dead')),
    received_at REAL NOT NULL,      -- Unix time the webhook arrived
    retry_from REAL NOT NULL,       -- start of the retry horizon: arrival, or a manual retry
    html TEXT NOT NULL,
    text TEXT NOT NULL,
    fallback TEXT NOT NULL,
    attempts INTEGER NOT NULL,      -- attempts started, the synchronous one included
    unsure_attempts INTEGER NOT NULL,  -- those that may have reached Telegram
    next_attempt_at REAL NOT NULL,
    last_error TEXT,
    lease_owner TEXT,
    lease_until REAL,
    dead_at REAL
);
CREATE INDEX IF NOT EXISTS alerts_by_state_and_due ON alerts (state, next_attempt_at);
"""

# One statement: SQLite runs it under the write lock, so two workers never claim the same row.
_CLAIM = (
    "UPDATE alerts SET lease_owner = ?, lease_until = max(next_attempt_at, ?) + ?"
    " WHERE id IN (SELECT id FROM alerts WHERE state = 'pending'"
    " AND next_attempt_at <= ? AND (lease_until IS NULL OR lease_until < ?)"
    " ORDER BY next_attempt_at, id LIMIT ?)"
    " RETURNING *"
)


class SpoolError(Exception):
    """The spool cannot be used right now: not openable, read-only, full disk, corrupt."""


class SpoolFull(Exception):
    """RELAY_SPOOL_MAX_PENDING alerts are already pending."""


_memory_numbers = itertools.count(1)


@dataclass
class SpooledAlert:
    """An alert on its way: what the retrier works on, and what a spool row holds. `id` is None
    for an alert kept in memory only (the spool was unusable or full)."""

    message: Message
    received_at: float
    retry_from: float
    id: int | None = None
    attempts: int = 1
    unsure_attempts: int = 1
    next_attempt_at: float = 0.0
    last_error: str | None = None
    state: State = "pending"
    lease_owner: str | None = None
    lease_until: float | None = None
    dead_at: float | None = None

    # Why this alert gets no background retry, when it gets none (the spool was full).
    retry_refused: str | None = None
    # A cheap counter, not random bytes: this is built on every webhook's path.
    _memory_number: int = field(default_factory=lambda: next(_memory_numbers), compare=False)

    @property
    def label(self) -> str:
        """How logs name the alert: '#12', the spool id that `relay-app spool` takes too, or
        'mem-3' for one held in memory only (numbered per process; the log line has the pid)."""
        return f"#{self.id}" if self.id is not None else f"mem-{self._memory_number}"


class Spool:
    """One SQLite file shared by every worker. Each process opens its own connection lazily
    (gunicorn forks after import) and uses it under a lock, one short statement at a time."""

    def __init__(
        self,
        path: str,
        *,
        max_pending: int = 10000,
        clock: Clock = time.time,
        for_service: bool = True,
    ) -> None:
        """`for_service=False` is a person's tool (relay-app): it never creates or repairs the
        file, and leaves reporting to the tool, since no alert depends on it."""
        self.path = path
        self.max_pending = max_pending
        self._clock = clock
        self._for_service = for_service
        self._lock = threading.Lock()
        self._connection: sqlite3.Connection | None = None
        self._checkpointer: sqlite3.Connection | None = None
        self._owner = _new_owner()
        self._problem: str | None = None
        # Connections inherited through fork are never used or closed in the child (closing
        # could disturb the parent's locks); they are kept here so the GC does not close them.
        self._inherited: list[sqlite3.Connection] = []
        _spools.add(self)

    @property
    def owner(self) -> str:
        """This process's name on the leases it holds."""
        return self._owner

    # --- health ------------------------------------------------------------------------------

    def problem(self) -> str | None:
        """Why the spool is unusable, or None when it works. After a failure, it takes a
        successful write (a fresh connection's) to count as working again."""
        with contextlib.suppress(SpoolError), self._statement() as db:
            if self._problem is not None:
                db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")  # a write, to the header
                self._works_again()
        return self._problem

    # --- the service's path ------------------------------------------------------------------

    def add(self, message: Message, *, received_at: float, lease_until: float) -> SpooledAlert:
        """Write-ahead: the alert, leased to this process for its synchronous attempt. Raises
        SpoolFull past max_pending, SpoolError when the spool is unusable."""
        with self._statement() as db:
            cursor = db.execute(
                "INSERT INTO alerts (received_at, retry_from, html, text, fallback, attempts,"
                " unsure_attempts, next_attempt_at, lease_owner, lease_until)"
                " SELECT ?, ?, ?, ?, ?, 1, 1, ?, ?, ?"
                " WHERE (SELECT count(*) FROM alerts WHERE state = 'pending') < ?",
                (
                    received_at,
                    received_at,
                    message.html,
                    message.text,
                    message.fallback,
                    received_at,
                    self._owner,
                    lease_until,
                    self.max_pending,
                ),
            )
            if cursor.rowcount == 0:
                raise SpoolFull(f"{self.max_pending} alerts are already pending")
            alert_id = cursor.lastrowid
        return SpooledAlert(
            message,
            received_at,
            received_at,
            id=alert_id,
            next_attempt_at=received_at,
            lease_owner=self._owner,
            lease_until=lease_until,
        )

    def delivered(self, alert: SpooledAlert) -> None:
        with self._statement() as db:
            db.execute("DELETE FROM alerts WHERE id = ?", (alert.id,))

    def save(self, alert: SpooledAlert, *, lease_until: float | None) -> bool:
        """Record the alert's attempts and schedule, and hold its lease until `lease_until`
        (None gives it back). False when the row is no longer ours: its lease expired and
        another worker claimed it, or it left the pending set."""
        with self._statement() as db:
            return (
                db.execute(
                    "UPDATE alerts SET attempts = ?, unsure_attempts = ?, last_error = ?,"
                    " next_attempt_at = ?, lease_owner = ?, lease_until = ?"
                    " WHERE id = ? AND state = 'pending'"
                    " AND (lease_owner IS NULL OR lease_owner = ? OR lease_until < ?)",
                    (
                        alert.attempts,
                        alert.unsure_attempts,
                        alert.last_error,
                        alert.next_attempt_at,
                        self._owner if lease_until is not None else None,
                        lease_until,
                        alert.id,
                        self._owner,
                        self._clock(),
                    ),
                ).rowcount
                == 1
            )

    def bury(self, alert: SpooledAlert) -> None:
        """Keep the alert as a dead letter, with its last error, for a person to look at."""
        with self._statement() as db:
            db.execute(
                "UPDATE alerts SET state = 'dead', dead_at = ?, attempts = ?,"
                " unsure_attempts = ?, last_error = ?, lease_owner = NULL, lease_until = NULL"
                " WHERE id = ?",
                (
                    self._clock(),
                    alert.attempts,
                    alert.unsure_attempts,
                    alert.last_error,
                    alert.id,
                ),
            )

    def claim(self, limit: int, *, due_by: float, lease_for: float) -> list[SpooledAlert]:
        """Atomically lease up to `limit` pending alerts due by `due_by` whose lease is free or
        expired: one statement, so two workers can never claim the same row."""
        if limit <= 0:
            return []
        now = self._clock()
        with self._statement() as db:
            rows = db.execute(
                _CLAIM,
                (self._owner, now, lease_for, due_by, now, limit),
            ).fetchall()
        return sorted((_alert(row) for row in rows), key=lambda a: (a.next_attempt_at, a.id))

    def release_all(self) -> int:
        """Give back every lease this process holds, so the next process need not wait."""
        if self._connection is None:
            return 0  # never opened here, or lost: no lease to give back that will not expire
        with self._statement() as db:
            return db.execute(
                "UPDATE alerts SET lease_owner = NULL, lease_until = NULL WHERE lease_owner = ?",
                (self._owner,),
            ).rowcount

    # --- for people (relay-app spool) --------------------------------------------------------

    def alerts(self, state: State) -> list[SpooledAlert]:
        with self._statement() as db:
            rows = db.execute(
                "SELECT * FROM alerts WHERE state = ? ORDER BY id",
                (state,),
            ).fetchall()
        return [_alert(row) for row in rows]

    def counts(self) -> dict[State, int]:
        with self._statement() as db:
            rows = db.execute("SELECT state, count(*) FROM alerts GROUP BY state").fetchall()
        found = {"pending": 0, "dead": 0, **dict(rows)}
        return {"pending": found["pending"], "dead": found["dead"]}

    def requeue(self, alert_ids: Iterable[int]) -> dict[int, State | None]:
        """Make dead alerts pending again with a fresh retry horizon. Returns each id's state
        before: 'dead' (requeued), 'pending' (left alone) or None (no such alert)."""
        before: dict[int, State | None] = {}
        now = self._clock()
        with self._statement() as db:
            db.execute("BEGIN IMMEDIATE")
            try:
                for alert_id in alert_ids:
                    row = db.execute(
                        "SELECT state FROM alerts WHERE id = ?", (alert_id,)
                    ).fetchone()
                    before[alert_id] = row[0] if row else None
                    if before[alert_id] == "dead":
                        _requeue(db, now, alert_id)
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
        return before

    def requeue_all_dead(self) -> int:
        with self._statement() as db:
            return _requeue(db, self._clock())

    def purge_dead(self, *, received_before: float) -> int:
        """Delete dead alerts received before the given Unix time; pending ones are never
        touched."""
        with self._statement() as db:
            return db.execute(
                "DELETE FROM alerts WHERE state = 'dead' AND received_at < ?", (received_before,)
            ).rowcount

    def checkpoint(self) -> None:
        """Copy the WAL back into the file, off the webhooks' connection (see
        BACKSTOP_CHECKPOINT_PAGES). PASSIVE: it never waits for, nor blocks, a writer."""
        if self._connection is None:
            return  # not opened (yet) in this process: nothing written here to copy back
        try:
            if self._checkpointer is None:
                self._checkpointer = sqlite3.connect(
                    f"file:{_uri_path(self.path)}?mode=rw",
                    uri=True,
                    timeout=BUSY_TIMEOUT,
                    isolation_level=None,
                    check_same_thread=False,
                )
            self._checkpointer.execute("PRAGMA wal_checkpoint(PASSIVE)")
        except sqlite3.Error as exc:
            # The webhooks' own writes report a failing disk; this one only retries next time.
            log.debug("spool checkpoint failed: %s", exc)
            if self._checkpointer is not None:
                with contextlib.suppress(sqlite3.Error):
                    self._checkpointer.close()
            self._checkpointer = None

    def close(self) -> None:
        with self._lock:
            for connection in (self._connection, self._checkpointer):
                if connection is not None:
                    connection.close()
            self._connection = None
            self._checkpointer = None

    # --- the connection ----------------------------------------------------------------------

    @contextlib.contextmanager
    def _statement(self) -> Iterator[sqlite3.Connection]:
        """The process's connection, for one statement (or one explicit transaction). Any
        SQLite or file system error becomes SpoolError and marks the spool unusable until a
        later statement writes successfully (a read proves nothing on a full disk); the next
        use after an error reopens the file."""
        with self._lock:
            try:
                if self._connection is None:
                    self._connection = self._open()
                connection = self._connection
                changes_before = connection.total_changes
                yield connection
            except (sqlite3.Error, OSError) as exc:
                reason = _describe(exc)
                if self._connection is not None and _needs_reopen(exc):
                    with contextlib.suppress(sqlite3.Error):
                        self._connection.close()
                    self._connection = None
                self._became_unusable(reason)
                raise SpoolError(reason) from None
            except SpoolError as exc:
                self._became_unusable(str(exc))
                raise
            if self._problem is not None and connection.total_changes > changes_before:
                self._works_again()

    def _works_again(self) -> None:
        log.warning("the spool %s works again (it had: %s)", self.path, self._problem)
        self._problem = None

    def _became_unusable(self, reason: str) -> None:
        if self._problem is None and self._for_service:
            log.error(
                "DURABILITY LOST: the spool %s cannot be used: %s. Alerts are still delivered, "
                "but a failed one is retried from memory only and is lost if this process stops. "
                "GET /readyz answers 503 until the spool works again.",
                self.path,
                reason,
            )
        self._problem = reason

    def _reset_after_fork(self) -> None:
        # The child has none of the parent's threads, and maybe a copy of a lock one of them
        # held: start over with a new lock, connection and lease owner.
        self._lock = threading.Lock()
        for inherited in (self._connection, self._checkpointer):
            if inherited is not None:
                self._inherited.append(inherited)
        self._connection = None
        self._checkpointer = None
        self._owner = _new_owner()

    def _open(self) -> sqlite3.Connection:
        directory = os.path.dirname(os.path.abspath(self.path))
        if not os.path.isdir(directory):
            raise SpoolError(f"the directory {directory} does not exist")
        if not self._for_service and not os.path.exists(self.path):
            raise SpoolError(f"there is no spool at {self.path}")
        # Workers start together: only one at a time may find the file corrupt and replace it,
        # or a second could move aside the fresh file the first just made.
        with _file_lock(f"{self.path}.lock"):
            try:
                return self._connect()
            except sqlite3.DatabaseError as exc:
                if not _is_corruption(exc) or not self._for_service:
                    raise
                problem = _describe(exc)
            aside = self._move_aside()
            connection = self._connect()
        log.error(
            "the spool file %s was corrupt (%s): moved it aside to %s (kept, not deleted) and "
            "started a fresh spool; alerts that were pending in it are not retried",
            self.path,
            problem,
            aside,
        )
        return connection

    def _connect(self) -> sqlite3.Connection:
        uri = f"file:{_uri_path(self.path)}?mode={'rwc' if self._for_service else 'rw'}"
        connection = sqlite3.connect(
            uri, uri=True, timeout=BUSY_TIMEOUT, isolation_level=None, check_same_thread=False
        )
        connection.row_factory = sqlite3.Row
        try:
            connection.execute("PRAGMA journal_mode = WAL")
            connection.execute("PRAGMA synchronous = NORMAL")
            connection.execute(f"PRAGMA wal_autocheckpoint = {BACKSTOP_CHECKPOINT_PAGES}")
            connection.execute(f"PRAGMA journal_size_limit = {WAL_SIZE_LIMIT}")
            version = connection.execute("PRAGMA user_version").fetchone()[0]
            if version > SCHEMA_VERSION:
                raise SpoolError(
                    f"{self.path} was written by a newer relay_app (schema {version}); "
                    "upgrade this one or point RELAY_SPOOL_PATH elsewhere"
                )
            checked = connection.execute("PRAGMA quick_check").fetchone()[0]
            if checked != "ok":
                raise sqlite3.DatabaseError(f"database disk image is malformed: {checked}")
            if version < SCHEMA_VERSION:
                connection.executescript(
                    f"BEGIN IMMEDIATE; {_SCHEMA} PRAGMA user_version = {SCHEMA_VERSION}; COMMIT;"
                )
        except BaseException:
            connection.close()
            raise
        return connection

    def _move_aside(self) -> str:
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
        aside = f"{self.path}.corrupt-{stamp}-{secrets.token_hex(2)}"
        # The WAL and shared-memory files belong to the corrupt file: next to a fresh one they
        # would be replayed into it.
        for suffix in ("", "-wal", "-shm"):
            if os.path.exists(self.path + suffix):
                os.rename(self.path + suffix, aside + suffix)
        return aside


_spools: weakref.WeakSet[Spool] = weakref.WeakSet()


def _reset_spools_after_fork() -> None:
    for spool in list(_spools):
        spool._reset_after_fork()


os.register_at_fork(after_in_child=_reset_spools_after_fork)


_REQUEUE = (
    "UPDATE alerts SET state = 'pending', dead_at = NULL, attempts = 0, unsure_attempts = 0,"
    " retry_from = ?, next_attempt_at = ?, lease_owner = NULL, lease_until = NULL"
    " WHERE state = 'dead'"
)


def _requeue(db: sqlite3.Connection, now: float, alert_id: int | None = None) -> int:
    """Dead alerts pending again, with a fresh retry horizon: `alert_id`, or all of them."""
    if alert_id is None:
        return db.execute(_REQUEUE, (now, now)).rowcount
    return db.execute(_REQUEUE + " AND id = ?", (now, now, alert_id)).rowcount


def _alert(row: sqlite3.Row) -> SpooledAlert:
    return SpooledAlert(
        Message(html=row["html"], text=row["text"], fallback=row["fallback"]),
        received_at=row["received_at"],
        retry_from=row["retry_from"],
        id=row["id"],
        attempts=row["attempts"],
        unsure_attempts=row["unsure_attempts"],
        next_attempt_at=row["next_attempt_at"],
        last_error=row["last_error"],
        state=row["state"],
        lease_owner=row["lease_owner"],
        lease_until=row["lease_until"],
        dead_at=row["dead_at"],
    )


@contextlib.contextmanager
def _file_lock(path: str) -> Iterator[None]:
    try:
        handle = open(path, "a")  # noqa: SIM115 (closed below, after the lock's errors are told)
    except OSError as exc:
        directory = os.path.dirname(path)
        raise SpoolError(f"cannot create files in {directory}: {exc.strerror}") from None
    with handle:
        # Bounded: a webhook is waiting, and a process stuck while holding this (stopped, not
        # dead: the kernel frees a dead one's lock) must not stall every other one for good.
        give_up_at = time.monotonic() + OPEN_LOCK_TIMEOUT
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= give_up_at:
                    raise SpoolError(
                        f"another process has held {path} for over {OPEN_LOCK_TIMEOUT:g} s"
                    ) from None
                time.sleep(0.01)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _new_owner() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(3)}"


def _uri_path(path: str) -> str:
    # '?' and '#' would end the path inside a URI; '%' would start an escape.
    return os.path.abspath(path).replace("%", "%25").replace("?", "%3f").replace("#", "%23")


def _is_corruption(exc: sqlite3.Error) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)
    if isinstance(code, int) and code & 0xFF in _CORRUPTION_CODES:
        return True
    return "malformed" in str(exc) or "not a database" in str(exc)


def _needs_reopen(exc: BaseException) -> bool:
    # A busy database is a moment's contention; anything else may mean the file changed under
    # us (moved, made read-only, corrupted), and a fresh connection finds out.
    return not (isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc))


def _describe(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        where = f" ({exc.filename})" if exc.filename else ""
        return f"{exc.strerror}{where}"
    return str(exc) or type(exc).__name__
