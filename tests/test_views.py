from __future__ import annotations

import json
import logging

import pytest
import requests
import responses
from flask.testing import FlaskClient

from relay_app.retrier import Retrier
from tests.conftest import SECRET, SEND_URL, RecordingSleep, refusal
from tests.payloads import issue, issue_alert, uptime_alert

WEBHOOK = f"/webhook/{SECRET}"
OK = {"ok": True, "result": {"message_id": 1}}


def sent_texts(telegram: responses.RequestsMock) -> list[str]:
    return [json.loads(call.request.body or b"")["text"] for call in telegram.calls]


def test_a_delivered_alert_answers_200_and_queues_nothing(
    client: FlaskClient,
    telegram: responses.RequestsMock,
    app_retrier: Retrier,
    sleeps: RecordingSleep,
) -> None:
    telegram.post(SEND_URL, json=OK)
    reply = client.post(WEBHOOK, json=issue_alert())
    assert (reply.status_code, reply.json) == (200, {"status": "sent"})
    assert len(telegram.calls) == 1
    assert app_retrier.wait_idle(timeout=0)  # no job was ever queued
    assert sleeps.calls == []


def test_a_failed_attempt_queues_the_prebuilt_text_and_still_answers_502(
    client: FlaskClient,
    telegram: responses.RequestsMock,
    app_retrier: Retrier,
    sleeps: RecordingSleep,
) -> None:
    telegram.post(SEND_URL, body=requests.ConnectionError("connection refused"))
    telegram.post(SEND_URL, json=OK)
    reply = client.post(WEBHOOK, json=issue_alert(issue(1), issue(2), total=5))
    assert reply.status_code == 502
    assert reply.json is not None
    assert reply.json["status"] == "queued"
    assert "connection to Telegram failed" in reply.json["error"]
    assert app_retrier.wait_idle(timeout=10)
    first, retried = sent_texts(telegram)
    assert retried == first  # the very same text, never rebuilt
    assert sleeps.calls == [30.0]


def test_retries_at_the_ceiling_give_up_with_an_error_holding_the_text(
    client: FlaskClient,
    telegram: responses.RequestsMock,
    app_retrier: Retrier,
    caplog: pytest.LogCaptureFixture,
) -> None:
    telegram.post(SEND_URL, status=500, json=refusal(500, "Internal Server Error"))
    reply = client.post(WEBHOOK, json=uptime_alert(down=True, name="Checkout API"))
    assert reply.status_code == 502
    assert app_retrier.wait_idle(timeout=10)
    assert len(telegram.calls) == 1 + 3  # the synchronous attempt and RELAY_RETRY_ATTEMPTS
    [lost] = [r for r in caplog.records if "ALERT NOT DELIVERED" in r.getMessage()]
    assert lost.levelno == logging.ERROR
    assert "🔴 DOWN · Checkout API\nThe monitored site has gone down." in lost.getMessage()


def test_a_permanent_refusal_is_not_retried_and_is_logged_with_the_text(
    client: FlaskClient,
    telegram: responses.RequestsMock,
    app_retrier: Retrier,
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
        "error": "Telegram refused the message (403): "
        "Forbidden: bot was kicked from the group chat",
    }
    assert app_retrier.wait_idle(timeout=0)
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
    ],
)
def test_a_body_that_is_not_a_json_object_is_400_and_says_why(
    client: FlaskClient, telegram: responses.RequestsMock, body: bytes, says: str
) -> None:
    reply = client.post(WEBHOOK, data=body, content_type="application/json")
    assert reply.status_code == 400
    assert reply.json is not None
    assert says in reply.json["error"]
    assert len(telegram.calls) == 0
    assert client.get("/healthz").status_code == 200  # still serving


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
    def broken(payload: object) -> object:
        raise KeyError("a bug")

    monkeypatch.setattr("relay_app.views.parse_alert", broken)
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
    assert reply.json == {"status": "failed", "error": "internal error; see the relay's log"}
    [lost] = [r for r in caplog.records if "ALERT NOT DELIVERED" in r.getMessage()]
    assert "ZeroDivisionError: division by zero #1" in lost.getMessage()
    assert lost.exc_info is not None
