"""The second stage of a press: the button's verb and the card it names. Only presses on
messages this relay sent count: the button's data names a key the relay keeps (cards/sent.py),
and that record must belong to the very message and chat the press came from, or to the
private chat of someone the relay called there for it (oncall/direct.py). The issue acted on
is the record's, never anything the client sent. A verb is the core's (cards/card.py) or the
capability's that registered its button (its owner)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ...core.errors import SpoolError
from ..card import Button, IssueButton, SentMessage, parse_callback
from ..team import Team
from .receive import Press
from .told import Told, log

# Whether the person numbered so, in their private chat with the bot, was given the buttons of
# this message of this chat (chat, message id). Raises SpoolError.
PressedElsewhere = Callable[[int, str, int], bool]


@dataclass(frozen=True)
class Found:
    """What a press is on: the button's verb and key, and the message and row kept for it."""

    verb: str
    key: str
    message: SentMessage
    button: IssueButton


class Routing:
    def __init__(
        self,
        team: Team,
        told: Told,
        buttons: Sequence[Button],
        pressed_elsewhere: PressedElsewhere | None,
    ) -> None:
        """`buttons`: the capabilities' buttons a press may be on (those with an owner)."""
        self._team = team
        self._told = told
        self._buttons = tuple(buttons)
        self._pressed_elsewhere = pressed_elsewhere

    def found(self, press: Press) -> Found | None:
        """What the press is on; None (answered) when the relay does not know it."""
        parsed = parse_callback(press.data, self._buttons)
        try:
            kept = self._team.store.pressed(parsed[1]) if parsed is not None else None
        except SpoolError as exc:
            self._told.unavailable(press, "could not be looked up", exc)
            return None
        if parsed is None or kept is None or not self._where_shown(press, kept[0]):
            log.info("a press by %s on a button this relay does not know: ignored", press.by.handle)
            self._told.count("unknown")
            self._told.answer(press, self._team.words.press_unknown, alert=True)
            return None
        self._team.met(press.by)  # on a button of the relay's: their name, for a call by tg:<id>
        return Found(parsed[0], parsed[1], kept[0], kept[1])

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
