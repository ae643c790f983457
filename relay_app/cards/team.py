"""What acting on alerts from the chat needs, whichever update it comes from (a press, a reply):
the team's side of it. Who may act, how a person is named, and the parts every handler shares:
the sent messages the relay keeps, GlitchTip's API, the chat's words, the counters and the
clock.
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Callable
from dataclasses import dataclass

from ..core.errors import SpoolError
from ..core.json_values import json_object
from ..core.metrics import Metrics
from ..core.trackers import IssueActions
from ..core.typed import shown_name, user_id_of
from ..telegram.people import People
from ..words import Words
from .sent import SentStore

log = logging.getLogger(__name__)

Clock = Callable[[], float]


@dataclass(frozen=True)
class Person:
    """Someone in the chat, as Telegram names the sender of an update. Who they are is `id`,
    Telegram's and no one else's: a take, Let go, a cover, a press and a reply compare it,
    never a name; `handle` and `name` are only shown."""

    id: int | None
    # '@ada' (a username Telegram gave with the update), or the name without one, never shown
    # as a mention (core/typed.py's shown_name): for the chat's lines, notices and logs.
    handle: str
    # '"Ada Lovelace" (@ada, id 4242)': for a comment in GlitchTip. The id is Telegram's and no
    # one else's; the name is anyone's, so it is quoted (its quotes and line breaks escaped) and
    # cannot end the author line or pass for another person's.
    signature: str
    username: str | None = None  # without the '@'
    name: str = ""  # first and last, one line

    @property
    def mention(self) -> str | None:
        """As a route's mention names them: '@ada', or 'tg:4242' without a username."""
        if self.username is not None and _MENTIONED.fullmatch(self.username):
            return f"@{self.username}"
        return f"tg:{self.id}" if self.id is not None and self.id > 0 else None

    @classmethod
    def of(cls, sender: object) -> Person:
        found = json_object(sender)
        username = found.get("username")
        account = (
            f"@{username}" if isinstance(username, str) and _USERNAME.fullmatch(username) else None
        )
        name = " ".join(
            str(part) for part in (found.get("first_name"), found.get("last_name")) if part
        )[:64]
        user_id = user_id_of(found.get("id"))
        # One line, whatever the name holds, and never a mention it is not: it is shown in the
        # chat's messages too.
        handle = account or shown_name(name) or "someone"
        return cls(
            id=user_id,
            handle=handle[:64],
            signature=_signature(name, account, user_id),
            username=account[1:] if account else None,
            name=shown_name(name),
        )


def _signature(name: str, account: str | None, user_id: int | None) -> str:
    number = f"id {user_id}" if user_id is not None else None
    if not name:
        return f"{account} ({number})" if account and number else account or number or "someone"
    within = ", ".join(part for part in (account, number) if part)
    return json.dumps(name, ensure_ascii=False) + (f" ({within})" if within else "")


# Telegram's usernames: 5 to 32 letters, digits and underscores (shorter ones are old or bots').
_USERNAME = re.compile(r"[A-Za-z0-9_]{1,32}")
# A username a mention can name (routes/table.py's @username).
_MENTIONED = re.compile(r"[A-Za-z][A-Za-z0-9_]{3,31}")


@dataclass(frozen=True)
class Team:
    """The parts a press and a reply both act with. `allowed_users` is
    TELEGRAM_ACTION_USER_IDS: empty, everyone in the chat may act."""

    store: SentStore
    # The issue's source's API: GlitchTip's, Sentry's (core/trackers.py).
    trackers: IssueActions
    allowed_users: frozenset[int]
    words: Words
    metrics: Metrics | None = None
    clock: Clock = time.time
    # Keeps who acted, by name (a call by `tg:<id>` shows it: oncall/people.py).
    met: Callable[[Person], None] = lambda person: None

    def may_act(self, person: Person) -> bool:
        return not self.allowed_users or person.id in self.allowed_users


def met_by(people: People | None) -> Callable[[Person], None]:
    """Keep the name and username of someone who asked or acted in a chat the relay serves
    (a call by `tg:<id>` shows the name), where someone keeps them (on call); what the spool
    cannot keep now waits for next time."""

    def met(person: Person) -> None:
        if people is None or person.id is None or person.id <= 0:
            return
        try:
            people.met(person.id, person.username, person.name)
        except SpoolError as exc:
            log.debug("%s could not be kept as met: %s", person.handle, exc)

    return met
