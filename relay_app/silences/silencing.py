"""Silences in the relay (silences/store.py keeps them): holding back the alerts they match as
webhooks arrive, the mute and unmute buttons, ending those that ran out, and the one message
that says what a silence held when it ends (queued with the silence's end, as data: rendered in
the chat's language when it is sent, silences/summary.py). The cards a mute changes are
edited by jobs too (delivery/outbox.py).

Nothing here may cost an alert: a silence that cannot be read lets the alert go, and one that
ended meanwhile lets it go too. GlitchTip is never changed: a silence is this chat's quiet.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable

from ..cards.card import IssueButton, clock_time
from ..cards.sent import SentStore
from ..core.errors import SpoolError
from ..core.logs import event
from ..core.routing import Destination
from ..delivery.outbox import Outbox
from ..message.formatting import Message
from .marks import MUTED
from .matching import matches
from .store import MUTED_FROM_THE_CHAT, Ended, Held, Silence, SilenceStore

log = logging.getLogger(__name__)

Clock = Callable[[], float]
# An alert's message, made when it is needed.
Render = Callable[[], Message]
# An alert a silence held back from its place: counted (metrics, the place's summary).
Count = Callable[[Destination], None]

# How often a process looks for silences that ran out (the dispatcher's upkeep asks each second).
SWEEP_EVERY = 2.0
# Silences are kept this long after they end, for `relay-app silence list --all`.
KEPT_AFTER_END = 7 * 86400.0
# How long the mute button silences an issue in its chat.
MUTE_FOR = 3600.0


class Silencing:
    def __init__(
        self,
        store: SilenceStore,
        sent: SentStore,
        *,
        outbox: Outbox,
        held: Count = lambda destination: None,
        clock: Clock = time.time,
    ) -> None:
        self._store = store
        self._sent = sent
        self._outbox = outbox
        self._count_held = held
        self._clock = clock
        self._swept_at: float | None = None
        self._pruned_at: float | None = None

    def hold(self, message: Message | Render, destination: Destination) -> Silence | None:
        """The silence that holds this alert back from its chat, having kept and counted it;
        None when it goes (no silence matches, or they cannot be read). `message` may be how
        to render it: only when a silence of the chat holds now is it rendered (most webhooks
        meet none)."""
        try:
            active = self._store.active(destination.chat_key, now=self._clock())
            if not active:
                return None
            if not isinstance(message, Message):
                message = message()
            if message.heading is None or not message.lines:
                return None  # only issue alerts are ever held
            for silence in active:
                if not matches(silence.matchers, message):
                    continue
                held = Held(destination, self._clock(), message.lines)
                if self._store.hold(silence.id, held, now=self._clock()):
                    self._count_held(destination)
                    return silence
        except SpoolError as exc:
            # The spool's trouble is reported where the alert is written; here it only means
            # the alert goes, which loses nothing.
            log.debug("the silences could not be read, so this alert is not held: %s", exc)
        return None

    def mute(self, chat: str, button: IssueButton, *, by: str) -> Silence:
        """Mute the button's issue in its message's chat for an hour (a press): the issue's one
        silence there (presses at once make one), and every card of it in the chat edited to
        say so. Raises SpoolError."""
        muted = self._store.mute(chat, button.key, by=by, seconds=MUTE_FOR, now=self._clock())
        if muted is None:
            raise SpoolError(f"the button of {button.label} is no longer kept")
        silence = muted.silence
        log.info(
            "silence %d: %s muted in chat %s by %s until %s UTC%s",
            silence.id,
            button.label,
            chat,
            silence.created_by,
            clock_time(silence.ends_at),
            "" if muted.made else f" (pressed again by {by}: the silence it was under already)",
            extra=event(
                event="silence",
                silence=silence.id,
                issue=button.label,
                outcome="added" if muted.made else "kept",
            ),
        )
        self._show(chat, muted.messages)
        return silence

    def end(self, silence_id: int, *, by: str | None) -> Ended | None:
        """End a silence now (Unmute, `relay-app silence expire`) or because it ran out (`by`
        None): its summary queued, its buttons unmuted. None when it had ended already.
        Raises SpoolError."""
        ended = self._store.end(silence_id, by=by, now=self._clock())
        if ended is None:
            return None
        log.info(
            "silence %d ended (%s): it held %d alert(s)%s",
            silence_id,
            f"expired by {by}" if by else "ran out",
            ended.held,
            f"; their summary is alert #{ended.summary_alert}" if ended.summary_alert else "",
            extra=event(event="silence", silence=silence_id, outcome="ended", held=ended.held),
        )
        self._show_issue(ended.silence)
        return ended

    def unmute(self, chat: str, button: IssueButton, *, by: str) -> bool:
        """End what Mute made of the button's issue in the chat (Unmute): the silence the
        button is under, and any other Mute made of it there; and show their messages without
        them. Whether one still held (it may have run out, or been expired from the command
        line, since the button was shown). Raises SpoolError."""
        made = self._store.mutes_of(chat, button.issue_id, now=self._clock())
        shown = button.marked(MUTED)
        ended = False
        shown_ref = [shown.ref] if shown is not None and shown.ref is not None else []
        for silence_id in dict.fromkeys([*made, *shown_ref]):
            ended = self.end(silence_id, by=by) is not None or ended
        if not ended:  # the card showed a mute that had run out: shown as it stands
            self._show(chat, self._sent.messages_showing(chat, button.issue_id))
        return ended

    def sweep(self) -> None:
        """End the silences that ran out (the dispatcher's upkeep: every SWEEP_EVERY seconds),
        whichever process or relay comes first; and forget those long over."""
        now = time.monotonic()
        if self._swept_at is not None and now - self._swept_at < SWEEP_EVERY:
            return
        self._swept_at = now
        try:
            for silence_id in self._store.ended_by_now(now=self._clock()):
                self.end(silence_id, by=None)
            if self._pruned_at is None or now - self._pruned_at > 3600:
                self._pruned_at = now
                self._store.prune(before=self._clock() - KEPT_AFTER_END)
        except SpoolError as exc:
            log.debug("silences that ran out could not be ended now: %s", exc)

    def _show_issue(self, silence: Silence) -> None:
        """The cards of a silence's issue in its chat shown as they now stand: a mute's mark
        is gone from them. Raises SpoolError."""
        if silence.comment != MUTED_FROM_THE_CHAT or silence.matchers.issue is None:
            return
        self._show(silence.chat, self._sent.messages_showing(silence.chat, silence.matchers.issue))

    def _show(self, chat: str, message_ids: Iterable[int]) -> None:
        """Queue these cards' edits, to show their issue's mute as it stands. Raises
        SpoolError."""
        for message_id in message_ids:
            self._outbox.card(chat, message_id)
