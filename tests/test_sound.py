"""A route's sound (routes/sound.py): `silent`, quiet hours in a time zone with loud levels,
decided when the message is sent, on the injected clock; the level from GlitchTip's API when
the details came, else what the colour may mean; Telegram asked with disable_notification."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

import pytest
import responses

from relay_app.core.issue_details import IssueDetails, details_as_json
from relay_app.core.routing import Destination
from relay_app.delivery.render import Renderer, Send
from relay_app.operating.config import ConfigError
from relay_app.operating.env_values import time_zone
from relay_app.routes import RoutesError, parse_routes
from relay_app.routes.sound import QuietHours, Sound, levels_of
from relay_app.spool import Precedence, Queue, open_memory
from relay_app.spool.model import NewJob
from relay_app.telegram.client import Extras, TelegramClient
from relay_app.words import ENGLISH
from tests.conftest import API_URL, OK, ROUTE_SOURCES, SEND_URL, SOURCES, TOKEN
from tests.payloads import issue, issue_alert

UTC = ZoneInfo("UTC")
MOSCOW = ZoneInfo("Europe/Moscow")
NIGHTS = Sound(quiet_hours=QuietHours.parse("22:00-08:00"), loud_levels=("fatal",))


def at(when: str, zone: ZoneInfo = UTC) -> float:
    return datetime.fromisoformat(when).replace(tzinfo=zone).timestamp()


def test_a_window_past_midnight_holds_the_night_and_not_the_day() -> None:
    assert NIGHTS.rings(at("2026-12-03T21:59"), {"error"}, UTC)
    assert not NIGHTS.rings(at("2026-12-03T22:00"), {"error"}, UTC)
    assert not NIGHTS.rings(at("2026-12-04T07:59"), {"error"}, UTC)
    assert NIGHTS.rings(at("2026-12-04T08:00"), {"error"}, UTC)
    day = Sound(quiet_hours=QuietHours.parse("09:00-18:00"))
    assert not day.rings(at("2026-12-03T12:00"), set(), UTC)
    assert day.rings(at("2026-12-03T18:00"), set(), UTC)


def test_the_window_is_the_routes_zone_else_the_relays() -> None:
    # 20:00 UTC is 23:00 in Moscow.
    moscow = Sound(quiet_hours=QuietHours.parse("22:00-08:00"), timezone="Europe/Moscow")
    assert not moscow.rings(at("2026-12-03T20:00"), {"error"}, UTC)
    assert NIGHTS.rings(at("2026-12-03T20:00"), {"error"}, UTC)
    assert not NIGHTS.rings(at("2026-12-03T20:00"), {"error"}, MOSCOW)


def test_a_loud_level_rings_inside_the_window_and_silent_never_rings() -> None:
    night = at("2026-12-03T23:30")
    assert NIGHTS.rings(night, {"fatal"}, UTC)
    assert not NIGHTS.rings(night, {"warning"}, UTC)
    assert not Sound(silent=True).rings(at("2026-12-03T12:00"), {"fatal"}, UTC)
    assert Sound().rings(night, set(), UTC)


def test_a_colour_that_says_error_may_be_fatal_and_the_api_tells_them_apart() -> None:
    # GlitchTip colours fatal as error: not knowing, "fatal" is loud.
    assert levels_of([(None, "error")]) == {"error", "fatal"}
    assert levels_of([("error", "")]) == {"error"}
    assert levels_of([("fatal", ""), (None, "info")]) == {"fatal", "info"}
    assert levels_of([(None, "other")]) == {"fatal", "error", "warning", "info", "debug"}


def renderer() -> Renderer:
    return Renderer(ENGLISH, late_after=60.0, sources=SOURCES)


def job_with(sound: Sound | None, *, level: str | None = None, number: int = 1) -> Any:
    queue: Queue = open_memory().queue
    about: dict[str, Any] = {"webhook": issue_alert(issue(number))}
    if sound is not None:
        about["sound"] = sound.to_json()
    if level is not None:
        found = IssueDetails(
            frame=None,
            count=1,
            first_seen=None,
            level=level,
            exception_type=None,
            exception_value=None,
        )
        about["details"] = {str(number): details_as_json(found)}
    return queue.add(
        NewJob("alert", about, Destination(-1001), Precedence.ALERT), now=at("2026-12-03T12:00")
    )


def test_the_message_is_sent_without_sound_when_every_alert_says_so_at_that_moment() -> None:
    night, noon = at("2026-12-03T23:00"), at("2026-12-03T12:00")
    quiet, loud = job_with(NIGHTS, level="error"), job_with(None, number=2)
    sent = renderer().write([quiet], now=night)
    assert isinstance(sent, Send)
    assert sent.silent
    assert not renderer().write([quiet], now=noon).silent  # type: ignore[union-attr]
    # A digest rings when any of its alerts would.
    assert not renderer().write([quiet, loud], now=night).silent  # type: ignore[union-attr]
    # Its level from the API: fatal rings at night; the colour alone (error, maybe fatal) too.
    fatal = job_with(NIGHTS, level="fatal", number=3)
    assert not renderer().write([fatal], now=night).silent  # type: ignore[union-attr]
    unknown = job_with(NIGHTS, number=4)
    assert not renderer().write([unknown], now=night).silent  # type: ignore[union-attr]


def test_telegram_is_asked_for_a_message_without_sound() -> None:
    client = TelegramClient(API_URL, TOKEN)
    with responses.RequestsMock() as telegram:
        telegram.post(SEND_URL, json=OK)
        client.send_message(
            -1001, "x", html=False, thread_id=None, deadline=1e18, extras=Extras(silent=True)
        )
        client.send_message(-1001, "y", html=False, thread_id=None, deadline=1e18)
        bodies = [json.loads(call.request.body or "{}") for call in telegram.calls]
    assert bodies[0]["disable_notification"] is True
    assert "disable_notification" not in bodies[1]


@pytest.mark.parametrize(
    ("keys", "said"),
    [
        ("quiet_hours = '22-08'", "route 1, quiet_hours: '22-08' is not a window of the day"),
        ("quiet_hours = '22:00-22:00'", "route 1, quiet_hours: '22:00-22:00' starts where"),
        (
            "quiet_hours = '22:00-08:00'\ntimezone = 'Mars/Olympus'",
            "route 1, timezone: 'Mars/Olympus' is not a time zone",
        ),
        (
            "quiet_hours = '22:00-08:00'\nloud_levels = ['critical']",
            "route 1, loud_levels: 'critical' is not a level",
        ),
        ("loud_levels = ['fatal']", "route 1, loud_levels: is for quiet_hours"),
        ("silent = true\nquiet_hours = '22:00-08:00'", "route 1, silent: is never a sound"),
        ("silent = 'yes'", "route 1, silent: must be true or false"),
    ],
)
def test_sound_keys_that_cannot_be_used_are_refused_naming_the_key(keys: str, said: str) -> None:
    with pytest.raises(RoutesError, match=said):
        parse_routes(f"[[route]]\nchat = -1001\n{keys}\n", "x.toml", ROUTE_SOURCES)


def test_a_route_may_say_only_how_its_alerts_sound() -> None:
    table = parse_routes(
        "[[route]]\nenvironment = 'staging'\nsilent = true\n"
        "[[route]]\nquiet_hours = '22:00-08:00'\ntimezone = 'Europe/Moscow'\n"
        "loud_levels = ['Fatal']\n",
        "x.toml",
        ROUTE_SOURCES,
    )
    staging, nights = table.routes
    assert staging.sound == Sound(silent=True)
    assert nights.sound.timezone == "Europe/Moscow"
    assert nights.sound.loud_levels == ("fatal",)
    assert Sound.from_json(nights.sound.to_json()) == nights.sound


def test_relay_timezone_is_an_iana_zone_utc_by_default() -> None:
    assert time_zone({}, "RELAY_TIMEZONE") == "UTC"
    assert time_zone({"RELAY_TIMEZONE": "Asia/Yekaterinburg"}, "RELAY_TIMEZONE")
    with pytest.raises(ConfigError, match="RELAY_TIMEZONE: 'MSK' is not a time zone"):
        time_zone({"RELAY_TIMEZONE": "MSK"}, "RELAY_TIMEZONE")
