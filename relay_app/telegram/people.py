"""The people the relay met in the chats it serves, as the core asks for them: whom a call by
`tg:<id>` names, that someone acted or asked (their name kept), and whether someone was given a
card's buttons in their private chat. On call keeps them (oncall/people.py) and provides this
service when it starts; without it, a call names people by number and a button is pressed only
where it was sent."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from ..core.services import Key


class People(Protocol):
    def met(self, user_id: int, username: str | None, name: str) -> None:
        """They acted or asked in a served chat. Raises SpoolError."""

    def names(self, mentions: Sequence[str]) -> Mapping[str, str]:
        """The names of the `tg:<id>` people among `mentions`. Raises SpoolError."""

    def pressed_privately(self, user_id: int, chat: str, message_id: int) -> bool:
        """Whether this person, in their private chat, was given the buttons of this message
        of this chat. Raises SpoolError."""


PEOPLE: Key[People] = Key("people")
