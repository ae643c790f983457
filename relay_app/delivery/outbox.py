"""Every write to a chat but a webhook's alert (intake.py queues those), queued as a job in the
spool, so that each keeps the chat's pace, is retried, and is never dropped: a card's edit after
a press, a mute or a recovery; a reply under a person's message; a reaction on it. Each holds
what it is about, and is made text when it is sent (render.py).

Which calls stay direct, and why: answering a press (answerCallbackQuery) must happen within
seconds, before Telegram gives up on it, and writes nothing to the chat; reading updates
(getUpdates) and the questions that post nothing (getMe, getChat) write nothing either.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from ..core.routing import Destination, parse_chat_id
from ..spool.model import JobKind
from ..spool.queue import Queue
from ..words import Said

Clock = Callable[[], float]


class Outbox:
    def __init__(
        self, queue: Queue, *, wake: Callable[[], None] = lambda: None, clock: Clock = time.time
    ) -> None:
        """`wake`: tells this process's dispatcher there is work (a tool has none: the relay's
        dispatchers find it within a poll)."""
        self._queue = queue
        self._wake = wake
        self._clock = clock

    def card(self, chat: str, message_id: int) -> None:
        """Edit the card to show its record as it stands when the edit goes: edits asked for
        while one waits are that one. Raises SpoolError."""
        self._add("card", chat, None, message_id, {}, once=True)

    def reply(self, chat: str, thread: int | None, message_id: int, said: Said) -> None:
        """A short reply under a message of the chat. Raises SpoolError."""
        self._add("reply", chat, thread, message_id, {"say": said.as_json()})

    def react(
        self, chat: str, thread: int | None, message_id: int, emoji: str, *, instead: Said
    ) -> None:
        """A reaction on a message; `instead` is replied where the chat takes no reactions.
        Raises SpoolError."""
        about = {"emoji": emoji, "say": instead.as_json()}
        self._add("reaction", chat, thread, message_id, about)

    def link_card(
        self, chat: str, thread: int | None, message_id: int, about: Mapping[str, Any]
    ) -> None:
        """An issue's card in reply to the message that linked to it (acting/links.py): an
        alert's message and buttons, never coalesced with the chat's alerts (the message's own
        lane), paced with them. Raises SpoolError."""
        self._add("alert", chat, thread, message_id, {"link_card": dict(about)})

    def _add(
        self,
        kind: JobKind,
        chat: str,
        thread: int | None,
        message_id: int,
        about: Mapping[str, Any],
        *,
        once: bool = False,
    ) -> None:
        where = Destination(parse_chat_id(chat) or chat, thread)
        self._queue.add(
            kind,
            {**about, "message_id": message_id},
            where,
            lane=where.message_lane(message_id),
            now=self._clock(),
            once=once,
        )
        self._wake()
