"""The spool's SQLite file: opening it (and repairing, upgrading), one connection per process,
and every unit of work run on it; the one place SQLite's errors become the spool errors. The
same code keeps a private in-memory database (path `:memory:`): where alerts wait when the
spool cannot be used, by the same statements and rules.

Several processes share the file through SQLite's own locking (WAL mode), each with a
connection of its own, opened lazily (gunicorn forks after import) and used under a lock, one
short unit of work at a time. A writer waits for another's lock within the caller's budget (a
webhook's is well inside GlitchTip's 10 s), and every such wait is counted: a busy spool is not
a broken one. Only I/O errors, corruption and a read-only disk mean durability is lost.

Durability is against process death (crash, SIGKILL, OOM, deploy): with `synchronous=NORMAL` a
commit is not flushed to the disk itself, so a power cut or kernel crash can lose the last
moments. Flushing every commit would cost an fsync on every webhook.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import secrets
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import TypeVar

from ..core.errors import SpoolBusy, SpoolError, SpoolMissing, SpoolOutdated
from ..core.process import PerProcess
from ..core.routing import Destination
from .history import SCHEMA_VERSION
from .schema import upgrade, version_of
from .store import SQLITE, Now, Tx, Work

log = logging.getLogger("relay_app.spool")

T = TypeVar("T")

# How long a unit of work waits for another connection's lock unless its caller says: long
# enough for a backup or a vacuum by hand, short enough that a stuck lock shows.
LOCK_WAIT = 5.0
# A unit that finds the file locked by another connection tries again after a pause that
# starts here and doubles up to RETRY_PAUSE_MAX, until the caller's budget is spent. SQLite's
# own busy handler (a connection's timeout, 0 here) sleeps 1, 2, 5, 10 ms and longer between
# its tries, so a lock given back within a tenth of a millisecond cost the waiting webhook
# whole milliseconds, and 16 webhooks at once their p99 (docs/benchmarks.md).
RETRY_PAUSE = 0.0002
RETRY_PAUSE_MAX = 0.004
# Opening is the exception: it runs under the file lock below (OPEN_LOCK_TIMEOUT), and a
# connection that gave up at once there and took the file lock again at once would starve the
# other workers opening the file; there SQLite's busy handler waits, this long at most.
OPEN_BUSY = 0.05
# Opening (and repairing) the file is serialized between processes by a lock file.
OPEN_LOCK_TIMEOUT = 2.0
# A checkpoint copies the WAL back into the file and flushes it: milliseconds. Left to SQLite it
# runs inside whichever commit crosses its threshold, a webhook's, while that worker's other
# threads wait for the connection. So each worker's dispatcher runs one a second on a
# connection of its own (`tidy`), and SQLite's own stays only as a backstop.
BACKSTOP_CHECKPOINT_PAGES = 10000
WAL_SIZE_LIMIT = 16 * 1024 * 1024
_CORRUPTION_CODES = {sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB}
_BUSY_CODES = {sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED}
MEMORY = ":memory:"
# RETURNING and ON CONFLICT, which the spool's statements use (Debian 12 has 3.40).
OLDEST_SQLITE = (3, 35, 0)


class Database(PerProcess):
    def __init__(
        self,
        path: str,
        *,
        for_service: bool = True,
        default_destination: Destination | None = None,
        skew: float = 0.0,
    ) -> None:
        """`for_service=False` is a person's tool (relay-app): it never creates, upgrades or
        repairs the file, and leaves reporting to the tool, since no alert depends on it.
        `default_destination` is where alerts spooled by a relay that had no routing go.
        The store's clock is the caller's, `skew` seconds ahead (tests: code that mixes the
        two clocks up fails)."""
        self.durable = path != MEMORY
        self.path = path if self.durable else "memory"  # how logs name it
        self._for_service = for_service
        self._default_destination = default_destination
        self._skew = skew
        self._connection: sqlite3.Connection | None = None
        self._checkpointer: sqlite3.Connection | None = None
        self._problem: str | None = None
        # Told of every wait for another connection's lock, in seconds (metrics count them).
        self.on_lock_wait: Callable[[float], None] = lambda seconds: None
        # Connections inherited through fork are never used or closed in the child (closing
        # could disturb the parent's locks); they are kept here so the GC does not close them.
        self._inherited: list[sqlite3.Connection] = []
        self._start_in_this_process()

    # --- units of work -------------------------------------------------------------------------

    def write(
        self, work: Work[T], *, now: float | None = None, wait_until: float | None = None
    ) -> T:
        """Run `work` in one transaction that holds the write lock from its start (IMMEDIATE),
        so no other process slips in between its reads and writes. `wait_until` (monotonic)
        bounds the wait for another's lock; past it, SpoolBusy."""
        return self._run(work, now, wait_until, _in_transaction)

    def read(
        self, work: Work[T], *, now: float | None = None, wait_until: float | None = None
    ) -> T:
        return self._run(work, now, wait_until, _alone)

    def _run(
        self,
        work: Work[T],
        now: float | None,
        wait_until: float | None,
        run: Callable[[sqlite3.Connection, Work[T], Now], T],
    ) -> T:
        self._here()
        started = time.monotonic()
        deadline = started + LOCK_WAIT if wait_until is None else wait_until
        local = time.time() if now is None else now
        at = Now(local + self._skew, local)
        waited = False
        pause = RETRY_PAUSE
        try:
            while True:
                if waited:  # outside the process's lock: its other threads go on meanwhile
                    time.sleep(pause)
                    pause = min(pause * 2, RETRY_PAUSE_MAX)
                if not self._lock.acquire(timeout=max(0.0, deadline - time.monotonic())):
                    waited = True
                    raise SpoolBusy(f"the spool {self.path} was busy for too long")
                try:
                    return self._once(work, at, run)
                except _Locked:
                    waited = True
                    if time.monotonic() >= deadline:
                        raise SpoolBusy(
                            f"another process held the spool {self.path} locked for over "
                            f"{deadline - started:.1f} s"
                        ) from None
                finally:
                    self._lock.release()
        finally:
            if waited:
                self.on_lock_wait(time.monotonic() - started)

    def _once(
        self, work: Work[T], at: Now, run: Callable[[sqlite3.Connection, Work[T], Now], T]
    ) -> T:
        """One try, under the process's lock. Any SQLite or file system error becomes
        SpoolError and marks the spool unusable until a later unit writes successfully (a read
        proves nothing on a full disk); the next use after an error reopens the file (an
        in-memory database is kept: closing it would lose what it holds)."""
        try:
            if self._connection is None:
                self._connection = self._open()
            db = self._connection
            changes_before = db.total_changes
            result = run(db, work, at)
        except (sqlite3.Error, OSError) as exc:
            if _is_busy(exc):
                raise _Locked from None
            reason = _describe(exc)
            # A file is reopened with its alerts; an in-memory database is its alerts.
            if self._connection is not None and self.durable:
                with contextlib.suppress(sqlite3.Error):
                    self._connection.close()
                self._connection = None
            self._became_unusable(reason)
            raise SpoolError(reason) from None
        except SpoolError as exc:
            self._became_unusable(str(exc))
            raise
        if self._problem is not None and db.total_changes > changes_before:
            self._works_again()
        return result

    # --- health ------------------------------------------------------------------------------

    @property
    def opened(self) -> bool:
        """Whether this process has used the file (a CLI or a fresh worker may not have)."""
        return self._connection is not None and self._pid == os.getpid()

    def problem(self) -> str | None:
        """Why the spool is unusable, or None when it works. After a failure, it takes a
        successful write (a fresh connection's) to count as working again."""
        with contextlib.suppress(SpoolError):
            if self._problem is None:
                self.read(lambda tx: None)  # opens the file on first use: a missing one shows
            else:
                # A write, to the header: the one thing that proves the disk takes writes.
                self.write(lambda tx: tx.execute(f"PRAGMA user_version = {SCHEMA_VERSION}"))
                if self._problem is not None:
                    self._works_again()
        return self._problem

    def _works_again(self) -> None:
        if self.durable:
            log.warning("the spool %s works again (it had: %s)", self.path, self._problem)
        self._problem = None

    def _became_unusable(self, reason: str) -> None:
        if self._problem is None and self._for_service and self.durable:
            log.error(
                "DURABILITY LOST: the spool %s cannot be used: %s. Alerts are still delivered, "
                "but a failed one is retried from memory only and is lost if this process stops. "
                "GET /readyz answers 503 until the spool works again.",
                self.path,
                reason,
            )
        self._problem = reason

    # --- upkeep ------------------------------------------------------------------------------

    def tidy(self) -> None:
        """Copy the WAL back into the file, off the webhooks' connection (see
        BACKSTOP_CHECKPOINT_PAGES). PASSIVE: it never waits for, nor blocks, a writer."""
        self._here()
        if self._connection is None or not self.durable:
            return  # not opened (yet) in this process: nothing written here to copy back
        try:
            if self._checkpointer is None:
                self._checkpointer = sqlite3.connect(
                    f"file:{_uri_path(self.path)}?mode=rw",
                    uri=True,
                    timeout=0,
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

    def listen(self, on_news: Callable[[], None]) -> None:
        """Nothing to hear: the processes sharing the file find its work by polling."""

    def stop_listening(self) -> None:
        """Nothing to stop."""

    def hears(self) -> bool:
        return False

    def close(self) -> None:
        self._here()
        with self._lock:
            for connection in (self._connection, self._checkpointer):
                if connection is not None:
                    connection.close()
            self._connection = None
            self._checkpointer = None

    def _start_over(self) -> None:
        """A new lock and connection in this process (core/process.py); an in-memory database
        starts empty: what the parent held in memory is the parent's."""
        self._lock = threading.Lock()
        for inherited in (self._connection, self._checkpointer):
            if inherited is not None:
                self._inherited.append(inherited)
        self._connection = None
        self._checkpointer = None

    # --- opening -----------------------------------------------------------------------------

    def _open(self) -> sqlite3.Connection:
        if sqlite3.sqlite_version_info < OLDEST_SQLITE:
            raise SpoolError(
                f"SQLite {sqlite3.sqlite_version} is too old for the spool: it needs "
                f"{'.'.join(map(str, OLDEST_SQLITE))} or newer"
            )
        if not self.durable:
            return self._open_memory()
        directory = os.path.dirname(os.path.abspath(self.path))
        if not os.path.isdir(directory):
            raise SpoolError(f"the directory {directory} does not exist")
        if not self._for_service and not os.path.exists(self.path):
            raise _missing(self.path)
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

    def _open_memory(self) -> sqlite3.Connection:
        connection = sqlite3.connect(MEMORY, isolation_level=None, check_same_thread=False)
        connection.row_factory = sqlite3.Row
        upgrade(connection, self._default_destination)
        return connection

    def _connect(self) -> sqlite3.Connection:
        if self._for_service:
            _create_private(self.path)
        uri = f"file:{_uri_path(self.path)}?mode={'rwc' if self._for_service else 'rw'}"
        connection = sqlite3.connect(
            uri, uri=True, timeout=OPEN_BUSY, isolation_level=None, check_same_thread=False
        )
        connection.row_factory = sqlite3.Row
        try:
            connection.execute("PRAGMA journal_mode = WAL")
            connection.execute("PRAGMA synchronous = NORMAL")
            connection.execute(f"PRAGMA wal_autocheckpoint = {BACKSTOP_CHECKPOINT_PAGES}")
            connection.execute(f"PRAGMA journal_size_limit = {WAL_SIZE_LIMIT}")
            version = version_of(connection)
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
            connection.execute("PRAGMA busy_timeout = 0")  # the units' waits are `_run`'s
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
            if version_of(connection) < SCHEMA_VERSION:
                upgrade(connection, self._default_destination)
            connection.execute("COMMIT")
        except BaseException:
            if connection.in_transaction:
                connection.execute("ROLLBACK")
            raise

    def _move_aside(self) -> str:
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
        aside = f"{self.path}.corrupt-{stamp}-{secrets.token_hex(2)}"
        # The WAL and shared-memory files belong to the corrupt file: next to a fresh one they
        # would be replayed into it.
        for suffix in ("", "-wal", "-shm"):
            if os.path.exists(self.path + suffix):
                os.rename(self.path + suffix, aside + suffix)
        return aside


def _alone(db: sqlite3.Connection, work: Work[T], at: Now) -> T:
    """`work` that only reads, outside a transaction: it waits for no writer."""
    return work(Tx(db, SQLITE, at))


def _missing(path: str) -> SpoolMissing:
    """What a person's tool says of a spool file that is not there."""
    where = os.path.abspath(path)
    if where == path:
        return SpoolMissing(f"there is no spool at {where}")
    # A relative RELAY_SPOOL_PATH names a file in the relay's working directory, which need not
    # be this command's.
    return SpoolMissing(
        f"there is no spool at {where} ({path} in {os.getcwd()}): run this in the relay's "
        "working directory, or set RELAY_SPOOL_PATH to the spool's full path"
    )


def _in_transaction(db: sqlite3.Connection, work: Work[T], at: Now) -> T:
    """`work` in one transaction that holds the write lock from its start."""
    db.execute("BEGIN IMMEDIATE")
    try:
        result = work(Tx(db, SQLITE, at))
        db.execute("COMMIT")
    except BaseException:
        if db.in_transaction:  # SQLite itself rolls back on some errors
            db.execute("ROLLBACK")
        raise
    return result


class _Locked(Exception):
    """Another connection holds the lock: try again, within the budget."""


# The spool holds alert texts, chat ids and what each button acts on: for the relay's user only.
PRIVATE_MODE = 0o600
# The files SQLite keeps beside the spool, which hold the same data; they take its mode.
COMPANION_SUFFIXES = ("-wal", "-shm")


def _create_private(path: str) -> None:
    """Create the spool file readable by its owner only, if it does not exist: SQLite would
    create it (and then its WAL and shared-memory files, which copy its mode) as the umask
    allows, usually readable by every user."""
    with contextlib.suppress(FileExistsError):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_MODE))


def readable_by_others(path: str) -> str | None:
    """A warning when the spool's files can be read or written by other users than their owner
    (made by an older relay, or by hand); None when they cannot, or do not exist."""
    loose = []
    for name in (path, *(path + suffix for suffix in COMPANION_SUFFIXES)):
        try:
            mode = os.stat(name).st_mode & 0o777
        except OSError:
            continue
        if mode & 0o077:
            loose.append((name, mode))
    if not loose:
        return None
    listed = ", ".join(f"{name} (mode {mode:04o})" for name, mode in loose)
    names = " ".join(name for name, _ in loose)
    return (
        f"the spool's files can be read by other users than the relay's: {listed}. They hold "
        f"alert texts, chat ids and what the buttons act on; run: chmod 600 {names}"
    )


@contextlib.contextmanager
def _file_lock(path: str) -> Iterator[None]:
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, PRIVATE_MODE)
        handle = os.fdopen(descriptor, "a")
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


def _uri_path(path: str) -> str:
    # '?' and '#' would end the path inside a URI; '%' would start an escape.
    return os.path.abspath(path).replace("%", "%25").replace("?", "%3f").replace("#", "%23")


def _is_busy(exc: BaseException) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)
    if isinstance(code, int):
        return code & 0xFF in _BUSY_CODES
    return isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc)


def _is_corruption(exc: sqlite3.Error) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)
    if isinstance(code, int) and code & 0xFF in _CORRUPTION_CODES:
        return True
    return "malformed" in str(exc) or "not a database" in str(exc)


def _describe(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        where = f" ({exc.filename})" if exc.filename else ""
        return f"{exc.strerror}{where}"
    return str(exc) or type(exc).__name__
