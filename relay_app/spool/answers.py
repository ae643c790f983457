"""Answers to what people typed in a chat (a command, a link, a reply), queued as jobs of the
lowest precedence (model.Precedence.ANSWER): every alert, call and edit of the chat goes before
them, they never count against RELAY_SPOOL_MAX_PENDING, and at most so many wait for one chat
(ANSWERS_WAITING), counted under the chat's row lock so that relays answering at once keep to
it between them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..core.routing import Destination
from . import job_rows as rows
from .model import Home, Job, JobKind, NewJob, Precedence
from .store import Store, Tx

# Answers waiting to go out to one chat, at most: past it, nothing more is answered there until
# one has gone (chat/answers.py). A person's burst of three, and the word to wait, fit in it.
ANSWERS_WAITING = 5


class Answers:
    def __init__(self, store: Store, *, home: Home) -> None:
        self._store = store
        self._home = home

    def add(
        self,
        kind: JobKind | str,
        data: Mapping[str, Any],
        destination: Destination,
        *,
        lane: str,
        most_waiting: int,
        now: float,
    ) -> Job | None:
        """Queue an answer, unless `most_waiting` answers wait for the chat already: None
        then. Raises SpoolError."""
        chat = destination.chat_key

        def add(tx: Tx) -> Job | None:
            tx.lock("INSERT INTO chats (chat) VALUES (?) ON CONFLICT DO NOTHING", (chat,))
            tx.lock("SELECT 1 FROM chats WHERE chat = ? FOR UPDATE", (chat,))
            if _waiting(tx, chat) >= most_waiting:
                return None
            job = rows.insert(
                tx, NewJob(kind, data, destination, Precedence.ANSWER, lane=lane), home=self._home
            )
            tx.notify()
            return job

        return self._store.write(add, now=now)

    def waiting(self, destination: Destination, *, now: float) -> int:
        """How many answers wait for the destination's chat. Raises SpoolError."""
        return self._store.read(lambda tx: _waiting(tx, destination.chat_key), now=now)


def _waiting(tx: Tx, chat: str) -> int:
    row = tx.one(
        "SELECT count(*) AS waiting FROM jobs WHERE chat = ? AND state = 'pending'"
        " AND precedence = ?",
        (chat, int(Precedence.ANSWER)),
    )
    return int(row["waiting"])
