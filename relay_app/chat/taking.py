"""On it, however it is said: a press on 👀 On it (presses.py), or a reply under the alert by
someone allowed to act (replies.py), unless its route says `reply_takes = false`. The issue is
the taker's on every message of the chat that shows it (cards/sent.py: `SentStore.take`), each
card is edited to say so, and each message's calls stop once every issue of it is someone's or
closed (oncall/steps.py)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from ..cards.card import IssueButton, SentMessage
from ..cards.sent import SentStore
from ..core.errors import SpoolError
from ..delivery.outbox import Outbox
from ..oncall.steps import Escalation

log = logging.getLogger(__name__)


class Taking:
    def __init__(
        self,
        store: SentStore,
        outbox: Outbox,
        escalation: Escalation | None = None,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._store = store
        self._outbox = outbox
        self._escalation = escalation
        self._clock = clock

    def take(self, message: SentMessage, button: IssueButton, by: str) -> list[int]:
        """Record that `by` has the button's issue: the messages of the chat that now show it
        (none when someone has it already, or it is closed). Raises SpoolError."""
        shown = self._store.take(button.key, by=by, at=self._clock())
        for message_id in shown:
            if self._escalation is not None:
                self._escalation.acted(message.chat, message_id)
            try:
                self._outbox.card(message.chat, message_id)
            except SpoolError as exc:
                log.warning(
                    "%s is on %s, but message %d in chat %s could not be updated: %s",
                    by,
                    button.label,
                    message_id,
                    message.chat,
                    exc,
                )
        return shown
