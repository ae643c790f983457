"""GET /metrics in one process: what each outcome counts. (With several gunicorn workers:
tests/e2e/test_operating.py.)"""

from __future__ import annotations

from dataclasses import replace

import pytest
import requests
import responses
from flask import Flask
from flask.testing import FlaskClient
from prometheus_client.parser import text_string_to_metric_families

from relay_app import create_app, retrier
from relay_app.config import Settings
from relay_app.retrier import Retrier
from tests.conftest import OK, SEND_URL, WEBHOOK, FakeTime, refusal, run_background
from tests.payloads import issue, issue_alert

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def scrape(client: FlaskClient) -> Samples:
    reply = client.get("/metrics")
    assert reply.status_code == 200
    assert reply.content_type.startswith("text/plain; version=0.0.4")
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(reply.get_data(as_text=True))
        for sample in family.samples
    }


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def test_a_fresh_relay_reports_an_empty_spool(client: FlaskClient) -> None:
    samples = scrape(client)
    assert value(samples, "relay_spool_usable") == 1
    assert value(samples, "relay_spool_alerts", state="pending") == 0
    assert value(samples, "relay_spool_alerts", state="dead") == 0
    assert value(samples, "relay_spool_oldest_pending_age_seconds") == 0
    assert value(samples, "relay_delivery_seconds_count") == 0


def test_each_outcome_is_counted(
    client: FlaskClient,
    telegram: responses.RequestsMock,
    app_retrier: Retrier,
    fake_time: FakeTime,
) -> None:
    # Sent at once.
    telegram.post(SEND_URL, json=OK)
    assert client.post(WEBHOOK, json=issue_alert(issue(1))).status_code == 200
    # The webhook's attempt fails, the background's succeeds.
    fake_time.now += 10
    telegram.post(SEND_URL, body=requests.ConnectionError("connection refused"))
    assert client.post(WEBHOOK, json=issue_alert(issue(2))).status_code == 502
    telegram.post(SEND_URL, json=OK)
    run_background(app_retrier, fake_time)
    # Refused for good: a dead letter.
    fake_time.now += 10
    telegram.post(SEND_URL, status=403, json=refusal(403, "Forbidden: bot was kicked"))
    assert client.post(WEBHOOK, json=issue_alert(issue(3))).status_code == 502
    # Never an alert.
    assert client.post("/webhook/not-the-secret-0123456789", json={}).status_code == 404
    assert client.post(WEBHOOK, data=b"{oops").status_code == 400
    assert client.post(f"{WEBHOOK}?chat_id=-42", json=issue_alert()).status_code == 400

    samples = scrape(client)
    assert value(samples, "relay_webhooks_total", outcome="sent", reason="delivered") == 1
    assert value(samples, "relay_webhooks_total", outcome="queued", reason="attempt_failed") == 1
    assert value(samples, "relay_webhooks_total", outcome="failed", reason="refused") == 1
    assert value(samples, "relay_webhooks_total", outcome="rejected", reason="wrong_secret") == 1
    assert value(samples, "relay_webhooks_total", outcome="rejected", reason="bad_body") == 1
    assert value(samples, "relay_webhooks_total", outcome="rejected", reason="bad_route") == 1

    attempts = "relay_delivery_attempts_total"
    assert value(samples, attempts, kind="sync", result="delivered", error_code="") == 1
    assert value(samples, attempts, kind="sync", result="retryable_error", error_code="") == 1
    assert value(samples, attempts, kind="background", result="delivered", error_code="") == 1
    assert value(samples, attempts, kind="sync", result="permanent_error", error_code="403") == 1

    # Two delivered: one at once, one RELAY_RETRY_WAIT (30 s) later on fake time: a bare
    # ConnectionError may have reached Telegram, so it waits the full pause.
    assert value(samples, "relay_delivery_seconds_count") == 2
    assert value(samples, "relay_delivery_seconds_sum") == 30
    assert value(samples, "relay_delivery_seconds_bucket", le="0.1") == 1
    assert value(samples, "relay_delivery_seconds_bucket", le="10.0") == 1
    assert value(samples, "relay_delivery_seconds_bucket", le="30.0") == 2
    assert value(samples, "relay_spool_alerts", state="pending") == 0
    assert value(samples, "relay_spool_alerts", state="dead") == 1
    # The dead letter and the refused webhook URL's alert.
    assert value(samples, "relay_alerts_undelivered_total") == 2
    assert value(samples, "relay_telegram_rate_limited_total") == 0


def test_429s_pending_alerts_and_digests(
    client: FlaskClient,
    telegram: responses.RequestsMock,
    app_retrier: Retrier,
    fake_time: FakeTime,
) -> None:
    telegram.post(
        SEND_URL, status=429, json=refusal(429, "Too Many Requests: retry after 5", retry_after=5)
    )
    for number in range(1, 4):  # the first gets the 429; the others wait their turn behind it
        assert client.post(WEBHOOK, json=issue_alert(issue(number))).status_code in (202, 502)
    fake_time.now += 30
    samples = scrape(client)
    assert value(samples, "relay_telegram_rate_limited_total") == 1
    assert (
        value(
            samples,
            "relay_delivery_attempts_total",
            **{"kind": "sync", "result": "retryable_error", "error_code": "429"},
        )
        == 1
    )
    assert value(samples, "relay_spool_alerts", state="pending") == 3
    # Present; its value is test_the_age_of_the_oldest_pending_alert's (the rows here carry the
    # fake clock's 2027 date, so against real time the age is 0).
    assert ("relay_spool_oldest_pending_age_seconds", ()) in samples

    telegram.post(SEND_URL, json=OK)
    run_background(app_retrier, fake_time)
    samples = scrape(client)
    assert value(samples, "relay_digest_alerts_count") == 1
    assert value(samples, "relay_digest_alerts_sum") == 3
    assert value(samples, "relay_delivery_seconds_count") == 3
    assert value(samples, "relay_spool_alerts", state="pending") == 0


def test_the_age_of_the_oldest_pending_alert(settings: Settings) -> None:
    app = create_app(settings)  # the real clock, so that the age is measured against it
    try:
        spool = app.extensions["relay_retrier"].spool
        client = app.test_client()
        with responses.RequestsMock() as telegram:
            telegram.post(SEND_URL, body=requests.ConnectionError("connection refused"))
            assert client.post(WEBHOOK, json=issue_alert()).status_code == 502
        assert len(spool.alerts("pending")) == 1
        age = value(scrape(client), "relay_spool_oldest_pending_age_seconds")
        assert 0 < age < 60
    finally:
        retrier.shutdown()


def test_relay_metrics_0_turns_the_endpoint_off(settings: Settings) -> None:
    app: Flask = create_app(replace(settings, metrics=False))
    try:
        assert app.test_client().get("/metrics").status_code == 404
    finally:
        retrier.shutdown()


@pytest.mark.parametrize("spool_path", [None])
def test_without_a_spool_the_spool_is_reported_unusable(
    settings: Settings, spool_path: None
) -> None:
    app = create_app(replace(settings, spool_path=spool_path))
    try:
        samples = scrape(app.test_client())
        assert value(samples, "relay_spool_usable") == 0
        assert ("relay_spool_alerts", (("state", "pending"),)) not in samples
    finally:
        retrier.shutdown()
