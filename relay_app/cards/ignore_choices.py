"""Ignore's choices, the core card's verbs (cards/card.py: `SNOOZE_CHOICES`): what each ignores
an issue until (`condition_of`: an hour, a day, N more events; forever is GlitchTip's own
ignore) and the press's answer that says so. A source that keeps a choice itself says in what
form it is sent (core/sources.py's `snoozes_sent_as`: Sentry's `statusDetails`). A GlitchTip
issue's choice is kept for the watcher to bring it back by the
capability that provides `SNOOZING` (snoozes/); the presses ask for it, and without it a
GlitchTip issue's Ignore is forever."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import tzinfo
from typing import Protocol

from ..core.services import Key
from ..message.spans import place_time
from ..words import Words
from .card import SNOOZE_FOR, IssueButton, SentMessage, Verb

Condition = dict[str, float]


@dataclass(frozen=True)
class SnoozeFor:
    """One of Ignore's timed or counted choices for an issue: until what (`condition`), and
    where the watcher finds the issue (its organisation, its alert's topic)."""

    condition: Condition
    org: str
    thread: int | None


def condition_of(verb: Verb, *, now: float, events: int) -> Condition | None:
    """What one of Ignore's choices ignores an issue until, from `now`: a time, or `events`
    more events; None for forever (or a verb that is no choice)."""
    if verb in SNOOZE_FOR:
        return {"until": now + SNOOZE_FOR[verb]}
    if verb == "snooze_events":
        return {"events": float(events)}
    return None


def snooze_notice(button: IssueButton, condition: Condition, words: Words, zone: tzinfo) -> str:
    """A snooze's press's answer: the issue ignored until a time (in `zone`) or a count."""
    if "until" in condition:
        until = place_time(condition["until"], zone)
        return words.notice_snoozed_until.format(label=button.label, until=until)
    count = int(condition["events"])
    return words.notice_snoozed_events.format(label=button.label, count=count)


class Snoozer(Protocol):
    """What keeps Ignore's timed and counted choices of GlitchTip's issues (snoozes/)."""

    # The N of "until N more events" (RELAY_SNOOZE_EVENTS).
    events: int

    def condition(self, verb: Verb) -> Condition | None:
        """What a choice ignores the issue until, from now; None for forever (or no choice)."""
        ...

    def place_of(self, button: IssueButton) -> tuple[str, int | None] | None:
        """The issue's organisation and its alert's topic, where the watcher finds it; None
        when it is not watched, or that cannot be said now."""
        ...

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
        now): the snooze kept. Raises SpoolError."""
        ...

    def notice(self, button: IssueButton, condition: Condition, words: Words, chat: str) -> str:
        """The press's answer, its time in `chat`'s zone."""
        ...


SNOOZING: Key[Snoozer] = Key("snoozing")
