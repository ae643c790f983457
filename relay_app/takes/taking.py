"""On it, however it is said: a press on 👀 On it (buttons.py), or a reply under the alert by
someone allowed to act (the chat's replies ask `ON_IT`), unless its route says
`reply_takes = false`. The issue is the taker's on every message of the chat that shows it
(store.py), each card is edited to say so, and each message's calls stop once every issue of it
is someone's or closed (on call's, asked through the core's `Calls`)."""

from __future__ import annotations

import time
from collections.abc import Callable

from ..cards.card import IssueButton, SentMessage
from ..cards.verbs import Calls
from ..delivery.outbox import Outbox
from ..spool.store import Store
from . import store as takes


class Taking:
    def __init__(
        self,
        store: Store,
        outbox: Outbox,
        calls: Callable[[], Calls | None] = lambda: None,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        """`calls`: what calls people about an alert (on call's), asked at each take."""
        self._store = store
        self._outbox = outbox
        self._calls = calls
        self._clock = clock

    def take(
        self, message: SentMessage, button: IssueButton, by: str, by_id: int | None
    ) -> list[int]:
        """Record that the person `by_id` (shown as `by`) has the button's issue: the messages
        of the chat that now show it (none when someone has it already, or it is closed).
        Raises SpoolError."""
        shown = self._store.write(
            lambda tx: takes.take(tx, button.key, by=by, by_id=by_id), now=self._clock()
        )
        calls = self._calls()
        if calls is not None:
            for message_id in shown:
                calls.acted(message.chat, message_id)
        self._outbox.cards(message.chat, shown, f"{by} (user id {by_id}) is on {button.label}")
        if shown and calls is not None:
            calls.taken(button.key)
        return shown

    def let_go(
        self, message: SentMessage, button: IssueButton, by: str, by_id: int | None
    ) -> list[int] | None:
        """The person `by_id` (shown as `by`) lets the button's issue go: nobody has it on any
        message of the chat (each card edited, On it offered again), and their calls go on
        where they stopped. The messages changed; None when it is not theirs (by Telegram's id:
        a name proves nothing). Raises SpoolError."""
        shown = self._store.write(
            lambda tx: takes.let_go(tx, button.key, by_id=by_id), now=self._clock()
        )
        if not shown:
            return shown
        self._outbox.cards(message.chat, shown, f"{by} (user id {by_id}) let {button.label} go")
        calls = self._calls()
        if calls is not None:
            calls.let_go(message.chat, shown)
        return shown
