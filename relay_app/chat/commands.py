"""The chat's commands (docs/actions.md): `/status` (what the relay knows of Telegram, GlitchTip
and its queue), and those the capabilities register when the relay is assembled: `/issues`
(chat/issues.py), `/oncall` (oncall/command.py), `/silences` (silences/command.py). They only
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

from ..cards.team import Person
from ..core.errors import DeliveryError, SpoolError
from ..core.json_values import json_int, json_object
from ..telegram.bot_commands import Asked, BotCommand
from ..telegram.client import TelegramClient
from ..words import Said, Words
from .answers import Answering, Asker, Served
from .written import Written

log = logging.getLogger(__name__)

# What follows a command's name, read no further.
MAX_ARGS = 200


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
    args: str = ""  # what follows the command's name
    by: Person | None = None  # who wrote it, as Telegram names them

    @property
    def chat(self) -> str:
        return self.asker.chat

    @classmethod
    def of(cls, update: Mapping[str, Any]) -> Command | None:
        """The update's command; None for any other update or message."""
        said = Written.of(update.get("message"))
        if said is None or not said.text.startswith("/"):
            return None
        parts = said.text[1:].split(maxsplit=1) if said.text[1:].strip() else [""]
        name, _, bot = parts[0].partition("@")
        update_id = update.get("update_id")
        return cls(
            name=name.casefold(),
            addressed_to=bot or None,
            asker=said.asker,
            update_id=json_int(update_id),
            args=parts[1].strip()[:MAX_ARGS] if len(parts) > 1 else "",
            by=_writer(update),
        )


def _writer(update: Mapping[str, Any]) -> Person | None:
    """Who wrote the command: a person, not a chat writing on its own behalf."""
    message = json_object(update.get("message"))
    if message.get("sender_chat") is not None or not isinstance(message.get("from"), dict):
        return None
    return Person.of(message.get("from"))


@dataclass(frozen=True)
class Status:
    """What /status says, each part already in words."""

    telegram: str
    # What the capabilities say of the outside services they call (GlitchTip's API), a line each.
    services: tuple[str, ...]
    queue: str
    # What the capabilities say of the chat asked in (a right the bot lacks there), a line each.
    more: tuple[str, ...] = ()


def status_command(status: Callable[[Words, str], Status]) -> BotCommand:
    """`/status`: what the relay knows of Telegram, of the services the capabilities call
    (GlitchTip) and of its queue, and what the capabilities say of the chat it is asked in."""

    def answer(asked: Asked, words: Words) -> Said:
        found = status(words, asked.chat)
        values = {
            "telegram": found.telegram,
            "services": "".join(f"\n{line}" for line in found.services),
            "queue": found.queue,
            "more": "".join(f"\n{line}" for line in found.more),
        }
        return Said("status_answer", values)

    return BotCommand("status", lambda words: words.command_status, answer)


@dataclass(frozen=True)
class Askers:
    """What the commands know of who asks: whether they may act (TELEGRAM_ACTION_USER_IDS:
    `/cover` changes who is called), and what keeps their name (a call by `tg:<id>` shows it)."""

    may_act: Callable[[Person], bool] = lambda person: False
    met: Callable[[Person], None] = lambda person: None


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
        askers: Askers | None = None,
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
        askers = askers or Askers()
        self._may_act = askers.may_act
        self._met = askers.met

    def _to_this_bot(self, command: Command) -> bool:
        """`/issues@name`: whether `name` is this bot's; a bare `/issues` is anyone's."""
        if command.addressed_to is None:
            return True
        mine = self._bot_username()
        return mine is not None and command.addressed_to.casefold() == mine.casefold()

    def _asked_where_answered(self, command: Command, answered: BotCommand) -> bool:
        """A chat's command in a chat the relay serves (the answers name issues and people);
        a private one (`/start`) in the private chat of the person who wrote it."""
        if answered.private:
            by = command.by
            return by is not None and by.id is not None and command.chat == str(by.id)
        if command.chat not in self._served:
            log.debug(
                "/%s in chat %s, which the relay does not serve: not answered",
                command.name,
                command.chat,
            )
            return False
        return True

    def _asked(self, command: Command) -> Asked:
        by = command.by
        return Asked(
            command.chat,
            command.args,
            person=by.mention if by is not None else None,
            may_act=by is not None and self._may_act(by),
            user_id=by.id if by is not None else None,
            name=(by.name or by.handle) if by is not None else "",
            message_id=command.asker.message_id,
            thread=command.asker.thread,
        )

    def handle(self, command: Command) -> bool:
        """Answer the command when it is one of these, for this bot, in a chat the relay
        serves; whether it was this handler's (the update goes nowhere else then)."""
        answered = self._commands.get(command.name)
        if answered is None:
            return False
        if not self._to_this_bot(command):
            return True  # another bot's: not answered, and not a reply to comment on
        if not self._asked_where_answered(command, answered):
            return True
        try:
            self._answer(command, answered)
        except SpoolError as exc:
            log.warning(
                "/%s in chat %s could not be answered now: %s", command.name, command.chat, exc
            )
        return True

    def _answer(self, command: Command, answered: BotCommand) -> None:
        """Once per update, within the answers' budget. Raises SpoolError."""
        keys = [f"update:{command.update_id}"] if command.update_id is not None else []
        if keys and not self._first_time(keys):
            return  # Telegram delivered it again: answered the first time
        if not self._answering.may_answer(command.asker):
            return  # its budget is spent: counted, and said once a minute
        if command.by is not None:
            self._met(command.by)  # their name, for a call by tg:<id>
        said = answered.answer(self._asked(command), self._words)
        if said is None or self._answering.answer(command.asker, said):
            self._count(command.name)
