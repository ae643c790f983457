"""An issue is one thing in the chat, under the real `gunicorn wsgi:app` with the fake Telegram
and the fake GlitchTip: a reply under a digest takes its issue on every message that shows it
(the digest and a pasted link's card), the digest's calls name only the issue nobody has, and
an answer to a command arrives without sound; every time in the chat is in its route's zone."""

from __future__ import annotations

from pathlib import Path

from tests.e2e.conftest import StartRelay
from tests.e2e.helpers import (
    CHAT_SCALE,
    alert_for,
    labels,
    once_edited,
    post,
    spool_settled,
    wait_until,
)
from tests.e2e.relay_process import CHAT_ID
from tests.fake_glitchtip import TOKEN, FakeGlitchTip
from tests.fake_telegram import FakeTelegram, Posted


def test_a_reply_takes_its_issue_everywhere_and_the_calls_name_the_one_left(
    start_relay: StartRelay,
    fake_telegram: FakeTelegram,
    fake_glitchtip: FakeGlitchTip,
    tmp_path: Path,
    spool_path: str,
) -> None:
    routes = tmp_path / "routes.toml"
    # The chat reads its times in Moscow's zone (one clock in the chat).
    routes.write_text(
        "[[route]]\ntimezone = 'Europe/Moscow'\n"
        "escalate = [{ after = '4s', mention = ['@lead'] }]\n"
    )
    relay = start_relay(
        GLITCHTIP_API_TOKEN=TOKEN,
        GLITCHTIP_URL=fake_glitchtip.url,
        RELAY_ROUTES=str(routes),
        RELAY_TIME_SCALE=CHAT_SCALE,
    )
    reply, _ = post(relay.webhook_url, alert_for(fake_glitchtip, 1, 2))
    assert reply.status_code == 200, reply.text
    assert wait_until(lambda: len(fake_telegram.posted_to(CHAT_ID)) == 1, timeout=10)
    [digest] = fake_telegram.posted_to(CHAT_ID)
    assert "👀 On it BACKEND-1A" in labels(digest)
    # The same issue's card, for a link pasted in the chat.
    said = fake_telegram.say(CHAT_ID, f"is this ours? {fake_glitchtip.url}/acme/issues/1")
    assert wait_until(lambda: fake_telegram.replies_to(CHAT_ID, said), timeout=10), relay.logs()
    [card] = fake_telegram.replies_to(CHAT_ID, said)
    assert wait_until(lambda: spool_settled(spool_path), timeout=10)

    # A reply under the digest, naming the issue: a comment, and the issue is Ada's.
    fake_telegram.reply(digest, "BACKEND-1A rolling back, 10 min")
    assert wait_until(lambda: fake_glitchtip.comments(1), timeout=10), relay.logs()
    taken_digest = once_edited(
        fake_telegram, digest, r"👀 @ada is on BACKEND-1A since \d\d:\d\d MSK"
    )
    taken_card = once_edited(fake_telegram, card, r"👀 @ada is on it since \d\d:\d\d MSK$")
    assert "👀 On it BACKEND-1A" not in labels(taken_digest)
    assert "👀 On it BACKEND-2A" in labels(taken_digest)
    assert "👀 On it" not in labels(taken_card)

    # The digest's step: BACKEND-2A is still nobody's, and only it is named.
    def calls() -> list[Posted]:
        return [
            p
            for p in fake_telegram.posted_to(CHAT_ID)
            if p.reply_to == digest.message_id and p.visible().startswith("⏰")
        ]

    assert wait_until(lambda: calls(), timeout=15), relay.logs()
    [call] = calls()
    assert call.visible() == "⏰ Nobody has taken BACKEND-2A in 1 min: @lead"

    # An answer to a command: no sound.
    fake_telegram.say(CHAT_ID, "/issues", user_id=4343, username="bo")
    assert wait_until(
        lambda: any(m.body.get("text", "").startswith("📋") for m in fake_telegram.sends()),
        timeout=10,
    ), relay.logs()
    [answer] = [m for m in fake_telegram.sends() if m.body.get("text", "").startswith("📋")]
    assert answer.body.get("disable_notification") is True
