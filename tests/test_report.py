"""What on call cost (summaries/report.py, report_text.py): alerts, time to take and to resolve,
calls made, who took what, and what is still open, read from the spool's records; printed by
`relay-app report`, and said in a place's daily summary on its route's `report` day and, the open
issues, in an on-call handoff. The relay as a whole against the scripted Telegram, on the test's
clock."""

from __future__ import annotations

import io
import time
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
import responses

from relay_app import Relay
from relay_app.capabilities import REGISTRY
from relay_app.cards.card import Button, Verb, callback_data
from relay_app.cli import main
from relay_app.core.drawing import PNG
from relay_app.core.routing import Destination
from relay_app.intake.receive import receive
from relay_app.oncall.calls_made import CallsMadeStore
from relay_app.oncall.handoff_text import handoff_message
from relay_app.routes import RoutesError, parse_routes
from relay_app.summaries.report import ReportStore, _Taker, _takers
from relay_app.summaries.report_chart import report_spec, with_chart_words
from relay_app.summaries.text import summary_message
from relay_app.summaries.weekly_photo import KIND
from relay_app.takes.buttons import TAKE
from relay_app.words import ENGLISH, RUSSIAN
from tests.conftest import CHAT_ID, ROUTE_SOURCES, FakeTime
from tests.e2e.helpers import wait_until
from tests.in_process import GLITCHTIP, Chat, escalation_of, summaries_of
from tests.payloads import issue, issue_alert, read

CHAT = str(CHAT_ID)
UTC = ZoneInfo("UTC")
# Monday 7 December 2026, 09:00 UTC.
MONDAY = datetime(2026, 12, 7, 9, 0, tzinfo=UTC).timestamp()
ROUTES = f"""
[[route]]
name = "payments"
chat = "{CHAT}"
summary = "09:00"
report = "monday"
escalate = [{{ after = "10m", mention = ["@lead_one"] }}]
"""
HERE = Destination(CHAT_ID)


def press(verb: Verb | Button, key: str, update_id: int, message_id: int) -> dict[str, Any]:
    return {
        "update_id": update_id,
        "callback_query": {
            "id": f"p{update_id}",
            "from": {"id": 7, "is_bot": False, "first_name": "Ada", "username": "ada_ops"},
            "message": {"message_id": message_id, "chat": {"id": CHAT_ID}},
            "data": callback_data(verb, key),
        },
    }


@pytest.fixture
def week(
    built: Callable[..., Relay], fake_time: FakeTime, glitchtip: responses.RequestsMock
) -> Chat:
    """Two alerts on Sunday: Ada takes the first in 5 min and resolves it in 30; nobody takes
    the second, so its step calls at 10 min."""
    glitchtip.put(
        f"{GLITCHTIP}/api/0/organizations/acme/issues/1/", json={"id": "1", "status": "resolved"}
    )
    start = MONDAY - 86400
    fake_time.now = start
    chat = Chat.of(built, fake_time, routes=parse_routes(ROUTES, "r.toml", ROUTE_SOURCES))
    for number in (1, 2):
        payload = issue_alert(issue(number, link=f"{GLITCHTIP}/acme/issues/{number}"))
        chat.relay.webhooks.route(
            receive(read(payload), chat.relay.settings.default_destination, time.monotonic())
        )
        chat.settle()
    first = chat.store.message(CHAT, 1)
    assert first is not None
    key = first.buttons[0].key
    chat.clock.now = start + 300
    chat.update(press(TAKE, key, 1, 1))
    chat.clock.now = start + 1800
    chat.update(press("resolve", key, 2, 1))
    chat.settle()
    chat.clock.now = start + 700  # the second went a few seconds after the first: its turn
    escalation_of(chat.relay).fire_due()
    chat.settle()
    chat.clock.now = MONDAY
    return chat


def reports_of(chat: Chat) -> ReportStore:
    """The reports on the relay's spool, as the summaries make them: with On it's takes."""
    assert chat.relay.spool is not None
    reports: ReportStore = chat.relay.spool.of(
        lambda store: ReportStore.lent(store, REGISTRY.lending)
    )
    return reports


def test_the_report_says_what_on_call_cost_from_the_spools_records(week: Chat) -> None:
    assert week.relay.spool is not None
    calls = week.relay.spool.of(CallsMadeStore)
    found = reports_of(week).report(HERE, start=MONDAY - 7 * 86400, now=MONDAY, calls=calls)
    assert (found.alerts, found.issues, found.taken, found.resolved, found.calls) == (2, 2, 1, 1, 1)
    # Without on call lending its calls, none are counted; the rest is the same.
    alone = reports_of(week).report(HERE, start=MONDAY - 7 * 86400, now=MONDAY)
    assert (alone.alerts, alone.taken, alone.calls) == (2, 1, 0)
    assert (found.take_median, found.take_worst) == (300, 300)
    assert (found.resolve_median, found.resolve_worst) == (1800, 1800)
    assert found.takers == {"@ada_ops": 1}
    assert found.open_count == 1
    assert [issue.title for issue in found.open] == ["ZeroDivisionError: division by zero #2"]
    elsewhere = Destination(CHAT_ID, 77)  # another topic: none of it
    assert reports_of(week).report(elsewhere, start=0, now=MONDAY).alerts == 0


def test_the_monday_summary_has_the_weeks_report(week: Chat) -> None:
    data = summaries_of(week.relay).compose(HERE)
    text = summary_message(data["summary"], ENGLISH).text
    assert "📊 On call, 30.11 09:00 – 07.12 09:00 (UTC)" in text
    assert "Time to take: median 5 min, worst 5 min (1 taken)" in text
    assert "Time to resolve: median 30 min, worst 30 min (1 resolved)" in text
    assert "Calls made: 1" in text
    assert "• BACKEND-1A · ZeroDivisionError: division by zero #2 · -" in text
    week.clock.now = MONDAY + 86400  # Tuesday: no report
    assert "report" not in summaries_of(week.relay).compose(HERE)["summary"]


def cli_environ(tmp_path: Path, spool_path: str, **more: str) -> dict[str, str]:
    """What `relay-app report` reads: the routes file, the week's spool, the relay's own."""
    routes = tmp_path / "routes.toml"
    routes.write_text(ROUTES)
    return {
        "RELAY_ROUTES": str(routes),
        "RELAY_SPOOL_PATH": spool_path,
        "TELEGRAM_CHAT_ID": CHAT,
        "TELEGRAM_BOT_TOKEN": "123456789:AAE-a-token-as-botfather-prints-it-000",
        "RELAY_WEBHOOK_SECRET": "s" * 32,
        **more,
    }


def test_relay_app_report_prints_it_for_a_route(
    week: Chat, tmp_path: Path, spool_path: str
) -> None:
    environ = cli_environ(tmp_path, spool_path)
    out, err = io.StringIO(), io.StringIO()
    code = main(
        ["report", "--route", "payments", "--days", "30"], environ=environ, out=out, err=err
    )
    assert code == 0, err.getvalue()
    lines = out.getvalue().split("\n")
    assert lines[0] == f"chat {CHAT}, the last 30 day(s):"
    assert "Who took what: @ada_ops 1" in lines
    assert any(line.startswith("(the spool keeps") for line in lines)
    code = main(["report", "--route", "nope"], environ=environ, out=out, err=err)
    assert code == 2
    assert "--route 'nope' names no route of the routes file (payments)" in err.getvalue()


def test_the_report_counts_each_days_alerts_by_level_and_each_place(week: Chat) -> None:
    assert week.relay.spool is not None
    store = reports_of(week)
    found = store.report(None, start=MONDAY - 7 * 86400, now=MONDAY, zone=ZoneInfo("Asia/Tokyo"))
    # Every day of the period in the place's zone (Sunday 09:00 UTC is 18:00 in Tokyo).
    assert list(found.by_day) == [f"2026-11-{d}" for d in (30,)] + [
        f"2026-12-0{d}" for d in range(1, 8)
    ]
    assert found.by_day["2026-12-06"] == {"error": 2}
    assert sum(sum(levels.values()) for levels in found.by_day.values()) == found.alerts == 2
    assert found.by_place == {CHAT: 2}
    # A copy of a card's row (a chart under it) is no alert.
    first = week.store.message(CHAT, 1)
    assert first is not None
    copy = replace(first, message_id=99, buttons=(replace(first.buttons[0], key="copy"),))
    week.store.keep_copy(copy, first.buttons[0].key)
    again = store.report(None, start=MONDAY - 7 * 86400, now=MONDAY)
    assert (again.alerts, again.by_place) == (2, {CHAT: 2})


def test_the_report_as_a_picture_from_the_command_line_and_after_the_monday_summary(
    week: Chat, tmp_path: Path, spool_path: str
) -> None:
    environ = cli_environ(tmp_path, spool_path, RELAY_LANGUAGE="ru")
    picture = tmp_path / "week.png"
    out, err = io.StringIO(), io.StringIO()
    code = main(["report", "--chart", str(picture)], environ=environ, out=out, err=err)
    assert code == 0, err.getvalue()
    assert picture.read_bytes().startswith(PNG)
    assert out.getvalue().splitlines()[-1].startswith(f"the picture: {picture} (")
    assert week.relay.spool is not None
    spec = report_spec(
        reports_of(week).report(
            None,
            start=MONDAY - 7 * 86400,
            now=MONDAY,
            calls=week.relay.spool.of(CallsMadeStore),
        ),
        with_chart_words(RUSSIAN),
        UTC,
        {CHAT: "payments"},
    )
    unwritable = main(
        ["report", "--chart", str(tmp_path / "no" / "such.png")], environ=environ, out=out, err=err
    )
    assert unwritable == 1  # said before anything is drawn
    assert "could not be written to" in err.getvalue()
    assert spec["title"] == "Дежурство 30.11 – 07.12: алертов 2, вызовов 1"
    [days, times] = spec["panels"]  # one place: no panel of places
    assert [stack["name"] for stack in days["stacks"]] == ["ошибки"]
    assert times["shown"] == ["5 мин", "5 мин", "30 мин", "30 мин"]

    # Monday's summary with the week's report: its picture goes first, as a photo, the text
    # after it (the summary waits a little for the picture: PICTURE_FIRST).
    week.clock.now = MONDAY - 60
    assert summaries_of(week.relay).upkeep() == 0  # its first look: due at 09:00
    week.clock.now = MONDAY
    assert summaries_of(week.relay).upkeep() == 1
    assert week.relay.spool is not None
    store = week.relay.spool.of(lambda store: store)

    def pictures() -> int:
        found = store.read(
            lambda tx: tx.one("SELECT count(*) AS n FROM jobs WHERE kind = ?", (KIND,))
        )
        return int(found["n"])

    # Drawn off the upkeep's thread, then queued due at once.
    assert wait_until(pictures, timeout=20)
    week.settle()
    [(where, photo)] = week.telegram.photos
    assert where == HERE
    assert isinstance(photo.photo, bytes)
    assert photo.photo.startswith(PNG)
    assert photo.caption.splitlines()[0] == "📊 On call, 30.11 09:00 – 07.12 09:00 (UTC)"
    summary = week.telegram.delivered[-1]
    assert summary.text.startswith("📋")
    assert week.telegram.writes[-2:] == ["sendPhoto", "sendMessage"]  # the picture first


def test_a_handoff_lists_what_is_still_open_and_who_has_it() -> None:
    about = {
        "rotation": "payments",
        "person": "@boris_ops",
        "next": "@anna_ops",
        "until": MONDAY + 7 * 86400,
        "zone": "UTC",
        "open_count": 12,
        "open": [
            {"label": "BACKEND-1A", "title": "TimeoutError", "taken_by": "@ada_ops"},
            {"label": "BACKEND-2A", "title": "KeyError", "taken_by": None},
        ],
    }
    lines = handoff_message(about, ENGLISH).text.split("\n")
    assert lines[2:] == [
        "Still open (12):",
        "• BACKEND-1A · TimeoutError · 👀 @ada_ops",
        "• BACKEND-2A · KeyError · -",
        "…and 10 more",
    ]


def test_a_report_day_needs_a_summary_and_a_weekday() -> None:
    with pytest.raises(RoutesError, match="report: needs summary"):
        parse_routes(f'[[route]]\nchat = "{CHAT}"\nreport = "monday"\n', "r.toml", ROUTE_SOURCES)
    with pytest.raises(RoutesError, match="report: must be a day of the week"):
        parse_routes(
            f'[[route]]\nchat = "{CHAT}"\nsummary = "09:00"\nreport = "mon"\n',
            "r.toml",
            ROUTE_SOURCES,
        )


def test_takers_are_counted_by_their_id_and_told_apart_where_they_share_a_name() -> None:
    takes = [
        (_Taker(501, "Sam"), 1.0),
        (_Taker(502, "Sam"), 2.0),
        (_Taker(501, "Sam"), 3.0),
        (_Taker(7, "@ada_ops"), 4.0),
        (_Taker(None, "Old take"), 5.0),  # kept before ids were
    ]
    assert _takers(takes) == {"Sam (id 501)": 2, "@ada_ops": 1, "Old take": 1, "Sam (id 502)": 1}
