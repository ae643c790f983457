"""The spool as the people who run the relay see it: `relay-app spool list|retry|purge`, and
the gauges `/metrics` reads at each scrape. Cheap at any backlog. Times are handed out on the
caller's clock."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from ..core.routing import Destination
from . import job_rows as rows
from .model import Job, State
from .store import Store, Tx

Clock = Callable[[], float]


@dataclass(frozen=True)
class Requeued:
    """What `requeue` found of an alert: its state before, and where it now goes."""

    state: State | None
    to: tuple[str, int | None] | None  # chat and topic, when it was requeued


def _readdress(
    tx: Tx, alert_id: int | None, to: Destination | None, default: Destination | None
) -> None:
    if to is not None:
        rows.readdress(tx, alert_id, to, defaults_only=False)
    elif default is not None:
        rows.readdress(tx, alert_id, default, defaults_only=True)


class Admin:
    def __init__(self, store: Store, *, clock: Clock = time.time) -> None:
        self._store = store
        self._clock = clock

    @property
    def path(self) -> str:
        """The spool's name for people: its file, or its database URL without the password."""
        return self._store.path

    def alerts(self, state: State) -> list[Job]:
        """The alerts in this state (the other jobs are the relay's own business: a card's edit,
        a reply), oldest first."""

        def read(tx: Tx) -> list[Job]:
            found = tx.all(
                "SELECT * FROM jobs WHERE state = ? AND kind = 'alert' ORDER BY id", (state,)
            )
            return [rows.job_from_row(row, tx.at, store=self.path) for row in found]

        return self._store.read(read, now=self._clock())

    def counts(self) -> dict[State, int]:
        # Prometheus asks every few seconds: the kept count, and the dead ones on an index.
        def count(tx: Tx) -> dict[State, int]:
            row = tx.one(
                "SELECT (SELECT alerts FROM pending_count) AS pending,"
                " (SELECT count(*) FROM jobs WHERE state = 'dead') AS dead"
            )
            return {"pending": int(row["pending"]), "dead": int(row["dead"])}

        return self._store.read(count)

    def oldest_pending(self) -> float | None:
        """When the oldest pending alert arrived, on the caller's clock; None when none is.
        Ids grow in order of arrival, so it is the first pending one on the index."""

        def oldest(tx: Tx) -> float | None:
            row = tx.one("SELECT received_at FROM jobs WHERE state = 'pending' ORDER BY id LIMIT 1")
            return tx.at.to_local(float(row["received_at"])) if row is not None else None

        return self._store.read(oldest, now=self._clock())

    def requeue(
        self,
        alert_ids: Iterable[int],
        *,
        to: Destination | None = None,
        default: Destination | None = None,
    ) -> dict[int, Requeued]:
        """Make dead alerts pending again with a fresh retry horizon: sent `to` a chat when
        given, else those addressed to the default chat to `default` (TELEGRAM_CHAT_ID as it is
        now). Returns each id's state before ('dead': requeued; 'pending': left alone; None: no
        such alert) and, when it was requeued, the chat it goes to."""

        def requeue_each(tx: Tx) -> dict[int, Requeued]:
            before: dict[int, Requeued] = {}
            for alert_id in alert_ids:
                row = tx.one(
                    "SELECT state FROM jobs WHERE id = ? AND kind = 'alert' FOR UPDATE",
                    (alert_id,),
                )
                state: State | None = row["state"] if row else None
                before[alert_id] = Requeued(state, None)
                if state == "dead":
                    _readdress(tx, alert_id, to, default)
                    rows.requeue(tx, alert_id)
                    where = tx.one("SELECT chat, thread FROM jobs WHERE id = ?", (alert_id,))
                    before[alert_id] = Requeued(state, (where["chat"], where["thread"]))
            return before

        return self._store.write(requeue_each, now=self._clock())

    def requeue_all_dead(
        self, *, to: Destination | None = None, default: Destination | None = None
    ) -> int:
        def requeue(tx: Tx) -> int:
            _readdress(tx, None, to, default)
            return rows.requeue(tx)

        return self._store.write(requeue, now=self._clock())

    def purge_dead(self, *, received_before: float) -> int:
        """Delete dead alerts received before the given Unix time; pending ones are never
        touched."""
        return int(
            self._store.write(
                lambda tx: (
                    tx.execute(
                        "DELETE FROM jobs WHERE state = 'dead' AND received_at < ?",
                        (tx.at.to_db(received_before),),
                    ).rowcount
                ),
                now=self._clock(),
            )
        )

    def close(self) -> None:
        self._store.close()
