"""The chat's commands (docs/actions.md): `/issues` (the unresolved issues this chat receives,
most events first, as the watcher last read them), `/oncall` (who is on duty in each rotation),
`/silences` (what is held back here, until when) and `/status` (what the relay knows of
Telegram, GlitchTip and its queue). They only tell: anyone in a chat the relay serves may ask,
and the answer is a reply under the command, a job like every write to the chat (paced and
retried), after every alert, call and edit the chat is owed, out of the answers' small budget
(answers.py): a flood of commands costs a counter and a line a minute. A chat the relay does
not serve gets no answer, whoever added the bot there: the answers name issues and people.
Each update acts once.

The commands are registered with Telegram (setMyCommands) at start, with their descriptions in
the relay's language (operating/setup_watch.py).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any
from zoneinfo import ZoneInfo

from ..core.errors import DeliveryError, SpoolError
from ..core.json_values import json_int
from ..message.cards import clock_time
from ..message.daily_summary import open_issue_lines
from ..routes.rotation import Rotation
from ..spool.silences import SilenceStore
from ..spool.watched import WatchStore
from ..telegram.client import TelegramClient
from ..words import Said, Words
from .answers import Answering, Asker
from .daily_summary import issue_data
from .team import Written

log = logging.getLogger(__name__)

COMMANDS = ("issues", "oncall", "silences", "status")
# The issues /issues names; the rest are counted.
MOST_LISTED = 20


def described(words: Words) -> list[dict[str, str]]:
    """The commands as setMyCommands takes them, described in the relay's language."""
    descriptions = {
        "issues": words.command_issues,
        "oncall": words.command_oncall,
        "silences": words.command_silences,
        "status": words.command_status,
    }
    return [{"command": name, "description": descriptions[name]} for name in COMMANDS]


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


class Commands:
    def __init__(
        self,
        *,
        served: Collection[str],
        first_time: Callable[[list[str]], bool],
        answering: Answering,
        watched: WatchStore,
        silences: SilenceStore,
        rotations: Mapping[str, Rotation],
        status: Callable[[Words], Status],
        words: Words,
        zone: ZoneInfo,
        bot_username: Callable[[], str | None] = lambda: None,
        count: Callable[[str], None] = lambda command: None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        """`served`: the chats the relay posts to (their keys); `first_time`: whether none of
        these update keys was handled before (spool/sent.py); `answering`: the answers' budget
        and where they go; `bot_username`: the bot's own, so that a command addressed to another
        bot is left to it."""
        self._served = frozenset(served)
        self._first_time = first_time
        self._answering = answering
        self._watched = watched
        self._silences = silences
        self._rotations = dict(rotations)
        self._status = status
        self._words = words
        self._zone = zone
        self._bot_username = bot_username
        self._count = count
        self._clock = clock

    def _to_this_bot(self, command: Command) -> bool:
        """`/issues@name`: whether `name` is this bot's; a bare `/issues` is anyone's."""
        if command.addressed_to is None:
            return True
        mine = self._bot_username()
        return mine is not None and command.addressed_to.casefold() == mine.casefold()

    def handle(self, command: Command) -> bool:
        """Answer the command when it is one of these, for this bot, in a chat the relay
        serves; whether it was this handler's (the update goes nowhere else then)."""
        if command.name not in COMMANDS:
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
            if self._answering.answer(command.asker, self._answer(command)):
                self._count(command.name)
        except SpoolError as exc:
            log.warning(
                "/%s in chat %s could not be answered now: %s", command.name, command.chat, exc
            )
        return True

    def _answer(self, command: Command) -> Said:
        if command.name == "issues":
            return self._issues(command)
        if command.name == "oncall":
            return self._oncall()
        if command.name == "silences":
            return self._silenced(command)
        status = self._status(self._words)
        values = {"telegram": status.telegram, "glitchtip": status.glitchtip, "queue": status.queue}
        return Said("status_answer", values)

    def _issues(self, command: Command) -> Said:
        now = self._clock()
        issues = [
            issue_data(issue)
            for issue in self._watched.overview(command.chat, now=now)
            if issue.status == "unresolved"
        ]
        if not issues:
            return Said("issues_none")
        lines = open_issue_lines(issues, self._words, most=MOST_LISTED)
        return Said("issues_answer", {"count": str(len(issues)), "lines": "\n".join(lines)})

    def _oncall(self) -> Said:
        if not self._rotations:
            return Said("oncall_none")
        now = self._clock()
        lines = []
        for rotation in self._rotations.values():
            duty = rotation.on_duty(now, self._zone)
            lines.append(
                self._words.oncall_line.format(
                    name=rotation.name,
                    person=duty.person,
                    until=f"{duty.until:%d.%m %H:%M} {duty.until.tzname()}",
                    next=duty.next_person,
                )
            )
        return Said("oncall_answer", {"lines": "\n".join(lines)})

    def _silenced(self, command: Command) -> Said:
        now = self._clock()
        silences = self._silences.active(command.chat, now=now)
        if not silences:
            return Said("silences_none")
        lines = [
            self._words.silences_line.format(
                what=silence.matchers.describe(self._words, label=silence.label),
                until=clock_time(silence.ends_at),
                by=silence.created_by,
            )
            for silence in silences
        ]
        return Said("silences_answer", {"lines": "\n".join(lines)})
