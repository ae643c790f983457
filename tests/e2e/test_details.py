"""What broke, where and how often, under the real `gunicorn wsgi:app` (2 workers): an alert's
message holds what GlitchTip's API says of its issue, read from a fake GlitchTip that answers
with a real GlitchTip's answers (tests/glitchtip_samples/). The alert never waits for them
past their budget: a slow GlitchTip's details do not come at all, a GlitchTip that is down
costs nothing and is logged once, and a frame's variables never reach the chat."""

from __future__ import annotations

import copy
import dataclasses
import time
from pathlib import Path
from typing import Any

import requests

from tests.e2e.conftest import StartRelay
from tests.e2e.helpers import post, spool_settled, wait_until
from tests.e2e.relay_process import CHAT_ID
from tests.fake_glitchtip import SAMPLE_EVENT, TOKEN, FakeGlitchTip
from tests.fake_telegram import FakeTelegram, Posted
from tests.payloads import issue, issue_alert
from tests.prometheus import parse, value

SECRET_VALUE = "pa55w0rd-in-a-local-variable"
TITLE = "ZeroDivisionError: division by zero"
WHERE = "📍 shop/cart.py:4 in total"


def details_from(glitchtip: FakeGlitchTip, **overrides: str) -> dict[str, str]:
    return {"GLITCHTIP_API_TOKEN": TOKEN, "GLITCHTIP_URL": glitchtip.url, **overrides}


def alert_about(glitchtip: FakeGlitchTip, number: int, **issue_changes: Any) -> dict[str, Any]:
    """As GlitchTip sends it: the issue's short id in its Teams section."""
    link = glitchtip.add_issue(number, f"ALERT-TEST-{number}", title=TITLE, **issue_changes)
    payload = issue_alert(issue(number, title=TITLE, culprit="shop.cart in total", link=link))
    payload["sections"][0]["activitySubtitle"] = f"[View Issue ALERT-TEST-{number}]({link})"
    return payload


def posted(fake: FakeTelegram, count: int = 1) -> list[Posted]:
    """The messages in the chat as first posted (the fake's copies change with edits)."""
    assert wait_until(lambda: len(fake.posted_to(CHAT_ID)) >= count, timeout=15)
    return [dataclasses.replace(message) for message in fake.posted_to(CHAT_ID)]


def test_an_alert_says_where_it_broke_how_often_and_since_when(
    start_relay: StartRelay, fake_telegram: FakeTelegram, fake_glitchtip: FakeGlitchTip
) -> None:
    # The details' whole budget: on a busy machine GlitchTip's two answers can take a second.
    relay = start_relay(**details_from(fake_glitchtip, RELAY_DETAILS_BUDGET="2"))
    reply, _ = post(relay.webhook_url, alert_about(fake_glitchtip, 3, first_seen=time.time() - 90))
    assert reply.status_code == 200
    [new] = posted(fake_telegram)
    lines = new.visible().split("\n")
    assert lines[2:5] == [TITLE, WHERE, "return subtotal / discount"]
    assert lines[5].startswith("🆕 New issue, first seen 1 min")
    assert lines[5].endswith("ago · seen 3 times")
    assert "<code>return subtotal / discount</code>" in new.text
    # The latest event's stack, the app's innermost frame first, folded under the card.
    assert new.text.endswith(
        "<blockquote expandable>shop/cart.py:4 in total\nshop/views.py:6 in checkout\n"
        "run_event.py:10 in &lt;module&gt;</blockquote>"
    )

    post(relay.webhook_url, alert_about(fake_glitchtip, 4, count=1204))
    old = posted(fake_telegram, 2)[1]
    assert "🔁 Seen 1204 times · first seen 3 d ago" in old.visible()
    reads = [request.path for request in fake_glitchtip.reads()]
    assert sorted(reads) == [
        "/api/0/issues/3/",
        "/api/0/issues/3/events/latest/",
        "/api/0/issues/4/",
        "/api/0/issues/4/events/latest/",
    ]
    assert fake_telegram.edits == []  # all came in time: nothing to add later


def test_a_slow_glitchtip_does_not_delay_the_alert_which_goes_without_its_details(
    start_relay: StartRelay,
    fake_telegram: FakeTelegram,
    fake_glitchtip: FakeGlitchTip,
    spool_path: str,
) -> None:
    # Details reach a message one way: within their budget, or not at all. An edit to add
    # them later would take a turn of the chat's pace (a group's 20 a minute) per alert.
    relay = start_relay(**details_from(fake_glitchtip))
    fake_glitchtip.delay = 2.0
    reply, seconds = post(relay.webhook_url, alert_about(fake_glitchtip, 3))
    assert reply.status_code == 200
    assert seconds < 1.5  # the budget (0.3 s) and the send, not GlitchTip's 2 s and more
    [first] = posted(fake_telegram)
    assert WHERE not in first.visible()
    assert "📍" not in first.visible()
    assert wait_until(lambda: len(fake_glitchtip.reads()) == 2, timeout=10)  # they came
    assert wait_until(lambda: spool_settled(spool_path), timeout=10)  # nothing left to write
    assert fake_telegram.edits == []
    assert [button["text"] for button in first.buttons()] == [
        button["text"] for button in fake_telegram.message(CHAT_ID, first.message_id).buttons()
    ]


def test_glitchtip_down_costs_the_alerts_nothing_and_is_logged_once(
    start_relay: StartRelay, fake_telegram: FakeTelegram, fake_glitchtip: FakeGlitchTip
) -> None:
    relay = start_relay(**details_from(fake_glitchtip))
    payloads = [alert_about(fake_glitchtip, number) for number in range(1, 9)]
    fake_glitchtip.stop()  # connections refused
    for payload in payloads:
        reply, seconds = post(relay.webhook_url, payload)
        assert reply.status_code in (200, 202)  # sent, or its chat's turn comes in a second
        assert seconds < 1.0

    def shown() -> str:
        return "\n".join(message.visible() for message in fake_telegram.posted_to(CHAT_ID))

    # All in the chat, alone or in a digest, as they would be without GlitchTip's details.
    assert wait_until(lambda: all(f"ALERT-TEST-{n}" in shown() for n in range(1, 9)), 15)
    assert "📍" not in shown()
    assert wait_until(lambda: "issue details could not be read" in relay.logs(), timeout=10)
    assert relay.logs().count("issue details could not be read from GlitchTip") == 1
    assert "GLITCHTIP_URL" in relay.logs()
    samples = parse(requests.get(f"{relay.url}/metrics", timeout=5).text)
    assert value(samples, "relay_glitchtip_lookups_total", outcome="failed") == 1
    # Every later alert's look-up, in either worker, skipped: and the first's late one.
    assert value(samples, "relay_glitchtip_lookups_total", outcome="skipped") >= 7


def test_a_secret_in_a_frames_variables_never_reaches_the_chat(
    start_relay: StartRelay, fake_telegram: FakeTelegram, fake_glitchtip: FakeGlitchTip
) -> None:
    event = copy.deepcopy(SAMPLE_EVENT)
    frames = event["entries"][0]["data"]["values"][0]["stacktrace"]["frames"]
    for frame in frames:
        frame["vars"]["password"] = SECRET_VALUE
    event["user"]["email"] = f"{SECRET_VALUE}@example.com"
    event["entries"].append({"type": "request", "data": {"data": {"password": SECRET_VALUE}}})
    # The details must come (what is checked is what of them reaches the chat): the longest
    # budget, so that a loaded machine's slow look-up does not send the alert without them.
    relay = start_relay(**details_from(fake_glitchtip, RELAY_DETAILS_BUDGET="2"))
    post(relay.webhook_url, alert_about(fake_glitchtip, 3, event=event))
    [message] = posted(fake_telegram)
    assert WHERE in message.visible()  # the details came, and nothing else of the event
    assert fake_telegram.received  # every request Telegram got, edits included
    assert all(SECRET_VALUE not in str(request) for request in fake_telegram.received)


def test_a_route_on_level_fatal_takes_the_issue_glitchtip_says_is_fatal(
    start_relay: StartRelay,
    fake_telegram: FakeTelegram,
    fake_glitchtip: FakeGlitchTip,
    tmp_path: Path,
) -> None:
    on_call = "-1002000000009"
    routes = tmp_path / "routes.toml"
    routes.write_text(f"[[route]]\nname = 'fatal'\nlevel = 'fatal'\nchat = {on_call}\n")
    relay = start_relay(
        **details_from(fake_glitchtip, RELAY_ROUTES=str(routes), RELAY_DETAILS_BUDGET="2")
    )
    fatal, error = alert_about(fake_glitchtip, 5), alert_about(fake_glitchtip, 6)
    fake_glitchtip.issues["5"]["level"] = "fatal"  # the same colour in the webhook as error's
    for payload in (fatal, error):
        reply, _ = post(relay.webhook_url, payload)
        assert reply.status_code == 200, reply.text
    assert [m.visible().split("\n")[2] for m in fake_telegram.posted_to(on_call)] == [TITLE]
    assert "ALERT-TEST-5" in fake_telegram.posted_to(on_call)[0].visible()
    [elsewhere] = posted(fake_telegram)
    assert "ALERT-TEST-6" in elsewhere.visible()
    # Each issue was read once: routing and the message shared the look-up.
    reads = [request.path for request in fake_glitchtip.reads() if request.path.endswith("/5/")]
    assert reads == ["/api/0/issues/5/"]
