"""On it, however it is said: a press on 👀 On it (presses.py), or a reply under the alert by
someone allowed to act (replies.py), unless its route says `reply_takes = false`. The issue is
the taker's on every message of the chat that shows it (cards/sent.py: `SentStore.take`), each
card is edited to say so, and each message's calls stop once every issue of it is someone's or
closed (oncall/steps.py). A press's Resolve, Ignore or Reopen is shown on the issue's other
messages the same way (`spread`)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence

from ..core.errors import SpoolError
from ..delivery.outbox import Outbox
from .card import IssueButton, SentMessage
from .sent import SentStore
from .team import Person
from .verbs import Calls

log = logging.getLogger(__name__)


class Taking:
    def __init__(
        self,
        store: SentStore,
        outbox: Outbox,
        escalation: Calls | None = None,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._store = store
        self._outbox = outbox
        self._escalation = escalation
        self._clock = clock

    def take(self, message: SentMessage, button: IssueButton, by: Person) -> list[int]:
        """Record that `by` has the button's issue: the messages of the chat that now show it
        (none when someone has it already, or it is closed). Raises SpoolError."""
        shown = self._store.take(button.key, by=by.handle, by_id=by.id, at=self._clock())
        self.spread(message.chat, shown, f"{by.handle} (user id {by.id}) is on {button.label}")
        if shown and self._escalation is not None:
            self._escalation.taken(button.key)
        return shown

    def let_go(self, message: SentMessage, button: IssueButton, by: Person) -> list[int] | None:
        """`by` lets the button's issue go: nobody has it on any message of the chat (each card
        edited, On it offered again), and their calls go on where they stopped. The messages
        changed; None when it is not theirs (by Telegram's id: a name proves nothing). Raises
        SpoolError."""
        shown = self._store.let_go(button.key, by_id=by.id, at=self._clock())
        if not shown:
            return shown
        for message_id in shown:
            self._edit(
                message.chat, message_id, f"{by.handle} (user id {by.id}) let {button.label} go"
            )
        if self._escalation is not None:
            self._escalation.let_go(message.chat, shown)
        return shown

    def spread(self, chat: str, message_ids: Sequence[int], what: str) -> None:
        """What was done to an issue (`what`, for the log) shown on these messages of the chat
        that show it, each card edited in its turn, and counted for each one's calls."""
        for message_id in message_ids:
            if self._escalation is not None:
                self._escalation.acted(chat, message_id)
            self._edit(chat, message_id, what)

    def _edit(self, chat: str, message_id: int, what: str) -> None:
        try:
            self._outbox.card(chat, message_id)
        except SpoolError as exc:
            log.warning(
                "%s, but message %d in chat %s could not be updated: %s",
                what,
                message_id,
                chat,
                exc,
            )
