"""Sentry's webhooks in (sentry/): the signature checked over the raw body, a delivery taken in
once, each resource read into what the relay does, the answer given before any send. Payloads
from Sentry's documentation and source (tests/sentry_samples/README.md)."""

from __future__ import annotations

import copy
import hashlib
import hmac
import io
import json
import logging
import threading
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import responses
from flask import Flask
from flask.testing import FlaskClient
from requests import PreparedRequest

from relay_app import Relay, create_app, relay_of
from relay_app.cards.card import IssueButton, SentMessage
from relay_app.cards.marks import Marks
from relay_app.cards.sent import SentStore
from relay_app.cli import main
from relay_app.core.alerts import Field, IssueAlert, alert_as_json
from relay_app.core.issue_details import details_from_json
from relay_app.glitchtip.webhook import KIND_KEY, SOURCE_KEY
from relay_app.message.open_issues import WatchedIssue, issue_data
from relay_app.message.subjects import subjects_of
from relay_app.operating.config import Settings
from relay_app.operating.env_values import ConfigError
from relay_app.routes.split import facts_of
from relay_app.routes.table import parse_routes
from relay_app.sentry.assignments import AssignmentStore, assigned
from relay_app.sentry.deliveries import KEPT, DeliveryStore
from relay_app.sentry.hooks import Alerting, InStep, Noted, customer_domain_issue, read_hook
from relay_app.sentry.settings import DEFAULT_SENTRY_URL, SentryConfig, sentry_from_env
from relay_app.sentry.signature import signature_of, signed
from relay_app.spool.opening import open_memory
from relay_app.spool.store import Store
from relay_app.words import ENGLISH, RUSSIAN
from tests.conftest import (
    OK,
    ROUTE_SOURCES,
    SEND_URL,
    SOURCES,
    WEBHOOK,
    FakeTime,
    run_background,
    sent_bodies,
    sent_texts,
    sentry_on,
)
from tests.e2e.helpers import wait_until
from tests.old_spools import upgraded_from
from tests.payloads import issue, issue_alert, message_for

SAMPLES = Path(__file__).resolve().parent / "sentry_samples"
CLIENT_SECRET = "5f0c" * 16
SENTRY = "https://sentry.example.org"
PATH = "/sentry/webhook"


def sample_bytes(name: str) -> bytes:
    return (SAMPLES / name).read_bytes()


def sample(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(sample_bytes(name))
    return loaded


def with_urls(body: dict[str, Any], org: str = "acme") -> dict[str, Any]:
    """An issue webhook with the three URLs Sentry's source adds to its issue
    (`_webhook_issue_data`: url, web_url, project_url), which the documentation's sample lacks."""
    changed = copy.deepcopy(body)
    issue = changed["data"]["issue"]
    project = issue["project"]["slug"]
    issue["url"] = f"{SENTRY}/api/0/organizations/{org}/issues/{issue['id']}/"
    issue["web_url"] = f"{SENTRY}/organizations/{org}/issues/{issue['id']}/"
    issue["project_url"] = f"{SENTRY}/organizations/{org}/projects/{project}/"
    return changed


def signed_post(
    client: FlaskClient,
    body: bytes,
    resource: str,
    *,
    request_id: str | None = "0" * 32,
    secret: str = CLIENT_SECRET,
    stamp: float = FakeTime().now,
) -> Any:
    """A POST as Sentry sends it: its headers (stamped, by default, when the test's clock
    starts), and the body's signature over its bytes."""
    headers = {
        "Content-Type": "application/json",
        "Sentry-Hook-Resource": resource,
        "Sentry-Hook-Timestamp": str(int(stamp)),
        "Sentry-Hook-Signature": signature_of(body, secret),
    }
    if request_id is not None:
        headers["Request-ID"] = request_id
    return client.post(PATH, data=body, headers=headers)


@pytest.fixture
def sentry_settings(settings: Settings) -> Settings:
    return replace(settings, theirs=sentry_on(SentryConfig(CLIENT_SECRET, None, SENTRY)))


@pytest.fixture
def sentry_app(sentry_settings: Settings, fake_time: FakeTime) -> Iterator[Flask]:
    app = create_app(sentry_settings, clock=fake_time)
    yield app
    relay = relay_of(app)
    assert relay is not None
    relay.dispatcher.shutdown()


def relay_in(app: Flask) -> Relay:
    relay = relay_of(app)
    assert relay is not None
    return relay


# The signature


def test_the_signature_is_sentrys_hmac_sha256_of_the_bytes_sent() -> None:
    body = sample_bytes("issue_alert.json")
    # As Sentry's build_signature computes it: over the body's text, encoded in UTF-8.
    expected = hmac.new(
        CLIENT_SECRET.encode("utf-8"), body.decode("utf-8").encode("utf-8"), hashlib.sha256
    ).hexdigest()
    assert signature_of(body, CLIENT_SECRET) == expected
    assert signed(body, expected, CLIENT_SECRET)
    assert signed(body, expected.upper(), CLIENT_SECRET)  # hex in either case
    assert not signed(body, expected, "another-secret-0123456789")
    assert not signed(body + b" ", expected, CLIENT_SECRET)
    assert not signed(body, None, CLIENT_SECRET)
    assert not signed(body, "", CLIENT_SECRET)
    assert not signed(body, "é" * 64, CLIENT_SECRET)


def test_a_body_is_checked_as_sent_not_as_parsed_and_written_again(
    sentry_app: Flask, telegram: responses.RequestsMock
) -> None:
    """getsentry/sentry #71025: a receiver that re-serializes the JSON it parsed checks other
    bytes than Sentry signed. The sample's bytes, indented as its file has them, are signed
    and taken; the same JSON written compactly, with that signature, is not Sentry's body."""
    telegram.post(SEND_URL, json=OK)
    client = sentry_app.test_client()
    as_sent = sample_bytes("issue_alert.json")
    rewritten = json.dumps(json.loads(as_sent), separators=(",", ":")).encode()
    assert rewritten != as_sent
    signature = signature_of(as_sent, CLIENT_SECRET)
    headers = {"Sentry-Hook-Resource": "event_alert", "Sentry-Hook-Signature": signature}
    refused = client.post(PATH, data=rewritten, headers=headers)
    assert refused.status_code == 401
    taken = client.post(PATH, data=as_sent, headers=headers)
    assert taken.status_code == 202, taken.get_json()


def test_a_wrong_or_missing_signature_is_401_counted_and_said_once_without_the_body(
    sentry_app: Flask, caplog: pytest.LogCaptureFixture
) -> None:
    client = sentry_app.test_client()
    body = sample_bytes("issue_alert.json")
    # Sentry's page says what its 401 means: counted at 0 from the start, for a rule to read.
    before = relay_in(sentry_app).metrics.exposition().decode()
    assert 'relay_requests_missed_total{reason="sentry_signature"} 0.0' in before
    with caplog.at_level(logging.INFO):
        wrong = signed_post(client, body, "event_alert", secret="an-old-secret-0123456789abcdef")
        missing = client.post(PATH, data=body, headers={"Sentry-Hook-Resource": "event_alert"})
    assert (wrong.status_code, missing.status_code) == (401, 401)
    assert wrong.get_json() == {"error": "missing or wrong Sentry-Hook-Signature"}
    said = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(said) == 1, said
    assert "SENTRY_CLIENT_SECRET" in said[0]
    assert "heck is not defined" not in caplog.text  # the body is never logged
    spool = relay_in(sentry_app).spool
    assert spool is not None
    assert spool.admin.counts()["pending"] == 0
    exposition = relay_in(sentry_app).metrics.exposition().decode()
    assert 'relay_requests_missed_total{reason="sentry_signature"} 2.0' in exposition


def test_without_a_client_secret_there_is_no_sentry_page(client: FlaskClient) -> None:
    body = sample_bytes("issue_alert.json")
    assert signed_post(client, body, "event_alert").status_code == 404


# What each resource is


def test_an_issue_alert_is_read_into_an_alert_with_its_issue_link_fields_and_details() -> None:
    hook = read_hook("event_alert", sample("issue_alert.json"), sentry_url="https://sentry.io")
    assert isinstance(hook, Alerting)
    assert not hook.created
    alert = hook.alert
    assert isinstance(alert, IssueAlert)
    assert (alert.source, alert.kind) == ("sentry", "issue")
    assert alert.heading == "Very Important Alert Rule!"
    [alerted] = alert.issues
    assert alerted.title == "ReferenceError: heck is not defined"
    # One form of link whatever Sentry sent: its issue, under SENTRY_URL, by organization.
    assert alerted.link == "https://sentry.io/organizations/test-org/issues/1117540176/"
    assert alerted.culprit == "?(<anonymous>)"
    assert (alerted.level, alerted.shade) == ("error", "error")
    assert alerted.fields == (Field("Project", "front-end"),)
    [ref] = subjects_of(alert, sources=SOURCES).issues
    assert (ref.id, ref.origin, ref.label) == (
        "sentry:1117540176",
        "https://sentry.io",
        "#1117540176",
    )
    details = details_from_json(hook.details["sentry:1117540176"])
    assert details is not None
    assert details.frame is not None
    assert (details.frame.filename, details.frame.line) == ("<anonymous>", 3)
    assert (details.exception_type, details.exception_value) == (
        "ReferenceError",
        "heck is not defined",
    )
    assert details.level == "error"
    assert hook.key == "event:e4874d664c3540c1a32eab185f12c5ab:Very Important Alert Rule!"


def test_an_organizations_own_sentry_io_address_names_it() -> None:
    body = sample("issue_alert.json")
    event = body["data"]["event"]
    event["web_url"] = "https://acme.sentry.io/issues/1117540176/events/e4874d66/"
    del event["url"], event["issue_url"]
    hook = read_hook("event_alert", body, sentry_url="https://sentry.io")
    assert isinstance(hook, Alerting)
    assert isinstance(hook.alert, IssueAlert)
    assert hook.alert.issues[0].link == "https://sentry.io/organizations/acme/issues/1117540176/"


def test_a_metric_alert_is_an_outage_and_its_recovery_without_buttons() -> None:
    resolved = read_hook("metric_alert", sample("metric_alert_resolved.json"), sentry_url=SENTRY)
    critical_body = sample("metric_alert_resolved.json") | {"action": "critical"}
    critical = read_hook("metric_alert", critical_body, sentry_url=SENTRY)
    assert isinstance(resolved, Alerting)
    assert isinstance(critical, Alerting)
    down, up = (
        subjects_of(critical.alert, sources=SOURCES),
        subjects_of(resolved.alert, sources=SOURCES),
    )
    assert (down.issues, up.issues) == ((), ())  # an alert rule, not an issue
    # The incident's link tells an outage from another: the recovery goes under its own.
    assert [(m.link, m.name, m.state) for m in down.monitors] == [
        ("https://sentry.io/organizations/baz/alerts/1/", "Too many errors", "down")
    ]
    assert [m.state for m in up.monitors] == ["up"]
    assert up.recovery
    text = message_for(critical.alert, ENGLISH, sources=SOURCES).text
    assert text == (
        "🔴 DOWN · Too many errors\n1000 events in the last 10 minutes Filter: level:error"
    )
    warning_body = sample("metric_alert_resolved.json") | {"action": "warning"}
    warning = read_hook("metric_alert", warning_body, sentry_url=SENTRY)
    assert isinstance(warning, Alerting)
    # A warning begins the incident's thread, as its critical would.
    assert [m.state for m in subjects_of(warning.alert, sources=SOURCES).monitors] == ["warning"]
    assert message_for(warning.alert, ENGLISH, sources=SOURCES).text.startswith(
        "🟡 WARNING · Too many errors"
    )


def test_a_new_issue_is_an_alert_of_kind_created_with_its_short_id() -> None:
    hook = read_hook("issue", with_urls(sample("issue_created.json")), sentry_url=SENTRY)
    assert isinstance(hook, Alerting)
    assert hook.created
    assert isinstance(hook.alert, IssueAlert)
    assert hook.alert.kind == "created"
    [ref] = subjects_of(hook.alert, sources=SOURCES).issues
    assert (ref.id, ref.label) == ("sentry:1170820242", "FRONT-END-9")
    details = details_from_json(hook.details["sentry:1170820242"])
    assert details is not None
    assert details.count == 1


@pytest.mark.parametrize(
    ("action", "status"),
    [
        ("resolved", "resolved"),
        ("unresolved", "unresolved"),
        ("ignored", "ignored"),
        ("archived", "ignored"),
    ],
)
def test_an_issues_new_state_brings_its_cards_in_step(action: str, status: str) -> None:
    body = sample("issue_created.json") | {"action": action}
    hook = read_hook("issue", body, sentry_url=SENTRY)
    assert isinstance(hook, InStep)
    assert hook.states == {"sentry:1170820242": status}


@pytest.mark.parametrize(
    ("resource", "body"),
    [
        ("installation", {"action": "created", "data": {"installation": {"uuid": "abc"}}}),
        ("comment", {"action": "created", "data": {}}),
        ("error", {"action": "created", "data": {}}),
        ("event_alert", {"action": "triggered", "data": {}}),
        ("", {}),
    ],
)
def test_what_the_relay_does_not_act_on_is_noted(resource: str, body: dict[str, Any]) -> None:
    assert isinstance(read_hook(resource, body, sentry_url=SENTRY), Noted)


# The page


def test_an_alert_is_answered_once_queued_before_any_send(
    sentry_app: Flask, telegram: responses.RequestsMock, fake_time: FakeTime
) -> None:
    telegram.post(SEND_URL, json=OK)
    answer = signed_post(sentry_app.test_client(), sample_bytes("issue_alert.json"), "event_alert")
    assert answer.status_code == 202
    assert answer.get_json()["status"] == "queued"
    assert sent_texts(telegram) == []  # the answer did not wait for Telegram
    run_background(relay_in(sentry_app).dispatcher, fake_time)
    [text] = sent_texts(telegram)
    assert "ReferenceError: heck is not defined" in text
    assert "📍 &lt;anonymous&gt;:3" in text  # the frame, from the event the webhook carried


def test_a_delivery_taken_in_before_does_nothing(
    sentry_app: Flask, telegram: responses.RequestsMock, fake_time: FakeTime
) -> None:
    telegram.post(SEND_URL, json=OK)
    client = sentry_app.test_client()
    body = sample_bytes("issue_alert.json")
    assert signed_post(client, body, "event_alert", request_id="a" * 32).status_code == 202
    again = signed_post(client, body, "event_alert", request_id="a" * 32)
    assert (again.status_code, again.get_json()) == (200, {"status": "repeated"})
    # Sentry's task, retried after a timeout, builds the request again with a new Request-ID:
    # the same event for the same rule is the same alert.
    retried = signed_post(client, body, "event_alert", request_id="b" * 32)
    assert retried.get_json() == {"status": "repeated"}
    run_background(relay_in(sentry_app).dispatcher, fake_time)
    assert len(sent_texts(telegram)) == 1


def test_deliveries_are_kept_a_week() -> None:
    deliveries = open_memory().of(DeliveryStore)
    assert deliveries.claim(["a"], now=1000.0)
    assert not deliveries.claim(["a", "b"], now=2000.0)
    assert deliveries.claim(["b"], now=2000.0)  # "a" was seen; "b" was not claimed with it
    assert not deliveries.claim(["a"], now=1000.0 + 6 * 86400.0)
    assert deliveries.claim(["a"], now=1000.0 + KEPT + 1)
    deliveries.release(["b"], now=3000.0)
    assert deliveries.claim(["b"], now=3000.0)


def test_a_new_issue_goes_only_where_a_route_asks_for_it(
    sentry_settings: Settings, fake_time: FakeTime, telegram: responses.RequestsMock
) -> None:
    telegram.post(SEND_URL, json=OK)
    body = json.dumps(with_urls(sample("issue_created.json"))).encode()
    app = create_app(sentry_settings, clock=fake_time)
    try:
        answer = signed_post(app.test_client(), body, "issue")
        assert (answer.status_code, answer.get_json()["status"]) == (200, "dropped")
    finally:
        relay_in(app).dispatcher.shutdown()
    routes = parse_routes(
        '[[route]]\nsource = "sentry"\nkind = "created"\nthread = 7\n', "routes.toml", ROUTE_SOURCES
    )
    app = create_app(replace(sentry_settings, routes=routes), clock=fake_time)
    try:
        answer = signed_post(app.test_client(), body, "issue", request_id="c" * 32)
        assert answer.status_code == 202
        run_background(relay_in(app).dispatcher, fake_time)
    finally:
        relay_in(app).dispatcher.shutdown()
    [sent] = sent_bodies(telegram)
    assert sent["message_thread_id"] == 7
    assert "blooopy is not defined" in sent["text"]


@pytest.mark.parametrize("count", ["²", "9" * 5000, "1e309", -4])
def test_a_count_that_is_no_count_costs_the_count_never_the_alert(
    sentry_settings: Settings, fake_time: FakeTime, telegram: responses.RequestsMock, count: object
) -> None:
    """A signed `issue.created` whose count is "²" (which `str.isdigit` takes) or 5,000 digits
    (which `int` refuses) was answered 500 with a traceback, and its alert lost."""
    telegram.post(SEND_URL, json=OK)
    created = with_urls(sample("issue_created.json"))
    created["data"]["issue"]["count"] = count
    routes = parse_routes(
        '[[route]]\nsource = "sentry"\nkind = "created"\nthread = 7\n', "routes.toml", ROUTE_SOURCES
    )
    app = create_app(replace(sentry_settings, routes=routes), clock=fake_time)
    try:
        answer = signed_post(app.test_client(), json.dumps(created).encode(), "issue")
        assert answer.status_code == 202
        run_background(relay_in(app).dispatcher, fake_time)
    finally:
        relay_in(app).dispatcher.shutdown()
    [text] = sent_texts(telegram)
    assert "blooopy is not defined" in text


def test_routes_tell_the_sources_apart() -> None:
    routes = parse_routes(
        '[[route]]\nsource = "sentry"\nthread = 1\n\n[[route]]\nsource = "glitchtip"\nthread = 2\n',
        "routes.toml",
        ROUTE_SOURCES,
    )
    hook = read_hook("event_alert", sample("issue_alert.json"), sentry_url=SENTRY)
    assert isinstance(hook, Alerting)
    [sentrys] = facts_of(hook.alert)
    glitchtips = facts_of(replace(hook.alert, source="glitchtip"))[0]
    assert routes.first(sentrys) is routes.routes[0]
    assert routes.first(glitchtips) is routes.routes[1]
    created_route = parse_routes(
        '[[route]]\nkind = "created"\nthread = 3\n', "r.toml", ROUTE_SOURCES
    )
    assert created_route.first({**sentrys, "kind": "created"}) is created_route.routes[0]
    assert routes.first({**sentrys, "kind": "created"}) is None  # not asked for


def test_a_glitchtip_webhook_cannot_pass_for_sentrys(
    settings: Settings, telegram: responses.RequestsMock, fake_time: FakeTime
) -> None:
    """Whatever marks a body posted to GlitchTip's URL claims are taken out: a route for
    Sentry's alerts does not take it, and it is no new issue (which no route here asks for)."""
    telegram.post(SEND_URL, json=OK)
    routes = parse_routes(
        '[[route]]\nsource = "sentry"\nthread = 9\n', "routes.toml", ROUTE_SOURCES
    )
    app = create_app(replace(settings, routes=routes), clock=fake_time)
    try:
        forged = issue_alert(issue(1)) | {SOURCE_KEY: "sentry", KIND_KEY: "created"}
        assert app.test_client().post(WEBHOOK, json=forged).status_code == 200
    finally:
        relay_in(app).dispatcher.shutdown()
    [sent] = sent_bodies(telegram)
    assert "message_thread_id" not in sent


# The settings


def test_the_sentry_variables_are_read_and_every_problem_named_at_once() -> None:
    assert sentry_from_env({}) is None
    config = sentry_from_env({"SENTRY_CLIENT_SECRET": CLIENT_SECRET})
    assert config == SentryConfig(CLIENT_SECRET, None, DEFAULT_SENTRY_URL)
    with pytest.raises(ConfigError) as raised:
        sentry_from_env(
            {"SENTRY_CLIENT_SECRET": "short", "SENTRY_API_TOKEN": "a b", "SENTRY_URL": "ftp://x"}
        )
    assert raised.value.variables == ["SENTRY_CLIENT_SECRET", "SENTRY_API_TOKEN", "SENTRY_URL"]
    with pytest.raises(ConfigError) as raised:
        sentry_from_env({"SENTRY_API_TOKEN": "ab" * 32})
    assert raised.value.variables == ["SENTRY_CLIENT_SECRET"]
    with pytest.raises(ConfigError) as raised:
        sentry_from_env({"SENTRY_CLIENT_SECRET": CLIENT_SECRET, "SENTRY_URL": "https://u:p@s.io"})
    assert raised.value.variables == ["SENTRY_URL"]


def test_sentrys_secrets_never_reach_a_log_line(sentry_settings: Settings) -> None:
    settings = replace(
        sentry_settings, theirs=sentry_on(SentryConfig(CLIENT_SECRET, "cd" * 32, SENTRY))
    )
    assert CLIENT_SECRET in settings.secrets
    assert "cd" * 32 in settings.secrets
    assert CLIENT_SECRET not in repr(settings)


def test_a_message_names_its_source_only_where_the_relay_serves_both() -> None:
    alert = read_hook("event_alert", sample("issue_alert.json"), sentry_url=SENTRY)
    created = read_hook("issue", with_urls(sample("issue_created.json")), sentry_url=SENTRY)
    assert isinstance(alert, Alerting)
    assert isinstance(created, Alerting)
    alone = message_for(alert.alert, ENGLISH, sources=SOURCES)
    assert alone.text.startswith("🔴 Very Important Alert Rule!\n")
    both = message_for(alert.alert, ENGLISH, names_source=True, sources=SOURCES)
    assert both.text.startswith("🔴 Sentry · Very Important Alert Rule!\n")
    # A new issue has no rule's name: its heading is the source's own, in the chat's language.
    assert message_for(created.alert, ENGLISH, sources=SOURCES).text.startswith("🔴 Sentry Alert\n")
    assert message_for(created.alert, RUSSIAN, sources=SOURCES).text.startswith("🔴 Алерт Sentry\n")
    glitchtips = message_for(issue_alert(issue(1)), ENGLISH, names_source=True, sources=SOURCES)
    assert glitchtips.text.startswith("🔴 GlitchTip Alert\n")


def test_a_metric_alerts_recovery_is_sent_under_its_outage_saying_how_long(
    sentry_app: Flask, telegram: responses.RequestsMock, fake_time: FakeTime
) -> None:
    telegram.post(SEND_URL, json={"ok": True, "result": {"message_id": 31}})
    telegram.post(SEND_URL.replace("sendMessage", "editMessageText"), json=OK)  # the outage's
    client = sentry_app.test_client()
    critical = sample("metric_alert_resolved.json") | {"action": "critical"}
    body = json.dumps(critical).encode()
    assert signed_post(client, body, "metric_alert", request_id="d" * 32).status_code == 202
    run_background(relay_in(sentry_app).dispatcher, fake_time)
    fake_time.now += 600
    resolved = sample_bytes("metric_alert_resolved.json")
    assert signed_post(client, resolved, "metric_alert", request_id="e" * 32).status_code == 202
    run_background(relay_in(sentry_app).dispatcher, fake_time)
    outage, recovery = sent_bodies(telegram)
    assert outage["text"].startswith('🔴 <b>DOWN</b> · <b><a href="https://sentry.io/')
    assert recovery["text"].startswith("✅ <b>UP</b> · ")
    assert "Too many errors" in recovery["text"]
    assert recovery["reply_parameters"]["message_id"] == 31


def test_a_metric_alerts_warning_critical_and_resolution_are_one_thread(
    sentry_app: Flask, telegram: responses.RequestsMock, fake_time: FakeTime
) -> None:
    for message_id in (31, 32, 33):
        telegram.post(SEND_URL, json={"ok": True, "result": {"message_id": message_id}})
    telegram.post(SEND_URL.replace("sendMessage", "editMessageText"), json=OK)  # the warning's
    client = sentry_app.test_client()
    for n, action in enumerate(("warning", "critical")):
        body = json.dumps(sample("metric_alert_resolved.json") | {"action": action}).encode()
        assert signed_post(client, body, "metric_alert", request_id=f"{n}" * 32).status_code == 202
        run_background(relay_in(sentry_app).dispatcher, fake_time)
        fake_time.now += 300
    resolved = sample_bytes("metric_alert_resolved.json")
    assert signed_post(client, resolved, "metric_alert", request_id="e" * 32).status_code == 202
    run_background(relay_in(sentry_app).dispatcher, fake_time)
    warning, critical, recovery = sent_bodies(telegram)
    assert warning["text"].startswith("🟡 <b>WARNING</b> · ")
    assert "reply_parameters" not in warning
    assert critical["text"].startswith("🔴 <b>DOWN</b> · ")
    assert critical["reply_parameters"]["message_id"] == 31  # under the warning
    assert recovery["text"].startswith("✅ <b>UP</b> · ")
    assert recovery["reply_parameters"]["message_id"] == 31  # the thread's first
    assert "10 min" in recovery["text"]  # since the warning


def test_deliveries_and_assignments_are_kept_alike_on_either_database(
    two_stores: tuple[Store, Store],
) -> None:
    mine, theirs = two_stores
    now = 1_800_000_000.0
    # One relay takes a delivery in; another, on the same spool, sees it taken.
    assert DeliveryStore(mine).claim(["req-1", "event:e1:rule"], now=now)
    assert not DeliveryStore(theirs).claim(["req-2", "event:e1:rule"], now=now + 1)
    DeliveryStore(theirs).release(["req-1", "event:e1:rule"], now=now + 2)
    assert DeliveryStore(mine).claim(["req-3", "event:e1:rule"], now=now + 3)
    # Whom Sentry assigned an issue to, kept by Sentry's capability, shown on every card of it.
    sentrys = IssueButton("k1", "sentry:4", SENTRY, "FRONT-END-4")
    SentStore(mine).keep(SentMessage("-1001", 41, "<b>a</b>", now, buttons=(sentrys,)), [])
    assert AssignmentStore(theirs).assign("sentry:4", "Ada", now=now)
    assert not AssignmentStore(mine).assign("sentry:4", "Ada", now=now)  # the same: no change
    assert SentStore(theirs).cards_of(SENTRY, "sentry:4") == [("-1001", 41)]
    kept = SentStore(mine, Marks([assigned])).message("-1001", 41)
    assert kept is not None
    [mark] = kept.buttons[0].marks
    assert (mark.name, mark.by, mark.until) == ("assigned", "Ada", None)
    assert mark.at == pytest.approx(now, abs=5)
    assert AssignmentStore(mine).assign("sentry:4", "Bo", now=now)
    assert AssignmentStore(theirs).assign("sentry:4", None, now=now)
    assert not AssignmentStore(theirs).assign("sentry:4", None, now=now)
    again = SentStore(mine, Marks([assigned])).message("-1001", 41)
    assert again is not None
    assert again.buttons[0].marks == ()
    # A card of GlitchTip's issues alone asks Sentry's table nothing (no unit of work needed).
    assert assigned(None, "-1001", ["4", "5"]) == {}  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("resource", "name", "action"),
    [
        ("metric_alert", "metric_alert_resolved.json", "critical"),
        ("metric_alert", "metric_alert_resolved.json", "warning"),
        ("issue", "issue_created.json", "created"),
        ("event_alert", "issue_alert.json", "triggered"),
    ],
)
def test_sentrys_retries_of_a_delivery_count_once(
    sentry_settings: Settings,
    fake_time: FakeTime,
    telegram: responses.RequestsMock,
    resource: str,
    name: str,
    action: str,
) -> None:
    """Sentry's retry builds a new Request-ID: three deliveries of one metric alert made three
    entries before, `issue.created` three, and an event alert delivered again after a day a
    second message. Now each counts once, a week long."""
    telegram.post(SEND_URL, json=OK)
    payload = with_urls(sample(name)) if resource == "issue" else sample(name)
    body = json.dumps(payload | {"action": action}).encode()
    routes = parse_routes(
        '[[route]]\nkind = "created"\nthread = 7\n[[route]]\nchat = "-1001"\n',
        "r.toml",
        ROUTE_SOURCES,
    )
    app = create_app(replace(sentry_settings, routes=routes), clock=fake_time)
    try:
        client = app.test_client()
        statuses = []
        for n, later in enumerate((0, 900, 3 * 86400)):
            fake_time.now += later
            answer = signed_post(
                client, body, resource, request_id=f"{n}" * 32, stamp=fake_time.now
            )
            statuses.append(answer.get_json()["status"])
            run_background(relay_in(app).dispatcher, fake_time)
    finally:
        relay_in(app).dispatcher.shutdown()
    assert statuses == ["queued", "repeated", "repeated"]
    assert len(sent_texts(telegram)) == 1


def run_cli(*argv: str, **environ: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    base = {"TELEGRAM_CHAT_ID": "-1001234567890"}
    code = main(list(argv), environ={**base, **environ}, out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def test_preview_and_routes_test_read_sentrys_webhooks_as_glitchtips(tmp_path: Path) -> None:
    samples = Path(__file__).resolve().parent / "sentry_samples"
    code, html, _ = run_cli("preview", str(samples / "issue_alert.json"))
    assert code == 0
    assert html.startswith("🔴 <b>Very Important Alert Rule!</b>")
    assert "ReferenceError: heck is not defined" in html
    assert "<blockquote expandable>" in html  # its event's stack, as the relay would show it
    code, html, _ = run_cli("preview", str(samples / "issue_created.json"))
    assert (code, "<b>FRONT-END-9</b>" in html) == (0, True)
    code, html, _ = run_cli("preview", str(samples / "metric_alert_resolved.json"))
    assert (code, html.startswith("✅ <b>UP</b>")) == (0, True)
    resolved = tmp_path / "resolved.json"
    resolved.write_text(
        json.dumps(
            {"action": "resolved", "installation": {"uuid": "u"}, "data": {"issue": {"id": "7"}}}
        )
    )
    code, _, err = run_cli("preview", str(resolved))
    assert code == 1
    assert "Sentry's that sends no message: issue #7 was resolved in Sentry" in err

    routes = tmp_path / "routes.toml"
    routes.write_text('[[route]]\nname = "from-sentry"\nsource = "sentry"\nthread = 9\n')
    code, said, _ = run_cli(
        "routes", "test", str(samples / "issue_alert.json"), RELAY_ROUTES=str(routes)
    )
    assert code == 0
    lines = said.splitlines()
    assert lines[1] == "chat -1001234567890 topic 9: route 1 “from-sentry”"
    assert lines[2] == "  ? ReferenceError: heck is not defined"
    code, said, _ = run_cli("routes", "test", str(resolved), RELAY_ROUTES=str(routes))
    assert said.splitlines() == [
        "a webhook of Sentry's that sends no message: issue #7 was resolved in Sentry",
        "nothing was sent",
    ]
    # GlitchTip's own body is read as it is.
    glitchtip = Path(__file__).resolve().parents[1] / "examples" / "issue-alert.json"
    code, said, _ = run_cli("routes", "test", str(glitchtip), RELAY_ROUTES=str(routes))
    assert "no route (where the webhook URL says: the defaults here)" in said


def test_the_sentry_examples_are_its_documentations_payloads() -> None:
    examples = Path(__file__).resolve().parents[1] / "examples"
    samples = Path(__file__).resolve().parent / "sentry_samples"
    for example, sample in (
        ("sentry-issue-alert.json", "issue_alert.json"),
        ("sentry-issue-created.json", "issue_created.json"),
    ):
        assert (examples / example).read_bytes() == (samples / sample).read_bytes()


def test_issues_names_a_sentry_issue_as_its_card_does() -> None:
    hook = read_hook("event_alert", sample("issue_alert.json"), sentry_url=SENTRY)
    assert isinstance(hook, Alerting)
    watched = WatchedIssue(
        "sentry:1117540176",
        alert_as_json(hook.alert),
        None,
        "unresolved",
        3,
        (),
        0.0,
        0.0,
        None,
        None,
    )
    assert issue_data(watched, SOURCES)["label"] == "#1117540176"  # never the relay's 'sentry:' id


def test_a_customer_domains_issue_link_is_read_as_sentrys_own() -> None:
    io_url = "https://sentry.io"
    assert customer_domain_issue("https://acme.sentry.io/issues/4/", io_url) == (
        "https://sentry.io/organizations/acme/issues/4/"
    )
    assert customer_domain_issue("https://acme.sentry.io/issues/4", "https://de.sentry.io") == (
        "https://de.sentry.io/organizations/acme/issues/4/"
    )
    for not_one in (
        "https://acme.sentry.io/issues/4/events/abc/",
        "https://acme.sentry.io/issues/4/?project=1",
        "https://acme.sentry.io/issues/4/#top",
        "http://acme.sentry.io/issues/4/",
        "https://acme.sentry.io:8443/issues/4/",
        "https://acme.sentry.io:99999/issues/4/",
        "https://acme.sentry.io:x/issues/4/",
        "https://ada@acme.sentry.io/issues/4/",
        "https://www.sentry.io/issues/4/",
        "https://acme.sentry.io.evil.example/issues/4/",
        "https://acme.sentry.io/issues/../4/",
        "https://acme.sentry.io/organizations/acme/issues/4/",
    ):
        assert customer_domain_issue(not_one, io_url) is None, not_one
    # A self-hosted Sentry has no customer domains.
    assert customer_domain_issue("https://acme.sentry.io/issues/4/", SENTRY) is None


def test_a_sentry_alert_is_answered_before_its_issue_is_looked_up_and_goes_with_its_short_id(
    sentry_settings: Settings, fake_time: FakeTime, telegram: responses.RequestsMock
) -> None:
    """Sentry's event alert names no short id: with SENTRY_API_TOKEN its issue is looked up
    once, after the webhook is answered (Sentry waits a second), and the card names it."""
    asked = threading.Event()
    answer_now = threading.Event()

    def issue_answer(_request: PreparedRequest) -> tuple[int, dict[str, str], str]:
        asked.set()
        answer_now.wait(5)
        answered = {"id": "1117540176", "shortId": "FRONT-END-C", "count": "40", "level": "error"}
        return 200, {}, json.dumps(answered)

    telegram.get(f"{SENTRY}/api/0/organizations/", json=[{"slug": "test-org", "links": {}}])
    telegram.add_callback(responses.GET, f"{SENTRY}/api/0/issues/1117540176/", issue_answer)
    telegram.get(
        f"{SENTRY}/api/0/issues/1117540176/events/latest/", status=404, json={"detail": "no"}
    )
    telegram.post(SEND_URL, json=OK)
    config = SentryConfig(CLIENT_SECRET, "cd" * 32, SENTRY)
    app = create_app(
        replace(sentry_settings, theirs=sentry_on(config), details_budget=2.0), clock=fake_time
    )
    try:
        answer = signed_post(app.test_client(), sample_bytes("issue_alert.json"), "event_alert")
        assert answer.status_code == 202  # queued, the look-up still under way
        assert asked.wait(5)
        assert sent_bodies(telegram) == []
        answer_now.set()
        relay = relay_in(app)
        assert wait_until(lambda: relay.spool is not None and _details_in(relay), timeout=5)
        run_background(relay.dispatcher, fake_time)
    finally:
        answer_now.set()
        relay_in(app).dispatcher.shutdown()
    [sent] = sent_texts(telegram)
    assert "FRONT-END-C" in sent
    assert "🔁 Seen 40 times" in sent
    assert "📍 &lt;anonymous&gt;:3" in sent  # the event's own frame, kept


def _details_in(relay: Relay) -> bool:
    """Whether the queued alert holds its issue's looked-up short id."""
    assert relay.spool is not None
    pending = relay.spool.admin.alerts("pending")
    return any("FRONT-END-C" in json.dumps(job.data.get("details")) for job in pending)


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_an_assignee_kept_on_the_cards_before_is_sentrys_own_after_the_upgrade(
    kind: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """Step 28 moves each issue's latest assignee from its cards' rows to Sentry's table."""
    made = [
        "INSERT INTO sent_messages (chat, message_id, html, sent_at) VALUES"
        " ('-1001', 41, '<b>a</b>', 100), ('-1001', 42, '<b>b</b>', 200)",
        "INSERT INTO issue_buttons (key, chat, message_id, position, issue_id, origin, label,"
        f" assigned_to, assigned_at) VALUES ('k41', '-1001', 41, 0, 'sentry:4', '{SENTRY}',"
        f" 'FRONT-END-4', 'Ada', 100), ('k42', '-1001', 42, 0, 'sentry:4', '{SENTRY}',"
        " 'FRONT-END-4', 'Bo', 200)",
    ]
    where = (
        str(tmp_path / "spool.sqlite3") if kind == "sqlite" else request.getfixturevalue("pg_url")
    )
    store = upgraded_from(kind, where, 27, made)
    try:
        kept = SentStore(store, Marks([assigned])).message("-1001", 41)
        assert kept is not None
        assert [mark.by for mark in kept.buttons[0].marks] == ["Bo"]  # the latest, on both
        rows = store.read(lambda tx: tx.all("SELECT * FROM sentry_assignments"))
        assert [(row["issue_id"], row["assigned_to"]) for row in rows] == [("sentry:4", "Bo")]
    finally:
        store.close()
