"""Incident rooms and the board under the real `gunicorn wsgi:app`, against the fake Telegram
(a forum with topics and pins, and its refusals) and the fake GlitchTip: an issue's topic made
with its first card, a line in the route's topic pointing to it, a message there a comment;
closed and renamed when the issue is resolved in the chat or in GlitchTip, reopened when it
alerts again; the board pinned once and edited in place. Without the right to manage topics,
or with a topic deleted by hand, every alert still reaches the route's topic."""

from __future__ import annotations

import copy
from pathlib import Path

from tests.e2e.conftest import StartRelay
from tests.e2e.helpers import alert_for, answered, labels, post, wait_until
from tests.e2e.relay_process import CHAT_ID
from tests.fake_glitchtip import TOKEN, FakeGlitchTip
from tests.fake_telegram import FakeTelegram, Posted, Topic

CHAT = str(CHAT_ID)
HOME = 77  # the route's own topic
ROUTES = '[[route]]\nname = "ops"\nthread = 77\ntopics = "per_issue"\nboard = true\n'
# A board's writes at most every 15 s, the rooms' and boards' looks every 5 s: a tenth of that.
ROOM_SCALE = "0.1"
ALL_RIGHTS = {"can_manage_topics": True, "can_pin_messages": True}


def in_thread(fake: FakeTelegram, thread: int) -> list[Posted]:
    return [p for p in fake.posted_to(CHAT_ID) if p.thread == thread]


def the_topic(fake: FakeTelegram) -> Topic:
    assert wait_until(lambda: len(fake.topics_of(CHAT_ID)) == 1, timeout=15)
    [topic] = fake.topics_of(CHAT_ID)
    return topic


def board_of(fake: FakeTelegram) -> Posted:
    def boards() -> list[Posted]:
        return [p for p in in_thread(fake, HOME) if p.text.startswith(("📋", "✅"))]

    assert wait_until(boards, timeout=20)
    return boards()[-1]


def test_an_issue_gets_a_room_that_closes_and_opens_with_it_and_the_board_follows(
    start_relay: StartRelay,
    fake_telegram: FakeTelegram,
    fake_glitchtip: FakeGlitchTip,
    tmp_path: Path,
) -> None:
    fake_telegram.add_chat(CHAT_ID, rights=ALL_RIGHTS)
    routes = tmp_path / "routes.toml"
    routes.write_text(ROUTES)
    relay = start_relay(
        GLITCHTIP_API_TOKEN=TOKEN,
        GLITCHTIP_URL=fake_glitchtip.url,
        RELAY_ROUTES=str(routes),
        RELAY_TIME_SCALE=ROOM_SCALE,
        RELAY_WATCH_INTERVAL="1",
    )
    reply, _ = post(relay.webhook_url, alert_for(fake_glitchtip, 1))
    assert reply.status_code in (200, 202), reply.text
    topic = the_topic(fake_telegram)
    assert topic.name == "🔴 BACKEND-1A · ZeroDivisionError: division by zero #1"
    assert topic.icon_color == 0xFB6F5F
    assert wait_until(lambda: in_thread(fake_telegram, topic.thread), timeout=15), relay.logs()
    [card] = in_thread(fake_telegram, topic.thread)
    assert "👀 On it" in labels(card)
    link = f"https://t.me/c/1234567890/{topic.thread}"
    assert wait_until(
        lambda: any(link in p.text for p in in_thread(fake_telegram, HOME)), timeout=15
    ), relay.logs()

    # The board: posted in the route's topic, pinned silently, the issue on it.
    board = board_of(fake_telegram)
    assert wait_until(
        lambda: fake_telegram.message(CHAT, board.message_id).text.startswith(
            "📋 <b>Open issues: 1</b>"
        ),
        timeout=30,
    ), relay.logs()
    assert wait_until(lambda: fake_telegram.pinned.get(CHAT) == [board.message_id], timeout=15)
    pin = next(w for w in fake_telegram.forum_writes if w["method"] == "pinChatMessage")
    assert pin["disable_notification"] is True

    # Written in the topic (no reply): a comment on the issue.
    fake_telegram.say(CHAT_ID, "rolling back the deploy", thread=topic.thread)
    assert wait_until(lambda: fake_glitchtip.comments(1), timeout=15), relay.logs()
    assert fake_glitchtip.comments(1)[0].endswith("rolling back the deploy")

    # On it: the board says who has it, edited in place.
    press = fake_telegram.press(card, "👀 On it")
    assert answered(fake_telegram, press)
    assert wait_until(lambda: "👤 @ada" in fake_telegram.message(CHAT, board.message_id).text, 30)

    # Resolved in the chat: the topic renamed and closed, the board all clear.
    card = fake_telegram.message(CHAT, card.message_id)
    fake_telegram.press(card, "✅ Resolve")
    assert wait_until(lambda: topic.closed, timeout=20), relay.logs()
    assert topic.name == "✅ 🔴 BACKEND-1A · ZeroDivisionError: division by zero #1"
    assert wait_until(
        lambda: "All clear" in fake_telegram.message(CHAT, board.message_id).text, timeout=30
    ), relay.logs()

    # It alerts again: the topic opens again, named as before, and the alert goes there.
    post(relay.webhook_url, alert_for(fake_glitchtip, 1))
    assert wait_until(lambda: not topic.closed, timeout=15), relay.logs()
    assert wait_until(lambda: len(in_thread(fake_telegram, topic.thread)) == 2, timeout=15)
    assert wait_until(lambda: not topic.name.startswith("✅"), timeout=15)
    assert len(fake_telegram.topics_of(CHAT_ID)) == 1

    # Resolved in GlitchTip's UI: the watcher tells, and the topic closes.
    with fake_glitchtip._lock:
        fake_glitchtip.issues["1"]["status"] = "resolved"
    assert wait_until(lambda: topic.closed, timeout=30), relay.logs()

    # Unpinned by hand: at its next write the board is posted and pinned anew.
    fake_telegram.unpin(CHAT_ID, board.message_id)
    post(relay.webhook_url, alert_for(fake_glitchtip, 2))
    assert wait_until(lambda: board_of(fake_telegram).message_id != board.message_id, timeout=30), (
        relay.logs()
    )
    new = board_of(fake_telegram)
    assert wait_until(lambda: fake_telegram.pinned.get(CHAT) == [new.message_id], timeout=15)
    assert "BACKEND-2A" in new.text


def test_without_rights_or_with_a_topic_deleted_every_alert_reaches_the_route_topic(
    start_relay: StartRelay,
    fake_telegram: FakeTelegram,
    fake_glitchtip: FakeGlitchTip,
    tmp_path: Path,
) -> None:
    # The default chat: the bot may not manage topics. Another: it may, and a topic is deleted.
    other = -1009999999999
    fake_telegram.add_chat(CHAT_ID, rights={"can_manage_topics": False})
    fake_telegram.add_chat(other, rights={"can_manage_topics": True})
    routes = tmp_path / "routes.toml"
    routes.write_text(
        '[[route]]\nissue = ["BACKEND-1A", "BACKEND-2A"]\nthread = 77\ntopics = "per_issue"\n'
        f'[[route]]\nissue = "BACKEND-3A"\nchat = {other}\nthread = 77\ntopics = "per_issue"\n'
    )
    relay = start_relay(
        GLITCHTIP_API_TOKEN=TOKEN,
        GLITCHTIP_URL=fake_glitchtip.url,
        RELAY_ROUTES=str(routes),
        RELAY_TIME_SCALE=ROOM_SCALE,
        TELEGRAM_ALLOWED_CHAT_IDS=str(other),
    )
    post(relay.webhook_url, alert_for(fake_glitchtip, 1))
    assert wait_until(lambda: in_thread(fake_telegram, HOME), timeout=15), relay.logs()
    post(relay.webhook_url, alert_for(fake_glitchtip, 2))
    assert wait_until(lambda: len(in_thread(fake_telegram, HOME)) == 2, timeout=15)
    assert relay.logs().count("TOPICS REFUSED") == 1
    assert "can_manage_topics" in relay.logs()
    fake_telegram.say(CHAT_ID, "/status")
    assert wait_until(
        lambda: any("Topics per issue: off here" in p.text for p in fake_telegram.posted_to(CHAT)),
        timeout=15,
    ), relay.logs()

    # A topic deleted by hand: its issue's alerts go to the route's topic again.
    alert = alert_for(fake_glitchtip, 3)
    post(relay.webhook_url, copy.deepcopy(alert))
    assert wait_until(lambda: fake_telegram.topics_of(other), timeout=15), relay.logs()
    [topic] = fake_telegram.topics_of(other)
    assert wait_until(
        lambda: any(p.thread == topic.thread for p in fake_telegram.posted_to(other)), timeout=15
    )
    fake_telegram.delete_topic(other, topic.thread)
    post(relay.webhook_url, copy.deepcopy(alert))
    assert wait_until(
        lambda: any(p.thread == HOME for p in fake_telegram.posted_to(other) if p.buttons()),
        timeout=15,
    ), relay.logs()
    assert "TOPIC DELETED" in relay.logs()
