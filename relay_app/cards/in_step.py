"""Cards in step with their source (docs/actions.md): GlitchTip sends no webhook when someone
resolves, ignores or reopens an issue in its UI, so the watcher (watch/watcher.py) reads the states
of the issues the relay alerted on each round, and every card whose buttons show another status
is made to show GlitchTip's: the status line says it was changed in GlitchTip, and the buttons
that fit follow (Reopen after resolve or ignore; Resolve and Ignore when it is open again). The
edit is a job like every write to a chat (delivery/outbox.py): paced, coalesced, retried.

GlitchTip's answer says nothing of who changed an issue, so neither does the card. An issue
closed in GlitchTip stops its alert's escalation, as a Resolve pressed in the chat does. Sentry's
issue webhooks bring its cards in step the same way (sentry/webhook.py): a card's, the core's.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping

from ..core.errors import SpoolError
from ..core.metrics import CounterSpec, Metrics
from ..core.services import Key
from ..core.trackers import ISSUE_STATUSES, IssueStatus
from ..delivery.outbox import Outbox
from .sent import SentStore, Synced
from .verbs import Calls

log = logging.getLogger(__name__)

# The core's own counter of it (the wiring registers it with the capabilities').
CARDS_IN_STEP = CounterSpec(
    "relay_cards_in_step",
    (
        "Issue buttons on cards made to show the status its tracker (GlitchTip, Sentry) has "
        "for the issue, changed outside the chat (its UI or API), by that status"
    ),
    ("status",),
    ("resolved", "ignored", "unresolved"),
)

# A press claims its change on the button, then asks GlitchTip (within RELAY_SEND_TIMEOUT, at
# most 9 s): a state GlitchTip gave before that could be the old one, so a button pressed less
# than this before the round asked is left for the next round.
SETTLE = 10.0


class CardsInStep:
    def __init__(
        self,
        sent: SentStore,
        outbox: Outbox,
        *,
        origin: str,
        source: str,
        escalation: Calls | None = None,
        metrics: Metrics | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        """`origin`: the source's, whose issues the buttons change (GLITCHTIP_URL's links, or
        SENTRY_URL's); `source`: its name, for the log."""
        self._source = source
        self._sent = sent
        self._outbox = outbox
        self._origin = origin
        self._escalation = escalation
        self._metrics = metrics
        self._clock = clock

    def _noted(self, change: Synced) -> None:
        """A card now in step: logged, counted, and its escalation stopped unless open."""
        log.info(
            "%s is %s in %s: its card in chat %s (message %d) says so",
            change.label,
            change.status,
            self._source,
            change.chat,
            change.message_id,
        )
        if self._metrics is not None:
            self._metrics.of(CARDS_IN_STEP).labels(change.status).inc()
        if change.status != "unresolved" and self._escalation is not None:
            self._escalation.acted(change.chat, change.message_id)

    def shown_again(self, issue_id: str, why: str) -> int:
        """Every card of the issue, in every chat, shown again as it now stands: what its
        source says of it changed outside its status (whom Sentry assigned it to, a mark of
        Sentry's). How many cards."""
        try:
            cards = self._sent.cards_of(self._origin, issue_id)
        except SpoolError as exc:
            log.warning("the cards of %s could not be shown again (%s): %s", issue_id, why, exc)
            return 0
        self._edited(cards, why)
        return len(cards)

    def follow(
        self,
        states: Mapping[str, str],
        *,
        asked_at: float,
        settle: float = SETTLE,
        newer_wins: bool = False,
    ) -> int:
        """GlitchTip's states of these issues, asked at `asked_at`: the cards that show
        another are edited; how many buttons changed. `settle` 0: the relay itself just made
        the change (a snooze's end), so no press can be newer than the state. `newer_wins`:
        the states are as of `asked_at` (a webhook's stamp), so a card changed since, by a press
        or by another state, is newer and left."""
        known = {
            issue: status for issue, raw in states.items() if (status := _status(raw)) is not None
        }
        try:
            synced = self._sent.in_step(
                self._origin,
                known,
                asked_at=asked_at,
                settle=settle,
                now=self._clock(),
                newer_wins=newer_wins,
            )
        except SpoolError as exc:
            log.warning("cards could not be brought in step with %s now: %s", self._source, exc)
            return 0
        for change in synced:
            self._noted(change)
        cards = sorted({(change.chat, change.message_id) for change in synced})
        self._edited(cards, f"show {self._source}'s status")
        return len(synced)

    def _edited(self, cards: Iterable[tuple[str, int]], why: str) -> None:
        """Each card's edit queued, as every write to a chat is (`why`: for the log)."""
        for chat, message_id in cards:
            try:
                self._outbox.card(chat, message_id)
            except SpoolError as exc:
                log.warning(
                    "message %d in chat %s could not be queued for its edit to %s: %s",
                    message_id,
                    chat,
                    why,
                    exc,
                )


def _status(raw: str) -> IssueStatus | None:
    return next((status for status in ISSUE_STATUSES if status == raw), None)


# The cards the watcher's rounds keep in step with what they read of the issues' states: those
# of a source that tells no change of its own (GlitchTip's; Sentry's issue webhooks tell its
# own), provided by its capability, followed by the watcher's (watch/plugin.py).
FOLLOWS_ROUNDS: Key[CardsInStep] = Key("the cards the watcher's rounds keep in step")
