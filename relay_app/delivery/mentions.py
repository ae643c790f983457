"""Whom a message calls when it goes: its mentions as they name people then (each `oncall:NAME`
the person on duty, which on call's roster with its covers says: the renderer is given it and
names no rotation), the names Telegram gave the people it met, the zone of a route that names
none (RELAY_TIMEZONE) and the zone each chat reads the times a message says in."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol
from zoneinfo import ZoneInfo

from ..routes.zones import Zones


class Mentioned(Protocol):
    """Whom a message's mentions name when it goes: each `oncall:NAME` the person on duty then
    (on call's roster with its covers, registered as `ROSTER`, or the routes' rotations
    alone), any other mention as it is written."""

    def named_now(self, people: Sequence[str], at: float) -> list[str]:
        """The mentions as they name people at `at`, once each."""
        ...

    def named_in(self, text: str, at: float) -> str:
        """`text` with each mention in it as it names a person at `at`."""
        ...


class AsWritten:
    """Mentions that name no rotation: each as it is written."""

    def named_now(self, people: Sequence[str], at: float) -> list[str]:
        return list(dict.fromkeys(people))

    def named_in(self, text: str, at: float) -> str:
        return text


@dataclass(frozen=True)
class OnCall:
    """Whom a message's mentions name when it goes (`mentioned`), and the time zone of a route
    that names none (RELAY_TIMEZONE): for quiet hours; and the zone each chat reads the times a
    message says in (routes/zones.py)."""

    mentioned: Mentioned = field(default_factory=AsWritten)
    zone: ZoneInfo = field(default_factory=lambda: ZoneInfo("UTC"))
    places: Zones = field(default_factory=Zones)
    # The names Telegram gave the people of these mentions (`tg:<id>`), where the relay met
    # them (oncall/people.py): a mention of one without a username shows their name.
    names: Callable[[Sequence[str]], Mapping[str, str]] = lambda people: {}
