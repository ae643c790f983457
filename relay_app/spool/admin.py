"""The spool as the people who run the relay see it: `relay-app spool list|retry|purge`, and
the gauges `/metrics` reads at each scrape. Cheap at any backlog."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterable
from typing import Protocol

from .database import Database
from .model import SpooledAlert, State
from .queue import alert_from_row, destination_of
from .sqlite_queue import requeue

Clock = Callable[[], float]


class Admin(Protocol):
    """What `relay-app spool` and the metrics use, of either spool (this file's `SpoolAdmin`,
    or `postgres.PgSpoolAdmin`)."""

    @property
    def path(self) -> str:
        """The spool's name for people: its file, or its database URL without the password."""

    def alerts(self, state: State) -> list[SpooledAlert]: ...

    def counts(self) -> dict[State, int]: ...

    def oldest_pending(self) -> float | None: ...

    def requeue(self, alert_ids: Iterable[int]) -> dict[int, State | None]: ...

    def requeue_all_dead(self) -> int: ...

    def purge_dead(self, *, received_before: float) -> int: ...

    def close(self) -> None: ...


class SpoolAdmin:
    def __init__(self, database: Database, *, clock: Clock = time.time) -> None:
        self.database = database
        self._clock = clock

    @property
    def path(self) -> str:
        return self.database.path

    def alerts(self, state: State) -> list[SpooledAlert]:
        rows = self.database.read(
            lambda db: db.execute(
                "SELECT * FROM alerts WHERE state = ? ORDER BY id", (state,)
            ).fetchall()
        )
        return [
            alert_from_row(row, destination_of(self.path, row["chat"], row["thread"]))
            for row in rows
        ]

    def counts(self) -> dict[State, int]:
        # Prometheus asks every few seconds: the kept count, and the dead ones on an index.
        def count(db: sqlite3.Connection) -> dict[State, int]:
            pending, dead = db.execute(
                "SELECT (SELECT alerts FROM pending_count),"
                " (SELECT count(*) FROM alerts WHERE state = 'dead')"
            ).fetchone()
            return {"pending": pending, "dead": dead}

        return self.database.read(count)

    def oldest_pending(self) -> float | None:
        """When the oldest pending alert arrived (Unix time), or None when none is pending.
        Ids grow in order of arrival, so it is the first pending one on the index."""
        row = self.database.read(
            lambda db: db.execute(
                "SELECT received_at FROM alerts WHERE state = 'pending' ORDER BY id LIMIT 1"
            ).fetchone()
        )
        return float(row[0]) if row is not None else None

    def requeue(self, alert_ids: Iterable[int]) -> dict[int, State | None]:
        """Make dead alerts pending again with a fresh retry horizon. Returns each id's state
        before: 'dead' (requeued), 'pending' (left alone) or None (no such alert)."""
        now = self._clock()

        def requeue_each(db: sqlite3.Connection) -> dict[int, State | None]:
            before: dict[int, State | None] = {}
            for alert_id in alert_ids:
                row = db.execute("SELECT state FROM alerts WHERE id = ?", (alert_id,)).fetchone()
                before[alert_id] = row[0] if row else None
                if before[alert_id] == "dead":
                    requeue(db, now, alert_id)
            return before

        return self.database.write(requeue_each)

    def requeue_all_dead(self) -> int:
        now = self._clock()
        return self.database.write(lambda db: requeue(db, now))

    def purge_dead(self, *, received_before: float) -> int:
        """Delete dead alerts received before the given Unix time; pending ones are never
        touched."""
        return int(
            self.database.write(
                lambda db: (
                    db.execute(
                        "DELETE FROM alerts WHERE state = 'dead' AND received_at < ?",
                        (received_before,),
                    ).rowcount
                )
            )
        )

    def close(self) -> None:
        self.database.close()
