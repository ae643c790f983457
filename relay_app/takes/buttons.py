"""👀 On it and ↩️ Let go, the buttons On it puts first on every open issue's row: a press keeps
who has the issue (taking.py) and shows it on each of its cards in the chat; the issue is not
changed in its tracker (GlitchTip has no assignee here). Only its taker may let it go."""

from __future__ import annotations

import logging

from ..cards.card import Button, IssueButton, is_open
from ..cards.takers import taken
from ..cards.verbs import Press, Pressed
from ..core.errors import SpoolError
from ..core.logs import event
from .taking import Taking

log = logging.getLogger(__name__)


def _offered(button: IssueButton) -> bool:
    return is_open(button) and taken(button) is None


def _held(button: IssueButton) -> bool:
    return is_open(button) and taken(button) is not None


TAKE = Button("take", "t", "button_take", _offered, leads=True)
LET_GO = Button("let_go", "g", "button_let_go", _held, leads=True)


def presses(taking: Taking) -> dict[str, Press]:
    """What a press of each does, on this process's takes."""

    def take(pressed: Pressed) -> None:
        """On it: who has the issue is kept and shown on the card, and nobody else is called
        for the alert."""
        button = pressed.button
        try:
            # Every message of the chat that shows the issue says who has it, and its calls
            # stop once each of its issues is taken or closed.
            shown = taking.take(pressed.message, button, pressed.by, pressed.by_id)
        except SpoolError as exc:
            pressed.unavailable("could not be recorded", exc)
            return
        if not shown:
            pressed.out_of_date("came as another took it, or it was closed")
            return
        said = pressed.words.word("notice_taken").format(label=button.label)
        _done(pressed, "taken", "%s is on %s", said)

    def let_go(pressed: Pressed) -> None:
        """Let go: the issue is nobody's again, and its calls go on. Only its taker may."""
        button = pressed.button
        try:
            shown = taking.let_go(pressed.message, button, pressed.by, pressed.by_id)
        except SpoolError as exc:
            pressed.unavailable("could not be recorded", exc)
            return
        if shown is None:
            held = taken(button)
            pressed.count("refused")
            refused = pressed.words.word("let_go_not_yours")
            pressed.answer(refused.format(user=held.by if held is not None else "?"), True)
            return
        said = pressed.words.word("notice_let_go").format(label=button.label)
        _done(pressed, "let_go", "%s let %s go", said)

    return {TAKE.verb: take, LET_GO.verb: let_go}


def _done(pressed: Pressed, outcome: str, logged: str, said: str) -> None:
    """On it or Let go done: logged (`logged`: who, then the issue), counted, answered."""
    log.info(
        logged,
        pressed.by,
        pressed.button.label,
        extra=event(event="press", issue=pressed.button.label, outcome=outcome, user=pressed.by),
    )
    pressed.count(outcome)
    pressed.answer(said, False)
