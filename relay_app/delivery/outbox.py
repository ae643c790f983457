"""Every write to a chat but a webhook's alert (intake/queue.py queues those), queued as a job
in the spool, so that each keeps the chat's pace and is retried: a card's edit after a press, a
mute or a recovery; a reply under an alert the team is owed; and the answers to what people typed (a
reply under their message, a reaction on it, a link's card), which go after everything else
the chat is owed and of which at most so many wait for a chat (chat/answers.py). Each holds
what it is about, and is made text when it is sent (render.py).

Which calls stay direct, and why: answering a press (answerCallbackQuery) must happen within
seconds, before Telegram gives up on it, and writes nothing to the chat; reading updates
(getUpdates) and the questions that post nothing (getMe, getChat) write nothing either.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ..core.errors import SpoolError
from ..core.routing import Destination, parse_chat_id
from ..spool.answers import ANSWERS_WAITING, Answers
from ..spool.model import JobKind, NewJob, Precedence
from ..spool.queue import Queue
from ..spool.store import Tx
from ..words import Said

log = logging.getLogger(__name__)

Clock = Callable[[], float]


class Outbox:
    def __init__(
        self,
        queue: Queue,
        *,
        answers: Answers | None = None,
        wake: Callable[[], None] = lambda: None,
        clock: Clock = time.time,
    ) -> None:
        """`answers`: where answers to what people typed wait (a tool answers nobody);
        `wake`: tells this process's dispatcher there is work (a tool has none: the relay's
        dispatchers find it within a poll)."""
        self._queue = queue
        self.queue = queue
        self._answers = answers
        self._wake = wake
        self._clock = clock

    def card(self, chat: str, message_id: int) -> None:
        """Edit the card to show its record as it stands when the edit goes: edits asked for
        while one waits are that one. Raises SpoolError."""
        self._add("card", _where(chat, None), message_id, {}, Precedence.EDIT, once=True)

    def cards(self, chat: str, message_ids: Iterable[int], what: str) -> None:
        """Each of these cards of the chat edited in its turn, after `what` was done to their
        issue (an issue taken, or resolved on another card): one the spool cannot queue now is
        logged, and shows it at its next edit; the others are still edited."""
        for message_id in message_ids:
            try:
                self.card(chat, message_id)
            except SpoolError as exc:
                log.warning(
                    "%s, but message %d in chat %s could not be updated: %s",
                    what,
                    message_id,
                    chat,
                    exc,
                )

    def card_in(self, tx: Tx, chat: str, message_id: int) -> None:
        """`card`, in a unit of work of the queue's store under way (a delivery's); the
        dispatcher is told once it is done (`wake`)."""
        self._queue.add_in(tx, card_edit(chat, message_id), once=True)

    def wake(self) -> None:
        """Tell this process's dispatcher there is work (after `card_in`'s unit of work)."""
        self._wake()

    def call(self, chat: str, thread: int | None, message_id: int, said: Said) -> None:
        """A reply under an alert that the team is owed (a snoozed issue is back): it goes
        before edits and answers. Raises SpoolError."""
        about = {"say": said.as_json()}
        self._add("reply", _where(chat, thread), message_id, about, Precedence.CALL)

    def write(
        self,
        kind: str,
        chat: str,
        thread: int | None,
        message_id: int,
        about: Mapping[str, Any],
        precedence: Precedence = Precedence.CALL,
        *,
        lane: str | None = None,
        once: bool = False,
    ) -> None:
        """A capability's kind of write about a message of the chat (its Writer makes it when
        it goes): in the message's lane (or `lane`, a key of the chat's own: `chat_lane`),
        after the chat's alerts; `once`: one of its kind waiting in the lane is this one too.
        Raises SpoolError."""
        where = _where(chat, thread)
        self._add(kind, where, message_id, about, precedence, once=once, lane=lane)

    def answer(
        self, chat: str, thread: int | None, message_id: int, said: Said, *, most_waiting: int
    ) -> bool:
        """A short reply under someone's message (an answer to what they typed), unless
        `most_waiting` answers wait for the chat already; whether it was queued. Raises
        SpoolError."""
        about = {"say": said.as_json()}
        return self._answer("reply", _where(chat, thread), message_id, about, most_waiting)

    def react(
        self,
        chat: str,
        thread: int | None,
        message_id: int,
        emoji: str,
        *,
        instead: Said,
        most_waiting: int,
    ) -> bool:
        """A reaction on someone's message; `instead` is replied where the chat takes no
        reactions. As `answer`."""
        about = {"emoji": emoji, "say": instead.as_json()}
        return self._answer("reaction", _where(chat, thread), message_id, about, most_waiting)

    def answer_with(
        self,
        kind: str,
        chat: str,
        thread: int | None,
        message_id: int,
        about: Mapping[str, Any],
        *,
        most_waiting: int = ANSWERS_WAITING,
    ) -> bool:
        """A capability's kind of write in answer to what someone typed or pressed (a chart),
        under that message, after everything else the chat is owed, counted among the answers
        that wait for the chat (at most `most_waiting`). As `answer`."""
        return self._answer(kind, _where(chat, thread), message_id, about, most_waiting)

    def link_card(
        self,
        chat: str,
        thread: int | None,
        message_id: int,
        about: Mapping[str, Any],
        *,
        most_waiting: int,
        states: Mapping[str, str] | None = None,
    ) -> bool:
        """An issue's card in reply to the message that linked to it (chat/links.py): an
        alert's message and buttons, alone (never in a digest), in the message's own lane,
        paced with the chat's writes after all of them; `states`: its issues' states as their
        source said them, which its buttons follow (cards/outgoing.py). As `answer`."""
        card: dict[str, Any] = {"link_card": dict(about)}
        if states:
            card["states"] = dict(states)
        return self._answer("alert", _where(chat, thread), message_id, card, most_waiting)

    def _add(
        self,
        kind: JobKind | str,
        where: Destination,
        message_id: int,
        about: Mapping[str, Any],
        precedence: Precedence,
        *,
        once: bool = False,
        lane: str | None = None,
    ) -> None:
        self._queue.add(
            NewJob(
                kind,
                {**about, "message_id": message_id},
                where,
                precedence,
                lane=where.message_lane(message_id) if lane is None else lane,
            ),
            now=self._clock(),
            once=once,
        )
        self._wake()

    def _answer(
        self,
        kind: JobKind | str,
        where: Destination,
        message_id: int,
        about: Mapping[str, Any],
        most_waiting: int,
    ) -> bool:
        if self._answers is None:
            return False
        queued = self._answers.add(
            kind,
            {**about, "message_id": message_id},
            where,
            lane=where.message_lane(message_id),
            most_waiting=most_waiting,
            now=self._clock(),
        )
        if queued is not None:
            self._wake()
        return queued is not None


def card_edit(chat: str, message_id: int) -> NewJob:
    """A card's edit as a job: it shows the card's record as it stands when it goes."""
    where = _where(chat, None)
    return NewJob(
        "card",
        {"message_id": message_id},
        where,
        Precedence.EDIT,
        lane=where.message_lane(message_id),
    )


def chat_lane(chat: str, name: str) -> str:
    """A lane of the chat's own for a capability's writes (`name`: what they are about): they
    go in order, apart from its alerts but at its pace."""
    return f"{_where(chat, None).chat_key}/{name}"


def _where(chat: str, thread: int | None) -> Destination:
    return Destination(parse_chat_id(chat) or chat, thread)
