"""What acting on alerts from the chat needs, whichever update it comes from (a press, a reply):
the team's side of it. Who may act, how a person is named, and the parts every handler shares:
the sent messages the relay keeps, GlitchTip's API, the chat's words, the counters and the
clock.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..core.metrics import Metrics
from ..glitchtip.api import GlitchTipApi
from ..spool.sent import SentStore
from ..words import Words

Clock = Callable[[], float]


@dataclass(frozen=True)
class Person:
    """Someone in the chat, as Telegram names the sender of an update."""

    id: int | None
    handle: str  # '@ada', or the name without a username: for logs and notices
    signature: str  # 'Ada Lovelace (@ada)': for a comment in GlitchTip

    @classmethod
    def of(cls, sender: object) -> Person:
        found: dict[str, Any] = sender if isinstance(sender, dict) else {}
        username = found.get("username")
        name = " ".join(
            str(part) for part in (found.get("first_name"), found.get("last_name")) if part
        )
        handle = f"@{username}" if username else name or "someone"
        signature = f"{name} ({handle})" if username and name else handle
        return cls(id=_user_id(found.get("id")), handle=handle[:64], signature=signature[:128])


def _user_id(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


@dataclass(frozen=True)
class Team:
    """The parts a press and a reply both act with. `allowed_users` is
    TELEGRAM_ACTION_USER_IDS: empty, everyone in the chat may act."""

    store: SentStore
    glitchtip: GlitchTipApi
    allowed_users: frozenset[int]
    words: Words
    metrics: Metrics | None = None
    clock: Clock = time.time

    def may_act(self, person: Person) -> bool:
        return not self.allowed_users or person.id in self.allowed_users
