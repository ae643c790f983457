"""The sample GlitchTip payloads in examples/, which the README's quick start posts with curl:
each is a payload as GlitchTip sends it, and each becomes the message the docs show."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import responses
from flask.testing import FlaskClient

from relay_app.core.alerts import IssueAlert, UptimeAlert
from relay_app.core.json_body import payload_from_json
from relay_app.glitchtip.webhook import read_kept
from relay_app.words import ENGLISH
from tests.conftest import OK, SEND_URL, SOURCES, WEBHOOK
from tests.payloads import issue, issue_alert, message_for, uptime_alert

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"

# What a message says of the issues an alert counts and does not attach, without a token.
UNNAMED = " GlitchTip did not attach: set GLITCHTIP_API_TOKEN for the relay to name them"


def example(name: str) -> bytes:
    return (EXAMPLES / name).read_bytes()


def test_the_examples_are_the_payloads_glitchtip_builds() -> None:
    # The same shape as tests/payloads.py, which follows GlitchTip's source: same keys, all of
    # them, at every level.
    def shape(value: object) -> object:
        if isinstance(value, dict):
            return {key: shape(item) for key, item in value.items()}
        if isinstance(value, list):
            return [shape(value[0])] if value else []
        return type(value).__name__ if value is not None else None

    single = json.loads(example("issue-alert.json"))
    assert shape(single) == shape(issue_alert(issue(1)))
    for state in ("down", "up"):
        assert shape(json.loads(example(f"uptime-{state}.json"))) == shape(
            uptime_alert(down=state == "down")
        )


def test_the_issue_example_is_one_error_with_its_fields() -> None:
    alert = read_kept(payload_from_json(example("issue-alert.json")))
    assert isinstance(alert, IssueAlert)
    assert [i.title for i in alert.issues] == ["ZeroDivisionError: division by zero"]
    assert message_for(
        payload_from_json(example("issue-alert.json")), ENGLISH, sources=SOURCES
    ).text == (
        "🔴 GlitchTip Alert\n"
        "\n"
        "ZeroDivisionError: division by zero\n"
        "in app.views.divide\n"
        "BACKEND-1A · Project: backend · Environment: production · Server Name: web-1 · "
        "Release: 1.4.2"
    )


def test_the_twelve_issue_example_shows_three_and_counts_the_rest() -> None:
    alert = read_kept(payload_from_json(example("issue-alert-12-issues.json")))
    assert isinstance(alert, IssueAlert)
    assert (len(alert.issues), alert.total) == (3, 12)
    text = message_for(
        payload_from_json(example("issue-alert-12-issues.json")), ENGLISH, sources=SOURCES
    ).text
    assert text.startswith("🔴 GlitchTip Alert (12 issues)\n\n🔴 ZeroDivisionError")
    assert "🟠 KeyError: 'user_id'\nin billing.tasks.charge <retry>" in text
    assert text.endswith(f"…and 9 more issues{UNNAMED}")


@pytest.mark.parametrize(("state", "first_line"), [("down", "🔴 DOWN"), ("up", "✅ UP")])
def test_the_uptime_examples_say_down_and_up(state: str, first_line: str) -> None:
    payload = payload_from_json(example(f"uptime-{state}.json"))
    assert isinstance(read_kept(payload), UptimeAlert)
    assert message_for(payload, ENGLISH, sources=SOURCES).text.startswith(
        f"{first_line} · Checkout API\n"
    )


@pytest.mark.parametrize("name", sorted(p.name for p in EXAMPLES.glob("*.json")))
def test_each_example_posted_to_the_webhook_reaches_telegram(
    client: FlaskClient, telegram: responses.RequestsMock, name: str
) -> None:
    telegram.post(SEND_URL, json=OK)
    reply = client.post(WEBHOOK, data=example(name), headers={"Content-Type": "application/json"})
    assert reply.status_code == 200
    sent = [call for call in telegram.calls if call.request.url == SEND_URL]
    assert len(sent) == 1
