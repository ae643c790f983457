"""Telegram's health (health.py) kept in the spool, so every process of the relay (and every
relay on a shared database) has one view of it, and one of them at a time asks Telegram whether
it is back. Stored on the store's clock, handed to health.py on the caller's, so replicas
whose clocks disagree agree on whose probe it is."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Literal

from .store import Store, Tx

# A webhook reads the state before it admits an alert: it must not wait long for it.
READ_BUDGET = 0.25

HealthState = Literal["up", "suspect", "down"]


@dataclass(frozen=True)
class TelegramHealth:
    """What every process sharing the spool knows of Telegram's health (health.py has the
    rules that change it)."""

    state: HealthState = "up"
    # When the next probe is due, and when that was decided (both wall clock; the second
    # guards against the clock stepping back: clock.py).
    next_probe_at: float = 0.0
    decided_at: float = 0.0
    # The process making the current probe, and until when it may ("" and 0: nobody).
    prober: str = ""
    probe_until: float = 0.0

    @property
    def sending(self) -> bool:
        """Whether alerts may be sent: not while a failure is unexplained."""
        return self.state == "up"


class SpoolHealthStore:
    def __init__(self, store: Store) -> None:
        self._store = store

    def read(self) -> TelegramHealth:
        return self._store.read(_read, wait_until=time.monotonic() + READ_BUDGET)

    def update(
        self, change: Callable[[TelegramHealth], TelegramHealth]
    ) -> tuple[TelegramHealth, TelegramHealth]:
        def update(tx: Tx) -> tuple[TelegramHealth, TelegramHealth]:
            tx.lock("SELECT 1 FROM telegram_health FOR UPDATE")
            before = _read(tx)
            after = change(before)
            if after != before:
                stored = _on(after, tx.at.to_db)
                tx.execute(
                    "UPDATE telegram_health SET state = ?, next_probe_at = ?, decided_at = ?,"
                    " prober = ?, probe_until = ?",
                    (
                        stored.state,
                        stored.next_probe_at,
                        stored.decided_at,
                        stored.prober,
                        stored.probe_until,
                    ),
                )
            return before, after

        return self._store.write(update)


def _read(tx: Tx) -> TelegramHealth:
    row = tx.one(
        "SELECT state, next_probe_at, decided_at, prober, probe_until FROM telegram_health"
    )
    if row is None:
        return TelegramHealth()
    stored = TelegramHealth(
        row["state"], row["next_probe_at"], row["decided_at"], row["prober"], row["probe_until"]
    )
    return _on(stored, tx.at.to_local)


def _on(health: TelegramHealth, clock: Callable[[float], float]) -> TelegramHealth:
    """The same health with its times moved to another clock (0 means none, on any clock)."""

    def moved(at: float) -> float:
        return clock(at) if at else 0.0

    return replace(
        health,
        next_probe_at=moved(health.next_probe_at),
        decided_at=moved(health.decided_at),
        probe_until=moved(health.probe_until),
    )
