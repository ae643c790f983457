"""The spool in PostgreSQL: the connection pool, the schema, every unit of work, the database's
clock, and the one place psycopg's errors become the spool errors.

Several relays (and each one's gunicorn workers) share the database. Each process has its own
pool, made lazily (gunicorn forks after import) and again in a forked child. A unit of work is
one transaction, bounded by the caller's budget (a webhook's is well inside GlitchTip's 10 s)
through `statement_timeout` and `lock_timeout`: a busy database is not a broken one. And
`idle_in_transaction_session_timeout`: a relay that stalls inside a unit of work (a stopped
process, a host cut off) has its session ended by the server past that budget and a short
grace (when this process's own watchdog gives up on it too), so the rows it locked (a lane, a
chat's turn, the leader's lease) are free again for the others. A database
that cannot be reached is: the caller falls back to memory, and the next unit of work tries the
database again, so the relay returns to it without a restart.

Times are the database's (`clock_timestamp()`), so replicas whose clocks disagree still agree
on leases, turns and due times. Each unit of work reads the database's time once and hands the
work a `Now` (store.py) that converts between it and the caller's clock.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar
from urllib.parse import urlsplit

import psycopg
from psycopg import errors as pg_errors
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool, PoolTimeout

from ...core.errors import SpoolBusy, SpoolError, SpoolMissing, SpoolOutdated
from ...core.http_deadline import Deadline
from ...core.logs import redacted_url, register_secret
from ...core.process import PerProcess
from ..current import fresh_postgres
from ..history import POSTGRES, SCHEMA_VERSION, statements_after
from ..store import POSTGRESQL, Now, Tx, Work
from .coming_back import ComingBack
from .listener import CHANNEL, Listener

log = logging.getLogger("relay_app.spool")

T = TypeVar("T")
Cursor = psycopg.Cursor[dict[str, Any]]

# As the SQLite spool: how long a unit of work may wait unless its caller says.
LOCK_WAIT = 5.0
# Connections per process: a transaction holds one for milliseconds, never during a Telegram
# request, so a few serve 32 request threads; three replicas of two workers stay well inside
# PostgreSQL's default 100 connections.
POOL_SIZE = 8
CONNECT_TIMEOUT = 2
# How long a unit of work's first statement may wait for the database's answer: it is a few
# milliseconds' work, so no answer means a database that went away.
FIRST_ANSWER = 1.0
# Past a unit of work's budget, how long PostgreSQL's own statement_timeout has to end it
# before the socket is shut down under it.
SERVER_TIMEOUT_GRACE = 0.5
# How long a unit of work waits for one of the pool's connections before asking whether the
# database can be reached at all: a webhook must learn it cannot with time left to attempt
# its alert, so it is tried at once and kept in memory.
CONNECTION_WAIT = 1.0
# After the database could not be reached, units of work fail at once for this long, rather
# than each waiting to learn it again; then the next one tries it again.
UNREACHABLE_FOR = 1.0
# Any fixed number: every relay takes this advisory lock to create or upgrade the schema, so
# three replicas starting at once on an empty database do it one after another.
SCHEMA_LOCK = 0x72656C6179  # "relay"


class PgDatabase(PerProcess):
    durable = True

    def __init__(
        self,
        url: str,
        *,
        for_service: bool = True,
        caller_skew: float | None = None,
    ) -> None:
        """`for_service=False` is a person's tool (relay-app): it never creates or upgrades the
        schema. With `caller_skew` the store's clock is the caller's, that many seconds ahead,
        instead of the database's (the contract tests, which move a fake clock; every relay
        uses the database's)."""
        self.url = url
        self.path = redacted_url(url)  # the name logs and tools show
        password = urlsplit(url).password
        if password:
            register_secret(password)
        self._for_service = for_service
        self._caller_skew = caller_skew
        self._pool: ConnectionPool[psycopg.Connection[dict[str, Any]]] | None = None
        self._listener: Listener | None = None
        # A pool inherited through fork is the parent's: never used or closed here, and kept
        # referenced, so that the garbage collector does not end the parent's sessions.
        self._inherited: list[object] = []
        self._start_in_this_process()
        self._unreachable_until = 0.0
        self._problem: str | None = None
        # This host's own file, where alerts wait while the database cannot take them
        # (RELAY_LOCAL_SPOOL_PATH); None: memory.
        self.fallback: str | None = None
        self.on_lock_wait: Callable[[float], None] = lambda seconds: None

    @property
    def opened(self) -> bool:
        return self._pool is not None and self._pid == os.getpid()

    # --- units of work -----------------------------------------------------------------------

    def write(
        self,
        work: Work[T],
        *,
        now: float | None = None,
        wait_until: float | None = None,
    ) -> T:
        """Run `work` in one transaction, within `wait_until` (monotonic). `now` is the caller's
        clock, for `Now`; unset, time.time()."""
        started = time.monotonic()
        deadline = started + LOCK_WAIT if wait_until is None else wait_until
        remaining = deadline - started
        if remaining <= 0:
            raise SpoolBusy(f"no time was left to reach the spool {self.path}")
        pool = self._ready_pool()
        if time.monotonic() < self._unreachable_until:
            raise SpoolError(f"the database {self.path} cannot be reached")
        try:
            result = self._tried(
                lambda: self._transaction(pool, work, now, deadline, started), deadline, started
            )
        except SpoolBusy:
            raise
        except SpoolError as exc:
            self._became_unusable(str(exc))
            raise
        self._usable_again()
        return result

    def _tried(self, transaction: Callable[[], T], deadline: float, started: float) -> T:
        """`transaction` tried again while its pooled connection turns out broken, or every
        connection is busy and time is left."""
        stale_left = POOL_SIZE
        while True:
            try:
                return transaction()
            except _Stale:
                # A pooled connection a restart or failover broke, found at the unit's first
                # statement, before any of its work: the pool drops it, and the work runs on
                # another. (Checking each one as it leaves the pool would cost a round trip on
                # every unit of work.)
                if stale_left == 0:
                    raise SpoolError(f"the database {self.path} cannot be reached") from None
                stale_left -= 1
            except PoolTimeout:
                if not self._reachable():
                    self._found_unreachable()
                    raise SpoolError(f"the database {self.path} cannot be reached") from None
                if time.monotonic() >= deadline:
                    self.on_lock_wait(time.monotonic() - started)
                    raise SpoolBusy(
                        f"every connection to the spool {self.path} stayed busy"
                    ) from None

    def _transaction(
        self,
        pool: ConnectionPool[psycopg.Connection[dict[str, Any]]],
        work: Work[T],
        now: float | None,
        deadline: float,
        started: float,
    ) -> T:
        """One try at `work` in a transaction on a pooled connection; the database's errors
        said as the spool's. _Stale and PoolTimeout are left to `_tried`, which tries again."""
        remaining = deadline - time.monotonic()
        watchdog: Deadline | None = None
        try:
            with pool.connection(timeout=min(remaining, CONNECTION_WAIT)) as connection:
                # PostgreSQL's statement_timeout ends a slow statement cleanly; a server that
                # vanished (a partition, a dead host) cannot, so the watchdog shuts the socket
                # down a little later and the blocked read fails at once.
                budget = max(0.001, deadline - time.monotonic())
                with (
                    Deadline(budget + SERVER_TIMEOUT_GRACE) as watchdog,
                    _watched(connection, watchdog) as sock,
                ):
                    self._ensure_schema(connection, sock)
                    with connection.cursor() as cursor:
                        # The first statement opens the transaction (psycopg's implicit
                        # BEGIN), so a broken connection shows before any work is done.
                        moment = self._begin(
                            connection, cursor, sock, deadline, time.time() if now is None else now
                        )
                        return _committed(connection, cursor, moment, work)
        except PoolTimeout:
            raise  # a psycopg.Error too, but `_tried`'s to judge
        except _Silent:
            self._found_unreachable()
            raise SpoolError(
                f"the database {self.path} did not answer within {FIRST_ANSWER:g} s"
            ) from None
        except (pg_errors.LockNotAvailable, pg_errors.QueryCanceled, pg_errors.DeadlockDetected):
            self.on_lock_wait(time.monotonic() - started)
            raise SpoolBusy(
                f"the spool {self.path} stayed locked for {time.monotonic() - started:.1f} s"
            ) from None
        except psycopg.Error as exc:
            if watchdog is None or not watchdog.expired:
                raise SpoolError(f"the spool {self.path} failed: {_said(exc)}") from None
            self._found_unreachable()
            raise SpoolError(
                f"the database {self.path} did not answer within {time.monotonic() - started:.1f} s"
            ) from None

    read = write

    def _begin(
        self,
        connection: psycopg.Connection[dict[str, Any]],
        cursor: Cursor,
        sock: socket.socket,
        deadline: float,
        local: float,
    ) -> Now:
        """Bound the transaction by the caller's budget, and read the database's clock: one
        round trip, on every unit of work's path. _Stale when the connection turns out broken."""
        seconds = max(0.001, deadline - time.monotonic())
        with _first_answer(connection, sock, seconds):
            row = cursor.execute(
                "SELECT set_config('statement_timeout', %(budget)s, true),"
                " set_config('lock_timeout', %(budget)s, true),"
                " set_config('idle_in_transaction_session_timeout', %(idle)s, true),"
                " extract(epoch FROM clock_timestamp())::float8 AS now",
                # A unit begun with its budget nearly spent (the schema made first, a loaded
                # host) may pause between statements longer than what is left: ending the
                # session then would drop a healthy connection and report the spool lost. A
                # stalled one is ended when this process's own watchdog would give up on it.
                {
                    "budget": _milliseconds(seconds),
                    "idle": _milliseconds(seconds + SERVER_TIMEOUT_GRACE),
                },
            ).fetchone()
        assert row is not None
        if self._caller_skew is not None:
            return Now(local + self._caller_skew, local)
        return Now(float(row["now"]), local)

    def problem(self) -> str | None:
        """Why the spool cannot be used now, or None: a quick question to the database."""
        try:
            self.write(lambda tx: None, wait_until=time.monotonic() + 2.0)
        except SpoolBusy:
            return None  # it answers; it is busy
        except (SpoolError, SpoolOutdated) as exc:
            return str(exc)
        return None

    def tidy(self) -> None:
        """Nothing to do: PostgreSQL keeps its own log, and vacuums on its own."""

    def listen(self, on_news: Callable[[], None]) -> None:
        """Call `on_news` (from a thread of its own) whenever any relay queues work."""
        self._here()
        with self._lock:
            if self._listener is None or not self._listener.alive:
                self._listener = Listener(self.url, on_news, connect_timeout=CONNECT_TIMEOUT)

    def hears(self) -> bool:
        with self._lock:
            listener = self._listener
        return listener is not None and listener.listening

    def stop_listening(self) -> None:
        self._here()
        with self._lock:
            listener, self._listener = self._listener, None
        if listener is not None:
            listener.stop()

    def close(self) -> None:
        self.stop_listening()
        self._coming_back.stop()
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.close(timeout=2)

    # --- the pool and the schema -------------------------------------------------------------

    def _start_over(self) -> None:
        """This process's own lock, pool and listener (core/process.py)."""
        self._lock = threading.Lock()
        self._inherited += [each for each in (self._pool, self._listener) if each is not None]
        self._pool = None
        self._listener = None
        self._schema_ready = False
        self._coming_back = ComingBack(self._reachable, self._answers_again, UNREACHABLE_FOR)
        self._unreachable_until = 0.0  # a parent's verdict is the parent's

    def _ready_pool(self) -> ConnectionPool[psycopg.Connection[dict[str, Any]]]:
        self._here()
        with self._lock:
            if self._pool is None:
                self._pool = ConnectionPool(
                    self.url,
                    min_size=1,
                    max_size=POOL_SIZE,
                    kwargs={"row_factory": dict_row, "connect_timeout": CONNECT_TIMEOUT},
                    open=False,
                    name="relay-spool",
                )
                self._pool.open(wait=False)
                self._schema_ready = False
            return self._pool

    def _became_unusable(self, reason: str) -> None:
        if self._problem is None and self._for_service and self.fallback is not None:
            log.error(
                "SPOOL UNREACHABLE: the spool %s cannot be used: %s. Alerts are still delivered; "
                "one it cannot take waits in this host's file %s (lost only with this host's "
                "disk), and moves into the spool when it answers again.",
                self.path,
                reason,
                self.fallback,
            )
        elif self._problem is None and self._for_service:
            log.error(
                "DURABILITY LOST: the spool %s cannot be used: %s. Alerts are still delivered, "
                "but a failed one is retried from memory only and is lost if this process "
                "stops. GET /readyz answers 503 until the database works again.",
                self.path,
                reason,
            )
        self._problem = reason

    def _found_unreachable(self) -> None:
        if self.fallback is None:
            # The next unit of work after a short while tries it again: its alert would
            # otherwise wait in memory.
            self._unreachable_until = time.monotonic() + UNREACHABLE_FOR
            return
        # Alerts wait in this host's file meanwhile: units of work fail at once, and a thread
        # of this process asks the database until it answers (coming_back.py).
        self._unreachable_until = float("inf")
        self._coming_back.watch()

    def _answers_again(self) -> None:
        log.info("the spool %s takes connections again: units of work try it", self.path)
        self._unreachable_until = 0.0

    def _usable_again(self) -> None:
        # A unit of work just had the database's answers: whatever found none meanwhile, the
        # next ones try it rather than fail at once (and send their alerts to memory).
        self._unreachable_until = 0.0
        if self._problem is not None and self._for_service:
            log.warning("the spool %s works again: new alerts are kept in it", self.path)
        self._problem = None

    def _reachable(self) -> bool:
        """Whether the database takes a connection now: tells a pool that is busy from one
        that cannot connect."""
        try:
            with psycopg.connect(self.url, connect_timeout=CONNECT_TIMEOUT):
                return True
        except psycopg.Error:
            return False

    def _upgrade(self, cursor: Cursor, version: int) -> None:
        if not self._for_service:
            raise SpoolOutdated(
                f"the spool {self.path} is from an older relay: start the relay once to upgrade it"
            )
        if version == 0:  # a fresh spool: the current schema whole
            cursor.execute(fresh_postgres())
        for statement in statements_after(version, POSTGRES) if version else ():
            cursor.execute(statement)
        cursor.execute("DELETE FROM relay_schema")
        cursor.execute("INSERT INTO relay_schema VALUES (%s)", (SCHEMA_VERSION,))
        log.info("the spool %s is at schema %d", self.path, SCHEMA_VERSION)

    def _ensure_schema(
        self, connection: psycopg.Connection[dict[str, Any]], sock: socket.socket
    ) -> None:
        if self._schema_ready:
            return
        # The schema's work may wait long for another relay's upgrade; a server that does not
        # answer at all is told apart first, as by every unit's first statement.
        with _first_answer(connection, sock, FIRST_ANSWER):
            connection.execute("SELECT 1")
        connection.rollback()
        with connection.transaction(), connection.cursor() as cursor:
            if self._for_service:
                cursor.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK,))
                cursor.execute("CREATE TABLE IF NOT EXISTS relay_schema (version INTEGER NOT NULL)")
            row = cursor.execute("SELECT to_regclass('relay_schema') AS found").fetchone()
            if row is None or row["found"] is None:
                raise SpoolMissing(f"there is no relay spool in the database {self.path}")
            found = cursor.execute("SELECT version FROM relay_schema").fetchone()
            version = int(found["version"]) if found is not None else 0
            if version > SCHEMA_VERSION:
                raise SpoolError(
                    f"the spool {self.path} is from a newer relay (schema {version}); "
                    "upgrade this relay"
                )
            if version < SCHEMA_VERSION:
                self._upgrade(cursor, version)
        self._schema_ready = True


def _milliseconds(seconds: float) -> str:
    """A duration as PostgreSQL's settings take it: whole milliseconds, at least one (0 would
    mean no limit at all)."""
    return f"{max(1, int(seconds * 1000))}ms"


# What a pooled connection says first after the server behind it restarted or failed over.
_SERVER_WENT_AWAY = (
    pg_errors.AdminShutdown,
    pg_errors.CrashShutdown,
    pg_errors.CannotConnectNow,
)


def _committed(
    connection: psycopg.Connection[dict[str, Any]], cursor: Cursor, moment: Now, work: Work[T]
) -> T:
    """`work`'s result once its transaction is committed; rolled back when it raises."""
    try:
        tx = Tx(cursor, POSTGRESQL, moment)
        result = work(tx)
        if tx.news:
            # Delivered to every listener when (and only if) this commits.
            cursor.execute(f"NOTIFY {CHANNEL}")
        connection.commit()
    except BaseException:
        with contextlib.suppress(psycopg.Error):
            connection.rollback()
        raise
    return result


class _Stale(Exception):
    """A pooled connection was found broken before any work was done on it."""


class _Silent(Exception):
    """The database did not answer a unit of work's first statement in time."""


@contextmanager
def _watched(connection: psycopg.Connection[Any], deadline: Deadline) -> Iterator[socket.socket]:
    """Let `deadline` shut the connection's socket down; through a duplicate of its descriptor,
    closed afterwards, so nothing ever closes the connection's own under psycopg. Yields the
    duplicate, for a shorter deadline within."""
    sock = socket.socket(fileno=os.dup(connection.fileno()))
    try:
        deadline.watch(sock)
        yield sock
    finally:
        sock.close()


@contextmanager
def _first_answer(
    connection: psycopg.Connection[Any], sock: socket.socket, seconds: float
) -> Iterator[None]:
    """A statement that is a few milliseconds' work, answered quickly or not at all: _Silent
    past FIRST_ANSWER (an idle connection must not hold a webhook for its whole budget when the
    database went away meanwhile), _Stale when the connection turns out broken."""
    with Deadline(min(seconds, FIRST_ANSWER)) as first:
        first.watch(sock)
        try:
            yield
        except psycopg.OperationalError as exc:
            if first.expired:
                raise _Silent() from None
            if connection.broken or connection.closed or isinstance(exc, _SERVER_WENT_AWAY):
                raise _Stale() from None
            raise


def _said(exc: psycopg.Error) -> str:
    """What PostgreSQL (or the connection) said, in one line."""
    text = " ".join(str(exc).split())
    return text[:300] or type(exc).__name__
