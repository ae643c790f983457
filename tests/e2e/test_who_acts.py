"""Who acts, on what, once (docs/security.md#who-acts-on-what), end to end: the real `gunicorn
wsgi:app` against the fake Telegram, GlitchTip and Sentry, each attack that got through on
71402a6 tried again as it was made then:

- a cover for `tg:99999999999999999999`, and one ending in the year 10000, from the chat: refused
  with why; `/oncall`, `relay-app oncall cover --list` and the rotation's alerts go on;
- two people with one display name and no username, and a first name that reads as another's
  username: Let go and On it go by Telegram's id, and no name is shown as a mention it is not;
- a GlitchTip webhook linking Sentry's issue: no Sentry buttons, nothing reaches Sentry;
- three deliveries of one metric alert (Sentry's retries, each with a new Request-ID): one
  message; a signed `issue.created` whose count is "²": sent, not answered 500;
- Sentry's API hanging: three presses at once in poll mode answered within 2 s each, not at 5,
  10 and 15 s, and how each call ended said under its card."""

from __future__ import annotations

import json
import time
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
    post,
    run_relay_app,
    wait_until,
)
from tests.e2e.relay_process import CHAT_ID, relay_env
from tests.fake_glitchtip import TOKEN as GLITCHTIP_TOKEN
from tests.fake_glitchtip import FakeGlitchTip
from tests.fake_sentry import CLIENT_SECRET, ORG, TOKEN, FakeSentry, relay_variables
from tests.fake_telegram import FakeTelegram, Posted
from tests.payloads import issue, issue_alert

SAMPLES = Path(__file__).resolve().parents[1] / "sentry_samples"
ROUTES = """
[[rotation]]
name = "ops"
people = ["@boris_ops"]
every = "1d"
start = "2026-01-01T09:00"

[[route]]
source = "glitchtip"
mention = ["oncall:ops"]
"""


def test_what_people_type_and_who_they_are_never_cost_an_alert_nor_act_for_another(
    start_relay: StartRelay,
    fake_telegram: FakeTelegram,
    fake_glitchtip: FakeGlitchTip,
    fake_sentry: FakeSentry,
    tmp_path: Path,
    spool_path: str,
) -> None:
    routes = tmp_path / "routes.toml"
    routes.write_text(ROUTES)
    variables = {
        "GLITCHTIP_API_TOKEN": GLITCHTIP_TOKEN,
        "GLITCHTIP_URL": fake_glitchtip.url,
        "SENTRY_CLIENT_SECRET": CLIENT_SECRET,
        "SENTRY_API_TOKEN": TOKEN,
        "SENTRY_URL": fake_sentry.url,
        "RELAY_ROUTES": str(routes),
        "RELAY_SPOOL_PATH": spool_path,
        "RELAY_TIME_SCALE": CHAT_SCALE,
    }
    relay = start_relay(**variables)

    def said(prefix: str) -> list[str]:
        texts = [p.visible() for p in fake_telegram.posted_to(CHAT_ID)]
        return [text for text in texts if text.startswith(prefix)]

    # Covers that could not hold: refused with why, nothing kept.
    fake_telegram.say(CHAT_ID, "/cover ops tg:99999999999999999999 for 1h", user_id=4343)
    assert wait_until(lambda: said("tg:99999999999999999999 is neither"), timeout=10), relay.logs()
    fake_telegram.say(CHAT_ID, "/cover ops @anna_ops from 9999-11-29 10:00 for 92d", user_id=4344)
    assert wait_until(lambda: said("9999-11-29 10:00 is not a time"), timeout=10), relay.logs()
    listed = run_relay_app(relay_env(fake_telegram, **variables), "oncall", "cover", "--list")
    assert (listed.returncode, listed.stdout) == (0, "no cover in force or to come\n")
    fake_telegram.say(CHAT_ID, "/oncall", user_id=4345)
    assert wait_until(lambda: said("👥 On call:"), timeout=10), relay.logs()
    assert "ops: @boris_ops until " in said("👥 On call:")[0]

    # The rotation's alert goes, and calls whoever is on duty.
    reply, _ = post(relay.webhook_url, alert_for(fake_glitchtip, 1))
    assert reply.status_code in (200, 202), reply.text
    assert wait_until(lambda: said("🔴 GlitchTip Alert"), timeout=10), relay.logs()
    [alert] = [p for p in fake_telegram.posted_to(CHAT_ID) if p.visible().startswith("🔴")]
    assert alert.visible().endswith("🔔 For @boris_ops")
    # Telegram shows it a moment before the relay has kept its buttons; a person's press comes
    # later than a test's.
    assert wait_until(lambda: card_kept(spool_path, alert), timeout=10), relay.logs()

    # Two accounts with one name and no username: each is only themselves.
    fake_telegram.press(alert, "👀 On it", user_id=501, username=None, first_name="Sam")
    taken = once_edited(fake_telegram, alert, r"👀 Sam is on it since \d\d:\d\d UTC$")
    other = fake_telegram.press(taken, "↩️ Let go", user_id=502, username=None, first_name="Sam")
    assert answered(fake_telegram, other)["text"] == "Only Sam can let it go: it is theirs."
    # A first name that reads as a username: not that person, and never shown as a mention.
    impostor = fake_telegram.press(taken, "↩️ Let go", user_id=503, username=None, first_name="@ada")
    assert answered(fake_telegram, impostor)["text"] == "Only Sam can let it go: it is theirs."
    fake_telegram.press(taken, "↩️ Let go", user_id=501, username=None, first_name="Sam")

    def card() -> Posted:
        return fake_telegram.message(alert.chat, alert.message_id)

    assert wait_until(lambda: labels(card())[0] == "👀 On it", timeout=10), relay.logs()
    fake_telegram.press(card(), "👀 On it", user_id=67, username=None, first_name="@vera_lead")
    lead = once_edited(fake_telegram, alert, r"👀 ＠vera_lead is on it since \d\d:\d\d UTC$")
    assert "@vera_lead" not in lead.visible()

    # A GlitchTip webhook (its secret in the URL, nothing signed) linking Sentry's issue.
    fake_sentry.add_issue(7778)
    sentrys = f"{fake_sentry.url}/organizations/{ORG}/issues/7778/"
    reply, _ = post(relay.webhook_url, issue_alert(issue(9, link=sentrys, title="Forged")))
    assert reply.status_code in (200, 202), reply.text
    assert wait_until(lambda: said("🔴 GlitchTip Alert\n\nForged"), timeout=10), relay.logs()
    [forged] = [p for p in fake_telegram.posted_to(CHAT_ID) if "Forged" in p.visible()]
    assert labels(forged) == []  # no buttons: nothing a press could send to Sentry
    assert not [call for call in fake_sentry.calls if call.method == "PUT"]
    assert fake_sentry.status(7778) == "unresolved"


def metric_alert(action: str) -> dict[str, Any]:
    body: dict[str, Any] = json.loads((SAMPLES / "metric_alert_resolved.json").read_text())
    return body | {"action": action}


def event_alert(sentry: FakeSentry, issue_id: int) -> dict[str, Any]:
    body: dict[str, Any] = json.loads((SAMPLES / "issue_alert.json").read_text())
    event = body["data"]["event"]
    event.update(
        issue_id=str(issue_id),
        event_id=f"{issue_id:032x}",
        title=f"TypeError in checkout #{issue_id}",
        web_url=f"{sentry.url}/organizations/{ORG}/issues/{issue_id}/events/{issue_id:032x}/",
        url=f"{sentry.url}/api/0/projects/{ORG}/front-end/events/{issue_id:032x}/",
        issue_url=f"{sentry.url}/api/0/organizations/{ORG}/issues/{issue_id}/",
    )
    return body


def test_sentrys_deliveries_count_once_and_presses_outpace_a_sentry_that_hangs(
    start_relay: StartRelay,
    fake_telegram: FakeTelegram,
    fake_sentry: FakeSentry,
    tmp_path: Path,
    spool_path: str,
) -> None:
    relay = start_relay(
        **relay_variables(fake_sentry, tmp_path / "routes.toml", CHAT_ID),
        RELAY_TIME_SCALE=CHAT_SCALE,
        RELAY_SEND_TIMEOUT="5",  # the default: each call to Sentry waits this long at most
    )

    def posted(part: str) -> list[Posted]:
        return [p for p in fake_telegram.posted_to(CHAT_ID) if part in p.visible()]

    # One metric alert, delivered three times (Sentry's retries build new Request-IDs).
    statuses = [
        fake_sentry.send(relay.url, "metric_alert", metric_alert("critical")).body["status"]
        for _ in range(3)
    ]
    assert statuses == ["queued", "repeated", "repeated"]
    assert wait_until(lambda: posted("DOWN"), timeout=10), relay.logs()

    # A signed issue.created whose count is "²": sent, without its count.
    created: dict[str, Any] = json.loads((SAMPLES / "issue_created.json").read_text())
    created["data"]["issue"].update(
        count="²", web_url=f"{fake_sentry.url}/organizations/{ORG}/issues/1170820242/"
    )
    sent = fake_sentry.send(relay.url, "issue", created)
    assert sent.status == 202, sent.body
    assert wait_until(lambda: posted("blooopy is not defined"), timeout=10), relay.logs()

    # Three cards; Sentry's API then hangs past the relay's deadline for each call.
    for n, number in enumerate((21, 22, 23), 1):  # each its own card, not a digest of three
        fake_sentry.add_issue(number)
        alerted = fake_sentry.send(relay.url, "event_alert", event_alert(fake_sentry, number))
        assert alerted.status == 202, alerted.body
        assert wait_until(lambda n=n: len(posted("TypeError in checkout")) == n, timeout=15), (
            relay.logs()
        )
    cards = posted("TypeError in checkout")
    assert all(labels(card)[:2] == ["👀 On it", "✅ Resolve"] for card in cards)
    assert len(posted("DOWN")) == 1  # still one: the retries made nothing
    # Sentry's alerts go in the background: each card is kept a moment after Telegram shows it.
    assert wait_until(lambda: all(card_kept(spool_path, card) for card in cards), timeout=10), (
        relay.logs()
    )
    fake_sentry.write_delay = 8.0  # past RELAY_SEND_TIMEOUT
    started = time.monotonic()
    pressed = [fake_telegram.press(card, "✅ Resolve") for card in cards]
    answers = [answered(fake_telegram, press_id) for press_id in pressed]
    waited = [answer["at"] - started for answer in answers]
    assert max(waited) < 2.0, waited  # before: 5, 10 and 15 s
    # Each named by the short id Sentry's API gave when its alert came.
    asked = [answer["text"] for answer in answers]
    assert all(text.startswith("⏳ Asked Sentry about FRONT-END-2") for text in asked), asked
    assert wait_until(lambda: len(posted("did not change it")) == 3, timeout=20), relay.logs()
    assert all(fake_sentry.status(n) == "unresolved" for n in (21, 22, 23))
