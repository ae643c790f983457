"""What the fleet's leader found of the relay's setup at its start-up check
(operating/setup_watch.py), kept in the spool so that every process's /readyz and gauges say
the same: whether Telegram could be reached (and why not), and what it refuses."""

from __future__ import annotations

import json
from dataclasses import dataclass

from .store import Store


@dataclass(frozen=True)
class Found:
    """`refused` None: Telegram has not answered yet; `unreached`: why it could not be reached,
    until it first answered."""

    refused: tuple[str, ...] | None = None
    unreached: str | None = None


NOTHING_YET = Found()


class SetupFound:
    def __init__(self, store: Store) -> None:
        self._store = store

    def read(self) -> Found:
        """Raises SpoolError."""
        row = self._store.read(lambda tx: tx.one("SELECT unreached, refused FROM setup"))
        if row is None:
            return NOTHING_YET
        refused = json.loads(row["refused"]) if row["refused"] is not None else None
        return Found(tuple(refused) if refused is not None else None, row["unreached"])

    def record(self, found: Found) -> None:
        """Keep what was found now. Raises SpoolError."""
        refused = json.dumps(list(found.refused)) if found.refused is not None else None
        self._store.write(
            lambda tx: tx.execute(
                "UPDATE setup SET unreached = ?, refused = ?, asked_at = ?",
                (found.unreached, refused, tx.at.db),
            )
        )
