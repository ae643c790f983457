"""The last stage of a press: what it leaves. A change the tracker made is shown on the card
(its edit queued: a job, paced and retried as every write to the chat: delivery/outbox.py), on
every other message of the chat that shows the issue, whose calls it counts for too, kept (one
of Ignore's choices, for the watcher), logged, counted and answered with a short notice. A
change the tracker refused is taken back from the card's row, logged (with the operator's fix,
when it is theirs) and said to the presser; under the card, when the press was answered
already while the call went on."""

from __future__ import annotations

import logging

from ...core.errors import SpoolError, TrackerError
from ...core.logs import event
from ...core.sources import has_prefix
from ...core.trackers import IssueStatus
from ...delivery.outbox import Outbox
from ...words import Said
from ...words.catalogue import of_source, source_shown
from ..card import IssueButton, SentMessage, notice
from ..ignore_choices import SnoozeFor
from ..notices import operator_fix, tracker_notice
from ..sent import StatusClaim
from ..team import Team
from ..verbs import Calls
from .attempt import Changed
from .ignoring import IgnoreChoices
from .receive import Press
from .told import Told, log


class Recording:
    def __init__(
        self,
        team: Team,
        told: Told,
        outbox: Outbox,
        ignoring: IgnoreChoices,
        calls: Calls | None,
    ) -> None:
        self._team = team
        self._told = told
        self._outbox = outbox
        self._ignoring = ignoring
        self._calls = calls

    def changed(
        self,
        press: Press,
        key: str,
        message: SentMessage,
        button: IssueButton,
        status: IssueStatus,
        snooze: SnoozeFor | None,
        changed: Changed,
    ) -> None:
        """The tracker made the change: shown, kept, logged, counted and answered."""
        self.acted_on(message)
        said = notice(button, status, self._team.words)
        self._mirrored(press, message, key, said)
        if snooze is not None:
            said = self._ignoring.kept(
                message, button, snooze, self._team.words, by=press.by.handle, answer=changed.answer
            )
        if not self.card_edited(press, message, said):
            said += self._team.words.not_updated
        log.info(
            "%s by %s (%s answered in %.0f ms)",
            said,
            press.by.handle,
            source_shown(self._team.words, button.issue_id),
            changed.seconds * 1000,
            extra=event(event="press", issue=button.label, outcome=status, user=press.by.handle),
        )
        self._told.count(status)
        self._told.answer(press, said, alert=False)

    def refused(
        self,
        press: Press,
        verb: str,
        message: SentMessage,
        button: IssueButton,
        claim: StatusClaim,
        exc: TrackerError,
    ) -> None:
        """The tracker did not make the change: the claim taken back, and the presser told
        (under the card, when the press was answered already while the call went on)."""
        self._unclaim(claim)
        fix = operator_fix(exc)
        log.log(
            logging.WARNING if fix is None else logging.ERROR,
            "a press by %s to %s %s failed: %s%s",
            press.by.handle,
            verb,
            button.label,
            exc,
            "" if fix is None else f". FIX: {fix} (the presser was told the operator has it)",
            extra=event(event="press", issue=button.label, outcome="failed", error=str(exc)),
        )
        self._told.count("failed")
        words = of_source(self._team.words, button.issue_id)
        why = tracker_notice(exc)
        if self._told.answer(press, why.text(words), alert=True):
            return
        said = Said(
            "press_failed_late",
            {"label": button.label, "user": press.by.handle, "why": why},
            source=source_shown(words, button.issue_id) if has_prefix(button.issue_id) else None,
        )
        try:
            self._outbox.call(message.chat, message.thread, message.message_id, said)
        except SpoolError as exc_spool:
            log.warning("that a press failed could not be said in the chat: %s", exc_spool)

    def chosen(self, press: Press, verb: str, message: SentMessage, button: IssueButton) -> None:
        """Ignore's choices shown or put away: the card edited, the press answered."""
        opening = verb == "snooze"
        said = self._team.words.notice_choose.format(label=button.label) if opening else ""
        self.card_edited(press, message, said or f"choices of {button.label} put away")
        self._told.answer(press, said, alert=False)

    def acted_on(self, message: SentMessage) -> None:
        """Someone acted on the message: its calls stop."""
        if self._calls is not None:
            self._calls.acted(message.chat, message.message_id)

    def card_edited(self, press: Press, message: SentMessage, said: str) -> bool:
        """Queue the card's edit: it shows the record as it stands when it goes."""
        try:
            self._outbox.card(message.chat, message.message_id)
        except SpoolError as exc:
            log.warning(
                "%s by %s in GlitchTip, but message %d in chat %s could not be updated: %s",
                said,
                press.by.handle,
                message.message_id,
                message.chat,
                exc,
            )
            return False
        return True

    def _mirrored(self, press: Press, message: SentMessage, key: str, said: str) -> None:
        """The change shown on every other message of the chat that shows the issue (a
        digest's line, a re-post, a link's card), whose calls it counts for too."""
        try:
            others = self._team.store.mirror(key)
        except SpoolError as exc:
            log.warning(
                "%s, but the chat's other messages of the issue could not say so: %s", said, exc
            )
            return
        if self._calls is not None:
            for message_id in others:  # each counts for its own calls
                self._calls.acted(message.chat, message_id)
        self._outbox.cards(message.chat, others, f"{said} by {press.by.handle}")

    def _unclaim(self, claim: StatusClaim) -> None:
        try:
            self._team.store.unclaim(claim)
        except SpoolError as exc:
            log.warning(
                "a refused change of %s could not be taken back from its button: %s",
                claim.key,
                exc,
            )
