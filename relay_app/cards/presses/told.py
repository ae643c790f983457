"""How a press is answered and counted, whichever stage ends it: one answer (Telegram takes
one, and a press answered early, 'asked GlitchTip', must not be answered again when the call
ends: `OneAnswer`), and one count by its outcome."""

from __future__ import annotations

import logging
import threading
from typing import Protocol

from ...core.errors import DeliveryError
from ..card import IssueButton
from ..team import Person, Team

# One name for every line a press's walk logs, whichever stage says it.
log = logging.getLogger("relay_app.cards.presses")


class OneAnswer:
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


class Press(Protocol):
    """A press as it is answered (receive.py's): its query's id, who pressed, its one answer."""

    @property
    def id(self) -> str: ...

    @property
    def by(self) -> Person: ...

    @property
    def answer(self) -> OneAnswer: ...


class Answers(Protocol):
    """What a press needs of Telegram at once (delivery.Courier): its answer."""

    def answer(self, callback_query_id: str, text: str, *, alert: bool = False) -> None: ...


class Told:
    def __init__(self, team: Team, answers: Answers) -> None:
        self._team = team
        self._answers = answers

    def answer(self, press: Press, text: str, *, alert: bool) -> bool:
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

    def count(self, outcome: str) -> None:
        if self._team.metrics is not None:
            self._team.metrics.press(outcome)

    def unavailable(self, press: Press, what: str, exc: Exception) -> None:
        """The spool failed the press: nothing was changed, and the presser may try again."""
        log.warning("a press by %s %s: %s", press.by.handle, what, exc)
        self.count("failed")
        self.answer(press, self._team.words.press_unavailable, alert=True)

    def out_of_date(self, press: Press, verb: str, button: IssueButton, why: str) -> None:
        """Nothing done: the button no longer offers this, or another press changed it first."""
        log.info(
            "a press by %s to %s %s %s: nothing done", press.by.handle, verb, button.label, why
        )
        self.count("stale")
        self.answer(press, self._team.words.press_out_of_date, alert=True)
