"""Who reads Telegram's updates (spool/poller.py), in PostgreSQL: one process of the whole
fleet, under the lease's row lock, its lease on the database's clock."""

from __future__ import annotations

from ..holders import Holder
from ..poller import lease_free
from .database import Cursor, Now, PgDatabase


class PgPollerLease:
    def __init__(self, database: PgDatabase) -> None:
        self._database = database

    def take(self, holder: Holder, *, now: float, hold_for: float) -> int | None:
        def take(cursor: Cursor, at: Now) -> int | None:
            row = cursor.execute(
                "SELECT holder, until, next_update FROM updates_poller FOR UPDATE"
            ).fetchone()
            if row is None or not lease_free(row["holder"], row["until"], now=at.db, me=holder):
                return None
            cursor.execute(
                "UPDATE updates_poller SET holder = %s, until = %s",
                (str(holder), at.db + hold_for),
            )
            return int(row["next_update"])

        return self._database.write(take, now=now)

    def confirm(self, holder: Holder, next_update: int) -> None:
        self._database.write(
            lambda cursor, at: cursor.execute(
                "UPDATE updates_poller SET next_update = greatest(next_update, %s)"
                " WHERE holder = %s",
                (next_update, str(holder)),
            )
        )

    def release(self, holder: Holder) -> None:
        self._database.write(
            lambda cursor, at: cursor.execute(
                "UPDATE updates_poller SET holder = NULL, until = NULL WHERE holder = %s",
                (str(holder),),
            )
        )
