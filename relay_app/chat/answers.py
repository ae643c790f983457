"""What people type is bounded (docs/actions.md): every answer the relay writes to what someone
typed in a chat (a command's answer, a link's card or the word that it gets none, a reply's
confirmation) comes out of a small budget, the whole fleet's, kept in the spool:

- per person and chat, a short burst: BURST answers in a row, each of them free again
  BURST_WINDOW seconds after it was given (one every 5 s on average); someone who asks past
  it is told once in that time to ask again, and not answered until a turn is free;
- per chat, at most WAITING_PER_CHAT answers waiting to go out (they go after every alert, call
  and edit the chat is owed: spool/model.Precedence); past it, nothing more is answered there
  until one has gone, and nobody is told.

Answers never count against RELAY_SPOOL_MAX_PENDING, and a refusal never raises: it is counted
(relay_answers_refused_total) and said at most once a minute per chat, with how many
(core/tally.py), never once for each.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..core.routing import Destination, parse_chat_id
from ..core.tally import Tally
from ..delivery.outbox import Outbox
from ..spool.answers import ANSWERS_WAITING, Answers
from ..words import Said
from .counters import AnswerRefusal

log = logging.getLogger(__name__)

# Answers a person may have in a row in a chat, each turn free again this many seconds after
# it was taken: a person's `/issues` then `/oncall` is answered, a flood is not.
BURST = 3
BURST_WINDOW = 15.0
# Answers waiting to go out to one chat, at most (the spool's count, for every kind).
WAITING_PER_CHAT = ANSWERS_WAITING

Clock = Callable[[], float]


@dataclass(frozen=True)
class Asker:
    """Whom an answer is for: someone's message in a chat."""

    chat: str
    thread: int | None  # the forum topic it was written in
    message_id: int
    person: str  # who wrote it, as Telegram numbers them

    @property
    def destination(self) -> Destination:
        return Destination(parse_chat_id(self.chat) or self.chat, self.thread)


_BECAUSE: dict[AnswerRefusal, str] = {
    "person": (f"each asked past {BURST} answers in {BURST_WINDOW:.0f} s (told once to wait)"),
    "chat": f"{WAITING_PER_CHAT} answers already waited to go out there",
    "lookups": "as many links already waited for GlitchTip in this process",
}


@dataclass(frozen=True)
class Served:
    """The chats the relay posts to (their keys), the only ones where what people type is
    answered (the answers name issues and people), and the bot's own username, asked when a
    command names a bot."""

    chats: frozenset[str]
    bot_username: Callable[[], str | None] = lambda: None


class Answering:
    def __init__(
        self,
        outbox: Outbox,
        answers: Answers,
        *,
        first_in: Callable[[str, float], bool],
        refused: Callable[[AnswerRefusal], None] = lambda reason: None,
        shared: Callable[[str, float], bool] | None = None,
        clock: Clock = time.time,
    ) -> None:
        """`first_in(key, window)`: whether a key is the first in that window, the fleet's
        (cards/sent.py); `refused`: counts a refusal; `shared`: whether this process is the one
        of the relay's to say so now (spool/warnings.py)."""
        self._outbox = outbox
        self._answers = answers
        self.first_in = first_in
        self._count = refused
        self._tally = Tally(shared=shared)
        self._clock = clock

    def may_answer(self, asker: Asker) -> bool:
        """Whether the message may be answered now; then it has taken its person's turn.
        Otherwise the refusal is counted, and a person who asked too soon is told once to ask
        again. Raises SpoolError."""
        if self._answers.waiting(asker.destination, now=self._clock()) >= WAITING_PER_CHAT:
            self.refused("chat", asker)
            return False
        if any(
            self.first_in(f"asked:{asker.chat}:{asker.person}:{turn}", BURST_WINDOW)
            for turn in range(BURST)  # the first free turn is taken, and no other
        ):
            return True
        if self.first_in(f"told to wait:{asker.chat}:{asker.person}", BURST_WINDOW):
            said = Said("answer_busy", {"count": str(BURST), "seconds": f"{BURST_WINDOW:.0f}"})
            self.answer(asker, said)
        self.refused("person", asker)
        return False

    def answer(self, asker: Asker, said: Said) -> bool:
        """A short reply under the message; whether it was queued (not when the chat has as
        many answers waiting as it may). Raises SpoolError."""
        return self._queued(
            asker,
            self._outbox.answer(
                asker.chat, asker.thread, asker.message_id, said, most_waiting=WAITING_PER_CHAT
            ),
        )

    def react(self, asker: Asker, emoji: str, *, instead: Said) -> bool:
        """A reaction on the message (`instead` replied where the chat takes none); as
        `answer`."""
        return self._queued(
            asker,
            self._outbox.react(
                asker.chat,
                asker.thread,
                asker.message_id,
                emoji,
                instead=instead,
                most_waiting=WAITING_PER_CHAT,
            ),
        )

    def link_card(
        self, asker: Asker, about: Mapping[str, Any], *, states: Mapping[str, str]
    ) -> bool:
        """An issue's card in reply to the message, its buttons as `states` say the issues
        are (by the relay's id); as `answer`."""
        return self._queued(
            asker,
            self._outbox.link_card(
                asker.chat,
                asker.thread,
                asker.message_id,
                about,
                most_waiting=WAITING_PER_CHAT,
                states=states,
            ),
        )

    def refused(self, reason: AnswerRefusal, asker: Asker) -> None:
        """A message not answered, its budget spent: counted, and said once a minute."""
        self._count(reason)
        count = self._tally.note(f"answers refused:{reason}:{asker.chat}")
        if count is not None:
            log.warning(
                "chat %s: %d message(s) not answered since this process last said so, their "
                "budget spent: %s (at most one such line a minute; "
                "relay_answers_refused_total{reason=%r} counts them)",
                asker.chat,
                count,
                _BECAUSE[reason],
                reason,
            )

    def _queued(self, asker: Asker, queued: bool) -> bool:
        if not queued:
            self.refused("chat", asker)
        return queued
