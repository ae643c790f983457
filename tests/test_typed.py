"""What people type that names a person or a moment (core/typed.py): one reading, bounded, for
the chat, the command line and the routes file alike; what it refuses reaches no store."""

from __future__ import annotations

import io
import time
from collections.abc import Callable
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from relay_app import Relay
from relay_app.cli import main
from relay_app.core.typed import (
    LAST_MOMENT,
    MAX_USER_ID,
    is_person,
    moment_of,
    span_of,
    tg_user,
    tg_users_in,
    user_id_of,
    wall_clock_of,
)
from relay_app.oncall.covers import CoverStore
from relay_app.routes import RoutesError, parse_routes
from tests.conftest import ROUTE_SOURCES, FakeTime
from tests.in_process import ScriptedTelegram

UTC = ZoneInfo("UTC")
NOW = 1_796_000_000.0  # 2026-11-29


@pytest.mark.parametrize(
    ("raw", "found"),
    [
        (4242, 4242),
        ("4242", 4242),
        (MAX_USER_ID, MAX_USER_ID),
        (MAX_USER_ID + 1, None),
        ("99999999999999999999", None),
        (0, None),
        (-5, None),
        (True, None),
        ("4²", None),
        ("٤٢", None),  # Arabic-Indic digits: digits to str.isdigit, not to Telegram
        (4.0, None),
    ],
)
def test_a_user_id_is_telegrams_positive_and_at_most_2_to_the_52(
    raw: object, found: int | None
) -> None:
    assert user_id_of(raw) == found


@pytest.mark.parametrize(
    ("text", "person"),
    [
        ("@anna_ops", True),
        ("tg:4503599627370496", True),
        ("tg:4503599627370497", False),
        ("tg:99999999999999999999", False),
        ("tg:0", False),
        ("@ann", False),  # Telegram's usernames are five characters at least
        ("@1anna", False),
        ("oncall:payments", False),
        ("anna", False),
    ],
)
def test_a_person_is_a_username_or_a_user_id_in_range(text: str, person: bool) -> None:
    assert is_person(text) is person


def test_tg_mentions_in_a_text_are_whole_and_in_range() -> None:
    assert tg_user("tg:4242") == 4242
    assert tg_user("@anna_ops") is None
    text = "call tg:4242, tg:99999999999999999999 and tg:4242 again, tg:12345678901234567"
    assert tg_users_in(text) == ["tg:4242"]


@pytest.mark.parametrize(
    "text",
    [
        "9999-12-31 10:00",
        "9999-11-29 10:00",
        "10000-01-01 10:00",
        "0001-01-01 00:00",
        "1969-12-31 23:00",
        "2026-13-01 10:00",
        "25:00",
        "31.02 10:00",
        "tomorrow",
        "2026-12-10T18:00+99:00",
    ],
)
def test_a_moment_outside_the_calendar_or_no_moment_is_not_read(text: str) -> None:
    assert moment_of(text, UTC, NOW) is None


def test_moments_as_people_write_them() -> None:
    assert moment_of("2026-12-10 18:00", UTC, NOW) == 1_796_925_600.0
    assert moment_of("2026-12-10T21:00+03:00", UTC, NOW) == 1_796_925_600.0
    assert moment_of("9998-12-30 10:00", UTC, NOW) is not None
    later = moment_of("18:00", UTC, NOW)
    assert later is not None
    assert NOW < later <= NOW + 86400
    assert moment_of("9998-12-31 23:00", UTC, NOW) is None  # past LAST_MOMENT
    assert LAST_MOMENT + 92 * 86400 < 253_402_300_800  # 10000-01-01: a cover's end fits


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("2h", 7200.0), ("90m", 5400.0), ("1w", 604800.0), ("366d", 366 * 86400.0)],
)
def test_spans(text: str, seconds: float) -> None:
    assert span_of(text) == seconds


@pytest.mark.parametrize("text", ["0h", "367d", "99999999w", "2 hours", "-1h", "1y"])
def test_spans_out_of_range_are_not_read(text: str) -> None:
    assert span_of(text) is None


def test_a_rotations_start_is_a_wall_clock_time_in_the_calendar() -> None:
    assert wall_clock_of("2026-01-05T09:00") is not None
    assert wall_clock_of("2026-01-05T09:00+03:00") is None
    assert wall_clock_of("9999-12-31T09:00") is None


@pytest.mark.parametrize(
    ("text", "said"),
    [
        (
            "[[route]]\nchat = -1001\nmention = ['tg:99999999999999999999']\n",
            "x.toml:3: route 1, mention: 'tg:99999999999999999999' is neither @username,"
            " tg:<user id> (1 to 4503599627370496) nor oncall:NAME",
        ),
        (
            "[[rotation]]\nname = 'ops'\npeople = ['tg:4503599627370497']\nevery = '1d'\n"
            "start = '2026-01-01T09:00'\n",
            "x.toml:3: rotation 1, people: 'tg:4503599627370497' is neither @username nor"
            " tg:<user id> (1 to 4503599627370496)",
        ),
        (
            "[[rotation]]\nname = 'ops'\npeople = ['@anna_ops']\nevery = '1d'\n"
            "start = '9999-12-31T09:00'\n",
            "x.toml:5: rotation 1, start: must be a wall-clock time",
        ),
        (
            "[[rotation]]\nname = 'ops'\npeople = ['@anna_ops']\nevery = '99999w'\n"
            "start = '2026-01-01T09:00'\n",
            "x.toml:4: rotation 1, every: must be a period",
        ),
    ],
)
def test_the_routes_file_refuses_what_the_chat_and_the_cli_refuse(text: str, said: str) -> None:
    with pytest.raises(RoutesError) as refused:
        parse_routes(text, "x.toml", ROUTE_SOURCES)
    assert str(refused.value).startswith(said)


ROUTES = """
[[rotation]]
name = "ops"
people = ["@anna_ops", "@boris_ops"]
every = "1w"
start = "2026-01-05T09:00"
timezone = "Europe/Moscow"
"""


@pytest.mark.parametrize(
    ("args", "code", "said"),
    [
        (
            ["ops", "tg:99999999999999999999", "--for", "92d"],
            1,
            "relay-app: error: tg:99999999999999999999 is neither @username nor tg:<user id>",
        ),
        (
            ["ops", "@anna_ops", "--from", "9999-12-31"],
            2,
            "relay-app: error: --from '9999-12-31' is not a time like",
        ),
        (
            ["ops", "@anna_ops", "--from", "9998-12-30 10:00", "--for", "92d"],
            1,
            "relay-app: error: A cover ends by 9998-12-31 at the latest",
        ),
        (["ops", "@anna_ops", "--for", "99999999w"], 2, "relay-app: error: --for '99999999w'"),
    ],
)
def test_relay_app_oncall_cover_refuses_out_of_range_values_without_a_traceback(
    tmp_path: Path,
    built: Callable[..., Relay],
    spool_path: str,
    fake_time: FakeTime,
    args: list[str],
    code: int,
    said: str,
) -> None:
    fake_time.now = time.time()
    service = built(ScriptedTelegram(clock=fake_time))
    assert service.spool is not None
    assert service.spool.of(CoverStore).in_force(now=fake_time.now) == []  # the file made
    routes = tmp_path / "routes.toml"
    routes.write_text(ROUTES)
    environ = {
        "RELAY_ROUTES": str(routes),
        "RELAY_SPOOL_PATH": spool_path,
        "TELEGRAM_CHAT_ID": "-1001",
    }
    out, err = io.StringIO(), io.StringIO()
    assert main(["oncall", "cover", *args], environ=environ, out=out, err=err) == code
    assert err.getvalue().startswith(said), err.getvalue()
    assert "Traceback" not in err.getvalue()
    out, err = io.StringIO(), io.StringIO()
    assert main(["oncall", "cover", "--list"], environ=environ, out=out, err=err) == 0
    assert out.getvalue() == "no cover in force or to come\n"
