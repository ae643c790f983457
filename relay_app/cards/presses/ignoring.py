"""What Ignore's timed and counted choices are on a press ("for 1 h", "until 100 more events"):
whether the card can offer them, the condition each one is, what the tracker is sent with it,
and what keeps it afterwards. A source that brings an ignored issue back itself (its
`snoozes_sent_as`: Sentry's `statusDetails`) is sent the condition and keeps nothing here; the
others' issues are brought back by the watcher, so a choice needs the snoozes capability
(`SNOOZING`) and an issue the watcher finds."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from datetime import tzinfo
from typing import Literal

from ...core.errors import SpoolError
from ...core.sources import Sources
from ...words import Words
from ...words.catalogue import of_source
from ..card import SNOOZE_EVENTS, SNOOZE_VERBS, IssueButton, SentMessage, Verb
from ..ignore_choices import (
    SnoozeFor,
    Snoozer,
    condition_of,
    snooze_notice,
)

log = logging.getLogger(__name__)

# The issue is not watched: nothing could bring it back, so the choice is refused.
NOT_WATCHED: Literal["not watched"] = "not watched"


class IgnoreChoices:
    def __init__(
        self,
        sources: Sources,
        snoozing: Callable[[], Snoozer | None],
        *,
        clock: Callable[[], float],
        zone_of: Callable[[str], tzinfo],
    ) -> None:
        """`snoozing`: asked at each press (the snoozes capability's part, made after the
        capabilities start; None without it)."""
        self._sources = sources
        self._snoozing = snoozing
        self._clock = clock
        self._zone_of = zone_of

    def offered(self, verb: str, button: IssueButton) -> bool:
        """Whether a choice can be made on the issue: its source keeps snoozes itself, or the
        watcher's snoozes are on. Any other verb is."""
        if verb not in SNOOZE_VERBS:
            return True
        return self._snoozing() is not None or self._kept_by_source(button)

    def snooze_for(
        self, verb: Verb, button: IssueButton
    ) -> SnoozeFor | Literal["not watched"] | None:
        """A choice's condition, and where the watcher finds the issue (none where its source
        brings it back itself); None for any other verb; NOT_WATCHED when nothing could bring
        the issue back."""
        snoozing = self._snoozing()
        if self._kept_by_source(button):
            events = snoozing.events if snoozing is not None else SNOOZE_EVENTS
            found = condition_of(verb, now=self._clock(), events=events)
            return SnoozeFor(found, org="", thread=None) if found is not None else None
        condition = snoozing.condition(verb) if snoozing is not None else None
        if condition is None or snoozing is None:
            return None
        place = snoozing.place_of(button)
        return NOT_WATCHED if place is None else SnoozeFor(condition, *place)

    def sent_with(self, button: IssueButton, snooze: SnoozeFor | None) -> dict[str, int] | None:
        """What the tracker is sent with the status: the condition, as a source that keeps
        snoozes itself keeps them (`statusDetails`); None for the others."""
        source = self._sources.of(button.issue_id)
        if snooze is None or source is None or source.snoozes_sent_as is None:
            return None
        return source.snoozes_sent_as(snooze.condition, self._clock())

    def kept(
        self,
        message: SentMessage,
        button: IssueButton,
        snooze: SnoozeFor,
        words: Words,
        *,
        by: str,
        answer: Mapping[str, object],
    ) -> str:
        """The tracker ignored the issue for the choice: the snooze kept for the watcher
        (nothing to keep where the source keeps it); the press's notice."""
        if self._kept_by_source(button):
            words = of_source(words, button.issue_id)
            return snooze_notice(button, snooze.condition, words, self._zone_of(message.chat))
        snoozing = self._snoozing()
        assert snoozing is not None  # `snooze_for` gives a snooze only with it
        said = snoozing.notice(button, snooze.condition, words, message.chat)
        try:
            snoozing.snoozed(message, button, snooze, by=by, answer=answer)
        except SpoolError as exc:
            log.warning(
                "%s, but the snooze could not be kept: it stays ignored until someone reopens "
                "it (%s)",
                said,
                exc,
            )
        return said

    def _kept_by_source(self, button: IssueButton) -> bool:
        """Whether the issue's source brings it back itself when the choice is met."""
        source = self._sources.of(button.issue_id)
        return source is not None and source.keeps_snoozes
