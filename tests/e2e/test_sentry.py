"""Sentry as a second source, end to end: the real `gunicorn wsgi:app` with 2 workers, the fake
Telegram and the fake Sentry (its API, and its integration platform sending signed webhooks
with its 1 s timeout). An issue alert is answered before it is sent and reaches the chat with
its buttons; Resolve changes the issue in Sentry; a reply is a comment there; Sentry's own
issue webhook brings the card in step; a forged webhook is refused and changes nothing; the
same relay serves GlitchTip beside it, each card naming its source."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.e2e.conftest import StartRelay
from tests.e2e.helpers import (
    CHAT_SCALE,
    alert_for,
    answered,
    card_kept,
    labels,
    once_edited,
    only_message,
    post,
    run_relay_app,
    wait_until,
)
from tests.e2e.relay_process import CHAT_ID
from tests.fake_glitchtip import TOKEN as GLITCHTIP_TOKEN
from tests.fake_glitchtip import FakeGlitchTip
from tests.fake_sentry import CLIENT_SECRET, ORG, TOKEN, FakeSentry, relay_variables
from tests.fake_telegram import FakeTelegram

SAMPLES = Path(__file__).resolve().parents[1] / "sentry_samples"
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def issue_alert(sentry: FakeSentry, issue_id: int) -> dict[str, Any]:
    """The documentation's issue alert, about issue `issue_id` of the fake's organization."""
    body: dict[str, Any] = json.loads((SAMPLES / "issue_alert.json").read_text())
    event = body["data"]["event"]
    event["issue_id"] = str(issue_id)
    event["event_id"] = f"{issue_id:032x}"
    event["web_url"] = f"{sentry.url}/organizations/{ORG}/issues/{issue_id}/events/{issue_id:032x}/"
    event["url"] = f"{sentry.url}/api/0/projects/{ORG}/front-end/events/{issue_id:032x}/"
    event["issue_url"] = f"{sentry.url}/api/0/organizations/{ORG}/issues/{issue_id}/"
    return body


def test_a_sentry_alert_is_answered_at_once_acted_on_and_kept_in_step(
    start_relay: StartRelay,
    fake_telegram: FakeTelegram,
    fake_sentry: FakeSentry,
    fake_glitchtip: FakeGlitchTip,
    spool_path: str,
) -> None:
    fake_sentry.add_issue(12, short_id="FRONT-END-C")
    fake_sentry.counts["12"] = 40
    relay = start_relay(
        SENTRY_CLIENT_SECRET=CLIENT_SECRET,
        SENTRY_API_TOKEN=TOKEN,
        SENTRY_URL=fake_sentry.url,
        GLITCHTIP_API_TOKEN=GLITCHTIP_TOKEN,
        GLITCHTIP_URL=fake_glitchtip.url,
        RELAY_TIME_SCALE=CHAT_SCALE,
    )
    # The start-up line names each source and what its variables enable (Sentry's said by
    # its capability).
    assert (
        f"GlitchTip: alerts, buttons, details and the watcher ({fake_glitchtip.url}); Sentry: "
        f"signed alerts, buttons and details ({fake_sentry.url}); presses: TELEGRAM_UPDATES=poll"
    ) in relay.logs()
    forged = fake_sentry.send(
        relay.url, "event_alert", issue_alert(fake_sentry, 12), secret="x" * 64
    )
    assert forged.status == 401

    sent = fake_sentry.send(relay.url, "event_alert", issue_alert(fake_sentry, 12))
    assert sent.status == 202, sent.body
    assert sent.seconds < 1.0  # within Sentry's timeout, never waiting for Telegram
    posted = only_message(fake_telegram)
    assert posted.visible().startswith("🔴 Sentry · Very Important Alert Rule!")
    assert labels(posted) == ["👀 On it", "✅ Resolve", "🔕 Ignore…", "🔇 Mute 1 h", "📈"]
    # The event alert names no short id: one look-up of the issue in Sentry's API gave it,
    # and its count, beside the frame the event carried.
    assert "FRONT-END-C" in posted.visible()
    assert "🔁 Seen 40 times" in posted.visible()
    assert "📍 <anonymous>:3" in posted.visible()
    # It went in the background: Telegram shows it a moment before the relay has kept its
    # buttons, and a person's press comes later than a test's.
    assert wait_until(lambda: card_kept(spool_path, posted), timeout=10), relay.logs()

    answer = answered(fake_telegram, fake_telegram.press(posted, "✅ Resolve"))
    assert answer["text"] == "Resolved FRONT-END-C in Sentry"
    assert fake_sentry.status(12) == "resolved"
    once_edited(fake_telegram, posted, r"✅ Resolved by @ada at \d\d:\d\d UTC$")

    fake_telegram.reply(posted, "Rolled back")
    wait_until(lambda: fake_sentry.comments.get("12"), timeout=10)
    assert fake_sentry.comments["12"][0].endswith("Rolled back")

    # Reopened in Sentry itself: its issue webhook brings the card in step.
    reopened = {"action": "unresolved", "data": {"issue": {"id": "12", "shortId": "FRONT-END-C"}}}
    assert fake_sentry.send(relay.url, "issue", reopened).status == 200
    once_edited(fake_telegram, posted, r"↩️ Reopened in Sentry at \d\d:\d\d UTC$")

    # GlitchTip beside it, its own issue 12 untouched by all of this.
    reply, _ = post(relay.webhook_url, alert_for(fake_glitchtip, 12))
    assert reply.status_code in (200, 202)  # 202: its turn comes after the card's edit
    assert wait_until(lambda: len(fake_telegram.posted_to(CHAT_ID)) == 2, timeout=10)
    glitchtips = fake_telegram.posted_to(CHAT_ID)[-1]
    assert glitchtips.visible().startswith("🔴 GlitchTip Alert")
    assert fake_glitchtip.changes() == []


def test_a_sentry_card_without_sentry_signed_and_sent_by_relay_app(
    start_relay: StartRelay, fake_telegram: FakeTelegram
) -> None:
    secret = "f" * 64  # any 64 characters: the relay and the command share it
    relay = start_relay(SENTRY_CLIENT_SECRET=secret, RELAY_TIME_SCALE=CHAT_SCALE)
    example = str(EXAMPLES / "sentry-issue-alert.json")
    sent = run_relay_app(
        {"SENTRY_CLIENT_SECRET": secret}, "sentry", "send", example, "--relay-url", relay.url
    )
    assert sent.returncode == 0, sent.stderr
    assert sent.stdout.startswith(f"{relay.url}/sentry/webhook: 202 ")  # queued: answered at once
    card = only_message(fake_telegram)
    assert card.visible().splitlines()[0] == "🔴 Very Important Alert Rule!"
    assert "ReferenceError: heck is not defined" in card.visible()
    # The same file again is Sentry's retry: counted once.
    again = run_relay_app(
        {"SENTRY_CLIENT_SECRET": secret}, "sentry", "send", example, "--relay-url", relay.url
    )
    assert '"repeated"' in again.stdout
    wrong = run_relay_app(
        {"SENTRY_CLIENT_SECRET": "0" * 64}, "sentry", "send", example, "--relay-url", relay.url
    )
    assert wrong.returncode == 1
    assert ": 401 " in wrong.stdout
    assert len(fake_telegram.posted_to(CHAT_ID)) == 1


def test_a_new_issues_card_gets_its_frame_by_one_look_up(
    start_relay: StartRelay, fake_telegram: FakeTelegram, fake_sentry: FakeSentry, tmp_path: Path
) -> None:
    """Sentry's issue.created carries no event: its card's frame and stack come from the
    issue's latest event, asked of Sentry's API once, before the card is sent."""
    issue_id = 1170820242
    fake_sentry.add_issue(issue_id, short_id="BACKEND-7")
    # Sentry's API answers an event as GlitchTip's does (GlitchTip copies it): entries,
    # camelCase frames.
    fake_sentry.latest[str(issue_id)] = json.loads(
        (SAMPLES.parent / "glitchtip_samples" / "issue-latest-event.json").read_text()
    )
    relay = start_relay(
        **relay_variables(fake_sentry, tmp_path / "routes.toml", CHAT_ID),
        RELAY_TIME_SCALE=CHAT_SCALE,
    )
    created: dict[str, Any] = json.loads((SAMPLES / "issue_created.json").read_text())
    created["data"]["issue"]["web_url"] = (
        f"{fake_sentry.url}/organizations/{ORG}/issues/{issue_id}/"
    )
    sent = fake_sentry.send(relay.url, "issue", created)
    assert sent.status == 202, sent.body
    assert sent.seconds < 1.0
    card = only_message(fake_telegram)
    assert "📍 shop/cart.py:4 in total" in card.visible(), card.visible()
    looked_up = [call.path for call in fake_sentry.calls if call.method == "GET"]
    assert looked_up.count(f"/api/0/issues/{issue_id}/events/latest/") == 1


def test_a_metric_alerts_warning_critical_and_resolution_are_one_thread_in_the_chat(
    start_relay: StartRelay, fake_telegram: FakeTelegram, fake_sentry: FakeSentry
) -> None:
    """Sentry's metric alert warns, goes critical, then resolves: three deliveries, one
    thread under the warning's message, its recovery saying how long since the warning."""
    relay = start_relay(
        SENTRY_CLIENT_SECRET=CLIENT_SECRET, SENTRY_URL=fake_sentry.url, RELAY_TIME_SCALE=CHAT_SCALE
    )
    body: dict[str, Any] = json.loads((SAMPLES / "metric_alert_resolved.json").read_text())
    for n, action in enumerate(("warning", "critical", "resolved"), 1):
        sent = fake_sentry.send(relay.url, "metric_alert", body | {"action": action})
        assert sent.status == 202, sent.body
        assert wait_until(lambda n=n: len(fake_telegram.posted_to(CHAT_ID)) == n, timeout=10), (
            relay.logs()
        )
    warning, critical, recovery = fake_telegram.posted_to(CHAT_ID)
    assert warning.visible().startswith("🟡 WARNING · ")
    assert warning.reply_to is None
    assert critical.visible().startswith("🔴 DOWN · ")
    assert recovery.visible().startswith("✅ UP · ")
    assert critical.reply_to == recovery.reply_to == warning.message_id
