"""A command people type in the chat (`/issues`), as its capability registers it when the relay
is assembled: its name, its description in the relay's language (what Telegram shows as people
type `/`, set with setMyCommands at start), and its answer in a chat. chat/commands.py answers
them, each once, in the chats the relay serves."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..words import Said, Words


@dataclass(frozen=True)
class BotCommand:
    name: str
    describe: Callable[[Words], str]
    # Its answer in a chat (the chat's key), in the catalogue's words.
    answer: Callable[[str, Words], Said]


def described(commands: Sequence[BotCommand], words: Words) -> list[dict[str, str]]:
    """The commands as setMyCommands takes them, described in the relay's language."""
    return [
        {"command": command.name, "description": command.describe(words)} for command in commands
    ]
