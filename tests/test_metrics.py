"""GET /metrics in one process: what each outcome counts. (With several gunicorn workers:
tests/e2e/test_operating.py.)"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
import requests
import responses
from flask import Flask
from flask.testing import FlaskClient

from relay_app import Relay, create_app, relay_of
from relay_app.core.pacing import GROUP_INTERVAL
from relay_app.operating.config import Settings
from tests.conftest import (
    GET_ME_URL,
    ME,
    OK,
    SEND_URL,
    WEBHOOK,
    FakeTime,
    metric_samples,
    refusal,
    run_background,
)
from tests.payloads import issue, issue_alert
from tests.prometheus import value


def stop(app: Flask) -> None:
    relay = relay_of(app)
    assert relay is not None
    relay.dispatcher.shutdown()


def test_a_fresh_relay_reports_an_empty_spool(client: FlaskClient) -> None:
    samples = metric_samples(client)
    assert value(samples, "relay_spool_usable") == 1
    assert value(samples, "relay_spool_alerts", state="pending") == 0
    assert value(samples, "relay_spool_alerts", state="dead") == 0
    assert value(samples, "relay_spool_oldest_pending_age_seconds") == 0
    assert value(samples, "relay_delivery_seconds_count") == 0
    assert value(samples, "relay_telegram_up") == 1
    assert value(samples, "relay_spool_lock_wait_seconds_count") == 0
    assert value(samples, "relay_alerts_second_chance_total") == 0
    with pytest.raises(AssertionError, match="no sample"):  # a lookup that cannot fail, fails
        value(samples, "relay_telegram_probes_total", result="answered")


def test_each_outcome_is_counted(
    client: FlaskClient,
    telegram: responses.RequestsMock,
    relay: Relay,
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
    run_background(relay.dispatcher, fake_time)
    # Refused for good: a dead letter.
    fake_time.now += 10
    telegram.post(SEND_URL, status=403, json=refusal(403, "Forbidden: bot was kicked"))
    assert client.post(WEBHOOK, json=issue_alert(issue(3))).status_code == 502
    # Never an alert.
    assert client.post("/webhook/not-the-secret-0123456789", json={}).status_code == 404
    assert client.post(WEBHOOK, data=b"{oops").status_code == 400
    assert client.post(f"{WEBHOOK}?chat_id=-42", json=issue_alert()).status_code == 400

    samples = metric_samples(client)
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

    # Two delivered: one at once, one on the chat's next turn on fake time, once Telegram
    # answered getMe (a bare ConnectionError may have reached Telegram).
    assert value(samples, "relay_delivery_seconds_count") == 2
    assert value(samples, "relay_delivery_seconds_sum") == pytest.approx(GROUP_INTERVAL)
    assert value(samples, "relay_delivery_seconds_bucket", le="0.1") == 1
    assert value(samples, "relay_delivery_seconds_bucket", le="1.0") == 1
    assert value(samples, "relay_delivery_seconds_bucket", le="2.5") == 1
    assert value(samples, "relay_delivery_seconds_bucket", le="5.0") == 2
    assert value(samples, "relay_telegram_probes_total", result="answered") == 1
    assert value(samples, "relay_spool_alerts", state="pending") == 0
    assert value(samples, "relay_spool_alerts", state="dead") == 1
    # The dead letter and the refused webhook URL's alert.
    assert value(samples, "relay_alerts_undelivered_total") == 2
    assert value(samples, "relay_telegram_rate_limited_total") == 0


def test_429s_pending_alerts_and_digests(
    client: FlaskClient,
    telegram: responses.RequestsMock,
    relay: Relay,
    fake_time: FakeTime,
) -> None:
    telegram.post(
        SEND_URL, status=429, json=refusal(429, "Too Many Requests: retry after 5", retry_after=5)
    )
    for number in range(1, 4):  # the first gets the 429; the others wait their turn behind it
        assert client.post(WEBHOOK, json=issue_alert(issue(number))).status_code in (202, 502)
    fake_time.now += 30
    samples = metric_samples(client)
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
    run_background(relay.dispatcher, fake_time)
    samples = metric_samples(client)
    assert value(samples, "relay_digest_alerts_count") == 1
    assert value(samples, "relay_digest_alerts_sum") == 3
    assert value(samples, "relay_delivery_seconds_count") == 3
    assert value(samples, "relay_spool_alerts", state="pending") == 0


def test_the_age_of_the_oldest_pending_alert(settings: Settings) -> None:
    app = create_app(settings)  # the real clock, so that the age is measured against it
    try:
        relay = relay_of(app)
        assert relay is not None
        assert relay.spool is not None
        spool = relay.spool.admin
        client = app.test_client()
        with responses.RequestsMock() as telegram:
            telegram.post(SEND_URL, body=requests.ConnectionError("connection refused"))
            assert client.post(WEBHOOK, json=issue_alert()).status_code == 502
        assert len(spool.alerts("pending")) == 1
        age = value(metric_samples(client), "relay_spool_oldest_pending_age_seconds")
        assert 0 < age < 60
    finally:
        stop(app)


def test_a_workers_file_not_yet_sized_costs_the_scrape_nothing(
    client: FlaskClient, tmp_path: Path
) -> None:
    """Under gunicorn each worker counts in a file of its own; a worker starting creates its
    file, then sizes it (prometheus/client_python#1199). A scrape between the two answered
    500, and one after a worker killed between the two, for good."""
    from prometheus_client.mmap_dict import MmapedDict, mmap_key

    other_worker = MmapedDict(str(tmp_path / "counter_4241.db"))  # type: ignore[no-untyped-call]
    labels = ["outcome", "reason"], ["sent", "delivered"]
    key = mmap_key("relay_webhooks", "relay_webhooks_total", *labels, "Webhooks answered")
    other_worker.write_value(key, 3.0, 0.0)  # type: ignore[no-untyped-call]
    other_worker.close()  # type: ignore[no-untyped-call]
    (tmp_path / "counter_4242.db").touch()  # a worker between creating its file and sizing it
    relay = relay_of(client.application)
    assert relay is not None
    relay.metrics.multiprocess_dir = str(tmp_path)  # as under gunicorn (gunicorn.conf.py)
    samples = metric_samples(client)
    assert value(samples, "relay_webhooks_total", outcome="sent", reason="delivered") == 3
    assert value(samples, "relay_spool_usable") == 1  # the relay's own gauges as well


def test_relay_metrics_0_turns_the_endpoint_off(settings: Settings) -> None:
    app: Flask = create_app(replace(settings, metrics=False))
    try:
        assert app.test_client().get("/metrics").status_code == 404
    finally:
        stop(app)


@pytest.mark.parametrize("spool_path", [None])
def test_without_a_spool_the_spool_is_reported_unusable(
    settings: Settings, spool_path: None
) -> None:
    app = create_app(replace(settings, spool_path=spool_path))
    try:
        samples = metric_samples(app.test_client())
        assert value(samples, "relay_spool_usable") == 0
        assert ("relay_spool_alerts", (("state", "pending"),)) not in samples
    finally:
        stop(app)


def test_an_outage_shows_as_telegram_down_and_the_questions_asked(
    client: FlaskClient,
    telegram: responses.RequestsMock,
    relay: Relay,
    fake_time: FakeTime,
) -> None:
    telegram.replace(responses.POST, GET_ME_URL, status=502, body="<html>Bad Gateway</html>")
    telegram.post(SEND_URL, status=502, body="<html>Bad Gateway</html>")
    assert client.post(WEBHOOK, json=issue_alert()).status_code == 502
    assert value(metric_samples(client), "relay_telegram_up") == 0  # nothing is sent meanwhile
    for _ in range(3):
        fake_time.now += 2
        relay.dispatcher.pass_once()
        assert relay.dispatcher.wait_idle(10)
    samples = metric_samples(client)
    assert value(samples, "relay_telegram_probes_total", result="failed") == 3
    assert value(samples, "relay_telegram_up") == 0
    telegram.replace(responses.POST, GET_ME_URL, json=ME)
    telegram.replace(responses.POST, SEND_URL, json=OK)
    run_background(relay.dispatcher, fake_time)
    samples = metric_samples(client)
    assert value(samples, "relay_telegram_up") == 1
    assert value(samples, "relay_telegram_probes_total", result="answered") == 1
    assert value(samples, "relay_spool_alerts", state="pending") == 0
