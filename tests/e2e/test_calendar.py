"""The rotation's calendar feed end to end: the real `gunicorn wsgi:app` serves
/calendar/<secret>/<rotation>.ics to a calendar app, and no log line (the access log's
included) shows the secret."""

from __future__ import annotations

from pathlib import Path

import requests
from icalendar import Calendar

from tests.e2e.conftest import StartRelay

SECRET = "calendar-feed-secret-0123456789"
ROUTES = """
[[rotation]]
name = "ops"
people = ["@anna_ops", "@boris_ops"]
every = "1d"
start = "2026-11-30T09:00"
timezone = "Europe/Moscow"
"""


def test_the_feed_is_served_and_its_secret_never_logged(
    start_relay: StartRelay, tmp_path: Path
) -> None:
    routes = tmp_path / "routes.toml"
    routes.write_text(ROUTES)
    relay = start_relay(RELAY_ROUTES=str(routes), RELAY_CALENDAR_SECRET=SECRET)
    reply = requests.get(f"{relay.url}/calendar/{SECRET}/ops.ics", timeout=10)
    assert reply.status_code == 200
    assert reply.headers["Content-Type"] == "text/calendar; charset=utf-8"
    shifts = list(Calendar.from_ical(reply.content).walk("VEVENT"))
    assert len(shifts) >= 28  # daily, four weeks ahead
    assert {str(shift["summary"]) for shift in shifts} == {
        "On call (ops): @anna_ops",
        "On call (ops): @boris_ops",
    }
    wrong = requests.get(f"{relay.url}/calendar/not-the-secret-at-all/ops.ics", timeout=10)
    assert wrong.status_code == 404
    logs = relay.logs()
    assert "/calendar/" in logs  # the access log has the request
    assert SECRET not in logs
