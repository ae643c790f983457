"""The issues an alert counts and GlitchTip does not attach, named, under the real `gunicorn
wsgi:app` against the fake GlitchTip and the fake Telegram: five new issues, three attached,
the other two found through the API and sent as the attached ones are, with buttons. (The same
against a real GlitchTip: docs/actions.md, "The issues an alert does not attach".)"""

from __future__ import annotations

import time

from tests.e2e.conftest import StartRelay
from tests.e2e.helpers import alert_for, labels, post, wait_until
from tests.e2e.relay_process import CHAT_ID
from tests.fake_glitchtip import TOKEN, FakeGlitchTip, iso_time
from tests.fake_telegram import FakeTelegram


def test_five_new_issues_in_one_alert_of_three_reach_the_chat_all_five_with_buttons(
    start_relay: StartRelay, fake_telegram: FakeTelegram, fake_glitchtip: FakeGlitchTip
) -> None:
    relay = start_relay(GLITCHTIP_API_TOKEN=TOKEN, GLITCHTIP_URL=fake_glitchtip.url)
    payload = alert_for(fake_glitchtip, 1, 2, 3)
    payload["text"] = "GlitchTip Alert (5 issues)"  # as GlitchTip counts them
    for number in (4, 5):
        fake_glitchtip.add_issue(number, f"BACKEND-{number}A", title=f"Hidden error {number}")
    now = time.time()
    for number, ago in ((1, 5), (2, 4), (3, 3), (4, 2), (5, 1)):
        fake_glitchtip.issues[str(number)]["lastSeen"] = iso_time(now - ago)
    # An older issue of the project, seen two days ago: outside any rule's window.
    fake_glitchtip.add_issue(6, "BACKEND-6A", title="Old error")
    fake_glitchtip.issues["6"]["lastSeen"] = iso_time(now - 2 * 86400)

    reply, _ = post(relay.webhook_url, payload)
    assert reply.status_code == 200, reply.text
    assert wait_until(lambda: len(fake_telegram.posted_to(CHAT_ID)) == 2, timeout=15), (
        fake_telegram.texts()
    )
    first, named = fake_telegram.posted_to(CHAT_ID)
    assert first.visible().endswith(
        "…and 2 more issues GlitchTip did not attach: named from GlitchTip in a message of "
        "their own"
    )
    text = named.visible()
    assert text.startswith(
        "🔎 Named from GlitchTip: an alert counted 5 issues and attached 3; these are the others"
    )
    assert text.index("Hidden error 5") < text.index("Hidden error 4")  # the latest seen first
    assert "Old error" not in text
    assert "BACKEND-1A" not in text
    assert "✅ Resolve BACKEND-4A" in labels(named)
    assert "✅ Resolve BACKEND-5A" in labels(named)
    relay.stop()
    assert "named 2 of the 2 issue(s) an alert counted and did not attach" in relay.logs()
