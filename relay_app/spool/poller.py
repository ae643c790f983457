"""Who reads Telegram's updates (TELEGRAM_UPDATES=poll): the fleet's leader
(delivery/leadership.py), under a lease of the poller's own in the spool that every process, and
every relay sharing a database, sees: a fence while one leader hands over to the next. Telegram
answers a second concurrent `getUpdates` with 409 Conflict, so two pollers would only cut each
other off. The lease also keeps the offset: whoever takes over reads on from the first update
the last poller did not confirm, and only the lease's holder moves it on.

The lease names its holder as the queue's leases do (holders.py): on the same host a holder that
no longer exists is replaced at once, and a live one keeps it whatever the wall clock says; a
holder on another host keeps it until its lease runs out. A new leader takes it whoever holds
it (`take(..., new_term=True)`): the last leader lost its term, and a poll of its that a stall
left in flight is cut short by Telegram, its offset fenced.
"""

from __future__ import annotations

from typing import Protocol

from .holders import Holder, lease_is_free
from .store import Store, Tx


class PollerLease(Protocol):
    def take(
        self, holder: Holder, *, now: float, hold_for: float, new_term: bool = False
    ) -> int | None:
        """Take or renew the right to poll, until `now + hold_for`: the offset to poll from,
        or None when another process polls. `new_term`: this process just came to lead the
        fleet, so whoever held it no longer does."""

    def confirm(self, holder: Holder, next_update: int) -> None:
        """Every update before `next_update` is handled (only while `holder` polls)."""

    def release(self, holder: Holder) -> None:
        """Stop polling now, so another process takes over at once."""


def lease_free(holder_text: str | None, until: float | None, *, now: float, me: Holder) -> bool:
    """Whether `me` may take the poller's lease: nobody's, its own, or a holder's that lapsed.
    (The holder's name is its token: a poller has no claim of its own to tell apart.)"""
    return lease_is_free(holder_text, holder_text, until, now=now, me=me, in_flight=())


class SpoolPollerLease:
    """The lease in the spool, under its row's lock, on the store's clock."""

    def __init__(self, store: Store) -> None:
        self._store = store

    def take(
        self, holder: Holder, *, now: float, hold_for: float, new_term: bool = False
    ) -> int | None:
        def take(tx: Tx) -> int | None:
            row = tx.one("SELECT holder, until, next_update FROM updates_poller FOR UPDATE")
            if row is None:
                return None
            if not new_term and not lease_free(
                row["holder"], row["until"], now=tx.at.db, me=holder
            ):
                return None
            tx.execute(
                "UPDATE updates_poller SET holder = ?, until = ?",
                (str(holder), tx.at.db + hold_for),
            )
            return int(row["next_update"])

        return self._store.write(take, now=now)

    def confirm(self, holder: Holder, next_update: int) -> None:
        self._store.write(
            lambda tx: tx.execute(
                "UPDATE updates_poller SET next_update = CASE WHEN next_update > ?"
                " THEN next_update ELSE ? END WHERE holder = ?",
                (next_update, next_update, str(holder)),
            )
        )

    def release(self, holder: Holder) -> None:
        self._store.write(
            lambda tx: tx.execute(
                "UPDATE updates_poller SET holder = NULL, until = NULL WHERE holder = ?",
                (str(holder),),
            )
        )
