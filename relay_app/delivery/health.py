"""Is Telegram answering? The relay's one view of it, and how it finds out that Telegram is back.

A wait after a failure is only a guess about Telegram's health. So after a send fails in a way
that says Telegram may be down (network trouble, a timeout, a 5xx), the relay stops sending
and asks with one cheap request that can never post anything (`getMe`): a second after the
failure, then every second while that fails too and writes wait (so their recovery comes
within about a second of Telegram's), every two seconds when none does; each counted from when
the last was asked, so one that hung past that is followed at once (a Telegram let go after a
hang is seen within a round trip). One relay asks once,
whatever the number of its processes: the state lives in the spool they share. When Telegram
answers again after having failed to, every alert waiting because of a failure is due at once,
so the backlog goes out together, oldest first, instead of each on its own backoff.

The transitions are pure functions of `TelegramHealth`; `Health` keeps the state in a store
and tells the queues when Telegram is back.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Protocol

from ..core.clock import guarded
from ..core.errors import SpoolError
from ..core.timing import PRODUCTION
from ..spool.health_store import TelegramHealth

log = logging.getLogger(__name__)

# The first question half an interval after a failure (a second, by default: core/timing.py);
# then one every interval (two seconds) while Telegram fails.
PROBE_INTERVAL = PRODUCTION.probe_interval
FIRST_PROBE_AFTER = PROBE_INTERVAL / 2


def after_send_failed(
    health: TelegramHealth, now: float, *, interval: float = PROBE_INTERVAL
) -> TelegramHealth:
    if health.state != "up":
        return health
    return TelegramHealth("suspect", now + interval / 2, now)


def after_answer(health: TelegramHealth) -> TelegramHealth:
    """Telegram answered (a send or a probe): up again."""
    return TelegramHealth()


def after_probe_failed(
    health: TelegramHealth,
    now: float,
    *,
    interval: float = PROBE_INTERVAL,
    asked_at: float | None = None,
) -> TelegramHealth:
    """The next question `interval` after this one was asked (`asked_at`; when it is not
    known, after it failed): one that hung past the interval is followed at once, so a
    Telegram let go after a hang is seen back within a round trip, not an interval later."""
    if health.sending:
        return health  # a send came through meanwhile: that answer stands
    start = now if asked_at is None else min(asked_at, now)
    return TelegramHealth("down", max(start + interval, now), now)


def probe_due(health: TelegramHealth, now: float, *, prober_gone: bool) -> bool:
    """Whether a probe should start now: Telegram is not known to be up, the time has come
    (or the clock stepped back past when it was set), and nobody else is probing."""
    if health.sending:
        return False
    if health.prober and health.probe_until >= now and not prober_gone:
        return False
    return guarded(health.next_probe_at, health.decided_at, now) <= now


def probing(health: TelegramHealth, prober: str, until: float) -> TelegramHealth:
    return replace(health, prober=prober, probe_until=until)


class HealthStore(Protocol):
    def update(
        self, change: Callable[[TelegramHealth], TelegramHealth]
    ) -> tuple[TelegramHealth, TelegramHealth]:
        """Apply `change` atomically for every process sharing the store; (before, after)."""

    def read(self) -> TelegramHealth: ...


class MemoryHealthStore:
    """The state for one process: without a spool, or while the spool is unusable."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._health = TelegramHealth()

    def update(
        self, change: Callable[[TelegramHealth], TelegramHealth]
    ) -> tuple[TelegramHealth, TelegramHealth]:
        with self._lock:
            before = self._health
            self._health = change(before)
            return before, self._health

    def read(self) -> TelegramHealth:
        with self._lock:
            return self._health


class Recovers(Protocol):
    def after_recovery(self, now: float) -> int:
        """Make every alert waiting because of a failure due `now`; returns how many."""

    def pending(self) -> int:
        """How many jobs wait."""


class Health:
    """Telegram's health as this relay sees it, kept in `store` (the spool's when there is
    one, so every process shares it); `local` takes over while that store cannot be used."""

    def __init__(
        self,
        store: HealthStore,
        *,
        queues: Sequence[Recovers] = (),
        probe_interval: float = PROBE_INTERVAL,
    ) -> None:
        self._probe_interval = probe_interval
        self._store = store
        self._local = MemoryHealthStore()
        self._queues = list(queues)
        self._last = TelegramHealth()  # the state last read or written, whichever store

    def current(self) -> TelegramHealth:
        """The state every process shares; the last one known when the store cannot be read
        at once (a busy spool must not make a failing Telegram look up, nor keep a webhook)."""
        with contextlib.suppress(SpoolError):
            self._last = self._store.read()
        return self._last

    def send_failed(self, now: float) -> None:
        interval = self._probe_interval
        before, after = self._update(
            lambda health: after_send_failed(health, now, interval=interval)
        )
        if before.state == "up" and after.state == "suspect":
            log.warning(
                "a send to Telegram failed: holding every alert until Telegram answers a "
                "question that posts nothing (getMe)"
            )

    def answered(self, now: float) -> None:
        """Telegram answered a request: if it had been failing, it is back."""
        if self.current().sending:
            return  # the common case costs one read, no write
        before, _ = self._update(after_answer)
        self._back(before, now)

    def take_probe(self, now: float, prober: str, until: float, *, prober_gone: bool) -> bool:
        """Whether this process makes the next probe now (and so nobody else does)."""
        taken = False

        def take(health: TelegramHealth) -> TelegramHealth:
            nonlocal taken
            taken = probe_due(health, now, prober_gone=prober_gone)
            return probing(health, prober, until) if taken else health

        self._update(take)
        return taken

    def probed(self, answered: bool, now: float, *, asked_at: float | None = None) -> None:
        """What the question asked at `asked_at` got, `now`."""
        if answered:
            before, _ = self._update(after_answer)
            self._back(before, now)
        else:
            # While writes wait, twice as often: Telegram's return is then seen within about
            # half the interval (a second by default), not a whole one.
            interval = self._probe_interval / (2 if self._writes_wait() else 1)
            before, _ = self._update(
                lambda health: after_probe_failed(health, now, interval=interval, asked_at=asked_at)
            )
            if before.state == "suspect":
                log.error(
                    "Telegram is not answering (getMe failed too): alerts wait in the queue, "
                    "and the relay asks again every %g s while they do, every %g s otherwise",
                    self._probe_interval / 2,
                    self._probe_interval,
                )

    def _writes_wait(self) -> bool:
        with contextlib.suppress(SpoolError):
            return any(queue.pending() for queue in self._queues)
        return True  # the spool cannot say: as if they did

    def _back(self, before: TelegramHealth, now: float) -> None:
        if before.state != "down":
            return  # a lone failure (a lost reply, say): each alert keeps its own schedule
        due = 0
        for queue in self._queues:
            # A spool error is logged by the spool; those alerts keep their own due times.
            with contextlib.suppress(SpoolError):
                due += queue.after_recovery(now)
        log.warning("Telegram answers again: the %d alert(s) waiting go now, oldest first", due)

    def _update(
        self, change: Callable[[TelegramHealth], TelegramHealth]
    ) -> tuple[TelegramHealth, TelegramHealth]:
        try:
            before, after = self._store.update(change)
        except SpoolError:
            before, after = self._local.update(change)
        self._last = after
        return before, after
