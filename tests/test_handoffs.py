"""On-call handoffs said in the chat (oncall/handoffs.py): a rotation with `announce = true`
posts, at each handoff, who is on call now and until when, where the routes that name it send;
once for the whole fleet, never at a relay's start, in the chat's language. The relay's spool
and dispatcher against the scripted Telegram, on the test's clock."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from relay_app import Relay
from relay_app.core.routing import Destination
from relay_app.oncall.handoffs import Handoffs
from relay_app.routes import RoutesError, parse_routes
from relay_app.routes.rotation import Roster
from relay_app.routes.table import RouteTable
from relay_app.spool import open_spool
from relay_app.summaries.store import SummaryStore
from tests.conftest import ROUTE_SOURCES, FakeTime, run_background
from tests.in_process import ScriptedTelegram

CHAT = "-1001234567890"
OPS = -1002000000001
MOSCOW = ZoneInfo("Europe/Moscow")
# Monday 7 Dec 2026, 09:00 in Moscow: the weekly rotation's handoff, from Anna to Boris.
HANDOFF = datetime(2026, 12, 7, 9, 0, tzinfo=MOSCOW).timestamp()
ROUTES = f"""
[[rotation]]
name = "payments"
people = ["@anna_ops", "tg:4242"]
every = "1w"
start = "2026-11-30T09:00"
timezone = "Europe/Moscow"
announce = true

[[rotation]]
name = "quiet"
people = ["@vera_lead"]
every = "1d"
start = "2026-11-30T09:00"

[[route]]
name = "payments"
project = "payments"
chat = {OPS}
escalate = [{{ after = "10m", mention = ["oncall:payments", "oncall:quiet"] }}]

[[route]]
name = "the rest"
mention = ["oncall:payments"]
"""


def handoffs(table: RouteTable, built: Relay, clock: FakeTime) -> Handoffs:
    """As the relay makes them (relay_app/parts.py, handoffs_for), on the relay's spool."""
    assert built.spool is not None
    default = Destination(int(CHAT), 77)
    return Handoffs(
        table.handoffs(default),
        built.spool.of(SummaryStore),
        roster=Roster(table.on_call, MOSCOW),
        clock=clock,
    )


@pytest.fixture
def table() -> RouteTable:
    return parse_routes(ROUTES, "r.toml", ROUTE_SOURCES)


def test_only_announcing_rotations_are_said_and_where_the_routes_naming_them_send(
    table: RouteTable,
) -> None:
    places = table.handoffs(Destination(int(CHAT), 77))
    assert {place: [r.name for r in rotations] for place, rotations in places.items()} == {
        Destination(OPS, None): ["payments"],  # named in an escalation step; quiet never says
        Destination(int(CHAT), 77): ["payments"],  # the default chat's topic, as its alerts
    }


@pytest.mark.parametrize("language", ["en", "ru"])
def test_each_handoff_is_said_once_in_each_place_and_never_at_start(
    built: Callable[..., Relay], fake_time: FakeTime, table: RouteTable, language: str
) -> None:
    fake_time.now = HANDOFF - 60
    telegram = ScriptedTelegram(clock=fake_time)
    relay = built(telegram, routes=table, language=language)
    saying = handoffs(table, relay, fake_time)
    assert saying.upkeep() == 0  # its first look: the next handoff is at 09:00
    fake_time.now = HANDOFF - 1
    assert saying.upkeep() == 0
    fake_time.now = HANDOFF
    assert saying.upkeep() == 2  # both places
    assert saying.upkeep() == 0  # once
    run_background(relay.dispatcher, fake_time)
    assert sorted(telegram.destinations, key=str) == sorted(
        [Destination(OPS, None), Destination(int(CHAT), 77)], key=str
    )
    said = telegram.delivered[0]
    if language == "en":
        expected = (
            "🔁 On-call handoff, payments: user 4242 is on call until 14.12 09:00 "
            "(Europe/Moscow), then @anna_ops."
        )
    else:
        expected = (
            "🔁 Смена дежурства, payments: дежурит пользователь 4242 до 14.12 09:00 "
            "(Europe/Moscow), затем @anna_ops."
        )
    assert said.text == expected
    assert '<a href="tg://user?id=4242">' in said.html  # called by name, without a username

    # A week on, Anna again; nothing in between.
    fake_time.now = HANDOFF + 3 * 86400
    assert saying.upkeep() == 0
    fake_time.now = HANDOFF + 7 * 86400
    assert saying.upkeep() == 2
    run_background(relay.dispatcher, fake_time)
    then = "@anna_ops is on call until 21.12" if language == "en" else "дежурит @anna_ops до 21.12"
    assert then in telegram.delivered[-1].text


def test_the_fleet_says_a_handoff_once_and_a_relay_down_through_handoffs_says_only_the_last(
    built: Callable[..., Relay], fake_time: FakeTime, table: RouteTable, spool_path: str
) -> None:
    fake_time.now = HANDOFF - 60
    relay = built(ScriptedTelegram(clock=fake_time), routes=table)
    one = handoffs(table, relay, fake_time)
    other_spool = open_spool(path=spool_path, clock=fake_time)  # another replica's connection
    assert other_spool is not None
    try:
        other = Handoffs(
            table.handoffs(Destination(int(CHAT), 77)),
            other_spool.of(SummaryStore),
            roster=Roster(table.on_call, MOSCOW),
            clock=fake_time,
        )
        assert one.upkeep() + other.upkeep() == 0
        fake_time.now = HANDOFF + 5
        assert one.upkeep() + other.upkeep() == 2  # each place once, whoever looked first
        # Down for three weeks: one message a place, who is on call now.
        fake_time.now = HANDOFF + 21 * 86400 + 5
        assert other.upkeep() == 2
        assert one.upkeep() + other.upkeep() == 0
    finally:
        other_spool.close()


def test_announce_is_true_or_false() -> None:
    text = (
        "[[rotation]]\nname = 'a'\npeople = ['@anna_ops']\nevery = '1d'\n"
        "start = '2026-01-01T09:00'\nannounce = 'yes'\n"
    )
    with pytest.raises(RoutesError) as raised:
        parse_routes(text, "x.toml", ROUTE_SOURCES)
    assert str(raised.value) == "x.toml:6: rotation 1, announce: must be true or false"


def test_a_rotation_changed_to_hand_over_sooner_is_said_at_its_new_time(
    built: Callable[..., Relay], fake_time: FakeTime, table: RouteTable
) -> None:
    # Friday, 08:58: the weekly rotation hands over on Monday at 09:00.
    fake_time.now = HANDOFF - 3 * 86400 - 120
    relay = built(ScriptedTelegram(clock=fake_time), routes=table)
    weekly = handoffs(table, relay, fake_time)
    assert weekly.upkeep() == 0
    # The file now says daily: the next handoff is today at 09:00, not Monday's.
    daily = handoffs(
        parse_routes(ROUTES.replace('every = "1w"', 'every = "1d"'), "r.toml", ROUTE_SOURCES),
        relay,
        fake_time,
    )
    fake_time.now += 60
    assert daily.upkeep() == 0
    fake_time.now = HANDOFF - 3 * 86400
    assert daily.upkeep() == 2
    assert daily.upkeep() == 0
