"""The durable spool: every accepted alert, in one SQLite file, from the webhook until Telegram
has it or it is declared dead.

The view writes an alert here before its first attempt (write-ahead) and deletes it once
Telegram accepts it, so a crash at any point leaves the alert on disk. Rows are leased: a worker
that works on a row owns it until `lease_until`, and other workers (of this gunicorn, or of
another relay on the host) claim only rows whose lease is free or expired. Every change is one
short statement or transaction, so several processes share the file through SQLite's own
locking (WAL mode).

The spool is also the queue that pacing and digests work from: each alert records its
destination (chat and topic), and the recent sends and Telegram's pauses are kept here too, so
every process that shares the file keeps to Telegram's limits together (pacing.py).

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
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Literal

from .digest import MAX_ALERTS_PER_DIGEST
from .formatting import Entry, Message
from .pacing import BOT_LIMIT, BOT_WINDOW, GROUP_LIMIT, REMEMBERED_FOR, next_send_at
from .routing import Destination, parse_chat_id

log = logging.getLogger(__name__)

Clock = Callable[[], float]
State = Literal["pending", "dead"]

SCHEMA_VERSION = 2
# Statements take microseconds; a lock held this long means something is wrong, and the
# webhook has GlitchTip waiting.
BUSY_TIMEOUT = 1.0
# Opening (and repairing) the file is serialized between processes by a lock file.
OPEN_LOCK_TIMEOUT = 2.0
# A checkpoint copies the WAL back into the file and flushes it: milliseconds. Left to SQLite it
# runs inside whichever commit crosses its threshold, a webhook's, while that worker's other
# threads wait for the connection. So each worker's dispatcher thread runs one a second on a
# connection of its own (`checkpoint`), and SQLite's own stays only as a backstop.
BACKSTOP_CHECKPOINT_PAGES = 10000
WAL_SIZE_LIMIT = 16 * 1024 * 1024
_CORRUPTION_CODES = {sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB}
# A claim never needs more rows than one digest holds.
MAX_CLAIM = MAX_ALERTS_PER_DIGEST

# Each step takes the file from the version before it to its own; a fresh file takes them all.
# One statement per item (a trigger's body holds semicolons of its own).
_SCHEMA_STEPS: dict[int, list[str]] = {
    1: [
        """CREATE TABLE IF NOT EXISTS alerts (
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
)""",
        "CREATE INDEX IF NOT EXISTS alerts_by_state_and_due ON alerts (state, next_attempt_at)",
    ],
    2: [
        # The destination, as routing.chat_key spells it, and its forum topic (or NULL).
        "ALTER TABLE alerts ADD COLUMN chat TEXT",
        "ALTER TABLE alerts ADD COLUMN thread INTEGER",
        # The alert's parts of a digest, in full and as a brief; NULL: the one before.
        "ALTER TABLE alerts ADD COLUMN entry_html TEXT",
        "ALTER TABLE alerts ADD COLUMN entry_text TEXT",
        "ALTER TABLE alerts ADD COLUMN brief_html TEXT",
        "ALTER TABLE alerts ADD COLUMN brief_text TEXT",
        "CREATE INDEX IF NOT EXISTS alerts_by_destination"
        " ON alerts (chat, thread, state, next_attempt_at)",
        "CREATE INDEX IF NOT EXISTS alerts_oldest_first"
        " ON alerts (chat, thread, state, received_at, id, next_attempt_at, lease_until)",
        # Pacing, shared by every process on the file (pacing.py): recent sends, 429 pauses.
        "CREATE TABLE IF NOT EXISTS sends (chat TEXT NOT NULL, at REAL NOT NULL)",
        "CREATE INDEX IF NOT EXISTS sends_by_chat ON sends (chat, at)",
        "CREATE INDEX IF NOT EXISTS sends_by_time ON sends (at)",
        "CREATE TABLE IF NOT EXISTS pauses (chat TEXT PRIMARY KEY, until REAL NOT NULL)",
        # The number of pending alerts, kept by triggers: counting them on every webhook cost
        # 0.3 ms with 10000 pending, and a storm's backlog is just when they pile up.
        "CREATE TABLE IF NOT EXISTS pending_count"
        " (only INTEGER PRIMARY KEY CHECK (only = 1), alerts INTEGER NOT NULL)",
        "INSERT OR REPLACE INTO pending_count (only, alerts)"
        " SELECT 1, count(*) FROM alerts WHERE state = 'pending'",
        "CREATE TRIGGER IF NOT EXISTS pending_added AFTER INSERT ON alerts"
        " WHEN NEW.state = 'pending'"
        " BEGIN UPDATE pending_count SET alerts = alerts + 1; END",
        "CREATE TRIGGER IF NOT EXISTS pending_removed AFTER DELETE ON alerts"
        " WHEN OLD.state = 'pending'"
        " BEGIN UPDATE pending_count SET alerts = alerts - 1; END",
        "CREATE TRIGGER IF NOT EXISTS pending_changed AFTER UPDATE OF state ON alerts"
        " WHEN OLD.state != NEW.state"
        " BEGIN UPDATE pending_count"
        " SET alerts = alerts + (NEW.state = 'pending') - (OLD.state = 'pending'); END",
    ],
}

# Pending alerts no process is working on ("waiting"): due by :due_by, with no lease or an
# expired one. Written out in each query, so that every query is one constant string. The
# indexes make each of these stop early: the first found, the oldest hundred.
_ANY_WAITING_FOR_DESTINATION = (
    "SELECT 1 FROM alerts WHERE chat = :chat AND thread IS :thread AND state = 'pending'"
    " AND next_attempt_at <= :due_by AND (lease_until IS NULL OR lease_until < :now) LIMIT 1"
)
_WAITING_FOR_DESTINATION = (
    "SELECT * FROM alerts INDEXED BY alerts_oldest_first"
    " WHERE chat = :chat AND thread IS :thread AND state = 'pending'"
    " AND next_attempt_at <= :due_by AND (lease_until IS NULL OR lease_until < :now)"
    " ORDER BY received_at, id LIMIT :limit"
)
_DESTINATIONS_WAITING = (
    "SELECT DISTINCT chat, thread FROM alerts WHERE state = 'pending'"
    " AND next_attempt_at <= :due_by AND (lease_until IS NULL OR lease_until < :now)"
)


class SpoolError(Exception):
    """The spool cannot be used right now: not openable, read-only, full disk, corrupt."""


class SpoolOutdated(SpoolError):
    """An older relay_app wrote the file; only the service upgrades it (relay-app does not)."""


class SpoolFull(Exception):
    """RELAY_SPOOL_MAX_PENDING alerts are already pending."""


_memory_numbers = itertools.count(1)


@dataclass
class SpooledAlert:
    """An alert on its way: what the retrier works on, and what a spool row holds. `id` is None
    for an alert kept in memory only (the spool was unusable or full)."""

    message: Message
    destination: Destination
    received_at: float
    retry_from: float
    id: int | None = None
    attempts: int = 0
    unsure_attempts: int = 0
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


@dataclass(frozen=True)
class Admission:
    """A new alert on disk, and whether the webhook may send it now: its chat's turn has come
    (pacing) and no older alert is waiting for the same destination. When it may not, the
    alert waits in the spool, due at `alert.next_attempt_at`."""

    alert: SpooledAlert
    send_now: bool


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
        default_destination: Destination | None = None,
    ) -> None:
        """`for_service=False` is a person's tool (relay-app): it never creates, upgrades or
        repairs the file, and leaves reporting to the tool, since no alert depends on it.
        `default_destination` is where alerts spooled by a relay that had no routing go."""
        self.path = path
        self._default_destination = default_destination
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

    def add(
        self, message: Message, destination: Destination, *, received_at: float, lease_for: float
    ) -> Admission:
        """Write-ahead, and the webhook's turn, in one transaction. When the alert may go now,
        its send is recorded for pacing, its attempt counted (before it is made, as every
        attempt is) and the row leased to this process until `received_at + lease_for`.
        Raises SpoolFull past max_pending, SpoolError when the spool is unusable."""
        now = received_at
        chat = destination.chat_key
        with self._transaction() as db:
            pending = db.execute("SELECT alerts FROM pending_count")
            if pending.fetchone()[0] >= self.max_pending:
                raise SpoolFull(f"{self.max_pending} alerts are already pending")
            waiting = db.execute(
                _ANY_WAITING_FOR_DESTINATION,
                {"chat": chat, "thread": destination.thread, "due_by": now, "now": now},
            ).fetchone()
            turn = now if waiting else _take_turn(db, chat, group=destination.is_group, now=now)
            send_now = turn <= now and not waiting
            entry, brief = message.short_entry, message.brief_entry
            alert_id = db.execute(
                "INSERT INTO alerts (received_at, retry_from, html, text, fallback, entry_html,"
                " entry_text, brief_html, brief_text, chat, thread, attempts, unsure_attempts,"
                " next_attempt_at, lease_owner, lease_until)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    received_at,
                    received_at,
                    message.html,
                    message.text,
                    message.fallback,
                    entry.html if entry else None,
                    entry.text if entry else None,
                    brief.html if brief else None,
                    brief.text if brief else None,
                    chat,
                    destination.thread,
                    int(send_now),
                    int(send_now),
                    turn,
                    self._owner if send_now else None,
                    now + lease_for if send_now else None,
                ),
            ).lastrowid
        alert = SpooledAlert(
            message,
            destination,
            received_at,
            received_at,
            id=alert_id,
            attempts=int(send_now),
            unsure_attempts=int(send_now),
            next_attempt_at=turn,
            lease_owner=self._owner if send_now else None,
            lease_until=now + lease_for if send_now else None,
        )
        return Admission(alert, send_now)

    def delivered(self, alerts: Sequence[SpooledAlert]) -> None:
        with self._statement() as db:
            db.executemany("DELETE FROM alerts WHERE id = ?", [(a.id,) for a in alerts])

    def save(self, alerts: Sequence[SpooledAlert], *, lease_until: float | None) -> bool:
        """Record the alerts' attempts, schedule and destination, and hold their leases until
        `lease_until` (None gives them back). False when some row is no longer ours: its lease
        expired and another worker claimed it, or it left the pending set."""
        now = self._clock()
        owner = self._owner if lease_until is not None else None
        with self._transaction() as db:
            saved = 0
            for alert in alerts:
                saved += db.execute(
                    "UPDATE alerts SET attempts = ?, unsure_attempts = ?, last_error = ?,"
                    " next_attempt_at = ?, chat = ?, thread = ?, lease_owner = ?, lease_until = ?"
                    " WHERE id = ? AND state = 'pending'"
                    " AND (lease_owner IS NULL OR lease_owner = ? OR lease_until < ?)",
                    (
                        alert.attempts,
                        alert.unsure_attempts,
                        alert.last_error,
                        alert.next_attempt_at,
                        alert.destination.chat_key,
                        alert.destination.thread,
                        owner,
                        lease_until,
                        alert.id,
                        self._owner,
                        now,
                    ),
                ).rowcount
        return saved == len(alerts)

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

    def waiting(self, *, now: float) -> tuple[list[Destination], float | None]:
        """The destinations that have alerts due and free now, and when the next free alert
        that is not yet due will be."""
        with self._statement() as db:
            rows = db.execute(
                _DESTINATIONS_WAITING,
                {"due_by": now, "now": now},
            ).fetchall()
            soonest = db.execute(
                "SELECT min(next_attempt_at) FROM alerts WHERE state = 'pending'"
                " AND next_attempt_at > :now AND (lease_until IS NULL OR lease_until < :now)",
                {"now": now},
            ).fetchone()[0]
        return [self._destination(chat, thread) for chat, thread in rows], soonest

    def claim(
        self,
        destination: Destination,
        *,
        lease_for: float,
        how_many: Callable[[list[Message]], int],
    ) -> list[SpooledAlert]:
        """Lease the oldest waiting alerts for `destination` to this process, as many as
        `how_many` picks from their messages (digest.how_many_fit): one transaction, so two
        workers never claim the same row."""
        now = self._clock()
        with self._transaction() as db:
            rows = db.execute(
                _WAITING_FOR_DESTINATION,
                {
                    "chat": destination.chat_key,
                    "thread": destination.thread,
                    "due_by": now,
                    "now": now,
                    "limit": MAX_CLAIM,
                },
            ).fetchall()
            alerts = [self._alert(row) for row in rows]
            alerts = alerts[: how_many([alert.message for alert in alerts])]
            db.executemany(
                "UPDATE alerts SET lease_owner = ?, lease_until = ? WHERE id = ?",
                [(self._owner, now + lease_for, a.id) for a in alerts],
            )
        for alert in alerts:
            alert.lease_owner, alert.lease_until = self._owner, now + lease_for
        return alerts

    # --- pacing (pacing.Pacer), shared through the file ----------------------------------------

    def reserve(self, chat: str, *, group: bool, now: float) -> float:
        with self._transaction() as db:
            return _take_turn(db, chat, group=group, now=now)

    def give_back(self, chat: str, at: float) -> None:
        with self._statement() as db:
            db.execute(
                "DELETE FROM sends WHERE rowid = (SELECT rowid FROM sends WHERE chat = ? AND at = ?"
                " LIMIT 1)",
                (chat, at),
            )

    def pause(self, chat: str, until: float) -> None:
        with self._statement() as db:
            db.execute(
                "INSERT INTO pauses (chat, until) VALUES (?, ?) ON CONFLICT (chat)"
                " DO UPDATE SET until = max(until, excluded.until)",
                (chat, until),
            )

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
        return [self._alert(row) for row in rows]

    def counts(self) -> dict[State, int]:
        # Cheap at any backlog (Prometheus asks every few seconds): the kept count, and the
        # dead ones counted on the index.
        with self._statement() as db:
            pending, dead = db.execute(
                "SELECT (SELECT alerts FROM pending_count),"
                " (SELECT count(*) FROM alerts WHERE state = 'dead')"
            ).fetchone()
        return {"pending": pending, "dead": dead}

    def oldest_pending(self) -> float | None:
        """When the oldest pending alert arrived (Unix time), or None when none is pending."""
        # Ids grow in order of arrival, so the first pending row in id order is the oldest, and
        # the walk stops there instead of visiting every pending row.
        with self._statement() as db:
            row = db.execute(
                "SELECT received_at FROM alerts NOT INDEXED WHERE state = 'pending'"
                " ORDER BY id LIMIT 1"
            ).fetchone()
        return float(row[0]) if row is not None else None

    def requeue(self, alert_ids: Iterable[int]) -> dict[int, State | None]:
        """Make dead alerts pending again with a fresh retry horizon. Returns each id's state
        before: 'dead' (requeued), 'pending' (left alone) or None (no such alert)."""
        before: dict[int, State | None] = {}
        now = self._clock()
        with self._transaction() as db:
            for alert_id in alert_ids:
                row = db.execute("SELECT state FROM alerts WHERE id = ?", (alert_id,)).fetchone()
                before[alert_id] = row[0] if row else None
                if before[alert_id] == "dead":
                    _requeue(db, now, alert_id)
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

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        """`_statement` for several statements that must see and change the file as one: the
        write lock is taken first (IMMEDIATE), so no other process slips in between."""
        with self._statement() as db:
            db.execute("BEGIN IMMEDIATE")
            try:
                yield db
            except BaseException:
                if db.in_transaction:  # SQLite itself rolls back on some errors (a full disk)
                    db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")

    def _alert(self, row: sqlite3.Row) -> SpooledAlert:
        entry = brief = None
        if row["entry_html"] is not None:
            entry = Entry(row["entry_html"], row["entry_text"])
        if row["brief_html"] is not None:
            brief = Entry(row["brief_html"], row["brief_text"])
        return SpooledAlert(
            Message(row["html"], row["text"], row["fallback"], entry, brief),
            self._destination(row["chat"], row["thread"]),
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

    def _destination(self, chat: str, thread: int | None) -> Destination:
        parsed = parse_chat_id(chat)
        if parsed is None:  # not written by this code: a person's edit, say
            raise SpoolError(f"an alert in {self.path} has an unreadable chat id {chat!r}")
        return Destination(parsed, thread)

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
                self._upgrade(connection, version)
        except BaseException:
            connection.close()
            raise
        return connection

    def _upgrade(self, connection: sqlite3.Connection, version: int) -> None:
        if not self._for_service:
            raise SpoolOutdated(
                f"{self.path} was written by an older relay_app (schema {version}); start the "
                "relay once to upgrade it"
            )
        connection.execute("BEGIN IMMEDIATE")
        try:
            # Another worker may have upgraded it since this one looked.
            version = connection.execute("PRAGMA user_version").fetchone()[0]
            for step in range(version + 1, SCHEMA_VERSION + 1):
                for statement in _SCHEMA_STEPS[step]:
                    connection.execute(statement)
            self._route_old_alerts(connection)
            connection.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            connection.execute("COMMIT")
        except BaseException:
            if connection.in_transaction:
                connection.execute("ROLLBACK")
            raise

    def _route_old_alerts(self, connection: sqlite3.Connection) -> None:
        """Alerts spooled before routing existed were all for the default destination."""
        unrouted = connection.execute("SELECT count(*) FROM alerts WHERE chat IS NULL")
        if unrouted.fetchone()[0] == 0:
            return
        if self._default_destination is None:
            raise SpoolError(f"{self.path} holds alerts with no destination, and none was given")
        connection.execute(
            "UPDATE alerts SET chat = ?, thread = ? WHERE chat IS NULL",
            (self._default_destination.chat_key, self._default_destination.thread),
        )

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


def _take_turn(db: sqlite3.Connection, chat: str, *, group: bool, now: float) -> float:
    """Within a transaction: take the chat's turn if it is `now`, recording the send, and
    return `now`; otherwise return when the turn will be. Forgets sends too old to count."""
    db.execute("DELETE FROM sends WHERE at < ?", (now - REMEMBERED_FOR,))
    turn = _turn(db, chat, group=group, now=now)
    if turn <= now:
        db.execute("INSERT INTO sends (chat, at) VALUES (?, ?)", (chat, now))
    return turn


def _turn(db: sqlite3.Connection, chat: str, *, group: bool, now: float) -> float:
    """When the chat's next turn is, from the sends and pauses every process recorded."""
    paused = db.execute("SELECT until FROM pauses WHERE chat = ?", (chat,)).fetchone()
    to_chat = db.execute(
        "SELECT at FROM sends WHERE chat = ? ORDER BY at DESC LIMIT ?", (chat, GROUP_LIMIT)
    ).fetchall()
    by_bot = db.execute(
        "SELECT at FROM sends WHERE at > ? ORDER BY at DESC LIMIT ?", (now - BOT_WINDOW, BOT_LIMIT)
    ).fetchall()
    return next_send_at(
        now,
        to_chat=[at for (at,) in to_chat],
        by_bot=[at for (at,) in by_bot],
        paused_until=paused[0] if paused else None,
        group=group,
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
