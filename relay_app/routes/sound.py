"""Whether a route's alert rings: `silent = true` sends it without sound always; `quiet_hours =
"22:00-08:00"` (in the route's `timezone`, else RELAY_TIMEZONE) without sound inside the window,
except the issues whose level is in `loud_levels`. Telegram's `disable_notification` is what a
quiet message is sent with: it arrives, is read, and does not ring.

Decided when the message is sent (the window is the sending moment's), from what the job holds:
the route's sound, stored with the alert, and each issue's level, from GlitchTip's API when its
details came in time, else from the webhook's colour. GlitchTip gives a fatal issue the colour
of an error, so a colour that says `error` may be either: it rings when either is loud.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from datetime import time as clock_time
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

# The levels GlitchTip's issues have (its API's `level`), the words loud_levels takes.
ISSUE_LEVELS = ("fatal", "error", "warning", "info", "debug")
# What the webhook's colour can say of a level: GlitchTip's colour for error is fatal's too.
_COLOUR_MAY_BE = {"error": ("error", "fatal"), "info": ("info",), "warning": ("warning", "debug")}
_WINDOW = re.compile(r"^([01]\d|2[0-3]):([0-5]\d)-([01]\d|2[0-3]):([0-5]\d)$")


class SoundError(ValueError):
    """A route's sound keys cannot be used; the message says which and the fix."""


def zone_of(name: str) -> ZoneInfo:
    """The IANA time zone `name` (Europe/Moscow). Raises SoundError."""
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise SoundError(
            f"{name!r} is not a time zone: use an IANA name like Europe/Moscow or UTC"
        ) from None


@dataclass(frozen=True)
class QuietHours:
    starts: clock_time
    ends: clock_time  # before `starts`: the window runs past midnight

    @classmethod
    def parse(cls, raw: str) -> QuietHours:
        found = _WINDOW.match(raw.strip())
        if found is None:
            raise SoundError(f'{raw!r} is not a window of the day: write "22:00-08:00"')
        starts_h, starts_m, ends_h, ends_m = (int(part) for part in found.groups())
        window = cls(clock_time(starts_h, starts_m), clock_time(ends_h, ends_m))
        if window.starts == window.ends:
            raise SoundError(f"{raw!r} starts where it ends: give a window, or silent = true")
        return window

    def holds(self, moment: clock_time) -> bool:
        if self.starts < self.ends:
            return self.starts <= moment < self.ends
        return moment >= self.starts or moment < self.ends

    def __str__(self) -> str:
        return f"{self.starts:%H:%M}-{self.ends:%H:%M}"


@dataclass(frozen=True)
class Sound:
    silent: bool = False
    quiet_hours: QuietHours | None = None
    timezone: str | None = None  # None: RELAY_TIMEZONE's
    loud_levels: tuple[str, ...] = ()

    def rings(self, at: float, levels: Collection[str], default_zone: ZoneInfo) -> bool:
        """Whether an alert whose issues may have these `levels` (levels_of), sent `at` (a
        Unix time), rings."""
        if self.silent:
            return False
        if self.quiet_hours is None:
            return True
        zone = ZoneInfo(self.timezone) if self.timezone else default_zone
        if not self.quiet_hours.holds(datetime.fromtimestamp(at, zone).time()):
            return True
        return any(level in self.loud_levels for level in levels)

    def __bool__(self) -> bool:
        return self.silent or self.quiet_hours is not None

    def to_json(self) -> dict[str, Any]:
        return {
            "silent": self.silent,
            "quiet_hours": str(self.quiet_hours) if self.quiet_hours else None,
            "timezone": self.timezone,
            "loud_levels": list(self.loud_levels),
        }

    @classmethod
    def from_json(cls, raw: object) -> Sound | None:
        """The sound a job holds; None for none (or one this relay cannot read: it rings)."""
        if not isinstance(raw, Mapping):
            return None
        try:
            window = raw.get("quiet_hours")
            zone = raw.get("timezone")
            return cls(
                silent=raw.get("silent") is True,
                quiet_hours=QuietHours.parse(window) if isinstance(window, str) else None,
                timezone=str(zone_of(zone)) if isinstance(zone, str) else None,
                loud_levels=tuple(str(level) for level in raw.get("loud_levels") or ()),
            )
        except SoundError:
            return None


# A route that says nothing of sound: every alert rings.
RINGS = Sound()


def levels_of(issues: Iterable[tuple[str | None, str]]) -> set[str]:
    """The levels an alert's issues may have, each given as (its level from GlitchTip's API,
    None when its details did not come; the level its colour says)."""
    found: set[str] = set()
    for known, coloured in issues:
        found.update((known.casefold(),) if known else _COLOUR_MAY_BE.get(coloured, ISSUE_LEVELS))
    return found


def sound_of(table: Mapping[str, Any], problem: Any) -> Sound:
    """A route's sound keys, checked; `problem(key, said)` makes the error."""
    silent = table.get("silent", False)
    if not isinstance(silent, bool):
        raise problem("silent", "must be true or false")
    window = _window(table, problem)
    zone = _zone(table, problem)
    loud = _loud_levels(table, problem)
    if loud and window is None:
        raise problem("loud_levels", "is for quiet_hours: give the window too")
    if silent and window is not None:
        raise problem("silent", "is never a sound: leave out quiet_hours, or silent")
    return Sound(silent, window, zone, loud)


def _window(table: Mapping[str, Any], problem: Any) -> QuietHours | None:
    if "quiet_hours" not in table:
        return None
    raw = table["quiet_hours"]
    if not isinstance(raw, str):
        raise problem("quiet_hours", 'must be a string: "22:00-08:00"')
    window: QuietHours = _checked(problem, "quiet_hours", lambda: QuietHours.parse(raw))
    return window


def _zone(table: Mapping[str, Any], problem: Any) -> str | None:
    zone = table.get("timezone")
    if zone is None:
        return None
    if not isinstance(zone, str):
        raise problem("timezone", "must be a string: Europe/Moscow")
    _checked(problem, "timezone", lambda: zone_of(zone))
    return zone


def _loud_levels(table: Mapping[str, Any], problem: Any) -> tuple[str, ...]:
    loud = table.get("loud_levels", [])
    if not isinstance(loud, list) or not all(isinstance(level, str) for level in loud):
        raise problem("loud_levels", 'must be a list of levels: ["fatal"]')
    if wrong := [level for level in loud if level.casefold() not in ISSUE_LEVELS]:
        raise problem("loud_levels", f"{wrong[0]!r} is not a level: {', '.join(ISSUE_LEVELS)}")
    return tuple(level.casefold() for level in loud)


def _checked(problem: Any, key: str, make: Any) -> Any:
    try:
        return make()
    except SoundError as exc:
        raise problem(key, str(exc)) from None
