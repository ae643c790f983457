"""The buttons a capability adds to every issue's row of a card, and what a press of one is
given: the core keeps the card and finds the press's owner by its verb (presses/presses.py);
the capability says what the press does (operating/capability.py registers both).

A button's callback data is its code and the card's key (card.py), never an issue id; codes are
one or two ASCII letters, each registered once, none the core's own.

`Calls` is the core's name for what stops or goes on calling people about an alert, which on call
provides (oncall/steps.py) and presses, replies and the watcher ask; none of them imports on call.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import tzinfo
from typing import Protocol

from ..core.services import Key
from ..words import Words
from .card import Button, IssueButton, SentMessage


@dataclass(frozen=True)
class Pressed:
    """A press on a registered button, checked: on a message this relay sent, by someone allowed
    to act, on a button the row shows now. What its handler may do is given with it."""

    verb: str
    key: str
    message: SentMessage
    button: IssueButton
    by: str  # shown, for the card and the log: '@ada', or a name; never trusted
    by_id: int | None  # who: Telegram's user id
    zone: tzinfo  # the chat's, for the times it says
    words: Words
    # The press's one answer (text, as an alert), the presses' counter (by outcome), the card's
    # edit queued (False when it could not be), and the alert's calls stopped.
    answer: Callable[[str, bool], None]
    count: Callable[[str], None]
    edit: Callable[[], bool]
    acted_on: Callable[[], None]
    # Whether a write in answer (a chart) may go now, out of the typed-input budget of the
    # person and the chat (chat/answers.py): then it has taken the person's turn; otherwise
    # the refusal is counted and said as the budget says.
    may_answer: Callable[[], bool]
    # The press came too late to do anything (why, for the log: another press came first, or
    # the issue closed): logged, counted as stale, and answered so. The spool failed it (what
    # failed, and why): logged, counted as failed, and answered that it may be tried again.
    out_of_date: Callable[[str], None]
    unavailable: Callable[[str, Exception], None]


Press = Callable[[Pressed], None]


class Calls(Protocol):
    """What calls people about an alert until someone acts (on call's escalation)."""

    def acted(self, chat: str, message_id: int) -> None:
        """Someone acted on the message: its calls stop."""

    def taken(self, key: str) -> None:
        """Someone has the issue of this button: its calls stop."""

    def let_go(self, chat: str, message_ids: Sequence[int]) -> None:
        """The issue of these messages is nobody's again: their calls go on."""


CALLS: Key[Calls] = Key("calls")


__all__ = ["Button", "Calls", "Press", "Pressed"]
