"""The issues the relay alerted on, as the watcher of GlitchTip reads them (acting/watcher.py):
kept for WATCHED_FOR after their last alert, the newest MOST_WATCHED of them asked about; each
one's escalating post at most once in ONCE_IN, whichever relay posts it; and the fleet's rounds
of questions, each taken by one process."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .store import Store, Tx

WATCHED_FOR = 7 * 86400.0
# Bounds a round: at most 5 questions about states and 5 about counts per organisation.
MOST_WATCHED = 1000
ONCE_IN = 86400.0


@dataclass(frozen=True)
class Watched:
    issue_id: str
    org: str
    alert: dict[str, Any]  # the issue alone, as GlitchTip's webhook had it
    chat: str
    thread: int | None


class WatchStore:
    def __init__(self, store: Store) -> None:
        self._store = store

    def watch(self, issues: Sequence[Watched], *, now: float) -> None:
        """These issues were alerted on now: watched for WATCHED_FOR from now."""

        def watch(tx: Tx) -> None:
            tx.executemany(
                "INSERT INTO watched (issue_id, org, alert, chat, thread, alerted_at)"
                " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (issue_id) DO UPDATE SET org ="
                " excluded.org, alert = excluded.alert, chat = excluded.chat, thread ="
                " excluded.thread, alerted_at = excluded.alerted_at",
                [
                    (i.issue_id, i.org, json.dumps(i.alert), i.chat, i.thread, tx.at.db)
                    for i in issues
                ],
            )

        self._store.write(watch, now=now)

    def take_round(self, *, now: float, every: float) -> bool:
        """Whether this process asks GlitchTip this round: one process per `every`, across
        every relay on the spool. A read first: each process looks every second, and a
        round is due once a minute."""
        due = self._store.read(
            lambda tx: tx.one("SELECT id FROM watch_round WHERE next_at <= ?", (tx.at.db,)),
            now=now,
        )
        if due is None:
            return False

        def take(tx: Tx) -> bool:
            taken = tx.one(
                "UPDATE watch_round SET next_at = ? WHERE id = 1 AND next_at <= ? RETURNING id",
                (tx.at.db + every, tx.at.db),
            )
            return taken is not None

        return self._store.write(take, now=now)

    def watched(self, *, now: float) -> list[Watched]:
        """The issues alerted on within WATCHED_FOR, newest first, MOST_WATCHED at most; the
        older ones are forgotten."""

        def read(tx: Tx) -> list[Watched]:
            since = tx.at.db - WATCHED_FOR
            tx.execute("DELETE FROM watched WHERE alerted_at < ?", (since,))
            rows = tx.all(
                "SELECT issue_id, org, alert, chat, thread FROM watched"
                " ORDER BY alerted_at DESC LIMIT ?",
                (MOST_WATCHED,),
            )
            return [
                Watched(
                    str(row["issue_id"]),
                    str(row["org"]),
                    json.loads(str(row["alert"])),
                    str(row["chat"]),
                    int(row["thread"]) if row["thread"] is not None else None,
                )
                for row in rows
            ]

        return self._store.write(read, now=now)

    def place_of(self, issue_id: str) -> tuple[str, int | None] | None:
        """A watched issue's organisation (its alert's link said) and the forum topic its alert
        went to; None when it is not watched."""
        row = self._store.read(
            lambda tx: tx.one("SELECT org, thread FROM watched WHERE issue_id = ?", (issue_id,))
        )
        if row is None:
            return None
        return str(row["org"]), int(row["thread"]) if row["thread"] is not None else None

    def escalated(self, issue_id: str, *, now: float) -> bool:
        """Record the issue's escalating post, unless one was made within ONCE_IN: whether
        this one is to be made."""

        def mark(tx: Tx) -> bool:
            marked = tx.one(
                "UPDATE watched SET escalated_at = ? WHERE issue_id = ? AND (escalated_at IS"
                " NULL OR escalated_at <= ?) RETURNING issue_id",
                (tx.at.db, issue_id, tx.at.db - ONCE_IN),
            )
            return marked is not None

        return self._store.write(mark, now=now)
