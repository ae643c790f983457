"""On-call rotations (routes/rotation.py): who is on duty on the zone's wall clock, summer time
included; `oncall:NAME` in a route's mention and an escalation step made the person on duty when
the message is sent; a file that names a rotation it lacks refused; `relay-app oncall`."""

from __future__ import annotations

import io
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from relay_app.cli import main
from relay_app.core.routing import Destination
from relay_app.delivery.mentions import OnCall
from relay_app.delivery.render import Renderer, ReplyUnder, Send
from relay_app.routes import RoutesError, parse_routes
from relay_app.routes.rotation import Roster
from relay_app.spool import Precedence, open_memory
from relay_app.spool.model import NewJob
from relay_app.words import ENGLISH, Said
from tests.conftest import ROUTE_SOURCES, SOURCES
from tests.payloads import issue, issue_alert

BERLIN = ZoneInfo("Europe/Berlin")
UTC = ZoneInfo("UTC")
FILE = """
[[rotation]]
name = "payments"
people = ["@anna_ops", "@boris_ops", "@vera_lead"]
every = "1d"
start = "2026-03-25T09:00"
timezone = "Europe/Berlin"

[[route]]
project = "payments"
mention = ["oncall:payments"]
escalate = [{ after = "10m", mention = ["oncall:payments", "@vera_lead"] }]
"""


def at(when: str, zone: ZoneInfo = BERLIN) -> float:
    return datetime.fromisoformat(when).replace(tzinfo=zone).timestamp()


def test_a_daily_rotation_hands_over_at_its_hour_on_both_sides_of_summer_time() -> None:
    [rotation] = parse_routes(FILE, "x.toml", ROUTE_SOURCES).rotations
    # Berlin moves its clocks forward on 2026-03-29 at 02:00.
    people = [
        rotation.on_duty(at(moment), UTC).person
        for moment in (
            "2026-03-25T08:59",  # before its start: the first person
            "2026-03-25T09:00",
            "2026-03-28T09:00",
            "2026-03-29T08:59",
            "2026-03-29T09:00",
        )
    ]
    # Day 4 (the 28th) is the first person's again, until 09:00 summer time on the 29th.
    assert people == ["@anna_ops", "@anna_ops", "@anna_ops", "@anna_ops", "@boris_ops"]
    duty = rotation.on_duty(at("2026-03-29T10:00"), UTC)
    assert (duty.until.isoformat(), duty.next_person) == (
        "2026-03-30T09:00:00+02:00",
        "@vera_lead",
    )


def test_a_rotation_without_a_zone_reads_relay_timezone() -> None:
    table = parse_routes(FILE.replace('timezone = "Europe/Berlin"\n', ""), "x.toml", ROUTE_SOURCES)
    [rotation] = table.rotations
    # 08:30 UTC is before 09:00 in UTC, and after it in Berlin (UTC+1 in March).
    moment = at("2026-03-26T08:30", UTC)
    assert rotation.on_duty(moment, UTC).person == "@anna_ops"
    assert rotation.on_duty(moment, BERLIN).person == "@boris_ops"


def test_oncall_becomes_the_person_on_duty_when_the_message_is_sent() -> None:
    table = parse_routes(FILE, "x.toml", ROUTE_SOURCES)
    renderer = Renderer(
        ENGLISH, late_after=60.0, on_call=OnCall(Roster(table.on_call, UTC), UTC), sources=SOURCES
    )
    queue = open_memory().queue
    about = {"webhook": issue_alert(issue(1)), "mentions": ["oncall:payments", "@vera_lead"]}
    job = queue.add(
        NewJob("alert", about, Destination(-1001), Precedence.ALERT), now=at("2026-03-26T10:00")
    )
    sent = renderer.write([job], now=at("2026-03-26T10:00"))
    assert isinstance(sent, Send)
    assert sent.text.endswith("For @boris_ops, @vera_lead")
    later = renderer.write([job], now=at("2026-03-27T10:00"))
    assert later is not None
    assert later.text.endswith("@vera_lead")
    assert "@boris_ops" not in later.text
    said = Said("escalation_call", {"minutes": "10", "people": "oncall:payments @vera_lead"})
    reply = queue.add(
        NewJob(
            "reply",
            {"say": said.as_json(), "message_id": 41},
            Destination(-1001),
            Precedence.CALL,
            lane=Destination(-1001).message_lane(41),
        ),
        now=at("2026-03-26T10:00"),
    )
    written = renderer.write([reply], now=at("2026-03-26T10:00"))
    assert isinstance(written, ReplyUnder)
    assert written.text == "⏰ Nobody has taken this alert in 10 min: @boris_ops @vera_lead"


@pytest.mark.parametrize(
    ("text", "said"),
    [
        (
            "[[route]]\nchat = -1001\nmention = ['oncall:nights']\n",
            "x.toml:3: route 1, mention: oncall:nights names no [[rotation]] of this file",
        ),
        (
            "[[rotation]]\nname = 'a'\npeople = ['@anna_ops']\nevery = '1d'\n"
            "start = '2026-01-01T09:00'\n[[rotation]]\nname = 'a'\npeople = ['@anna_ops']\n"
            "every = '1w'\nstart = '2026-01-01T09:00'\n",
            "x.toml:7: rotation 2, name: 'a' names another rotation too",
        ),
        (
            "[[rotation]]\nname = 'a'\npeople = ['@anna_ops']\nevery = 'daily'\n"
            "start = '2026-01-01T09:00'\n",
            "x.toml:4: rotation 1, every: must be a period like",
        ),
        (
            "[[rotation]]\nname = 'a'\npeople = ['@anna_ops']\nevery = '1d'\n"
            "start = '2026-01-01T09:00+03:00'\n",
            "x.toml:5: rotation 1, start: must be a wall-clock time",
        ),
        (
            "[[rotation]]\nname = 'a'\npeople = ['oncall:a']\nevery = '1d'\n"
            "start = '2026-01-01T09:00'\n",
            "x.toml:3: rotation 1, people: 'oncall:a' is neither",
        ),
    ],
)
def test_a_rotation_that_cannot_be_used_is_refused_naming_its_line(text: str, said: str) -> None:
    with pytest.raises(RoutesError) as raised:
        parse_routes(text, "x.toml", ROUTE_SOURCES)
    assert str(raised.value).startswith(said), str(raised.value)


def test_relay_app_oncall_says_who_is_on_call_until_when_and_who_is_next(tmp_path: Path) -> None:
    routes = tmp_path / "routes.toml"
    routes.write_text(FILE)
    out, err = io.StringIO(), io.StringIO()
    code = main(
        ["oncall", "--at", "2026-03-29T09:30+02:00"],
        environ={"RELAY_ROUTES": str(routes), "TELEGRAM_CHAT_ID": "-1001"},
        out=out,
        err=err,
    )
    assert code == 0, err.getvalue()
    assert out.getvalue().split("\n")[:2] == [
        "ROTATION  ON CALL     UNTIL                  THEN        EVERY",
        "payments  @boris_ops  2026-03-30 09:00 CEST  @vera_lead  1d",
    ]
