"""On-call rotations (docs/oncall.md): `[[rotation]]` tables in the routes file, each with a
`name`, `people`, a period (`every = "1d"` or `"1w"`, or any number of h, d or w), a `start`
(`"2026-01-01T09:00"`, a wall-clock time in the rotation's `timezone`, else RELAY_TIMEZONE's)
and who is on duty at any moment: the people in turn, one period each, handing over at the
start's time of day. A mention (a route's, or an escalation step's) may name `oncall:NAME`: the
person on duty when the message is sent. With `announce = true`, each handoff is said in the
chats whose routes name the rotation (oncall/handoffs.py).

Periods are counted on the zone's wall clock, so a daily rotation hands over at 09:00 local
time on both sides of a change to summer time. Before its start, a rotation's first person is on
duty.

A cover (docs/oncall.md: `relay-app oncall cover`, `/cover` in the chat) puts someone else on
duty in a rotation for an interval; of two covers at once the later made holds, and a swap is two
covers. The covers are kept in the spool (oncall/covers.py); the `Roster` here says who is on
duty with them applied, given the covers it is handed.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from ..core.services import Key
from ..core.typed import MAX_USER_ID, is_person, wall_clock_of
from .sound import SoundError, zone_of

ONCALL = "oncall:"
_PERIOD = re.compile(r"^(\d{1,4})\s*([hdw])$")
# The longest turn, in days: a year.
MAX_PERIOD_DAYS = 366
_PERIOD_UNIT = {"h": timedelta(hours=1), "d": timedelta(days=1), "w": timedelta(weeks=1)}
_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,40}$")
MAX_PEOPLE = 50
_ONCALL_IN_TEXT = re.compile(r"oncall:([A-Za-z0-9_.-]{1,40})")


@dataclass(frozen=True)
class OnDuty:
    person: str
    until: datetime  # the next change of who is on duty (a handoff, a cover), in its zone
    next_person: str
    covering: str | None = None  # whose turn it is, when `person` covers it


@dataclass(frozen=True)
class Cover:
    """Someone on duty in a rotation from `starts_at` until `ends_at` (Unix times), whoever
    the rotation says; kept in the spool, numbered there."""

    id: int
    rotation: str
    person: str
    starts_at: float
    ends_at: float
    by: str = ""  # who made it: a person of the chat, or the login name of the command line


@dataclass(frozen=True)
class Rotation:
    name: str
    people: tuple[str, ...]
    every: timedelta
    start: datetime  # naive: a wall-clock time in `timezone`
    timezone: str | None = None  # None: RELAY_TIMEZONE's
    announce: bool = False  # each handoff said where the routes naming it send

    def zone(self, default: ZoneInfo) -> ZoneInfo:
        return ZoneInfo(self.timezone) if self.timezone else default

    def on_duty(self, at: float, default_zone: ZoneInfo) -> OnDuty:
        """Who is on duty at `at` (a Unix time), until when, and who comes next."""
        zone = self.zone(default_zone)
        wall = datetime.fromtimestamp(at, zone).replace(tzinfo=None)
        periods = max(0, (wall - self.start) // self.every)
        count = len(self.people)
        until = (self.start + self.every * (periods + 1)).replace(tzinfo=zone)
        return OnDuty(self.people[periods % count], until, self.people[(periods + 1) % count])


def rotation_of(table: Mapping[str, Any], number: int, problem: Any) -> Rotation:
    """A `[[rotation]]` table, checked; `problem(key, said)` makes the error."""
    unknown = sorted(set(table) - {"name", "people", "every", "start", "timezone", "announce"})
    if unknown:
        keys = "name, people, every, start, timezone, announce"
        raise problem(unknown[0], f"unknown key (keys: {keys})")
    name = table.get("name")
    if not isinstance(name, str) or not _NAME.match(name):
        raise problem("name", "must be a name of letters, digits, '_', '.' or '-', as oncall:NAME")
    people = _people(table.get("people"), problem)
    every = _period(table.get("every"), problem)
    start = _start(table.get("start"), problem)
    announce = table.get("announce", False)
    if not isinstance(announce, bool):
        raise problem("announce", "must be true or false")
    return Rotation(name, people, every, start, _zone(table.get("timezone"), problem), announce)


def _people(raw: object, problem: Any) -> tuple[str, ...]:
    if not isinstance(raw, list) or not raw or not all(isinstance(p, str) for p in raw):
        raise problem("people", 'must be a list of people: ["@anna_ops", "@boris_ops"]')
    if wrong := [person for person in raw if not is_person(person)]:
        raise problem(
            "people", f"{wrong[0]!r} is neither @username nor tg:<user id> (1 to {MAX_USER_ID})"
        )
    if len(raw) > MAX_PEOPLE:
        raise problem("people", f"names {len(raw)}; a rotation may have {MAX_PEOPLE}")
    return tuple(raw)


def _zone(raw: object, problem: Any) -> str | None:
    if raw is None:
        return None
    if not isinstance(raw, str):
        raise problem("timezone", "must be a string: Europe/Moscow")
    try:
        zone_of(raw)
    except SoundError as exc:
        raise problem("timezone", str(exc)) from None
    return raw


def _period(raw: object, problem: Any) -> timedelta:
    found = _PERIOD.match(raw.strip()) if isinstance(raw, str) else None
    period = int(found.group(1)) * _PERIOD_UNIT[found.group(2)] if found else timedelta(0)
    if not timedelta(0) < period <= timedelta(days=MAX_PERIOD_DAYS):
        raise problem("every", 'must be a period like "1d" or "1w" (h, d or w), a year at most')
    return period


def _start(raw: object, problem: Any) -> datetime:
    start = wall_clock_of(raw) if isinstance(raw, str) else None
    if start is None:
        raise problem("start", 'must be a wall-clock time like "2026-01-01T09:00" (timezone apart)')
    return start


class Roster:
    """Who is on duty in each rotation at a moment, the covers applied. `covers(at)` gives
    the covers that have not ended by `at` (kept in the spool: oncall/covers.py); `zone` is
    RELAY_TIMEZONE's, for a rotation that names none."""

    def __init__(
        self,
        rotations: Mapping[str, Rotation] | Sequence[Rotation] = (),
        zone: ZoneInfo | None = None,
        covers: Callable[[float], Sequence[Cover]] = lambda at: (),
    ) -> None:
        listed = rotations.values() if isinstance(rotations, Mapping) else rotations
        self.rotations: dict[str, Rotation] = {rotation.name: rotation for rotation in listed}
        self.zone = zone or ZoneInfo("UTC")
        self._covers = covers

    def __bool__(self) -> bool:
        return bool(self.rotations)

    def named_now(self, people: Sequence[str], at: float) -> list[str]:
        """The mentions with each `oncall:NAME` made the person on duty at `at`, once each."""
        return on_duty_now(people, self, at)

    def named_in(self, text: str, at: float) -> str:
        """`text` with each `oncall:NAME` in it made the person on duty at `at`."""
        return on_duty_in(text, self, at)

    def as_at(self, at: float) -> Roster:
        """This roster with its covers read once now, as they are at `at`: for use inside a
        unit of work of the spool, where reading them again (another unit of work) must not
        happen."""
        covers = tuple(self._covers(at))
        return Roster(self.rotations, self.zone, lambda when: covers)

    def on_duty(self, rotation: Rotation, at: float) -> OnDuty:
        """Who is on duty in `rotation` at `at`, until the next change, and who then."""
        covers = [cover for cover in self._covers(at) if cover.rotation == rotation.name]
        return _duty(rotation, covers, at, rotation.zone(self.zone))

    def covers(self, at: float) -> list[Cover]:
        """The covers of these rotations not ended by `at`, soonest first."""
        found = [cover for cover in self._covers(at) if cover.rotation in self.rotations]
        return sorted(found, key=lambda cover: (cover.starts_at, cover.id))

    def person(self, name: str, at: float) -> str | None:
        """Who is on duty in the rotation `name` at `at`; None for no rotation of that name."""
        rotation = self.rotations.get(name)
        return self.on_duty(rotation, at).person if rotation is not None else None


def _duty(rotation: Rotation, covers: Sequence[Cover], at: float, zone: ZoneInfo) -> OnDuty:
    turn = rotation.on_duty(at, zone)
    cover = _cover_at(covers, at)
    # Who is on duty changes at the next handoff, when this cover ends, or when another starts.
    changes = [turn.until.timestamp()]
    changes += [c.ends_at for c in covers if c.starts_at <= at < c.ends_at]
    changes += [c.starts_at for c in covers if at < c.starts_at]
    until = min(changes)
    then = _cover_at(covers, until)
    next_person = then.person if then else rotation.on_duty(until, zone).person
    return OnDuty(
        cover.person if cover else turn.person,
        datetime.fromtimestamp(until, zone),
        next_person,
        covering=turn.person if cover and cover.person != turn.person else None,
    )


def _cover_at(covers: Sequence[Cover], at: float) -> Cover | None:
    """The cover holding at `at`: of several, the one made last."""
    holding = [cover for cover in covers if cover.starts_at <= at < cover.ends_at]
    return max(holding, key=lambda cover: cover.id) if holding else None


def on_duty_in(text: str, roster: Roster, at: float) -> str:
    """`text` with each `oncall:NAME` in it made the person on duty at `at`."""

    def person(found: re.Match[str]) -> str:
        return roster.person(found.group(1), at) or found.group(0)

    return _ONCALL_IN_TEXT.sub(person, text)


def named_rotations(people: Sequence[str]) -> list[str]:
    """The rotations these mentions name (`oncall:NAME`)."""
    return [person.removeprefix(ONCALL) for person in people if person.startswith(ONCALL)]


def on_duty_now(people: Sequence[str], roster: Roster, at: float) -> list[str]:
    """The mentions with each `oncall:NAME` made the person on duty at `at`, once each."""
    found = [
        (roster.person(person.removeprefix(ONCALL), at) if person.startswith(ONCALL) else None)
        or person
        for person in people
    ]
    return list(dict.fromkeys(found))


# Who is on duty in each rotation, the covers applied: the wiring provides it (its covers are
# kept by on call), on call's escalation and handoffs ask for it.
ROSTER: Key[Roster] = Key("roster")
