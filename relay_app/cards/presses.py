"""A press on an alert's button: the issue's status changed in GlitchTip, the card's edit queued
to say what happened, by whom and when (a job, paced and retried as every write to the chat:
delivery/outbox.py), and the press answered with a short notice at once (Telegram's answer to a
press must come within seconds, and writes nothing to the chat).

Only presses on messages this relay sent count: the button's data names a key the relay keeps
(cards/sent.py), and that record must belong to the very message and chat the press came from.
The issue acted on is the record's, never anything the client sent, and the verb must be one
the message shows now (a Resolve left on a stale keyboard after the issue was resolved does
nothing). Each update acts once: one Telegram delivers again, or anyone replays, is recorded
as handled and ignored; and of presses at the same moment (Resolve and Ignore, or the same
button by two people), one acts: each claims the change on its button, compared and set on the
state it was pressed on, before GlitchTip is asked, and a change GlitchTip refuses is taken
back. With TELEGRAM_ACTION_USER_IDS set, anyone else is refused and GlitchTip
is not called. When GlitchTip fails, the press is answered with what went wrong and how to fix
it, the card is left as it is, and a WARNING is logged.

Mute and Unmute change no issue: they start and end a silence in the chat (silencing.py).

A press never waits behind a tracker that hangs: each press is handled off the thread that read
its update (`acting`, a few threads per process: polled, the one thread that reads them all;
posted to the webhook, the request Telegram waits on before it posts the next), so one press's
call holds up no other; and whatever the tracker does, a press is answered within ANSWER_WITHIN: a
call not answered by then is answered "asked GlitchTip, the card will say", and its end is shown
on the card, or, when the tracker refused or never answered, said under it (its call keeps its
own deadline, RELAY_SEND_TIMEOUT).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, tzinfo
from typing import Any, Protocol

from ..core.errors import DeliveryError, GlitchTipError, SpoolError
from ..core.json_values import json_int, json_object
from ..core.logs import event
from ..core.off_thread import OffThread
from ..core.services import Key
from ..core.sources import Sources, has_prefix
from ..delivery.outbox import Outbox
from ..glitchtip.api import IssueStatus
from ..glitchtip.notices import glitchtip_notice, operator_fix
from ..words import Said
from ..words.catalogue import of_source, source_shown
from .card import (
    STATUS_FOR,
    Button,
    IssueButton,
    SentMessage,
    Verb,
    core_verb,
    notice,
    parse_callback,
    shows_theirs,
    verbs_for,
)
from .ignore_choices import (
    Snoozer,
)
from .ignoring import NOT_WATCHED, IgnoreChoices
from .sent import StatusClaim
from .taking import Taking
from .team import Person, Team
from .verbs import Calls, Pressed
from .verbs import Press as TheirPress

log = logging.getLogger(__name__)

# How long a press waits for its tracker before it is answered that the call is under way:
# Telegram shows the presser a spinner until the answer, and they press again.
ANSWER_WITHIN = 1.5
# Presses handled at once off the thread that reads Telegram's updates, and waiting at most:
# past that a press is answered that the relay is busy (a flood, or every tracker hanging).
PRESS_THREADS = 4
PRESSES_WAITING = 64


# Whether the person numbered so, in their private chat with the bot, was given the buttons of
# this message of this chat (chat, message id). Raises SpoolError.
PressedElsewhere = Callable[[int, str, int], bool]
# Whether the person numbered so may have an answer written under this card now, out of their
# and the chat's typed-input budget (then it is spent). Raises SpoolError.
AnswerBudget = Callable[[int, SentMessage], bool]
# The budget of what people type, lent to the presses by whoever keeps it (the chat's).
PRESS_ANSWER_BUDGET: Key[AnswerBudget] = Key("press answer budget")


class Answers(Protocol):
    """What a press needs of Telegram at once (delivery.Courier): its answer."""

    def answer(self, callback_query_id: str, text: str, *, alert: bool = False) -> None: ...


class _Once:
    """A press's one answer: Telegram takes one, and a press answered early ('asked GlitchTip')
    must not be answered again when the call ends."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._given = False

    def take(self) -> bool:
        """Whether this is the answer (the first asked for)."""
        with self._lock:
            given, self._given = self._given, True
            return not given


@dataclass(frozen=True)
class Press:
    """A callback query, as far as the relay reads it."""

    id: str
    by: Person
    chat: str | None
    message_id: int | None
    data: object
    answer: _Once = field(default_factory=_Once, compare=False, repr=False)

    @classmethod
    def of(cls, query: dict[str, Any]) -> Press:
        message = json_object(query.get("message"))
        chat = json_object(message.get("chat"))
        message_id = message.get("message_id")
        return cls(
            id=str(query.get("id", "")),
            by=Person.of(query.get("from")),
            chat=str(chat["id"]) if chat.get("id") is not None else None,
            message_id=json_int(message_id),
            data=query.get("data"),
        )


@dataclass(frozen=True)
class PressActions:
    """What a press does besides changing its issue in GlitchTip: the capabilities' buttons
    (`buttons`) and what a press of each does (`theirs`, by verb; a button without one is not
    offered), the route's calls, which any act on an alert stops (`calls`), and Ignore's timed
    and counted choices (`snoozing`; unset: Ignore is forever)."""

    # The sources of the issues pressed on (what each one keeps itself: core/sources.py).
    sources: Sources
    buttons: tuple[Button, ...] = ()
    theirs: Mapping[str, TheirPress] = field(default_factory=dict)
    calls: Calls | None = None
    # Asked at each press: the watcher's part, made after the capabilities start.
    snoozing: Callable[[], Snoozer | None] = lambda: None
    # Where else a button may be pressed: a capability's answer to whether this person, in
    # this private chat, was given the message's buttons (oncall/people.py: a private call).
    pressed_elsewhere: PressedElsewhere | None = None
    # Whether a press that writes an answer (a chart) may, by the presser's user id and the
    # card: the typed-input budget it spends (chat/answers.py); None: none may.
    budget: AnswerBudget | None = None


class Presses:
    def __init__(
        self,
        team: Team,
        answers: Answers,
        outbox: Outbox,
        actions: PressActions,
        zone_of: Callable[[str], tzinfo] = lambda chat: UTC,
        *,
        acting: OffThread | None = None,
        answer_within: float = ANSWER_WITHIN,
    ) -> None:
        """`zone_of`: the zone a chat reads times in (routes/zones.py); `acting`: the threads
        presses are handled on, off the one that reads Telegram's updates (None: on it);
        `answer_within`: how long a press waits for its tracker before it is answered."""
        self._zone_of = zone_of
        self._acting = acting
        self._answer_within = answer_within
        self._team = team
        self._answers = answers
        self._outbox = outbox
        self._buttons = tuple(b for b in actions.buttons if b.verb in actions.theirs)
        self._theirs = actions.theirs
        self._calls = actions.calls
        self._pressed_elsewhere = actions.pressed_elsewhere
        self._budget = actions.budget
        self._ignoring = IgnoreChoices(
            actions.sources, actions.snoozing, clock=team.clock, zone_of=zone_of
        )
        self._taking = Taking(team.store, outbox, actions.calls, clock=team.clock)

    def handle_update(self, update: dict[str, Any]) -> None:
        """One of Telegram's updates, polled or posted to the webhook: a press is handled, once;
        anything else is not the relay's."""
        query = update.get("callback_query")
        if not isinstance(query, dict):
            return
        press = Press.of(query)
        update_id = update.get("update_id")
        keys = [f"update:{update_id}"] if json_int(update_id) is not None else []
        if press.id:
            keys.append(f"press:{press.id}")
        if not keys:
            log.info("an update without an update id or press id from %s: ignored", press.by.handle)
            self._count("unknown")
            return
        try:
            first = self._team.store.first_time(keys, at=self._team.clock())
        except SpoolError as exc:
            self._unavailable(press, "could not be recorded as handled", exc)
            return
        if not first:
            # Telegram delivers an update again when its webhook's answer was slow or lost; the
            # first delivery has answered the press already.
            log.info(
                "update %s, a press by %s, was handled before: ignored", update_id, press.by.handle
            )
            self._count("repeated")
            return
        if self._acting is None:
            self._handle(press)
        elif not self._acting.submit(lambda: self._handle(press)):
            log.warning("a press by %s could not be handled now: too many wait", press.by.handle)
            self._count("failed")
            self._answer(press, self._team.words.press_unavailable, alert=True)

    def _handle(self, press: Press) -> None:
        found = self._look_up(press)
        if found is None:
            return
        self._team.met(press.by)  # on a button of the relay's: their name, for a call by tg:<id>
        verb, key, message, button = found
        if self._may_act(press, verb, button):
            self._act(press, verb, key, message, button)

    def _look_up(self, press: Press) -> tuple[str, str, SentMessage, IssueButton] | None:
        """The verb and key the button names, and the message and button kept for it; None
        (answered) when the relay does not know it."""
        parsed = parse_callback(press.data, self._buttons)
        try:
            found = self._team.store.pressed(parsed[1]) if parsed is not None else None
        except SpoolError as exc:
            self._unavailable(press, "could not be looked up", exc)
            return None
        if parsed is None or found is None or not self._where_shown(press, found[0]):
            log.info("a press by %s on a button this relay does not know: ignored", press.by.handle)
            self._count("unknown")
            self._answer(press, self._team.words.press_unknown, alert=True)
            return None
        return parsed[0], parsed[1], found[0], found[1]

    def _where_shown(self, press: Press, message: SentMessage) -> bool:
        """Whether the press came from the very message the button's record is of, or from
        the private chat of someone the relay called there for it (oncall/direct.py)."""
        if message.chat == press.chat and message.message_id == press.message_id:
            return True
        by = press.by.id
        if self._pressed_elsewhere is None or by is None or press.chat != str(by):
            return False
        try:
            return self._pressed_elsewhere(by, message.chat, message.message_id)
        except SpoolError as exc:
            log.warning("a press in a private chat could not be looked up: %s", exc)
            return False

    def _offered(self, verb: str, button: IssueButton) -> bool:
        """Whether the message still shows `verb`, and this relay can do it."""
        if verb in self._theirs:
            return any(each.verb == verb for each in shows_theirs(button, self._buttons))
        # An Ignore on a card from before its choices ignores for ever, as it said.
        if verb not in verbs_for(button) and not (verb == "ignore" and _open(button)):
            return False
        return self._ignoring.offered(verb, button)

    def _may_act(self, press: Press, verb: str, button: IssueButton) -> bool:
        """Whether the press may act: someone allowed, on a button the message still shows
        (otherwise it is answered here)."""
        if not self._team.may_act(press.by):
            log.warning(
                "a press by %s (user id %s) to %s %s was refused: not in TELEGRAM_ACTION_USER_IDS",
                press.by.handle,
                press.by.id,
                verb,
                button.label,
            )
            self._count("refused")
            self._answer(press, self._team.words.press_not_allowed, alert=True)
            return False
        if not self._offered(verb, button):
            why = f"came from an out-of-date button (the issue is {button.status or 'unresolved'})"
            self._out_of_date(press, verb, button, why)
            return False
        return True

    def _out_of_date(self, press: Press, verb: str, button: IssueButton, why: str) -> None:
        """Nothing done: the button no longer offers this, or another press changed it first."""
        log.info(
            "a press by %s to %s %s %s: nothing done", press.by.handle, verb, button.label, why
        )
        self._count("stale")
        self._answer(press, self._team.words.press_out_of_date, alert=True)

    def _act(
        self, press: Press, verb: str, key: str, message: SentMessage, button: IssueButton
    ) -> None:
        """A capability's button: what its owner registered for it. The core's: claim the
        change on the button (so that of presses at the same moment one acts), change the
        issue in its tracker, then the message; answer the press."""
        core = core_verb(verb)
        if core is None:
            self._theirs[verb](self._pressed(press, verb, key, message, button))
        elif core == "take":
            self._take(press, key, message, button)
        elif core == "let_go":
            self._let_go(press, message, button)
        elif core in ("snooze", "back"):
            self._choose(press, core, key, message, button)
        else:
            self._change(press, core, key, message, button)

    def _pressed(
        self, press: Press, verb: str, key: str, message: SentMessage, button: IssueButton
    ) -> Pressed:
        """What a capability's press is given: the checked press, and what it may do."""
        return Pressed(
            verb=verb,
            key=key,
            message=message,
            button=button,
            by=press.by.handle,
            by_id=press.by.id,
            zone=self._zone_of(message.chat),
            words=self._team.words,
            answer=lambda text, alert: _ignored(self._answer(press, text, alert=alert)),
            count=self._count,
            edit=lambda: self._update_message(press, message, f"{verb} {button.label}"),
            acted_on=lambda: self._acted_on(message),
            may_answer=lambda: self._may_answer(press, message),
        )

    def _may_answer(self, press: Press, message: SentMessage) -> bool:
        """The typed-input budget of the presser and the card's chat. Raises SpoolError."""
        if self._budget is None or press.by.id is None:
            return False
        return self._budget(press.by.id, message)

    def _change(
        self, press: Press, verb: Verb, key: str, message: SentMessage, button: IssueButton
    ) -> None:
        """The issue's status changed in GlitchTip (for one of Ignore's choices, the snooze
        kept), then the card."""
        snooze = self._ignoring.snooze_for(verb, button)
        if snooze == NOT_WATCHED:
            self._not_watched(press, verb, button)
            return
        status = STATUS_FOR[verb]
        claim = self._claim(press, verb, key, button, status, snooze.condition if snooze else None)
        if claim is None:
            return
        started = time.monotonic()
        details = self._ignoring.sent_with(button, snooze)
        # Answered within answer_within whatever the tracker does; the call keeps its deadline.
        early = threading.Timer(self._answer_within, self._asking, (press, button))
        early.daemon = True
        early.start()
        try:
            answer = self._team.glitchtip.set_status(
                button.issue_id, status, details, org=button.org
            )
        except GlitchTipError as exc:
            early.cancel()  # what went wrong is the answer, when it is still to be given
            self._refused(press, verb, button, claim, exc, message=message)
            return
        finally:
            early.cancel()
        changed = time.monotonic() - started
        self._acted_on(message)
        said = notice(button, status, self._team.words)
        self._mirrored(press, message, key, said)
        if snooze is not None:
            said = self._ignoring.kept(
                message, button, snooze, self._team.words, by=press.by.handle, answer=answer
            )
        if not self._update_message(press, message, said):
            said += self._team.words.not_updated
        log.info(
            "%s by %s (%s answered in %.0f ms)",
            said,
            press.by.handle,
            source_shown(self._team.words, button.issue_id),
            changed * 1000,
            extra=event(event="press", issue=button.label, outcome=status, user=press.by.handle),
        )
        self._count(status)
        self._answer(press, said, alert=False)

    def _asking(self, press: Press, button: IssueButton) -> None:
        """The press answered while its tracker has not: the card will say how it ended."""
        words = of_source(self._team.words, button.issue_id)
        self._answer(press, words.notice_asking.format(label=button.label), alert=False)

    def _refused(
        self,
        press: Press,
        verb: Verb,
        button: IssueButton,
        claim: StatusClaim,
        exc: GlitchTipError,
        *,
        message: SentMessage,
    ) -> None:
        """GlitchTip did not make the change: the claim taken back, and the presser told (under
        the card, when the press was answered already while the call went on)."""
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
        self._count("failed")
        words = of_source(self._team.words, button.issue_id)
        notice = glitchtip_notice(exc)
        if self._answer(press, notice.text(words), alert=True):
            return
        said = Said(
            "press_failed_late",
            {"label": button.label, "user": press.by.handle, "why": notice},
            source=source_shown(words, button.issue_id) if has_prefix(button.issue_id) else None,
        )
        try:
            self._outbox.call(message.chat, message.thread, message.message_id, said)
        except SpoolError as exc_spool:
            log.warning("that a press failed could not be said in the chat: %s", exc_spool)

    def _let_go(self, press: Press, message: SentMessage, button: IssueButton) -> None:
        """Let go: the issue is nobody's again, and its calls go on. Only its taker may."""
        try:
            shown = self._taking.let_go(message, button, press.by)
        except SpoolError as exc:
            self._unavailable(press, "could not be recorded", exc)
            return
        if shown is None:
            taker = button.taken_by or "?"
            self._count("refused")
            self._answer(press, self._team.words.let_go_not_yours.format(user=taker), alert=True)
            return
        said = self._team.words.notice_let_go.format(label=button.label)
        log.info(
            "%s let %s go",
            press.by.handle,
            button.label,
            extra=event(event="press", issue=button.label, outcome="let_go", user=press.by.handle),
        )
        self._count("let_go")
        self._answer(press, said, alert=False)

    def _take(self, press: Press, key: str, message: SentMessage, button: IssueButton) -> None:
        """On it: who has the issue is kept and shown on the card, and nobody else is called
        for the alert. GlitchTip is not changed (it has no assignee here)."""
        try:
            # Every message of the chat that shows the issue says who has it, and its calls
            # stop once each of its issues is taken or closed.
            shown = self._taking.take(message, button, press.by)
        except SpoolError as exc:
            self._unavailable(press, "could not be recorded", exc)
            return
        if not shown:
            self._out_of_date(press, "take", button, "came as another took it, or it was closed")
            return
        said = self._team.words.notice_taken.format(label=button.label)
        log.info(
            "%s is on %s",
            press.by.handle,
            button.label,
            extra=event(event="press", issue=button.label, outcome="taken", user=press.by.handle),
        )
        self._count("taken")
        self._answer(press, said, alert=False)

    def _not_watched(self, press: Press, verb: Verb, button: IssueButton) -> None:
        log.info(
            "a press by %s to %s %s: the relay does not watch the issue, so nothing could "
            "bring it back; nothing done",
            press.by.handle,
            verb,
            button.label,
        )
        self._count("stale")
        words = self._team.words
        self._answer(press, words.notice_cannot_snooze.format(label=button.label), alert=True)

    def _choose(
        self, press: Press, verb: Verb, key: str, message: SentMessage, button: IssueButton
    ) -> None:
        """Ignore's choices shown in place of the issue's row, or put away (Back)."""
        opening = verb == "snooze"
        try:
            changed = self._team.store.choose(key, choosing=opening, at=self._team.clock())
        except SpoolError as exc:
            self._unavailable(press, "could not be recorded", exc)
            return
        if not changed:
            self._out_of_date(press, verb, button, "came as another changed it")
            return
        said = self._team.words.notice_choose.format(label=button.label) if opening else ""
        self._update_message(press, message, said or f"choices of {button.label} put away")
        self._answer(press, said, alert=False)

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
        self._taking.spread(message.chat, others, f"{said} by {press.by.handle}")

    def _acted_on(self, message: SentMessage) -> None:
        if self._calls is not None:
            self._calls.acted(message.chat, message.message_id)

    def _claim(
        self,
        press: Press,
        verb: Verb,
        key: str,
        button: IssueButton,
        status: IssueStatus,
        snooze: dict[str, float] | None = None,
    ) -> StatusClaim | None:
        """The press's claim on the change; None (answered) when another press made a change
        since the button was read, or the claim cannot be recorded."""
        store = self._team.store
        try:
            claim = store.claim(
                key, button.status, status, by=press.by.handle, at=self._team.clock(), snooze=snooze
            )
        except SpoolError as exc:
            self._unavailable(press, "could not be recorded", exc)
            return None
        if claim is None:
            self._out_of_date(press, verb, button, "came as another changed it")
        return claim

    def _unclaim(self, claim: StatusClaim) -> None:
        try:
            self._team.store.unclaim(claim)
        except SpoolError as exc:
            log.warning(
                "a refused change of %s could not be taken back from its button: %s",
                claim.key,
                exc,
            )

    def _update_message(self, press: Press, message: SentMessage, said: str) -> bool:
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

    def _unavailable(self, press: Press, what: str, exc: Exception) -> None:
        """The spool failed the press: nothing was changed, and the presser may try again."""
        log.warning("a press by %s %s: %s", press.by.handle, what, exc)
        self._count("failed")
        self._answer(press, self._team.words.press_unavailable, alert=True)

    def _count(self, outcome: str) -> None:
        if self._team.metrics is not None:
            self._team.metrics.press(outcome)

    def _answer(self, press: Press, text: str, *, alert: bool) -> bool:
        """The press's one answer; False when it was answered already (early, while its
        tracker was asked)."""
        if not press.answer.take():
            return False
        try:
            self._answers.answer(press.id, text, alert=alert)
        except DeliveryError as exc:
            # Telegram forgets a press after a while; the change, if any, stands.
            log.info("the press by %s could not be answered: %s", press.by.handle, exc)
        return True


def _open(button: IssueButton) -> bool:
    return button.status in (None, "unresolved")


def _ignored(answered: bool) -> None:
    """A capability's press answers; whether it was the first answer is the core's business."""
