"""Ignore with a condition (docs/actions.md): GlitchTip's ignore is forever, and a new event on
an ignored issue changes nothing, so a team that ignores a noisy issue never hears of it again.
A card's 🔕 Ignore… opens its choices in place of the issue's row: for 1 h, for 24 h, until N
more events (RELAY_SNOOZE_EVENTS), or forever (GlitchTip's own ignore), and Back. A timed or
counted choice ignores the issue in GlitchTip (as every press does: presses.py) and keeps the
snooze in the spool (snoozes/store.py) with the issue's events at that moment.

The watcher (watcher.py) asks GlitchTip about every open snooze's issue each round, with the
issues it watches. When the condition is met, the issue is set unresolved in GlitchTip and the
relay replies under the alert that it is back, naming the issue, why, and who ignored it; its
cards follow at once (cards/in_step.py). An issue no longer ignored meanwhile (reopened or
resolved, in the chat or in GlitchTip) ends its snooze silently. Each snooze ends once: the
watcher's round is one process's, and the end is recorded only on a snooze still open.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from datetime import UTC, tzinfo

from ..cards.card import IssueButton, SentMessage, Verb, clock_time
from ..cards.ignore_choices import Condition, SnoozeFor, condition_of, snooze_notice
from ..core.errors import SpoolError, TrackerError
from ..core.issue_details import count_of
from ..core.metrics import Metrics
from ..core.rounds import IssuePlaces
from ..core.trackers import IssueActions, IssueState
from ..delivery.outbox import Outbox
from ..message.spans import place_time
from ..words import Said, Words
from .counters import SNOOZES
from .store import Ended, Snooze, SnoozeStore

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class BringBack:
    """How an issue whose snooze is over is brought back: set unresolved through its source's
    API (`actions`: the trackers' contract), said under its alert through `outbox`, and its
    cards followed at once (`reopened`, cards/in_step.py)."""

    actions: IssueActions
    outbox: Outbox
    reopened: Callable[[str], object] = lambda issue_id: None
    # The zone a chat reads times in (routes/zones.py): the "until" it says.
    zone_of: Callable[[str], tzinfo] = lambda chat: UTC


class Snoozing:
    """The snoozes of GlitchTip's issues (the core's `Snoozer`, provided as SNOOZING): a
    choice kept when a press makes it, and brought back on the watcher's rounds."""

    def __init__(
        self,
        snoozes: SnoozeStore,
        places: IssuePlaces,
        back: BringBack,
        *,
        events: int,
        metrics: Metrics | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        """`events`: the N of "until N more events" (RELAY_SNOOZE_EVENTS)."""
        self._snoozes = snoozes
        self._places = places
        self._outbox = back.outbox
        self._actions = back.actions
        self.events = events
        self._metrics = metrics
        self._reopened = back.reopened
        self.zone_of = back.zone_of
        self._clock = clock

    # --- a press -------------------------------------------------------------------------

    def condition(self, verb: Verb) -> Condition | None:
        """What a choice ignores the issue until, from now; None for forever (or no choice)."""
        return condition_of(verb, now=self._clock(), events=self.events)

    def place_of(self, button: IssueButton) -> tuple[str, int | None] | None:
        """The issue's organisation (which the watcher asks GlitchTip about it in) and its
        alert's topic; None when the relay does not watch the issue (a card from before the
        watcher), or the spool cannot say now."""
        try:
            return self._places.place_of(button.issue_id)
        except SpoolError:
            return None

    def snoozed(
        self,
        message: SentMessage,
        button: IssueButton,
        snooze: SnoozeFor,
        *,
        by: str,
        answer: Mapping[str, object],
    ) -> None:
        """GlitchTip ignored the issue for the choice (`answer`: its issue, with its events
        now): the snooze kept for the watcher. Raises SpoolError."""
        condition = snooze.condition
        self._snoozes.add(
            Snooze(
                issue_id=button.issue_id,
                org=snooze.org,
                label=button.label,
                until_at=condition.get("until"),
                events=int(condition["events"]) if "events" in condition else None,
                baseline=count_of(answer.get("count")),
                by=by,
                chat=message.chat,
                thread=snooze.thread,
                message_id=message.message_id,
            ),
            now=self._clock(),
        )
        self._count("made")

    def notice(self, button: IssueButton, condition: Condition, words: Words, chat: str) -> str:
        """The press's answer: the issue ignored until a time (in `chat`'s zone) or a count."""
        return snooze_notice(button, condition, words, self.zone_of(chat))

    # --- the watcher's round -------------------------------------------------------------

    def wanted(self) -> dict[str, list[str]]:
        """The issues of the open snoozes, by organisation: the watcher asks about them."""
        wanted: dict[str, list[str]] = {}
        for snooze in self._open():
            wanted.setdefault(snooze.org, []).append(snooze.issue_id)
        return wanted

    def settle(
        self, org: str, states: Mapping[str, IssueState], *, unreadable: Collection[str] = ()
    ) -> int:
        """The open snoozes of `org`'s issues, against GlitchTip's states now: those met are
        back (unresolved in GlitchTip, said under their alerts), those no longer ignored end;
        those whose answer was `unreadable` wait for a round that reads them. How many came
        back."""
        back = 0
        now = self._clock()
        for snooze in self._open():
            if snooze.org != org or snooze.issue_id in unreadable:
                continue
            state = states.get(snooze.issue_id)
            if state is None or state.status != "ignored":
                # Reopened or resolved meanwhile (or gone): nothing left to bring back.
                self._end(snooze, "cancelled", now)
            elif _met(snooze, state, now):
                back += self._bring_back(snooze, state, now)
        return back

    def _bring_back(self, snooze: Snooze, state: IssueState, now: float) -> int:
        try:
            self._actions.set_status(snooze.issue_id, "unresolved", org=snooze.org)
        except TrackerError as exc:
            log.warning(
                "snoozed issue %s is due back, but GlitchTip did not reopen it (%s): the next "
                "round tries again",
                snooze.label,
                exc,
            )
            return 0
        if not self._end(snooze, "back", now):
            return 0
        log.info("snoozed issue %s is back: %s", snooze.label, _why(snooze, state))
        self._reopened(snooze.issue_id)
        try:
            said = _said(snooze, state, self.zone_of(snooze.chat))
            self._outbox.call(snooze.chat, snooze.thread, snooze.message_id, said)
        except SpoolError as exc:
            log.warning(
                "snoozed issue %s is back (unresolved in GlitchTip), but the reply under its "
                "alert could not be queued: %s",
                snooze.label,
                exc,
            )
        return 1

    def _open(self) -> list[Snooze]:
        try:
            return self._snoozes.open(now=self._clock())
        except SpoolError as exc:
            log.debug("the snoozes could not be read now: %s", exc)
            return []

    def _end(self, snooze: Snooze, how: Ended, now: float) -> bool:
        try:
            ended = self._snoozes.end(snooze.id, how, now=now)
        except SpoolError as exc:
            log.debug("snooze %d could not be ended now: %s", snooze.id, exc)
            return False
        if ended:
            self._count(how)
        return ended

    def _count(self, outcome: str) -> None:
        if self._metrics is not None:
            self._metrics.of(SNOOZES).labels(outcome).inc()


def _met(snooze: Snooze, state: IssueState, now: float) -> bool:
    if snooze.until_at is not None:
        return now >= snooze.until_at
    if snooze.events is None or state.events is None:
        return False
    return state.events - (snooze.baseline or 0) >= snooze.events


def _said(snooze: Snooze, state: IssueState, zone: tzinfo) -> Said:
    if snooze.until_at is not None:
        until = place_time(snooze.until_at, zone)
        return Said("snooze_back_time", {"label": snooze.label, "user": snooze.by, "until": until})
    more = (state.events or 0) - (snooze.baseline or 0)
    values = {"label": snooze.label, "user": snooze.by, "count": str(more)}
    return Said("snooze_back_events", {**values, "events": str(snooze.events)})


def _why(snooze: Snooze, state: IssueState) -> str:
    if snooze.until_at is not None:
        return f"ignored by {snooze.by} until {clock_time(snooze.until_at)} UTC"
    more = (state.events or 0) - (snooze.baseline or 0)
    return f"{more} more events since {snooze.by} ignored it until {snooze.events} more"
