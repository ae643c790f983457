"""What `relay-app check` asks of the boards: in each chat that keeps one, that the bot may pin
it (an administrator with the right to pin messages)."""

from __future__ import annotations

from collections.abc import Iterator

from ..operating.config import Settings
from ..operating.selfcheck import Verdict, bot_in_chats

FIX = "make the bot an administrator of the group with the right to pin messages"


def board_verdicts(settings: Settings) -> Iterator[Verdict]:
    places = settings.routes.boards(settings.default_destination)
    for found in bot_in_chats(settings, places, "board"):
        if isinstance(found, Verdict):
            yield found
            continue
        name = f"board in chat {found.chat}"
        private = found.info.get("type") == "private"
        if private or found.may("can_pin_messages"):
            yield Verdict(name, True, "the bot may pin it")
        else:
            yield Verdict(
                name, False, "the bot may not pin messages: the board stays unpinned", FIX
            )
