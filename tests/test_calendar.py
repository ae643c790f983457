"""A rotation in the team's calendar (oncall/calendar.py, calendar_feed.py): `relay-app oncall
calendar` and the feed at /calendar/<secret>/<rotation>.ics, each checked by parsing what it
wrote back with the icalendar library: one event per shift with its person, covers applied,
stable UIDs, folded lines, the rotation's time zone."""

from __future__ import annotations

import io
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from icalendar import Calendar

from relay_app import create_app
from relay_app.cli import main
from relay_app.oncall.calendar import calendar_of, shifts
from relay_app.operating.config import ConfigError, Settings
from relay_app.routes import parse_routes
from relay_app.routes.rotation import Cover, Roster
from tests.conftest import ROUTE_SOURCES, THEIRS, FakeTime

MOSCOW = ZoneInfo("Europe/Moscow")
BERLIN = ZoneInfo("Europe/Berlin")
ROUTES = """
[[rotation]]
name = "ops"
people = ["@anna_ops", "@boris_ops", "tg:42"]
every = "1w"
start = "2026-11-30T09:00"
timezone = "Europe/Moscow"

[[rotation]]
name = "nights"
people = ["@vera_lead", "@anna_ops"]
every = "1d"
start = "2027-03-25T21:00"
timezone = "Europe/Berlin"
"""
TABLE = parse_routes(ROUTES, "routes.toml", ROUTE_SOURCES)
# Thursday 10 December 2026, 12:00 in Moscow.
NOW = datetime(2026, 12, 10, 12, 0, tzinfo=MOSCOW).timestamp()
SECRET = "calendar-secret-0123456789abcdef"


@dataclass(frozen=True)
class Shown:
    """An event as a calendar app reads it back."""

    uid: str
    summary: str
    start: datetime
    end: datetime
    description: str


def events(written: bytes) -> list[Shown]:
    found = Calendar.from_ical(written)
    return [
        Shown(
            str(event["uid"]),
            str(event["summary"]),
            event.decoded("dtstart"),
            event.decoded("dtend"),
            str(event.get("description", "")),
        )
        for event in found.walk("VEVENT")
    ]


def test_a_rotation_is_one_event_per_shift_from_the_turn_under_way() -> None:
    roster = Roster(TABLE.rotations, ZoneInfo("UTC"))
    written = calendar_of(roster, "ops", now=NOW, days=21)
    found = events(written)
    assert [event.summary for event in found] == [
        "On call (ops): @boris_ops",  # the turn under way since Monday 7 December, 09:00
        "On call (ops): tg:42",
        "On call (ops): @anna_ops",
        "On call (ops): @boris_ops",
    ]
    assert found[0].start == datetime(2026, 12, 7, 9, 0, tzinfo=MOSCOW)
    assert all(event.end - event.start == found[0].end - found[0].start for event in found)
    assert str(found[0].start.tzinfo) == "Europe/Moscow"
    lines = written.split(b"\r\n")
    assert all(len(line) <= 75 for line in lines)  # folded, as RFC 5545 asks
    assert b"BEGIN:VTIMEZONE" in written
    assert b"TZID:Europe/Moscow" in written
    # The same shifts keep their UIDs from one export to the next.
    later = events(calendar_of(roster, "ops", now=NOW + 86400, days=21))
    assert [e.uid for e in later][:3] == [e.uid for e in found][:3]
    assert len({event.uid for event in found}) == len(found)


def test_a_cover_is_its_own_event_saying_whose_turn_it_covers() -> None:
    starts = datetime(2026, 12, 11, 9, 0, tzinfo=MOSCOW).timestamp()
    cover = Cover(1, "ops", "@vera_lead", starts, starts + 86400)
    roster = Roster(TABLE.rotations, ZoneInfo("UTC"), lambda at: [cover])
    found = events(calendar_of(roster, "ops", now=NOW, days=7))
    assert [(e.summary, e.description) for e in found[:3]] == [
        ("On call (ops): @boris_ops", ""),
        ("On call (ops): @vera_lead", "@vera_lead covers @boris_ops's turn"),
        ("On call (ops): @boris_ops", ""),
    ]
    assert found[1].start == datetime(2026, 12, 11, 9, 0, tzinfo=MOSCOW)
    assert found[1].end == datetime(2026, 12, 12, 9, 0, tzinfo=MOSCOW)


def test_shifts_hand_over_at_the_same_wall_clock_time_across_summer_time() -> None:
    roster = Roster(TABLE.rotations, ZoneInfo("UTC"))
    at = datetime(2027, 3, 27, 12, 0, tzinfo=BERLIN).timestamp()
    found = shifts(roster, roster.rotations["nights"], now=at, days=3)
    starts = [datetime.fromtimestamp(s.starts_at, BERLIN) for s in found]
    assert [(s.hour, s.minute) for s in starts] == [(21, 0)] * len(starts)
    offsets = [s.utcoffset() for s in starts[:3]]
    assert [o.total_seconds() / 3600 if o is not None else None for o in offsets] == [1, 1, 2]


def test_relay_app_oncall_calendar_writes_it(tmp_path: Path) -> None:
    routes = tmp_path / "routes.toml"
    routes.write_text(ROUTES)
    out, err = io.StringIO(), io.StringIO()
    environ = {"RELAY_ROUTES": str(routes), "RELAY_SPOOL_PATH": "off"}
    code = main(["oncall", "calendar", "ops", "--days", "14"], environ=environ, out=out, err=err)
    assert code == 0, err.getvalue()
    assert events(out.getvalue().encode())[0].summary.startswith("On call (ops): ")
    written = tmp_path / "ops.ics"
    code = main(
        ["oncall", "calendar", "ops", "-o", str(written)], environ=environ, out=out, err=err
    )
    assert code == 0
    assert written.read_bytes().startswith(b"BEGIN:VCALENDAR\r\n")
    assert main(["oncall", "calendar", "nope"], environ=environ, out=out, err=err) == 1
    assert "no rotation 'nope' in the routes file (ops, nights)" in err.getvalue()
    assert (
        main(["oncall", "calendar", "ops", "--days", "0"], environ=environ, out=out, err=err) == 2
    )


def test_the_feed_answers_with_the_secret_alone(settings: Settings, fake_time: FakeTime) -> None:
    fake_time.now = NOW
    with_feed = replace(settings, routes=TABLE, calendar_secret=SECRET)
    client = create_app(with_feed, clock=fake_time).test_client()
    reply = client.get(f"/calendar/{SECRET}/ops.ics")
    assert reply.status_code == 200
    assert reply.mimetype == "text/calendar"
    assert events(reply.data)[0].summary == "On call (ops): @boris_ops"
    for wrong in (
        f"/calendar/{SECRET[:-1]}x/ops.ics",
        f"/calendar/{SECRET}/nope.ics",
        f"/calendar/{SECRET}/ops",
        f"/calendar/{SECRET}/../ops.ics",
    ):
        assert client.get(wrong).status_code == 404, wrong
    without = create_app(replace(settings, routes=TABLE), clock=fake_time).test_client()
    assert without.get(f"/calendar/{SECRET}/ops.ics").status_code == 404


def test_the_calendars_secret_is_checked_as_the_webhooks() -> None:
    base = {
        "TELEGRAM_BOT_TOKEN": "123456:" + "A" * 35,
        "TELEGRAM_CHAT_ID": "-100123",
        "RELAY_WEBHOOK_SECRET": "w" * 32,
    }
    assert (
        Settings.from_env({**base, "RELAY_CALENDAR_SECRET": SECRET}, THEIRS).calendar_secret
        == SECRET
    )
    for wrong in ("short", "w" * 32, "has spaces in it, sixteen+"):
        with pytest.raises(ConfigError, match="RELAY_CALENDAR_SECRET"):
            Settings.from_env({**base, "RELAY_CALENDAR_SECRET": wrong}, THEIRS)
    settings = Settings.from_env({**base, "RELAY_CALENDAR_SECRET": SECRET}, THEIRS)
    assert SECRET in settings.secrets  # no log line shows it
