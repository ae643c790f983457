"""The chat's commands (docs/actions.md): `/status` (what the relay knows of Telegram, GlitchTip
and its queue), and those the capabilities register when the relay is assembled: `/issues`
(watch/issues.py), `/oncall` (oncall/command.py), `/silences` (silences/command.py). They only
tell: anyone in a chat the relay serves may ask, and the answer is a reply under the command, a
job like every write to the chat (paced and retried), after every alert, call and edit the
chat is owed, out of the answers' small budget (answers.py): a flood of commands costs a
counter and a line a minute. A chat the relay does not serve gets no answer, whoever added the
bot there: the answers name issues and people. Each update acts once.

The commands are registered with Telegram (setMyCommands) at start, with their descriptions in
the relay's language (operating/setup_watch.py).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..core.errors import DeliveryError, SpoolError
from ..core.json_values import json_int
from ..telegram.bot_commands import BotCommand
from ..telegram.client import TelegramClient
from ..words import Said, Words
from .answers import Answering, Asker, Served
from .team import Written

log = logging.getLogger(__name__)


class BotName:
    """The bot's username, asked of Telegram (getMe) the first time a command names a bot, then
    kept: `/issues@this_bot` is this relay's, `/issues@other_bot` is not."""

    def __init__(self, api_url: str, token: str, *, timeout: float = 5.0) -> None:
        self._api_url = api_url
        self._token = token
        self._timeout = timeout
        self._lock = threading.Lock()
        self._name: str | None = None

    def __call__(self) -> str | None:
        with self._lock:
            if self._name is None:
                client = TelegramClient(self._api_url, self._token)
                try:
                    me = client.get_me(deadline=time.monotonic() + self._timeout)
                    self._name = str(me.get("username") or "") or None
                except DeliveryError as exc:
                    log.info("the bot's name could not be asked now: %s", exc)
                finally:
                    client.close()
            return self._name


@dataclass(frozen=True)
class Command:
    """A command in the chat, as far as the relay reads it: `/issues` or `/issues@bot`."""

    name: str
    addressed_to: str | None  # the bot named after '@', if any
    asker: Asker  # the command's message, and who wrote it
    update_id: int | None

    @property
    def chat(self) -> str:
        return self.asker.chat

    @classmethod
    def of(cls, update: Mapping[str, Any]) -> Command | None:
        """The update's command; None for any other update or message."""
        said = Written.of(update.get("message"))
        if said is None or not said.text.startswith("/"):
            return None
        word = said.text[1:].split(maxsplit=1)[0] if said.text[1:].strip() else ""
        name, _, bot = word.partition("@")
        update_id = update.get("update_id")
        return cls(
            name=name.casefold(),
            addressed_to=bot or None,
            asker=said.asker,
            update_id=json_int(update_id),
        )


@dataclass(frozen=True)
class Status:
    """What /status says, each part already in words."""

    telegram: str
    glitchtip: str
    queue: str


def status_command(status: Callable[[Words], Status]) -> BotCommand:
    """`/status`: what the relay knows of Telegram, GlitchTip and its queue."""

    def answer(chat: str, words: Words) -> Said:
        found = status(words)
        values = {"telegram": found.telegram, "glitchtip": found.glitchtip, "queue": found.queue}
        return Said("status_answer", values)

    return BotCommand("status", lambda words: words.command_status, answer)


class Commands:
    def __init__(
        self,
        *,
        commands: Sequence[BotCommand],
        served: Served,
        first_time: Callable[[list[str]], bool],
        answering: Answering,
        words: Words,
        count: Callable[[str], None] = lambda command: None,
    ) -> None:
        """`commands`: those the relay answers, its own and the capabilities'; `served`: the
        chats it answers in, and the bot's name, so that a command addressed to another bot is
        left to it; `first_time`: whether none of these update keys was handled before
        (cards/sent.py); `answering`: the answers' budget and where they go."""
        self._commands = {command.name: command for command in commands}
        self._served = served.chats
        self._bot_username = served.bot_username
        self._first_time = first_time
        self._answering = answering
        self._words = words
        self._count = count

    def _to_this_bot(self, command: Command) -> bool:
        """`/issues@name`: whether `name` is this bot's; a bare `/issues` is anyone's."""
        if command.addressed_to is None:
            return True
        mine = self._bot_username()
        return mine is not None and command.addressed_to.casefold() == mine.casefold()

    def handle(self, command: Command) -> bool:
        """Answer the command when it is one of these, for this bot, in a chat the relay
        serves; whether it was this handler's (the update goes nowhere else then)."""
        answered = self._commands.get(command.name)
        if answered is None:
            return False
        if not self._to_this_bot(command):
            return True  # another bot's: not answered, and not a reply to comment on
        if command.chat not in self._served:
            log.debug(
                "/%s in chat %s, which the relay does not serve: not answered",
                command.name,
                command.chat,
            )
            return True
        keys = [f"update:{command.update_id}"] if command.update_id is not None else []
        try:
            if keys and not self._first_time(keys):
                return True  # Telegram delivered it again: answered the first time
            if not self._answering.may_answer(command.asker):
                return True  # its budget is spent: counted, and said once a minute
            said = answered.answer(command.chat, self._words)
            if self._answering.answer(command.asker, said):
                self._count(command.name)
        except SpoolError as exc:
            log.warning(
                "/%s in chat %s could not be answered now: %s", command.name, command.chat, exc
            )
        return True
