"""Telegram's health (health.py) kept in the spool, so every process of the relay shares one
view of it and one of them at a time asks Telegram whether it is back."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable

from ..health import TelegramHealth
from .database import Database

# A webhook reads the state before it admits an alert: it must not wait long for it.
READ_BUDGET = 0.25


class SqliteHealthStore:
    def __init__(self, database: Database) -> None:
        self._database = database

    def read(self) -> TelegramHealth:
        return self._database.read(_read, wait_until=time.monotonic() + READ_BUDGET)

    def update(
        self, change: Callable[[TelegramHealth], TelegramHealth]
    ) -> tuple[TelegramHealth, TelegramHealth]:
        def update(db: sqlite3.Connection) -> tuple[TelegramHealth, TelegramHealth]:
            before = _read(db)
            after = change(before)
            if after != before:
                db.execute(
                    "UPDATE telegram_health SET state = ?, next_probe_at = ?, decided_at = ?,"
                    " prober = ?, probe_until = ?",
                    (
                        after.state,
                        after.next_probe_at,
                        after.decided_at,
                        after.prober,
                        after.probe_until,
                    ),
                )
            return before, after

        return self._database.write(update)


def _read(db: sqlite3.Connection) -> TelegramHealth:
    row = db.execute(
        "SELECT state, next_probe_at, decided_at, prober, probe_until FROM telegram_health"
    ).fetchone()
    return TelegramHealth(*row) if row is not None else TelegramHealth()
