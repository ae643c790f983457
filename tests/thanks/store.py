"""The `thanks` table: made where it is not yet, in the spool's types, by its first unit of work
in a process (a table added after the history's last step)."""

from __future__ import annotations

from relay_app.spool.dialects import types_of
from relay_app.spool.store import Store, Tx


class ThanksStore:
    def __init__(self, store: Store) -> None:
        self._store = store

    def thank(self, chat: str, message_id: int, by: int | None, *, now: float) -> int:
        """Keep one more thanks under the message: how many it has now."""

        def write(tx: Tx) -> int:
            types = types_of(tx)
            tx.execute(
                "CREATE TABLE IF NOT EXISTS thanks (chat TEXT NOT NULL,"
                f" message_id {types.big} NOT NULL, by_id {types.big}, at {types.time} NOT NULL)"
            )
            tx.execute(
                "INSERT INTO thanks (chat, message_id, by_id, at) VALUES (?, ?, ?, ?)",
                (chat, message_id, by, tx.at.db),
            )
            found = tx.one(
                "SELECT COUNT(*) AS n FROM thanks WHERE chat = ? AND message_id = ?",
                (chat, message_id),
            )
            return int(found["n"])

        return int(self._store.write(write, now=now))
