"""A press on an alert's button, walked down its stages (receive, route, hold, queue, attempt,
record: this package's modules, each entered once and in order): the issue's status changed in
its tracker, the card's edit queued to say what happened, by whom and when, and the press
answered with a short notice at once (Telegram's answer to a press must come within seconds,
and writes nothing to the chat). When the tracker fails, the press is answered with what went
wrong and how to fix it, the card is left as it is, and a WARNING is logged.

A capability's button is its owner's (found by its registration: cards/verbs.py's `Pressed` is
what the owner is given): On it and Let go keep who has the issue (takes/), Mute and Unmute
start and end a silence in the chat (silences/); none of them changes the issue in its tracker.

A press never waits behind a tracker that hangs: each press is handled off the thread that read
its update (`acting`, a few threads per process: polled, the one thread that reads them all;
posted to the webhook, the request Telegram waits on before it posts the next), so one press's
call holds up no other (attempt.py answers it early when its tracker is slow).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, tzinfo
from typing import Any

from ...core.errors import TrackerError
from ...core.off_thread import OffThread
from ...core.services import Key
from ...core.sources import Sources
from ...core.trackers import IssueStatus
from ...delivery.outbox import Outbox
from ..card import STATUS_FOR, Button, SentMessage, core_verb
from ..ignore_choices import Snoozer
from ..team import Team
from ..verbs import Calls, Pressed
from ..verbs import Press as TheirPress
from .attempt import TrackerCalls
from .hold import Allowed, Holding
from .ignoring import IgnoreChoices
from .queue import Claims
from .receive import Press, receive
from .record import Recording
from .route import Found, PressedElsewhere, Routing
from .told import Answers, Told, log

# How long a press waits for its tracker before it is answered that the call is under way:
# Telegram shows the presser a spinner until the answer, and they press again.
ANSWER_WITHIN = 1.5
# Presses handled at once off the thread that reads Telegram's updates, and waiting at most:
# past that a press is answered that the relay is busy (a flood, or every tracker hanging).
PRESS_THREADS = 4
PRESSES_WAITING = 64

# Whether the person numbered so may have an answer written under this card now, out of their
# and the chat's typed-input budget (then it is spent). Raises SpoolError.
AnswerBudget = Callable[[int, SentMessage], bool]
# The budget of what people type, lent to the presses by whoever keeps it (the chat's).
PRESS_ANSWER_BUDGET: Key[AnswerBudget] = Key("press answer budget")


@dataclass(frozen=True)
class PressActions:
    """What a press does besides changing its issue in its tracker: the capabilities' buttons
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
        self._team = team
        self._zone_of = zone_of
        self._acting = acting
        self._theirs = actions.theirs
        self._budget = actions.budget
        buttons = tuple(b for b in actions.buttons if b.verb in actions.theirs)
        ignoring = IgnoreChoices(
            actions.sources, actions.snoozing, clock=team.clock, zone_of=zone_of
        )
        self._ignoring = ignoring
        self._told = Told(team, answers)
        self._routing = Routing(team, self._told, buttons, actions.pressed_elsewhere)
        self._holding = Holding(team, self._told, buttons, actions.theirs, ignoring)
        self._claims = Claims(team, self._told)
        self._trackers = TrackerCalls(team, self._told, answer_within)
        self._recording = Recording(team, self._told, outbox, ignoring, actions.calls)

    def handle_update(self, update: dict[str, Any]) -> None:
        """One of Telegram's updates, polled or posted to the webhook: a press is handled, once;
        anything else is not the relay's."""
        received = receive(update, self._team)
        if received is None:
            return
        press = received.press
        if received.error is not None:
            self._told.unavailable(press, "could not be recorded as handled", received.error)
            return
        if received.refusal is not None:
            self._told.count(received.refusal)
            return
        if self._acting is None:
            self._handle(press)
        elif not self._acting.submit(lambda: self._handle(press)):
            log.warning("a press by %s could not be handled now: too many wait", press.by.handle)
            self._told.count("failed")
            self._told.answer(press, self._team.words.press_unavailable, alert=True)

    def _handle(self, press: Press) -> None:
        found = self._routing.found(press)
        if found is None:
            return
        allowed = self._holding.allowed(press, found)
        if allowed is not None:
            self._act(press, found, allowed)

    def _act(self, press: Press, found: Found, allowed: Allowed) -> None:
        """A capability's button: what its owner registered for it. The core's: Ignore's
        choices opened or put away; a status change claimed on the card, made in the issue's
        tracker, then recorded."""
        core = core_verb(found.verb)
        if core is None:
            self._theirs[found.verb](self._pressed(press, found))
        elif core in ("snooze", "back"):
            if self._claims.choose(press, core, found.key, found.button):
                self._recording.chosen(press, core, found.message, found.button)
        else:
            self._change(press, found, allowed, STATUS_FOR[core])

    def _change(self, press: Press, found: Found, allowed: Allowed, status: IssueStatus) -> None:
        """The issue's status changed in its tracker (for one of Ignore's choices, the snooze
        kept), then the card."""
        verb, key, message, button = found.verb, found.key, found.message, found.button
        snooze = allowed.snooze
        claim = self._claims.claim(
            press, verb, key, button, status, snooze.condition if snooze else None
        )
        if claim is None:
            return
        details = self._ignoring.sent_with(button, snooze)
        changed = self._trackers.set_status(press, button, status, details)
        if isinstance(changed, TrackerError):
            self._recording.refused(press, verb, message, button, claim, changed)
            return
        self._recording.changed(press, key, message, button, status, snooze, changed)

    def _pressed(self, press: Press, found: Found) -> Pressed:
        """What a capability's press is given: the checked press, and what it may do."""
        message, button, verb = found.message, found.button, found.verb
        return Pressed(
            verb=verb,
            key=found.key,
            message=message,
            button=button,
            by=press.by.handle,
            by_id=press.by.id,
            zone=self._zone_of(message.chat),
            words=self._team.words,
            answer=lambda text, alert: _ignored(self._told.answer(press, text, alert=alert)),
            count=self._told.count,
            edit=lambda: self._recording.card_edited(press, message, f"{verb} {button.label}"),
            acted_on=lambda: self._recording.acted_on(message),
            may_answer=lambda: self._may_answer(press, message),
            out_of_date=lambda why: self._told.out_of_date(press, verb, button, why),
            unavailable=lambda what, exc: self._told.unavailable(press, what, exc),
        )

    def _may_answer(self, press: Press, message: SentMessage) -> bool:
        """The typed-input budget of the presser and the card's chat. Raises SpoolError."""
        if self._budget is None or press.by.id is None:
            return False
        return self._budget(press.by.id, message)


def _ignored(answered: bool) -> None:
    """A capability's press answers; whether it was the first answer is the core's business."""
