"""A webhook's alert taken in (intake/alerts.py): on disk before anything slow, never lost
to an error of the relay's own, and what strangers get wrong logged once a minute, counted."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any, NoReturn

import pytest
import responses
from flask.testing import FlaskClient
from requests import PreparedRequest

from relay_app import Relay, create_app, relay_of, stop_background_work
from relay_app.core.errors import SpoolError
from relay_app.glitchtip.settings import GlitchTipConfig
from relay_app.operating.config import Settings
from relay_app.spool import Admin
from relay_app.spool.database import Database
from relay_app.web.misses import SHOWN_CHARS, Misses
from tests.conftest import (
    OK,
    SECRET,
    SEND_URL,
    WEBHOOK,
    FakeTime,
    glitchtip_on,
    run_background,
    sent_texts,
)
from tests.e2e.helpers import wait_until
from tests.fake_glitchtip import SAMPLE_EVENT, SAMPLE_ISSUE
from tests.payloads import issue, issue_alert

GLITCHTIP = "https://glitchtip.example.org"


def raising(error: Exception) -> Callable[..., NoReturn]:
    """A stand-in for a method that fails with `error`."""

    def fail(*_: Any, **__: Any) -> NoReturn:
        raise error

    return fail


@contextmanager
def serving(settings: Settings, clock: FakeTime) -> Iterator[tuple[FlaskClient, Relay]]:
    """The app for these settings, with its background work stopped after."""
    app = create_app(settings, clock=clock)
    relay = relay_of(app)
    assert relay is not None
    try:
        yield app.test_client(), relay
    finally:
        stop_background_work(app)


def with_glitchtip(settings: Settings, **overrides: Any) -> Settings:
    theirs = glitchtip_on(GlitchTipConfig("ab" * 32, GLITCHTIP))
    return replace(settings, theirs=theirs, **overrides)


def answers_details(mock: responses.RequestsMock, *numbers: int) -> None:
    """GlitchTip's API, on the mock Telegram's HTTP layer too (requests has one to replace):
    each issue one of acme's, as its alert's link names it."""
    for number in numbers:
        of_acme(mock, number)
        mock.get(f"{GLITCHTIP}/api/0/issues/{number}/", json=SAMPLE_ISSUE)
        mock.get(f"{GLITCHTIP}/api/0/issues/{number}/events/latest/", json=SAMPLE_EVENT)


def of_acme(mock: responses.RequestsMock, number: int) -> None:
    """The organization's issues asked for by id: GlitchTip's answer when the issue is its."""
    mock.get(
        f"{GLITCHTIP}/api/0/organizations/acme/issues/?id={number}", json=[{"id": str(number)}]
    )


def alert_about(number: int) -> dict[str, Any]:
    return issue_alert(issue(number, link=f"{GLITCHTIP}/acme/issues/{number}"))


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
    surrogate = UnicodeEncodeError("utf-8", "\ud800", 0, 1, "surrogates not allowed")
    monkeypatch.setattr(relay.spool.queue, "add", raising(surrogate))
    telegram.post(SEND_URL, json=OK)
    reply = client.post(WEBHOOK, json=issue_alert(issue(1, title="Kept anyway")))
    assert (reply.status_code, reply.json) == (200, {"status": "sent"})
    assert "Kept anyway" in sent_texts(telegram)[0]
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
    monkeypatch.setattr(relay.alert_queue, "admit", raising(RuntimeError("a bug")))
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
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(relay.attempts, "first_attempt", raising(RuntimeError("a bug")))
    reply = client.post(WEBHOOK, json=issue_alert(issue(1)))
    assert reply.status_code == 500
    assert reply.json is not None
    assert reply.json["status"] == "queued"
    assert relay.spool is not None
    assert relay.spool.admin.counts()["pending"] == 1  # there for the retrier
    assert lost_records(caplog) == []
    assert any("it waits there" in r.getMessage() for r in caplog.records)


def test_an_alert_is_on_disk_while_glitchtip_is_asked_for_its_details(
    settings: Settings, spool_path: str, fake_time: FakeTime, telegram: responses.RequestsMock
) -> None:
    pending_while_asked: list[int] = []

    def issue_answer(_request: PreparedRequest) -> tuple[int, dict[str, str], str]:
        # GlitchTip answers only once the alert is on disk (another process's view of the
        # spool): a relay that waited for this answer before writing the alert would not write
        # it meanwhile, and this would give up, having seen none.
        spool = Admin(Database(spool_path))
        wait_until(lambda: spool.counts()["pending"] == 1, timeout=1.5)
        pending_while_asked.append(spool.counts()["pending"])
        return 200, {}, json.dumps(SAMPLE_ISSUE)

    of_acme(telegram, 3)
    telegram.add_callback(responses.GET, f"{GLITCHTIP}/api/0/issues/3/", issue_answer)
    telegram.get(f"{GLITCHTIP}/api/0/issues/3/events/latest/", json=SAMPLE_EVENT)
    telegram.post(SEND_URL, json=OK)
    with serving(with_glitchtip(settings, details_budget=2.0), fake_time) as (client, relay):
        reply = client.post(WEBHOOK, json=alert_about(3))
    assert reply.status_code == 200
    assert pending_while_asked == [1]  # written before anything slow
    [sent] = sent_texts(telegram)
    assert "first seen" in sent  # and the details, which came within the budget, in it
    assert relay.spool is not None
    assert relay.spool.admin.counts()["pending"] == 0


def test_a_webhook_naming_issues_whose_links_are_not_glitchtips_says_so_once(
    settings: Settings,
    fake_time: FakeTime,
    telegram: responses.RequestsMock,
    caplog: pytest.LogCaptureFixture,
) -> None:
    telegram.post(SEND_URL, json=OK)
    answers_details(telegram, 1)
    foreign = issue_alert(
        issue(1, link=f"{GLITCHTIP}/acme/issues/1"),
        issue(2, link="http://169.254.169.254/latest/issues/2"),  # a webhook may name anything
        issue(3, link="https://attacker.example/acme/issues/3"),
    )
    with (
        serving(with_glitchtip(settings), fake_time) as (client, _),
        caplog.at_level(logging.WARNING),
    ):
        assert client.post(WEBHOOK, json=foreign).status_code == 200
        [warning] = [r for r in caplog.records if "not at its source's address" in r.getMessage()]
        assert "2 issue(s)" in warning.getMessage()
        assert "http://169.254.169.254, https://attacker.example" in warning.getMessage()
        caplog.clear()
        fake_time.now += 60
        assert client.post(WEBHOOK, json=alert_about(1)).status_code == 200  # GlitchTip's own
    assert not [r for r in caplog.records if "not at its source's address" in r.getMessage()]


def test_details_that_cannot_be_kept_do_not_hold_the_alert_back(
    settings: Settings,
    fake_time: FakeTime,
    telegram: responses.RequestsMock,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    answers_details(telegram, 3)
    telegram.post(SEND_URL, json=OK)
    with serving(with_glitchtip(settings, details_budget=2.0), fake_time) as (client, relay):
        assert relay.spool is not None
        monkeypatch.setattr(relay.spool.queue, "merge", raising(SpoolError("disk I/O error")))
        reply = client.post(WEBHOOK, json=alert_about(3))
        assert reply.status_code == 200  # its webhook sends it at once, as it was queued
    assert "could not be given its issues' details: it goes without them" in caplog.text
    [sent] = sent_texts(telegram)
    assert "first seen" not in sent  # as it was queued


def test_an_alert_that_waits_its_turn_gets_its_details_before_it_goes(
    settings: Settings, fake_time: FakeTime, telegram: responses.RequestsMock
) -> None:
    answers_details(telegram, 3, 4)
    telegram.post(SEND_URL, json=OK)
    with serving(with_glitchtip(settings, details_budget=0.0), fake_time) as (client, relay):
        for number in (3, 4):
            client.post(WEBHOOK, json=alert_about(number))
        # The second waits for the group's next turn; its details come meanwhile.
        lookups = relay.lookups
        assert lookups is not None
        assert wait_until(lambda: len(lookups.within(["acme/4"], 0.0)) == 1, timeout=5)
        run_background(relay.dispatcher, fake_time)
    _, second = sent_texts(telegram)
    assert "first seen" in second


def test_wrong_secrets_are_logged_once_a_minute_with_how_many(
    client: FlaskClient, caplog: pytest.LogCaptureFixture
) -> None:
    for attempt in range(200):
        assert client.post(f"/webhook/guess-{attempt}", json=issue_alert()).status_code == 404
    said = [r for r in caplog.records if r.name == "relay_app.web.misses"]
    assert len(said) == 1
    assert (
        said[0]
        .getMessage()
        .startswith(
            "POST /webhook/[REDACTED] answered 404: a webhook with a wrong secret was refused, "
            "and if GlitchTip sent it, its alert is lost (GlitchTip never sends it again). Fix "
            "the URL of the webhook recipient in GlitchTip's project alert settings: it must be "
            "the relay's address, then /webhook/ and RELAY_WEBHOOK_SECRET's value"
        )
    )
    assert "webhook/guess" not in said[0].getMessage()

    # A minute later, the next says how many there were since.
    counted: list[str] = []
    clock = FakeTime()
    misses = Misses(counted.append, monotonic=clock)
    caplog.clear()
    for attempt in range(4):
        misses.record("POST", f"/webhook/guess-{attempt}", 404)
        clock.now += 20
    lines = [r.getMessage() for r in caplog.records if r.name == "relay_app.web.misses"]
    assert len(lines) == 2
    assert "(3 times since this process last said so;" in lines[1]
    assert counted == ["webhook_secret"] * 4


def test_a_strangers_path_and_method_reach_the_log_cut_short_and_escaped(
    caplog: pytest.LogCaptureFixture,
) -> None:
    misses = Misses(lambda _reason: None)
    misses.record("P" * 4000, "/" + "\x01" * 4000 + "/more", 404)
    [said] = [r.getMessage() for r in caplog.records if r.name == "relay_app.web.misses"]
    escaped = "\\x01" * SHOWN_CHARS
    assert said.startswith(f"{'P' * SHOWN_CHARS}... (3968 more) /{escaped}... (3968 more)/")
    assert "\x01" not in said
    assert len(said) < 1000


def test_an_exception_on_a_strangers_request_logs_its_path_cut_short(
    settings: Settings,
    fake_time: FakeTime,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Flask's own line holds the whole path, which anyone may make 4 KB long.
    monkeypatch.setattr(Misses, "record", raising(RuntimeError("a bug in counting misses")))
    with serving(settings, fake_time) as (client, _):
        assert client.get("/" + "a" * 4000).status_code == 500
    [said] = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert said.getMessage() == f"Exception on /{'a' * 199}... (3801 more) [GET]"
    assert said.exc_info is not None


def test_forged_updates_are_logged_once_a_minute_with_how_many(
    settings: Settings, fake_time: FakeTime, caplog: pytest.LogCaptureFixture
) -> None:
    with serving(with_glitchtip(settings, telegram_updates="webhook"), fake_time) as (client, _):
        for update_id in range(200):
            reply = client.post(f"/telegram/{SECRET}", json={"update_id": update_id})
            assert reply.status_code == 403
    said = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(said) == 1
    assert "without Telegram's secret header" in said[0].getMessage()


def test_an_issue_of_another_organization_is_not_read_into_the_chat(
    settings: Settings, fake_time: FakeTime, telegram: responses.RequestsMock
) -> None:
    """A webhook may name any link: one at acme's path whose id is another organization's
    issue (the token's user is in both) gets none of that issue's details in the chat, and
    GlitchTip is not asked for it."""
    telegram.get(f"{GLITCHTIP}/api/0/organizations/acme/issues/?id=1002", json=[])  # not acme's
    secret = dict(SAMPLE_ISSUE, metadata={"type": "KeyError", "value": "their-secret-value"})
    telegram.get(f"{GLITCHTIP}/api/0/issues/1002/", json=secret)
    telegram.get(f"{GLITCHTIP}/api/0/issues/1002/events/latest/", json=SAMPLE_EVENT)
    telegram.post(SEND_URL, json=OK)
    with serving(with_glitchtip(settings, details_budget=2.0), fake_time) as (client, relay):
        assert client.post(WEBHOOK, json=alert_about(1002)).status_code == 200
        lookups = relay.lookups
        assert lookups is not None
        assert lookups.within(["acme/1002"], 0.0) == {}  # gone: not acme's
    [sent] = sent_texts(telegram)
    assert "their-secret-value" not in sent
    assert "📍" not in sent
    asked = [call.request.url for call in telegram.calls if "/api/0/" in str(call.request.url)]
    assert asked == [f"{GLITCHTIP}/api/0/organizations/acme/issues/?id=1002"]
