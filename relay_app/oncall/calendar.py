"""A rotation as a calendar (RFC 5545, written by the icalendar library: its lines folded at 75
octets, its text escaped, the rotation's time zone given as a VTIMEZONE): one event per shift,
from the start of the turn under way to `days` ahead, each with the person on duty, the covers
applied (a cover's event says whose turn it covers). A shift's UID is the rotation's name and
the shift's start and end, so the same shift keeps its UID from one export to the next, and a
cover that changes who has it updates the event in a subscribed calendar."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from ..routes.rotation import Roster, Rotation

# How far ahead a calendar goes, by default and at most.
DAYS = 28
MAX_DAYS = 366
# Shifts in one calendar, at most (an hourly rotation over a year is 8,784).
MAX_SHIFTS = 10_000
PRODID = "-//relay-app//on call//EN"


@dataclass(frozen=True)
class Shift:
    person: str
    starts_at: float
    ends_at: float
    covering: str | None = None  # whose turn it is, when `person` covers it


def shifts(roster: Roster, rotation: Rotation, *, now: float, days: int) -> list[Shift]:
    """Who is on duty from the start of the turn under way at `now` to the end of the shift
    under way `days` ahead (whole shifts: each keeps its UID from one export to the next), one
    shift per person in a row (a cover splits a turn; a cover by the turn's own person does
    not)."""
    zone = rotation.zone(roster.zone)
    wall = datetime.fromtimestamp(now, zone).replace(tzinfo=None)
    turns = max(0, (wall - rotation.start) // rotation.every)
    turn_start = (rotation.start + rotation.every * turns).replace(tzinfo=zone).timestamp()
    at, end = min(turn_start, now), now + days * 86400
    found: list[Shift] = []
    while at < end and len(found) < MAX_SHIFTS:
        duty = roster.on_duty(rotation, at)
        until = duty.until.timestamp()
        if until <= at:  # a clock that does not move on: never loop
            break
        last = found[-1] if found else None
        if last is not None and (last.person, last.covering) == (duty.person, duty.covering):
            found[-1] = Shift(last.person, last.starts_at, until, last.covering)
        else:
            found.append(Shift(duty.person, at, until, duty.covering))
        at = until
    return found


def calendar_of(roster: Roster, name: str, *, now: float, days: int = DAYS) -> bytes:
    """The rotation `name` as iCalendar. Raises KeyError for no rotation of that name."""
    # Imported here, where a calendar is written: every process of the relay would otherwise
    # pay its import (about 45 ms) at start, for a feed asked for now and then.
    from icalendar import Calendar, Event

    rotation = roster.rotations[name]
    zone = rotation.zone(roster.zone)
    calendar = Calendar()
    calendar.add("prodid", PRODID)
    calendar.add("version", "2.0")
    calendar.add("x-wr-calname", f"On call: {name}")
    calendar.add("x-wr-timezone", str(zone.key))
    stamp = datetime.fromtimestamp(now, UTC)
    for shift in shifts(roster, rotation, now=now, days=days):
        event = Event()
        event.add("uid", _uid(name, shift))
        event.add("dtstamp", stamp)
        event.add("dtstart", datetime.fromtimestamp(shift.starts_at, zone))
        event.add("dtend", datetime.fromtimestamp(shift.ends_at, zone))
        event.add("summary", f"On call ({name}): {shift.person}")
        if shift.covering is not None:
            event.add("description", f"{shift.person} covers {shift.covering}'s turn")
        event.add("transp", "TRANSPARENT")  # on call is not busy time
        calendar.add_component(event)
    # The zone's rules from a year before to two years after: every shift written falls there.
    today = datetime.fromtimestamp(now, zone).date()
    calendar.add_missing_timezones(
        first_date=today - timedelta(days=MAX_DAYS), last_date=today + timedelta(days=2 * MAX_DAYS)
    )
    return bytes(calendar.to_ical())


def _uid(name: str, shift: Shift) -> str:
    key = f"{name}:{int(shift.starts_at)}:{int(shift.ends_at)}"
    return f"{hashlib.sha256(key.encode()).hexdigest()[:24]}@relay-app"
