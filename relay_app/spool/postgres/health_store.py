"""Telegram's health (health.py) kept in PostgreSQL, shared by every relay on the database, so
one of them at a time asks Telegram whether it is back. Stored on the database's clock, handed
to health.py on the caller's, so replicas whose clocks disagree agree on whose probe it is."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace

from ...health import TelegramHealth
from ..health_store import READ_BUDGET
from .database import Cursor, Now, PgDatabase


class PgHealthStore:
    def __init__(self, database: PgDatabase) -> None:
        self._database = database

    def read(self) -> TelegramHealth:
        return self._database.read(_read, wait_until=time.monotonic() + READ_BUDGET)

    def update(
        self, change: Callable[[TelegramHealth], TelegramHealth]
    ) -> tuple[TelegramHealth, TelegramHealth]:
        def update(cursor: Cursor, now: Now) -> tuple[TelegramHealth, TelegramHealth]:
            cursor.execute("SELECT 1 FROM telegram_health FOR UPDATE")
            before = _read(cursor, now)
            after = change(before)
            if after != before:
                stored = _on(after, now.to_db)
                cursor.execute(
                    "UPDATE telegram_health SET state = %s, next_probe_at = %s,"
                    " decided_at = %s, prober = %s, probe_until = %s",
                    (
                        stored.state,
                        stored.next_probe_at,
                        stored.decided_at,
                        stored.prober,
                        stored.probe_until,
                    ),
                )
            return before, after

        return self._database.write(update)


def _read(cursor: Cursor, now: Now) -> TelegramHealth:
    row = cursor.execute(
        "SELECT state, next_probe_at, decided_at, prober, probe_until FROM telegram_health"
    ).fetchone()
    if row is None:
        return TelegramHealth()
    stored = TelegramHealth(
        row["state"], row["next_probe_at"], row["decided_at"], row["prober"], row["probe_until"]
    )
    return _on(stored, now.to_local)


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
