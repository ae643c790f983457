"""The stage after the routes: what may hold an alert back from its chat, keeping it, before it
is queued. The core defines what a hold is; a capability registers one (silences/silencing.py,
as `HOLD`) and may be told of each alert held (`HELD_NOTED`: the daily summaries count them).
The alert's message is made only when a hold asks for it, to tell whether it matches."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from ..core.routing import Destination
from ..core.services import Key
from ..message.formatting import Message


class Silence(Protocol):
    """What holds an alert back from its chat (a silence: silences/)."""

    @property
    def id(self) -> int: ...


class Hold(Protocol):
    """What may hold a webhook's alert back from its chat, keeping it (silences/silencing.py,
    registered when the relay is assembled): the message is made only when asked for."""

    def hold(
        self, message: Message | Callable[[], Message], destination: Destination
    ) -> Silence | None: ...


class HeldNoted(Protocol):
    """Told of each alert a hold kept back from its place (the daily summaries count it)."""

    def held(self, destination: Destination) -> None: ...


HOLD: Key[Hold] = Key("hold")
HELD_NOTED: Key[HeldNoted] = Key("held noted")


def held(
    hold: Hold | None, message: Callable[[], Message], destination: Destination
) -> Silence | None:
    """The hold that keeps the alert back from `destination` now; None: it goes on to the
    queue (no hold is registered, or none matches)."""
    return hold.hold(message, destination) if hold is not None else None
