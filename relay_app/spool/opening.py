"""The one place a spool is opened, from where the settings say it is, for the relay, the
`relay-app` tools and `check` alike: a `Spool` with the core's stores (the queue and what the
fleet shares), and the capabilities' own made on it by `Spool.of`, so nothing else reaches
through it to the store underneath."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from ..core.pacing import TELEGRAMS, Pace
from ..core.routing import Destination
from .admin import Admin
from .answers import Answers
from .arrivals import SpoolArrivals
from .database import MEMORY, Database
from .health_store import SpoolHealthStore
from .leader import LeaderLease
from .model import Home
from .moving import Mover
from .queue import Queue
from .store import Store
from .warnings import SpoolWarnings

# Per process, for alerts the spool cannot take: past it, one can wait nowhere.
MAX_MEMORY_ALERTS = 1000

T = TypeVar("T")


@dataclass(frozen=True)
class Spool:
    queue: Queue
    answers: Answers
    admin: Admin
    health: SpoolHealthStore
    warnings: SpoolWarnings
    leader: LeaderLease
    arrivals: SpoolArrivals
    _store: Store

    def of(self, kind: Callable[[Store], T]) -> T:
        """A capability's store on this spool (`spool.of(SilenceStore)`): its statements, run
        in the spool's units of work."""
        return kind(self._store)

    def problem(self) -> str | None:
        """Why the spool cannot be used now (GET /readyz), or None."""
        return self._store.problem()

    def count_lock_waits(self, observe: Callable[[float], None]) -> None:
        """Tell `observe` of every wait for another process's lock, in seconds."""
        self._store.on_lock_wait = observe

    def close(self) -> None:
        self._store.close()


def open_spool(
    *,
    path: str | None = None,
    url: str | None = None,
    for_service: bool = True,
    clock: Callable[[], float] = time.time,
) -> Spool | None:
    """The spool `open_store` opens, with its parts; None when there is none."""
    store = open_store(path=path, url=url, for_service=for_service)
    return on_store(store, clock=clock) if store is not None else None


def open_store(
    *,
    path: str | None = None,
    url: str | None = None,
    for_service: bool = True,
    default_destination: Destination | None = None,
) -> Store | None:
    """The spool's store in PostgreSQL (`url`, RELAY_SPOOL_URL) or in a file (`path`,
    RELAY_SPOOL_PATH); None when neither is set (RELAY_SPOOL_PATH=off). Nothing is read
    until first used: gunicorn forks after the app is made. `for_service=False` is a person's
    tool: it never creates, upgrades or repairs; `default_destination`: where a file's alerts
    from before destinations were kept go (TELEGRAM_CHAT_ID)."""
    if url is not None:
        # Here, not at the top: psycopg and what it imports cost every process a tenth of a
        # second at start, and a relay on a file has no use for them.
        from .postgres.database import PgDatabase

        return PgDatabase(url, for_service=for_service)
    if path is not None:
        return Database(path, for_service=for_service, default_destination=default_destination)
    return None


@dataclass(frozen=True)
class LocalSpool:
    """This host's own file (RELAY_LOCAL_SPOOL_PATH), beside the spool in PostgreSQL: where an
    alert waits, by the same rules, when the spool cannot take it in time; `mover` takes it
    into the spool when it answers again. The file is a spool like any other, its jobs
    named as this host's (`local-3@web-1`)."""

    spool: Spool
    mover: Mover


def open_local(
    path: str, spool: Spool, *, max_pending: int = 10000, pace: Pace = TELEGRAMS
) -> LocalSpool:
    from .postgres.database import PgDatabase  # a local file stands beside PostgreSQL only

    store = Database(path)
    if isinstance(spool._store, PgDatabase):
        spool._store.fallback = path
    local = on_store(store, max_pending=max_pending, pace=pace, home="local")
    return LocalSpool(local, Mover(store, spool._store))


def open_memory(*, max_alerts: int = MAX_MEMORY_ALERTS, pace: Pace = TELEGRAMS) -> Spool:
    """A private in-memory database, this process's: where alerts wait, by the same rules,
    when the spool cannot take them."""
    return on_store(Database(MEMORY), max_pending=max_alerts, pace=pace)


def on_store(
    store: Store,
    *,
    max_pending: int = 10000,
    clock: Callable[[], float] = time.time,
    pace: Pace = TELEGRAMS,
    home: Home | None = None,
) -> Spool:
    """A spool on a store already made (the tests make theirs with a skewed clock); `home`:
    what its queue is to the relay (Queue)."""
    queue = Queue(store, max_pending=max_pending, pace=pace, home=home)
    return Spool(
        queue=queue,
        answers=Answers(store, home=queue.home),
        admin=Admin(store, clock=clock),
        health=SpoolHealthStore(store),
        warnings=SpoolWarnings(store),
        leader=LeaderLease(store),
        arrivals=SpoolArrivals(store),
        _store=store,
    )
