"""The PostgreSQL spool as the people who run the relay see it: `relay-app spool
list|retry|purge`, and the gauges `/metrics` reads at each scrape (spool/admin.py's, for the
database). Times are handed out on the caller's clock."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable

from ..model import SpooledAlert, State
from ..queue import alert_from_row, destination_of
from .database import Cursor, Now, PgDatabase
from .queue import on_caller_clock, requeue

Clock = Callable[[], float]


class PgSpoolAdmin:
    def __init__(self, database: PgDatabase, *, clock: Clock = time.time) -> None:
        self.database = database
        self._clock = clock

    @property
    def path(self) -> str:
        return self.database.path

    def alerts(self, state: State) -> list[SpooledAlert]:
        def read(cursor: Cursor, at: Now) -> list[SpooledAlert]:
            rows = cursor.execute(
                "SELECT * FROM alerts WHERE state = %s ORDER BY id", (state,)
            ).fetchall()
            return [
                on_caller_clock(
                    alert_from_row(row, destination_of(self.path, row["chat"], row["thread"])), at
                )
                for row in rows
            ]

        return self.database.read(read, now=self._clock())

    def counts(self) -> dict[State, int]:
        def count(cursor: Cursor, at: Now) -> dict[State, int]:
            rows = cursor.execute(
                "SELECT state, count(*) AS n FROM alerts GROUP BY state"
            ).fetchall()
            found = {row["state"]: int(row["n"]) for row in rows}
            return {"pending": found.get("pending", 0), "dead": found.get("dead", 0)}

        return self.database.read(count)

    def oldest_pending(self) -> float | None:
        """When the oldest pending alert arrived, on the caller's clock; None when none is."""

        def oldest(cursor: Cursor, at: Now) -> float | None:
            row = cursor.execute(
                "SELECT received_at FROM alerts WHERE state = 'pending' ORDER BY id LIMIT 1"
            ).fetchone()
            return at.to_local(float(row["received_at"])) if row is not None else None

        return self.database.read(oldest, now=self._clock())

    def requeue(self, alert_ids: Iterable[int]) -> dict[int, State | None]:
        def requeue_each(cursor: Cursor, at: Now) -> dict[int, State | None]:
            before: dict[int, State | None] = {}
            for alert_id in alert_ids:
                row = cursor.execute(
                    "SELECT state FROM alerts WHERE id = %s FOR UPDATE", (alert_id,)
                ).fetchone()
                before[alert_id] = row["state"] if row else None
                if before[alert_id] == "dead":
                    requeue(cursor, at.db, alert_id)
            if "dead" in before.values():
                self.database.notify(cursor)
            return before

        return self.database.write(requeue_each, now=self._clock())

    def requeue_all_dead(self) -> int:
        def requeue_all(cursor: Cursor, at: Now) -> int:
            count = requeue(cursor, at.db)
            if count:
                self.database.notify(cursor)
            return count

        return self.database.write(requeue_all, now=self._clock())

    def purge_dead(self, *, received_before: float) -> int:
        return int(
            self.database.write(
                lambda cursor, at: (
                    cursor.execute(
                        "DELETE FROM alerts WHERE state = 'dead' AND received_at < %s",
                        (at.to_db(received_before),),
                    ).rowcount
                ),
                now=self._clock(),
            )
        )

    def close(self) -> None:
        self.database.close()
