"""Snoozes (snoozes/snoozing.py) kept in the spool: an issue ignored in GlitchTip from a card,
until a time or until so many more events than it had then; open until the watcher finds its
condition met (`back`), or the issue no longer ignored (`cancelled`: reopened or resolved
meanwhile, in the chat or in GlitchTip), or a newer snooze of the issue replaces it. Each ends
once, whichever process of the fleet looks: the end is set only on a snooze still open."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from ..spool.store import Row, Store, Tx

Ended = Literal["back", "cancelled", "replaced"]


@dataclass(frozen=True)
class Snooze:
    issue_id: str
    org: str
    label: str
    until_at: float | None  # a time (the caller's clock), or
    events: int | None  # so many more events than `baseline`
    baseline: int | None  # the issue's events when it was snoozed (None: not known)
    by: str
    chat: str
    thread: int | None
    message_id: int
    snoozed_at: float = 0.0
    id: int = 0


class SnoozeStore:
    def __init__(self, store: Store) -> None:
        self._store = store

    def add(self, snooze: Snooze, *, now: float) -> None:
        """A new snooze of its issue: any still open for the issue is replaced by it."""

        def add(tx: Tx) -> None:
            _end(tx, "issue_id = ?", (snooze.issue_id,), "replaced")
            tx.execute(
                "INSERT INTO snoozes (issue_id, org, label, until_at, events, baseline, by_user,"
                " chat, thread, message_id, snoozed_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    snooze.issue_id,
                    snooze.org,
                    snooze.label,
                    tx.at.to_db(snooze.until_at) if snooze.until_at is not None else None,
                    snooze.events,
                    snooze.baseline,
                    snooze.by,
                    snooze.chat,
                    snooze.thread,
                    snooze.message_id,
                    tx.at.db,
                ),
            )

        self._store.write(add, now=now)

    def open(self, *, now: float) -> list[Snooze]:
        """Every snooze still open, oldest first."""

        def read(tx: Tx) -> list[Snooze]:
            rows = tx.all("SELECT * FROM snoozes WHERE ended_at IS NULL ORDER BY id")
            return [_snooze(tx, row) for row in rows]

        return self._store.read(read, now=now)

    def end(self, snooze_id: int, how: Ended, *, now: float) -> bool:
        """End the snooze `how`; False when it had ended already (another process did)."""
        return self._store.write(lambda tx: _end(tx, "id = ?", (snooze_id,), how) > 0, now=now)


def _end(tx: Tx, where: str, params: Sequence[object], how: Ended) -> int:
    return int(
        tx.execute(
            f"UPDATE snoozes SET ended_at = ?, ended = ? WHERE ended_at IS NULL AND {where}",  # noqa: S608 (a fixed condition)
            (tx.at.db, how, *params),
        ).rowcount
    )


def _snooze(tx: Tx, row: Row) -> Snooze:
    until = row["until_at"]
    thread, events, baseline = row["thread"], row["events"], row["baseline"]
    return Snooze(
        issue_id=str(row["issue_id"]),
        org=str(row["org"]),
        label=str(row["label"]),
        until_at=tx.at.to_local(float(str(until))) if until is not None else None,
        events=int(str(events)) if events is not None else None,
        baseline=int(str(baseline)) if baseline is not None else None,
        by=str(row["by_user"]),
        chat=str(row["chat"]),
        thread=int(str(thread)) if thread is not None else None,
        message_id=int(str(row["message_id"])),
        snoozed_at=tx.at.to_local(float(str(row["snoozed_at"]))),
        id=int(str(row["id"])),
    )
