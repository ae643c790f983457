"""The daily summary (summaries/daily.py): a route's `summary = "09:00"` posts once a day at
that time in its zone, for the whole fleet, what happened in its chat since the last one: new,
escalating and regressed issues, those still unresolved with their events and sparklines (most
events first), who has which, and the alerts delivered, digested and held. The relay as a whole
against the scripted Telegram, on the test's clock; the zone's daylight saving time too."""

from __future__ import annotations

import io
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from relay_app import Relay
from relay_app.cards.card import IssueButton, SentMessage
from relay_app.cards.sent import SentStore
from relay_app.cli import main
from relay_app.core.routing import Destination
from relay_app.routes import RoutesError, parse_routes
from relay_app.routes.summary_time import SummaryAt
from relay_app.watch.store import Seen, Watched, WatchStore
from tests.conftest import ROUTE_SOURCES, FakeTime, glitchtip_on, run_background
from tests.in_process import (
    GLITCHTIP,
    GLITCHTIP_ON,
    ScriptedTelegram,
    alone,
    summaries_of,
)
from tests.prometheus import parse, value
from tests.taking import take

CHAT = "-1001234567890"
MOSCOW = ZoneInfo("Europe/Moscow")
# 3 Dec 2026, 08:30 in Moscow (05:30 UTC): half an hour before the summary's time.
BEFORE = datetime(2026, 12, 3, 8, 30, tzinfo=MOSCOW).timestamp()
NINE = datetime(2026, 12, 3, 9, 0, tzinfo=MOSCOW).timestamp()
ROUTES = f"""
[[route]]
name = "ops"
chat = {CHAT}
summary = "09:00"
timezone = "Europe/Moscow"
"""


@pytest.fixture
def relay(built: Callable[..., Relay], fake_time: FakeTime) -> tuple[Relay, ScriptedTelegram]:
    fake_time.now = BEFORE
    telegram = ScriptedTelegram(clock=fake_time)
    made = built(
        telegram,
        routes=parse_routes(ROUTES, "r.toml", ROUTE_SOURCES),
        theirs=glitchtip_on(GLITCHTIP_ON),
        details_budget=None,
    )
    assert summaries_of(made).upkeep() == 0  # its first look: the place is due at 09:00
    return made, telegram


def test_a_summary_says_what_happened_and_what_is_still_open_once_a_day(
    relay: tuple[Relay, ScriptedTelegram], fake_time: FakeTime
) -> None:
    made, telegram = relay
    assert made.spool is not None
    watched = made.spool.of(WatchStore)
    # Alerted yesterday and still open, the busiest; alerted just now (new); resolved.
    fake_time.now = BEFORE - 86400
    watched.watch([Watched("1", "acme", alone(1, "Old and busy"), CHAT, None)], now=fake_time.now)
    fake_time.now = BEFORE
    watched.watch(
        [
            Watched("2", "acme", alone(2, "Brand new"), CHAT, None),
            Watched("3", "acme", alone(3, "Fixed already"), CHAT, None),
        ],
        now=BEFORE,
    )
    watched.seen(
        {
            "1": Seen("unresolved", 5000, (0,) * 22 + (10, 4000)),
            "2": Seen("unresolved", 3, (0,) * 23 + (3,)),
            "3": Seen("resolved", 9, (0,) * 24),
        },
        now=BEFORE,
    )
    button = IssueButton("k1", "1", GLITCHTIP, "BACKEND-1A")
    made.spool.of(SentStore).keep(
        SentMessage(CHAT, 41, "<b>alert</b>", BEFORE, buttons=(button,)), []
    )
    assert take(made.spool, "k1", by="@ada", by_id=4242, at=BEFORE)  # On it
    summaries_of(made).delivered(Destination(int(CHAT)), 3)  # a digest of three
    summaries_of(made).delivered(Destination(int(CHAT)), 1)
    summaries_of(made).held(Destination(int(CHAT)))

    fake_time.now = NINE - 1
    assert summaries_of(made).upkeep() == 0
    fake_time.now = NINE
    assert summaries_of(made).upkeep() == 1
    assert summaries_of(made).upkeep() == 0  # once
    run_background(made.dispatcher, fake_time)
    [sent] = telegram.delivered
    lines = sent.text.split("\n")
    assert lines[0] == "📋 Daily summary, 03.12 08:30 – 03.12 09:00 (Europe/Moscow)"
    assert "🆕 New: BACKEND-3A, BACKEND-2A" in lines  # most events first
    assert "Still unresolved, most events first (2):" in lines
    busy = next(line for line in lines if line.startswith("• BACKEND-1A"))
    assert (
        busy == "• BACKEND-1A · seen 5000 times · ▁▁▁▁▁▁▁▁▁▁▁▁▁▁▁▁▁▁▁▁▁▁▁█ · Old and busy · 👀 @ada"
    )
    assert lines.index(busy) < lines.index(next(x for x in lines if x.startswith("• BACKEND-2A")))
    assert not any("BACKEND-3A ·" in line for line in lines)  # resolved: not open
    assert lines[-1] == "Alerts: 4 delivered (3 in digests), 1 held by silences"

    # The next day: only what happened since (nothing), and the counts start again.
    fake_time.now = NINE + 86400
    assert summaries_of(made).upkeep() == 1
    run_background(made.dispatcher, fake_time)
    again = telegram.delivered[-1].text.split("\n")
    assert again[0] == "📋 Daily summary, 03.12 09:00 – 04.12 09:00 (Europe/Moscow)"
    assert not any(line.startswith("🆕") for line in again)
    assert again[-1] == "Alerts: 0 delivered (0 in digests), 0 held by silences"
    samples = parse(made.metrics.exposition().decode())
    assert value(samples, "relay_summaries_total") == 2


def test_a_summary_time_is_a_time_of_day_in_its_zone_across_daylight_saving() -> None:
    berlin = SummaryAt(datetime(2026, 1, 1, 9, 0).time(), "Europe/Berlin")
    zone = ZoneInfo("UTC")
    # The night clocks go forward (29 March 2026): 09:00 is still 09:00 on the wall.
    before = datetime(2026, 3, 28, 12, 0, tzinfo=ZoneInfo("Europe/Berlin")).timestamp()
    after = datetime.fromtimestamp(berlin.next_after(before, zone), ZoneInfo("Europe/Berlin"))
    assert (after.day, after.hour, after.minute) == (29, 9, 0)
    assert berlin.next_after(after.timestamp(), zone) - after.timestamp() == 86400
    with pytest.raises(
        RoutesError, match='summary: must be a time of day, HH:MM: summary = "09:00"'
    ):
        parse_routes("[[route]]\nchat = -1001\nsummary = '9am'\n", "r.toml", ROUTE_SOURCES)
    table = parse_routes(
        "[[route]]\nsummary = '09:00'\ntimezone = 'Asia/Tokyo'\n"
        "[[route]]\nproject = 'x'\nchat = -1002\nthread = 5\nsummary = '18:30'\n",
        "r.toml",
        ROUTE_SOURCES,
    )
    default = Destination(int(CHAT), 77)
    assert {str(place.describe()): str(at) for place, at in table.summaries(default).items()} == {
        default.describe(): "09:00 Asia/Tokyo",
        Destination(-1002, 5).describe(): "18:30",
    }


def test_relay_app_summary_prints_it_now_and_send_queues_it(
    tmp_path: Path, relay: tuple[Relay, ScriptedTelegram], fake_time: FakeTime
) -> None:
    made, _ = relay
    assert made.spool is not None
    made.spool.of(WatchStore).watch(
        [Watched("1", "acme", alone(1, "Busy"), CHAT, None)], now=BEFORE
    )
    made.spool.of(WatchStore).seen({"1": Seen("unresolved", 12, (0,) * 24)}, now=BEFORE)
    routes = tmp_path / "routes.toml"
    routes.write_text(ROUTES)
    environ = {
        "TELEGRAM_BOT_TOKEN": "123456:" + "A" * 35,
        "TELEGRAM_CHAT_ID": CHAT,
        "RELAY_WEBHOOK_SECRET": "s" * 32,
        "RELAY_SPOOL_PATH": made.spool.queue.name,
        "RELAY_ROUTES": str(routes),
    }
    out, err = io.StringIO(), io.StringIO()
    assert main(["summary", "--chat", CHAT], environ=environ, out=out, err=err) == 0, err.getvalue()
    printed = out.getvalue()
    assert printed.startswith("📋 Daily summary, ")
    assert "• BACKEND-1A · seen 12 times" in printed
    out = io.StringIO()
    assert main(["summary", "--send"], environ=environ, out=out, err=err) == 0, err.getvalue()
    assert f"queued for chat {CHAT}" in out.getvalue()
    pending = made.spool.admin.alerts("pending")
    assert [list(job.data) for job in pending] == [["summary"]]


def test_routes_check_says_when_a_route_posts_its_summary(tmp_path: Path) -> None:
    routes = tmp_path / "routes.toml"
    routes.write_text(ROUTES)
    out, err = io.StringIO(), io.StringIO()
    code = main(
        ["routes", "check", str(routes)], environ={"TELEGRAM_CHAT_ID": CHAT}, out=out, err=err
    )
    assert code == 0, err.getvalue()
    assert f"chat {CHAT}, a daily summary at 09:00 (Europe/Moscow)" in out.getvalue()
