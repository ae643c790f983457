"""WARNINGs that every process of the relay, and every relay on a shared database, gives once
per period between them (web/misses.py): each worker rate-limits its own, and this says whether
it is the one to speak. Times are the store's clock; one that stepped back counts as due."""

from __future__ import annotations

from ..core.clock import STEP_TOLERANCE
from ..core.errors import SpoolError
from .store import Store, Tx


class SpoolWarnings:
    def __init__(self, store: Store) -> None:
        self._store = store

    def due(self, key: str, every: float) -> bool:
        """Whether the warning `key` was last given `every` seconds ago or more (or never):
        then it is recorded as given now, and this caller gives it. Raises SpoolError."""

        def due(tx: Tx) -> bool:
            now = tx.at.db
            # Given "after now" by more than a step's tolerance: the clock stepped back since,
            # and the warning is due. Given a moment after now is no step: another process
            # gave it while this one waited for the lock, its time read before (clock.py).
            row = tx.one(
                "INSERT INTO warnings (key, warned_at) VALUES (?, ?) ON CONFLICT (key) DO UPDATE"
                " SET warned_at = excluded.warned_at"
                " WHERE warnings.warned_at <= ? OR warnings.warned_at > ? RETURNING key",
                (key, now, now - every, now + STEP_TOLERANCE),
            )
            return row is not None

        return self._store.write(due)

    def says(self, key: str, every: float) -> bool:
        """`due`, or True when the spool cannot answer: a warning said twice is better than
        one never said."""
        try:
            return self.due(key, every)
        except SpoolError:
            return True
