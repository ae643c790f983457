from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pytest
import requests
import responses
from flask.testing import FlaskClient
from requests import PreparedRequest

from relay_app import Relay, create_app, relay_of
from relay_app.core.alerts import ALERT_KEY, alert_as_json
from relay_app.core.logs import EVENT_ATTRIBUTE
from relay_app.core.pacing import GROUP_INTERVAL
from relay_app.core.routing import Destination
from relay_app.glitchtip.webhook import read_webhook
from relay_app.operating.config import Settings
from relay_app.spool import Admin
from relay_app.spool.arrivals import SpoolArrivals
from relay_app.spool.database import Database
from relay_app.web.misses import miss_reason
from tests.conftest import (
    CHAT_ID,
    GET_ME_URL,
    ME,
    OK,
    SECRET,
    SEND_URL,
    WEBHOOK,
    FakeTime,
    hold_the_lock,
    metric_samples,
    put_in_spool,
    refusal,
    run_background,
    sent_bodies,
    sent_texts,
)
from tests.payloads import issue, issue_alert, uptime_alert
from tests.prometheus import value


def spool_at(path: str) -> Admin:
    """The spool through a connection of its own, as another process sees it."""
    return Admin(Database(path))


def test_a_delivered_alert_answers_200_and_queues_nothing(
    client: FlaskClient,
    telegram: responses.RequestsMock,
    relay: Relay,
    fake_time: FakeTime,
) -> None:
    telegram.post(SEND_URL, json=OK)
    reply = client.post(WEBHOOK, json=issue_alert())
    assert (reply.status_code, reply.json) == (200, {"status": "sent"})
    assert len(telegram.calls) == 1
    assert relay.dispatcher.wait_idle(timeout=0)  # no job was ever queued
    assert relay.spool is not None
    assert relay.spool.admin.counts() == {"pending": 0, "dead": 0}


@pytest.mark.parametrize("send_timeout", [1.0, 5.0, 9.0])
def test_every_send_timeout_the_docs_allow_gives_the_webhook_its_attempt(
    settings: Settings,
    telegram: responses.RequestsMock,
    fake_time: FakeTime,
    send_timeout: float,
) -> None:
    # At RELAY_SEND_TIMEOUT=9 (the documented maximum) the budget once left no time for it:
    # every alert to a healthy Telegram was answered 202.
    telegram.post(SEND_URL, json=OK)
    app = create_app(replace(settings, send_timeout=send_timeout), clock=fake_time)
    try:
        reply = app.test_client().post(WEBHOOK, json=issue_alert())
    finally:
        relay = relay_of(app)
        assert relay is not None
        relay.dispatcher.shutdown()
    assert (reply.status_code, reply.json) == (200, {"status": "sent"})
    assert len(sent_bodies(telegram)) == 1


def test_an_attempt_still_under_way_at_the_deadline_is_answered_202_and_goes_on(
    client: FlaskClient,
    telegram: responses.RequestsMock,
    relay: Relay,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    # The webhook's one deadline, brought near (it is 9.25 s after arrival).
    monkeypatch.setattr("relay_app.intake.receive.ANSWER_WITHIN", 0.5)
    answered = threading.Event()

    def slow_telegram(request: PreparedRequest) -> tuple[int, dict[str, str], str]:
        answered.wait(timeout=5)  # Telegram answers only once the webhook has been
        return 200, {}, json.dumps(OK)

    telegram.add_callback(responses.POST, SEND_URL, callback=slow_telegram)
    reply = client.post(WEBHOOK, json=issue_alert())
    answered.set()
    assert reply.status_code == 202
    assert reply.json == {"status": "queued", "alert": "#1"}
    assert "webhook for alert #1 queued (202, in_flight)" in caplog.text
    assert relay.dispatcher.wait_idle(timeout=5)
    assert len(sent_bodies(telegram)) == 1  # that attempt, recorded as delivered: no other
    assert relay.spool is not None
    assert relay.spool.admin.counts() == {"pending": 0, "dead": 0}


def test_a_failed_attempt_queues_the_prebuilt_text_and_still_answers_502(
    client: FlaskClient,
    telegram: responses.RequestsMock,
    relay: Relay,
    fake_time: FakeTime,
) -> None:
    # Refused: nothing of it reached Telegram.
    telegram.post(SEND_URL, body=requests.ConnectionError(ConnectionRefusedError("refused")))
    telegram.post(SEND_URL, json=OK)
    reply = client.post(WEBHOOK, json=issue_alert(issue(1), issue(2), total=5))
    assert reply.status_code == 502
    assert reply.json is not None
    assert reply.json["status"] == "queued"
    assert "connection to Telegram failed" in reply.json["error"]
    arrived = fake_time.now
    run_background(relay.dispatcher, fake_time)
    first, retried = sent_texts(telegram)
    assert retried == first  # the very same text, never rebuilt
    # Retried once Telegram answered getMe a second later, on the chat's next turn.
    assert fake_time.now == arrived + GROUP_INTERVAL


def test_retries_at_the_ceiling_give_up_with_an_error_holding_the_text(
    client: FlaskClient,
    telegram: responses.RequestsMock,
    relay: Relay,
    fake_time: FakeTime,
    caplog: pytest.LogCaptureFixture,
) -> None:
    telegram.post(SEND_URL, status=500, json=refusal(500, "Internal Server Error"))
    reply = client.post(WEBHOOK, json=uptime_alert(down=True, name="Checkout API"))
    assert reply.status_code == 502
    run_background(relay.dispatcher, fake_time)
    assert len(sent_bodies(telegram)) == 1 + 3  # the webhook's attempt and RELAY_RETRY_ATTEMPTS
    [lost] = [r for r in caplog.records if "ALERT NOT DELIVERED" in r.getMessage()]
    assert lost.levelno == logging.ERROR
    assert "🔴 DOWN · Checkout API\\nThe monitored site has gone down." in lost.getMessage()


def test_a_permanent_refusal_is_not_retried_and_is_logged_with_the_text(
    client: FlaskClient,
    telegram: responses.RequestsMock,
    relay: Relay,
    caplog: pytest.LogCaptureFixture,
) -> None:
    telegram.post(
        SEND_URL,
        status=403,
        json=refusal(403, "Forbidden: bot was kicked from the group chat"),
    )
    reply = client.post(WEBHOOK, json=issue_alert())
    assert reply.status_code == 502
    assert reply.json == {
        "status": "failed",
        "alert": "#1",  # its dead letter's id
        "error": "Telegram refused the message (403): "
        "Forbidden: bot was kicked from the group chat",
    }
    assert relay.dispatcher.wait_idle(timeout=0)
    assert len(telegram.calls) == 1
    [lost] = [r for r in caplog.records if "ALERT NOT DELIVERED" in r.getMessage()]
    assert "ZeroDivisionError: division by zero #1" in lost.getMessage()


def test_rejected_html_still_arrives_as_plain_text_in_the_same_request(
    client: FlaskClient, telegram: responses.RequestsMock
) -> None:
    telegram.post(
        SEND_URL,
        status=400,
        json=refusal(400, "Bad Request: can't parse entities: x"),
    )
    telegram.post(SEND_URL, json=OK)
    reply = client.post(WEBHOOK, json=issue_alert())
    assert reply.status_code == 200
    plain = json.loads(telegram.calls[1].request.body or b"")
    assert "parse_mode" not in plain
    assert plain["text"].startswith("🔴 GlitchTip Alert\n")


@pytest.mark.parametrize(
    "path", [f"/webhook/{SECRET}x", f"/webhook/{SECRET[:-1]}", "/webhook/", "/webhook/ä"]
)
def test_a_wrong_secret_is_404_and_sends_nothing(
    client: FlaskClient, telegram: responses.RequestsMock, path: str
) -> None:
    reply = client.post(path, json=issue_alert())
    assert reply.status_code == 404
    assert SECRET not in reply.get_data(as_text=True)
    assert len(telegram.calls) == 0


@pytest.mark.parametrize(
    ("body", "says"),
    [
        (b"", "the body is empty"),
        (b"{not json", "not valid JSON"),
        (b"[1, 2]", "got a JSON array"),
        (b'"text"', "got a JSON string"),
        (b"42", "got a JSON number"),
        (b"null", "got a JSON literal"),
        (b"\xff\xfe{", "not valid JSON"),
        (b"[" * 5000 + b"]" * 5000, "nests deeper than 64 levels"),  # past the parser's own
        (b'{"a":' * 100 + b"1" + b"}" * 100, "nests deeper than 64 levels"),  # within it
    ],
)
def test_a_body_that_is_not_a_json_object_is_400_and_says_why(
    client: FlaskClient,
    telegram: responses.RequestsMock,
    caplog: pytest.LogCaptureFixture,
    body: bytes,
    says: str,
) -> None:
    reply = client.post(WEBHOOK, data=body, content_type="application/json")
    assert reply.status_code == 400
    assert reply.json is not None
    assert says in reply.json["error"]
    assert len(telegram.calls) == 0
    assert client.get("/healthz").status_code == 200  # still serving
    [record] = [r for r in caplog.records if getattr(r, EVENT_ATTRIBUTE, {}).get("event")]
    assert getattr(record, EVENT_ATTRIBUTE)["reason"] == "bad_body"  # recorded like any other


def test_a_body_over_one_mebibyte_is_413(
    client: FlaskClient, telegram: responses.RequestsMock
) -> None:
    body = json.dumps({"blob": "x" * (1024 * 1024)})
    reply = client.post(WEBHOOK, data=body, content_type="application/json")
    assert reply.status_code == 413
    assert reply.json is not None
    assert "error" in reply.json
    assert len(telegram.calls) == 0


def test_get_on_the_webhook_is_405(client: FlaskClient) -> None:
    assert client.get(WEBHOOK).status_code == 405


def test_healthz_answers_without_calling_telegram(
    client: FlaskClient, telegram: responses.RequestsMock
) -> None:
    reply = client.get("/healthz")
    assert (reply.status_code, reply.json) == (200, {"status": "ok"})
    assert len(telegram.calls) == 0


@pytest.fixture
def two_listeners(settings: Settings) -> Iterator[FlaskClient]:
    """A relay with RELAY_ADMIN_BIND=127.0.0.1:9187 beside its webhook listener on 8780."""
    app = create_app(replace(settings, bind="127.0.0.1:8780", admin_bind="127.0.0.1:9187"))
    yield app.test_client()
    relay = relay_of(app)
    assert relay is not None
    relay.dispatcher.shutdown()


PUBLIC = "http://127.0.0.1:8780"
ADMIN = "http://127.0.0.1:9187"


@pytest.mark.parametrize("path", ["/metrics", "/readyz", "/healthz"])
def test_with_an_admin_listener_its_pages_are_served_there_and_only_there(
    two_listeners: FlaskClient, path: str
) -> None:
    assert two_listeners.get(path, base_url=ADMIN).status_code == 200
    assert two_listeners.get(path, base_url=PUBLIC).status_code == 404


def test_the_admin_listener_takes_no_webhooks(
    two_listeners: FlaskClient, telegram: responses.RequestsMock
) -> None:
    telegram.post(SEND_URL, json=OK)
    refused = two_listeners.post(WEBHOOK, json=issue_alert(issue(1)), base_url=ADMIN)
    assert refused.status_code == 404
    assert sent_texts(telegram) == []
    sent = two_listeners.post(WEBHOOK, json=issue_alert(issue(1)), base_url=PUBLIC)
    assert sent.status_code == 200
    assert len(sent_texts(telegram)) == 1


def test_a_host_header_naming_the_admin_port_does_not_open_it(two_listeners: FlaskClient) -> None:
    reply = two_listeners.get("/metrics", base_url=PUBLIC, headers={"Host": "127.0.0.1:9187"})
    assert reply.status_code == 404


def test_an_unknown_json_object_is_still_forwarded(
    client: FlaskClient, telegram: responses.RequestsMock
) -> None:
    telegram.post(SEND_URL, json=OK)
    reply = client.post(WEBHOOK, json={"message": "deploy <finished> & done"})
    assert reply.status_code == 200
    [text] = sent_texts(telegram)
    assert "deploy &lt;finished&gt; &amp; done" in text


def test_a_formatting_bug_forwards_the_payload_raw(
    client: FlaskClient,
    telegram: responses.RequestsMock,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    def broken(*args: object, **kwargs: object) -> object:
        raise KeyError("a bug")

    monkeypatch.setattr("relay_app.message.formatting.subjects_of", broken)
    telegram.post(SEND_URL, json=OK)
    reply = client.post(WEBHOOK, json=issue_alert())
    assert reply.status_code == 200
    [text] = sent_texts(telegram)
    assert "ZeroDivisionError: division by zero #1" in text
    assert "forwarding it raw" in caplog.text


def test_a_relay_bug_while_sending_still_logs_the_alert(
    client: FlaskClient, telegram: responses.RequestsMock, caplog: pytest.LogCaptureFixture
) -> None:
    telegram.post(SEND_URL, body=RuntimeError("not a requests error"))
    reply = client.post(WEBHOOK, json=issue_alert())
    assert reply.status_code == 500
    assert reply.json == {
        "status": "failed",
        "alert": "#1",
        "error": "internal error; see the relay's log",
    }
    [lost] = [r for r in caplog.records if "ALERT NOT DELIVERED" in r.getMessage()]
    assert "ZeroDivisionError: division by zero #1" in lost.getMessage()
    assert lost.exc_info is not None


# --- the spool ------------------------------------------------------------------------------


def test_the_alert_is_on_disk_before_the_first_attempt_and_gone_once_delivered(
    client: FlaskClient, telegram: responses.RequestsMock, spool_path: str
) -> None:
    seen_during_the_attempt: list[int] = []

    def telegram_accepts(request: PreparedRequest) -> tuple[int, dict[str, str], str]:
        # Read through a connection of its own, as a process resuming the spool would.
        seen_during_the_attempt.append(spool_at(spool_path).counts()["pending"])
        return 200, {}, json.dumps(OK)

    telegram.add_callback(responses.POST, SEND_URL, callback=telegram_accepts)
    assert client.post(WEBHOOK, json=issue_alert()).status_code == 200
    assert seen_during_the_attempt == [1]
    assert spool_at(spool_path).counts() == {"pending": 0, "dead": 0}


def test_a_permanent_refusal_is_kept_as_a_dead_letter(
    client: FlaskClient, telegram: responses.RequestsMock, spool_path: str
) -> None:
    telegram.post(SEND_URL, status=403, json=refusal(403, "Forbidden: bot is not a member"))
    assert client.post(WEBHOOK, json=issue_alert()).status_code == 502
    [dead] = spool_at(spool_path).alerts("dead")
    assert dead.last_error == "Telegram refused the message (403): Forbidden: bot is not a member"
    # Kept as the webhook queued it: its alert, as GlitchTip's page read it.
    assert dead.data == {ALERT_KEY: alert_as_json(read_webhook(issue_alert()))}


def test_readyz_is_200_while_the_spool_works_and_says_when_a_webhook_last_came(
    client: FlaskClient, telegram: responses.RequestsMock, spool_path: str
) -> None:
    reply = client.get("/readyz")
    assert (reply.status_code, reply.json) == (200, {"status": "ready", "last_webhook": None})
    telegram.post(SEND_URL, json=OK)
    assert client.post(WEBHOOK, json=issue_alert()).status_code == 200
    arrived = SpoolArrivals(Database(spool_path)).last()
    assert arrived is not None
    reply = client.get("/readyz")
    assert reply.json == {
        "status": "ready",
        "last_webhook": datetime.fromtimestamp(arrived, UTC).isoformat(timespec="seconds"),
    }
    assert client.post(WEBHOOK, data="not json").status_code == 400
    assert SpoolArrivals(Database(spool_path)).last() == arrived  # refused: not accepted


def test_an_unusable_spool_is_not_ready_yet_alerts_still_go_through(
    settings: Settings,
    fake_time: FakeTime,
    telegram: responses.RequestsMock,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    missing = tmp_path / "not-mounted"
    app = create_app(
        replace(settings, spool_path=str(missing / "spool.sqlite3")),
        clock=fake_time,
    )
    client = app.test_client()
    reply = client.get("/readyz")
    assert reply.status_code == 503
    assert reply.json == {
        "status": "not ready",
        "reason": f"spool unusable: the directory {missing} does not exist",
        "last_webhook": None,
    }
    assert client.get("/healthz").status_code == 200
    telegram.post(SEND_URL, body=requests.ConnectionError("connection refused"))
    telegram.post(SEND_URL, json=OK)
    reply = client.post(WEBHOOK, json=issue_alert())
    assert reply.status_code == 502
    assert reply.json is not None
    assert reply.json["status"] == "queued"
    relay = relay_of(app)
    assert relay is not None
    run_background(relay.dispatcher, fake_time)
    assert len(sent_bodies(telegram)) == 2  # retried from memory
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert any(m.startswith("DURABILITY LOST") for m in errors)
    assert any("kept in memory only" in m for m in errors)
    relay.dispatcher.shutdown()

    missing.mkdir()  # the volume is back
    assert client.get("/readyz").status_code == 200
    assert "works again" in caplog.text


def test_with_the_spool_switched_off_the_relay_is_ready(
    settings: Settings, fake_time: FakeTime
) -> None:
    app = create_app(replace(settings, spool_path=None), clock=fake_time)
    assert app.test_client().get("/readyz").status_code == 200


def test_past_the_pending_limit_an_alert_is_still_tried_and_kept_in_memory(
    settings: Settings,
    fake_time: FakeTime,
    telegram: responses.RequestsMock,
    caplog: pytest.LogCaptureFixture,
) -> None:
    app = create_app(replace(settings, spool_max_pending=1), clock=fake_time)
    client = app.test_client()
    put_in_spool(settings.spool_path or "", issue_alert(issue(9)), Destination(-1), received_at=0)
    telegram.post(SEND_URL, json=OK)
    assert client.post(WEBHOOK, json=issue_alert(issue(2))).status_code == 200  # tried anyway
    fake_time.now += GROUP_INTERVAL  # the chat's next turn
    telegram.post(SEND_URL, status=500, json=refusal(500, "Internal Server Error"))
    reply = client.post(WEBHOOK, json=issue_alert(issue(3)))
    assert reply.status_code == 502
    assert reply.json is not None
    assert reply.json["status"] == "queued"
    assert reply.json["alert"].startswith("mem-")
    label = reply.json["alert"]
    [kept] = [
        r
        for r in caplog.records
        if f"alert {label} could not be written to the spool" in r.getMessage()
    ]
    assert kept.levelno == logging.ERROR
    assert "the spool is full: 1 alerts are already pending" in kept.getMessage()
    relay = relay_of(app)
    assert relay is not None
    assert relay.memory.queue.pending() == 1
    relay.dispatcher.shutdown()


# --- pacing, digests and routing ------------------------------------------------------------


def test_an_alert_whose_chat_is_not_due_is_queued_with_202_and_sent_on_its_turn(
    client: FlaskClient,
    telegram: responses.RequestsMock,
    relay: Relay,
    fake_time: FakeTime,
) -> None:
    telegram.post(SEND_URL, json=OK)
    arrived = fake_time.now
    assert client.post(WEBHOOK, json=issue_alert(issue(1))).status_code == 200
    reply = client.post(WEBHOOK, json=issue_alert(issue(2)))
    assert (reply.status_code, reply.json) == (202, {"status": "queued", "alert": "#2"})
    assert len(telegram.calls) == 1  # the webhook did not wait, and did not send
    run_background(relay.dispatcher, fake_time)
    _, second = sent_texts(telegram)
    assert "division by zero #2" in second
    assert "alerts, received" not in second  # alone, it goes as it was built
    assert fake_time.now == pytest.approx(arrived + GROUP_INTERVAL)


def test_alerts_waiting_for_the_same_chat_go_out_as_one_digest_oldest_first(
    client: FlaskClient,
    telegram: responses.RequestsMock,
    relay: Relay,
    fake_time: FakeTime,
) -> None:
    telegram.post(SEND_URL, json=OK)
    for number in range(1, 6):
        client.post(WEBHOOK, json=issue_alert(issue(number)))
        fake_time.now += 0.1
    run_background(relay.dispatcher, fake_time)
    [(_, digest)] = [(b, b["text"]) for b in sent_bodies(telegram)[1:]]
    assert isinstance(digest, str)
    assert digest.startswith("<b>🗂 4 alerts, received ")
    positions = [digest.index(f"division by zero #{n}<") for n in range(2, 6)]
    assert positions == sorted(positions)
    assert relay.spool is not None
    assert relay.spool.admin.counts()["pending"] == 0


def test_a_429_pauses_the_chat_and_costs_the_alert_no_attempt(
    settings: Settings,
    fake_time: FakeTime,
    telegram: responses.RequestsMock,
) -> None:
    app = create_app(replace(settings, retry_attempts=1), clock=fake_time)
    relay = relay_of(app)
    assert relay is not None
    telegram.post(SEND_URL, status=504, json=refusal(504, "Gateway Timeout"))
    telegram.post(SEND_URL, status=429, json=refusal(429, "Too Many Requests", retry_after=40))
    telegram.post(SEND_URL, json=OK)
    arrived = fake_time.now
    assert app.test_client().post(WEBHOOK, json=issue_alert()).status_code == 502
    run_background(relay.dispatcher, fake_time)
    # 504 then 429 then delivered: with RELAY_RETRY_ATTEMPTS=1 only the 429 being free allows it.
    assert len(sent_bodies(telegram)) == 3
    assert fake_time.now >= arrived + GROUP_INTERVAL + 40
    assert relay.spool is not None
    assert relay.spool.admin.counts() == {"pending": 0, "dead": 0}
    relay.dispatcher.shutdown()


def test_a_thread_id_in_the_url_picks_the_topic_of_the_default_chat(
    client: FlaskClient, telegram: responses.RequestsMock
) -> None:
    telegram.post(SEND_URL, json=OK)
    assert client.post(f"{WEBHOOK}?thread_id=12", json=issue_alert()).status_code == 200
    [body] = sent_bodies(telegram)
    assert (body["chat_id"], body["message_thread_id"]) == (CHAT_ID, 12)


def test_a_chat_on_the_allowlist_can_be_chosen_with_its_own_topic(
    settings: Settings, fake_time: FakeTime, telegram: responses.RequestsMock
) -> None:
    allowed = replace(settings, allowed_chat_ids=frozenset({"-100555", "@ops_alerts"}))
    client = create_app(allowed, clock=fake_time).test_client()
    telegram.post(SEND_URL, json=OK)
    assert (
        client.post(f"{WEBHOOK}?chat_id=-100555&thread_id=3", json=issue_alert()).status_code == 200
    )
    assert client.post(f"{WEBHOOK}?chat_id=@Ops_Alerts", json=issue_alert()).status_code == 200
    first, second = sent_bodies(telegram)
    assert (first["chat_id"], first["message_thread_id"]) == (-100555, 3)
    assert second["chat_id"] == "@Ops_Alerts"
    assert "message_thread_id" not in second  # the default topic belongs to the default chat


@pytest.mark.parametrize(
    ("query", "says"),
    [
        ("chat_id=-100999", "chat_id=-100999 is not in TELEGRAM_ALLOWED_CHAT_IDS"),
        ("chat_id=general", "chat_id='general' is neither an integer chat id"),
        ("chat_id=0", "is neither an integer chat id"),
        ("thread_id=abc", "thread_id='abc' is not a positive integer"),
        ("thread_id=0", "is not a positive integer"),
        ("thread_id=-4", "is not a positive integer"),
        ("thread_id=", "is not a positive integer"),
        ("thread=12", "unknown query parameter 'thread'"),
        ("thread_id=1&thread_id=2", "given more than once"),
    ],
)
def test_a_destination_the_relay_may_not_use_is_400_and_the_alert_is_logged(
    client: FlaskClient,
    telegram: responses.RequestsMock,
    caplog: pytest.LogCaptureFixture,
    spool_path: str,
    query: str,
    says: str,
) -> None:
    reply = client.post(f"{WEBHOOK}?{query}", json=issue_alert())
    assert reply.status_code == 400
    assert reply.json is not None
    assert says in reply.json["error"]
    assert len(telegram.calls) == 0
    assert spool_at(spool_path).counts() == {"pending": 0, "dead": 0}
    [lost] = [r for r in caplog.records if "ALERT NOT DELIVERED" in r.getMessage()]
    assert says in lost.getMessage()
    assert "division by zero #1" in lost.getMessage()


def test_a_missing_topic_is_logged_and_the_alert_sent_once_to_the_chat_itself(
    client: FlaskClient,
    telegram: responses.RequestsMock,
    relay: Relay,
    fake_time: FakeTime,
    caplog: pytest.LogCaptureFixture,
) -> None:
    telegram.post(SEND_URL, status=400, json=refusal(400, "Bad Request: message thread not found"))
    telegram.post(SEND_URL, json=OK)
    reply = client.post(f"{WEBHOOK}?thread_id=404", json=issue_alert())
    assert reply.status_code == 502
    assert reply.json is not None
    assert reply.json["status"] == "queued"
    [topic_lost] = [r for r in caplog.records if "TOPIC NOT FOUND" in r.getMessage()]
    assert topic_lost.levelno == logging.ERROR
    assert "division by zero #1" in topic_lost.getMessage()
    run_background(relay.dispatcher, fake_time)
    first, second = sent_bodies(telegram)
    assert first["message_thread_id"] == 404
    assert "message_thread_id" not in second
    assert second["text"] == first["text"]
    assert "ALERT NOT DELIVERED" not in caplog.text


# --- a busy spool, a failing Telegram -------------------------------------------------------------


def test_a_spool_locked_by_another_process_is_waited_for_and_stays_durable(
    client: FlaskClient,
    telegram: responses.RequestsMock,
    fake_time: FakeTime,
    spool_path: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    telegram.post(SEND_URL, json=OK)
    assert client.post(WEBHOOK, json=issue_alert(issue(1))).status_code == 200  # the file exists
    fake_time.now += GROUP_INTERVAL
    seen: list[int] = []

    def telegram_accepts(request: PreparedRequest) -> tuple[int, dict[str, str], str]:
        seen.append(spool_at(spool_path).counts()["pending"])
        return 200, {}, json.dumps(OK)

    telegram.add_callback(responses.POST, SEND_URL, callback=telegram_accepts)
    started = time.monotonic()
    holder = hold_the_lock(spool_path, 1.0)
    reply = client.post(WEBHOOK, json=issue_alert(issue(2)))
    holder.join()
    assert reply.status_code == 200
    assert 0.9 <= time.monotonic() - started < 9.5  # waited, inside GlitchTip's 10 s
    assert seen == [1]  # on disk before its attempt, as always
    assert "DURABILITY LOST" not in caplog.text
    samples = metric_samples(client)
    assert value(samples, "relay_spool_lock_wait_seconds_count") == 1
    assert value(samples, "relay_spool_lock_wait_seconds_sum") >= 0.8  # about the 1 s held


def test_while_telegram_fails_a_webhook_waits_in_the_queue_without_an_attempt(
    client: FlaskClient,
    telegram: responses.RequestsMock,
    relay: Relay,
    fake_time: FakeTime,
    caplog: pytest.LogCaptureFixture,
) -> None:
    telegram.replace(responses.POST, GET_ME_URL, body=requests.ConnectionError("refused"))
    telegram.post(SEND_URL, body=requests.ConnectionError("connection refused"))
    assert client.post(WEBHOOK, json=issue_alert(issue(1))).status_code == 502
    fake_time.now += GROUP_INTERVAL  # the chat's next turn has come; getMe is due
    relay.dispatcher.pass_once()  # asks getMe: no answer, Telegram is down
    assert relay.dispatcher.wait_idle(10)
    reply = client.post(f"{WEBHOOK}?thread_id=9", json=issue_alert(issue(2)))
    assert (reply.status_code, reply.json) == (202, {"status": "queued", "alert": "#2"})
    [record] = [r for r in caplog.records if "webhook for alert #2" in r.getMessage()]
    assert getattr(record, EVENT_ATTRIBUTE)["reason"] == "telegram_down"
    assert len(sent_bodies(telegram)) == 1  # no attempt that could only fail
    telegram.replace(responses.POST, GET_ME_URL, json=ME)
    telegram.replace(responses.POST, SEND_URL, json=OK)
    run_background(relay.dispatcher, fake_time)
    assert len(sent_bodies(telegram)) == 3


@pytest.mark.parametrize(
    ("method", "path", "status", "reason"),
    [
        ("POST", "/webhook/wrong-secret", 404, "webhook_secret"),
        ("POST", "/webhook/", 404, "webhook_path"),
        ("POST", "/webhook/a/b", 404, "webhook_path"),
        ("POST", "/webhooks/secret", 404, "webhook_path"),
        ("POST", "/telegram/old", 404, "telegram_secret"),
        ("GET", "/webhook/secret", 405, "method"),
        ("GET", "/", 404, "unknown_path"),
    ],
)
def test_each_miss_has_its_reason(method: str, path: str, status: int, reason: str) -> None:
    assert miss_reason(method, path, status) == reason
