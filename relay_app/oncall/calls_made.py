"""The calls on call made, as it lends them (CALLS_MADE: cards/calls_made.py): each escalation
step fired and each taker called again, by the message it was made under. The weekly report
counts them; only on call's modules read its tables."""

from __future__ import annotations

from ..spool.store import Store, Tx


class CallsMadeStore:
    def __init__(self, store: Store) -> None:
        self._store = store

    def made_since(self, since: float, *, now: float) -> list[tuple[str, int]]:
        def read(tx: Tx) -> list[tuple[str, int]]:
            at = tx.at.to_db(since)
            # A step's due time and a recall's take are after its message was sent, so a
            # call of the period's messages is at or after the period's start.
            steps = tx.all(
                "SELECT chat, message_id FROM escalations WHERE state = 'fired' AND due_at >= ?",
                (at,),
            )
            recalled = tx.all(
                "SELECT chat, message_id FROM recalls WHERE round > 1 AND taken_at >= ?", (at,)
            )
            return [(str(row["chat"]), int(row["message_id"])) for row in (*steps, *recalled)]

        return self._store.read(read, now=now)
