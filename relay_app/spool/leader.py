"""The fleet's leader's lease (delivery/leadership.py): one row, the one process of every relay
on the spool that runs the fleet's chores. Taken by whoever finds it free, renewed by its holder
every look, given back when it stops.

Unlike a lane's lease, which a live process on the same host keeps whatever the clock says (it
is finishing an attempt that must not be made twice), a leader keeps its lease only by renewing
it: a leader that stalls (a stopped process, a host that lost the database) loses it when it
lapses, and the chores go on elsewhere; each chore is its own unit of work in the spool, so one
that a late leader still runs is never done twice. A holder gone from this host (crashed,
killed) frees it at once. Times are the store's.

The offset of Telegram's updates (`getUpdates`), which the leader polls (telegram/poller.py), is
read and moved on only under the term's token, so a leader that stalled past its term, and
still handles what its last poll brought, moves nothing once another leads; the next leader
reads on from the first update the last did not confirm. It keeps a row of its own
(`updates_offset`): the lease's row is locked only by a take, never by a confirmation, so a
leader stopped mid-confirmation cannot hold up the next one's take.
"""

from __future__ import annotations

from dataclasses import dataclass

from .holders import Holder
from .store import Store, Tx


@dataclass(frozen=True)
class Term:
    """Who leads now, as the lease says; None fields when nobody does."""

    holder: str | None
    token: str | None
    until: float | None  # the caller's clock


class LeaderLease:
    def __init__(self, store: Store) -> None:
        self._store = store

    def take(
        self,
        me: Holder,
        token: str,
        *,
        hold_for: float,
        now: float,
        wait_until: float | None = None,
    ) -> bool:
        """Renew the lease if `token` holds it, or take it if it is free; whether `me` leads
        until `now + hold_for` (the store's clock) now. `wait_until` (monotonic) bounds the
        wait for another's lock on it. Raises SpoolError."""

        def take(tx: Tx) -> bool:
            row = tx.one("SELECT holder, token, until FROM leader WHERE id = 1 FOR UPDATE")
            if row is None:
                return False
            ours = row["token"] == token
            if not ours and not _free(row, tx.at.db, me):
                return False
            tx.execute(
                "UPDATE leader SET holder = ?, token = ?, until = ?,"
                " since = CASE WHEN token = ? THEN since ELSE ? END WHERE id = 1",
                (str(me), token, tx.at.db + hold_for, token, tx.at.db),
            )
            return True

        return bool(self._store.write(take, now=now, wait_until=wait_until))

    def release(self, token: str) -> None:
        """Give the lease back (the leader stops): another process takes it at its next look.
        Raises SpoolError."""
        self._store.write(
            lambda tx: tx.execute(
                "UPDATE leader SET holder = NULL, token = NULL, until = NULL WHERE token = ?",
                (token,),
            )
        )

    def offset(self, token: str) -> int | None:
        """The first of Telegram's updates not yet handled; None when `token`'s term is over
        (another process leads). Raises SpoolError."""

        def read(tx: Tx) -> int | None:
            row = tx.one(
                "SELECT next_update FROM updates_offset"
                " WHERE EXISTS (SELECT 1 FROM leader WHERE id = 1 AND token = ?)",
                (token,),
            )
            return None if row is None else int(row["next_update"])

        return self._store.read(read)

    def confirm(self, token: str, next_update: int) -> bool:
        """Every update before `next_update` is handled; whether `token`'s term still holds
        (when not, nothing moved). Raises SpoolError."""

        def confirm(tx: Tx) -> bool:
            row = tx.one(
                "UPDATE updates_offset SET next_update = CASE WHEN next_update > ?"
                " THEN next_update ELSE ? END"
                " WHERE EXISTS (SELECT 1 FROM leader WHERE id = 1 AND token = ?) RETURNING id",
                (next_update, next_update, token),
            )
            return row is not None

        return bool(self._store.write(confirm))

    def term(self, *, now: float) -> Term:
        """Who leads now (for `relay-app` and the tests). Raises SpoolError."""

        def read(tx: Tx) -> Term:
            row = tx.one("SELECT holder, token, until FROM leader WHERE id = 1")
            if row is None or row["token"] is None or row["until"] < tx.at.db:
                return Term(None, None, None)
            return Term(row["holder"], row["token"], tx.at.to_local(float(row["until"])))

        return self._store.read(read, now=now)


def _free(row: object, now: float, me: Holder) -> bool:
    """Whether the lease may be taken: nobody holds it, it lapsed, or its holder is gone from
    this host. A live holder elsewhere, or here, keeps it only until it lapses."""
    token, until = row["token"], row["until"]  # type: ignore[index]
    if token is None or until is None or until < now:
        return True
    holder = Holder.parse(row["holder"] or "")  # type: ignore[index]
    return holder is not None and holder.is_here(me) and holder.is_gone()
