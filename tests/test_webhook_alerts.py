"""A webhook's alert taken in (web/webhook_alerts.py): on disk before anything slow, never lost
to an error of the relay's own, and what strangers get wrong logged once a minute, counted."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest
import responses
from flask.testing import FlaskClient
from requests import PreparedRequest

from relay_app import Relay, create_app, relay_of
from relay_app.core.errors import SpoolError
from relay_app.operating.config import Settings
from relay_app.spool import Admin
from relay_app.spool.database import Database
from tests.conftest import OK, SECRET, SEND_URL, WEBHOOK, FakeTime, run_background
from tests.fake_glitchtip import SAMPLE_EVENT, SAMPLE_ISSUE
from tests.payloads import issue, issue_alert

GLITCHTIP = "https://glitchtip.example.org"


def wait_for(condition: Callable[[], bool], timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.01)
    return condition()


def lost_records(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if "ALERT NOT DELIVERED" in r.getMessage()]


def test_a_spool_that_fails_unforeseen_keeps_the_alert_in_memory_and_sends_it(
    client: FlaskClient,
    relay: Relay,
    telegram: responses.RequestsMock,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Not a SpoolError: what no mapping foresaw (a lone surrogate once made sqlite3 raise
    # UnicodeEncodeError here, and the alert was lost with a 500).
    assert relay.spool is not None

    def broken(*_: Any, **__: Any) -> None:
        raise UnicodeEncodeError("utf-8", "\ud800", 0, 1, "surrogates not allowed")

    monkeypatch.setattr(relay.spool.queue, "admit", broken)
    telegram.post(SEND_URL, json=OK)
    reply = client.post(WEBHOOK, json=issue_alert(issue(1, title="Kept anyway")))
    assert (reply.status_code, reply.json) == (200, {"status": "sent"})
    assert "Kept anyway" in json.loads(telegram.calls[0].request.body or b"")["text"]
    said = [r for r in caplog.records if "could not be written to the spool" in r.getMessage()]
    assert said[0].levelno == logging.ERROR
    assert "the spool failed: UnicodeEncodeError" in said[0].getMessage()
    assert lost_records(caplog) == []


def test_a_failure_before_the_alert_is_queued_logs_it_with_its_text(
    client: FlaskClient,
    relay: Relay,
    telegram: responses.RequestsMock,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def broken(*_: Any, **__: Any) -> None:
        raise RuntimeError("a bug")

    monkeypatch.setattr(relay.intake, "admit", broken)
    reply = client.post(WEBHOOK, json=issue_alert(issue(1, title="Remember me")))
    assert reply.status_code == 500
    assert reply.json == {"status": "failed", "error": "internal error; see the relay's log"}
    [lost] = lost_records(caplog)
    assert lost.levelno == logging.ERROR
    assert "Remember me" in lost.getMessage()
    assert lost.exc_info is not None  # with the traceback of what failed
    assert len(telegram.calls) == 0


def test_a_failure_after_the_alert_is_queued_leaves_it_to_the_retrier(
    client: FlaskClient,
    relay: Relay,
    telegram: responses.RequestsMock,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def broken(*_: Any, **__: Any) -> None:
        raise RuntimeError("a bug")

    monkeypatch.setattr(relay.intake, "attempt", broken)
    reply = client.post(WEBHOOK, json=issue_alert(issue(1)))
    assert reply.status_code == 500
    assert reply.json is not None
    assert reply.json["status"] == "queued"
    assert relay.spool is not None
    assert relay.spool.admin.counts()["pending"] == 1  # there for the retrier
    assert lost_records(caplog) == []
    assert any("it waits there" in r.getMessage() for r in caplog.records)


def test_an_alert_is_on_disk_while_glitchtip_is_asked_for_its_details(
    settings: Settings,
    spool_path: str,
    fake_time: FakeTime,
    telegram: responses.RequestsMock,
) -> None:
    glitchtip = telegram  # one mock for both APIs: requests has one HTTP layer to replace
    settings = replace(
        settings, glitchtip_api_token="ab" * 32, glitchtip_url=GLITCHTIP, details_budget=2.0
    )
    app = create_app(settings, clock=fake_time)
    pending_while_asked: list[int] = []

    def issue_answer(_request: PreparedRequest) -> tuple[int, dict[str, str], str]:
        # GlitchTip answers only once the alert is on disk (another process's view of the
        # spool): a relay that waited for this answer before writing the alert would not write
        # it meanwhile, and this would give up, having seen none.
        spool = Admin(Database(spool_path))
        for _poll in range(150):
            if spool.counts()["pending"] == 1:
                break
            time.sleep(0.01)
        pending_while_asked.append(spool.counts()["pending"])
        return 200, {}, json.dumps(SAMPLE_ISSUE)

    glitchtip.add_callback(responses.GET, f"{GLITCHTIP}/api/0/issues/3/", issue_answer)
    glitchtip.get(f"{GLITCHTIP}/api/0/issues/3/events/latest/", json=SAMPLE_EVENT)
    telegram.post(SEND_URL, json=OK)
    try:
        link = f"{GLITCHTIP}/acme/issues/3"
        reply = app.test_client().post(WEBHOOK, json=issue_alert(issue(3, link=link)))
    finally:
        relay = relay_of(app)
        assert relay is not None
        relay.dispatcher.shutdown()
        if relay.lookups is not None:
            relay.lookups.shutdown()
    assert reply.status_code == 200
    assert pending_while_asked == [1]  # written before anything slow
    [sent] = [
        json.loads(call.request.body or b"")["text"]
        for call in telegram.calls
        if call.request.url == SEND_URL
    ]
    assert "first seen" in sent  # and the details, which came within the budget, in it
    assert relay.spool is not None
    assert relay.spool.admin.counts()["pending"] == 0


def test_details_that_cannot_be_kept_do_not_hold_the_alert_back(
    settings: Settings,
    fake_time: FakeTime,
    telegram: responses.RequestsMock,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    settings = replace(
        settings, glitchtip_api_token="ab" * 32, glitchtip_url=GLITCHTIP, details_budget=2.0
    )
    app = create_app(settings, clock=fake_time)
    relay = relay_of(app)
    assert relay is not None
    assert relay.spool is not None

    def broken(*_: Any, **__: Any) -> None:
        raise SpoolError("disk I/O error")

    monkeypatch.setattr(relay.spool.queue, "revise", broken)
    glitchtip = telegram  # one mock for both APIs: requests has one HTTP layer to replace
    glitchtip.get(f"{GLITCHTIP}/api/0/issues/3/", json=SAMPLE_ISSUE)
    glitchtip.get(f"{GLITCHTIP}/api/0/issues/3/events/latest/", json=SAMPLE_EVENT)
    telegram.post(SEND_URL, json=OK)
    try:
        link = f"{GLITCHTIP}/acme/issues/3"
        reply = app.test_client().post(WEBHOOK, json=issue_alert(issue(3, link=link)))
    finally:
        relay.dispatcher.shutdown()
        if relay.lookups is not None:
            relay.lookups.shutdown()
    assert reply.status_code == 200  # sent as it was written
    assert "could not be written again with its issues' details" in caplog.text


def test_wrong_secrets_are_logged_once_a_minute_with_how_many(
    client: FlaskClient, caplog: pytest.LogCaptureFixture
) -> None:
    for attempt in range(200):
        assert client.post(f"/webhook/guess-{attempt}", json=issue_alert()).status_code == 404
    said = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(said) == 1
    assert "its alert is lost" in said[0].getMessage()
    assert "webhook/guess" not in said[0].getMessage()


def test_forged_updates_are_logged_once_a_minute_with_how_many(
    settings: Settings,
    fake_time: FakeTime,
    caplog: pytest.LogCaptureFixture,
) -> None:
    settings = replace(
        settings,
        glitchtip_api_token="ab" * 32,
        glitchtip_url=GLITCHTIP,
        telegram_updates="webhook",
    )
    app = create_app(settings, clock=fake_time)
    try:
        client = app.test_client()
        for update_id in range(200):
            reply = client.post(f"/telegram/{SECRET}", json={"update_id": update_id})
            assert reply.status_code == 403
    finally:
        relay = relay_of(app)
        assert relay is not None
        relay.dispatcher.shutdown()
    said = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(said) == 1
    assert "without Telegram's secret header" in said[0].getMessage()


def test_an_alert_that_waits_its_turn_gets_its_details_before_it_goes(
    settings: Settings,
    fake_time: FakeTime,
    telegram: responses.RequestsMock,
) -> None:
    glitchtip = telegram  # one mock for both APIs: requests has one HTTP layer to replace
    settings = replace(
        settings, glitchtip_api_token="ab" * 32, glitchtip_url=GLITCHTIP, details_budget=0.0
    )
    app = create_app(settings, clock=fake_time)
    relay = relay_of(app)
    assert relay is not None
    assert relay.lookups is not None
    for number in (3, 4):
        glitchtip.get(f"{GLITCHTIP}/api/0/issues/{number}/", json=SAMPLE_ISSUE)
        glitchtip.get(f"{GLITCHTIP}/api/0/issues/{number}/events/latest/", json=SAMPLE_EVENT)
    telegram.post(SEND_URL, json=OK)
    try:
        client = app.test_client()
        for number in (3, 4):
            link = f"{GLITCHTIP}/acme/issues/{number}"
            client.post(WEBHOOK, json=issue_alert(issue(number, link=link)))
        # The second waits for the group's next turn; its details come meanwhile.
        lookups = relay.lookups
        assert wait_for(lambda: len(lookups.within(["4"], 0.0)) == 1)
        run_background(relay.dispatcher, fake_time)
    finally:
        relay.dispatcher.shutdown()
        lookups.shutdown()
    first, second = [
        json.loads(call.request.body or b"")["text"]
        for call in telegram.calls
        if call.request.url == SEND_URL
    ]
    assert "first seen" not in first  # the budget was 0: it went at once, its details later
    assert "first seen" in second
