"""A command people type in the chat (`/issues`), as its capability registers it when the relay
is assembled: its name, its description in the relay's language (what Telegram shows as people
type `/`, set with setMyCommands at start), and its answer in a chat. chat/commands.py answers
them, each once, in the chats the relay serves."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..core.services import Key
from ..words import Said, Words


@dataclass(frozen=True)
class Asked:
    """A command as its answer reads it: in which chat (its key), what follows the command's
    name, and who asked: as a mention names them (`@username`, or `tg:<user id>` for people
    without one), and whether they may act (TELEGRAM_ACTION_USER_IDS). The chat is one the
    relay serves; nothing else of the update is trusted."""

    chat: str
    args: str = ""
    person: str | None = None
    may_act: bool = False
    user_id: int | None = None  # Telegram's id of who asked
    name: str = ""  # their name, as Telegram gives it
    # The command's message, and the forum topic it was written in: where an answer of the
    # capability's own kind goes (a chart), under it.
    message_id: int = 0
    thread: int | None = None


@dataclass(frozen=True)
class BotCommand:
    name: str
    describe: Callable[[Words], str]
    # Its answer to a command, in the catalogue's words; None: it answers with a write of
    # its own kind, which it queues itself (a chart, once drawn), the person's turn taken.
    answer: Callable[[Asked, Words], Said | None]
    # Asked in a person's private chat with the bot (`/start`), never in the chats it serves;
    # not offered in Telegram's list.
    private: bool = False


def described(commands: Sequence[BotCommand], words: Words) -> list[dict[str, str]]:
    """The commands as setMyCommands takes them, described in the relay's language."""
    return [
        {"command": command.name, "description": command.describe(words)}
        for command in commands
        if not command.private
    ]


# The chat's commands, as Telegram lists them: acting from the chat provides them (setMyCommands
# asks for the list once Telegram answers).
COMMANDS: Key[tuple[BotCommand, ...]] = Key("commands")
