"""Incident rooms (rooms/): in a forum, each issue of a per-issue route a topic of its own, made
by the alert's own turn of the chat, closed and reopened with the issue, and a message there a
comment on it; Telegram's refusals never cost an alert. In process, on the test's clock, against
the scripted Telegram."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest
import responses

from relay_app import Relay, create_app, relay_of
from relay_app.capabilities import REGISTRY
from relay_app.cards.card import callback_data
from relay_app.core.errors import SpoolError, ThreadNotFound
from relay_app.core.routing import Destination
from relay_app.operating.config import Settings
from relay_app.rooms.store import KEPT_CLOSED, MAKING_FOR, Room, RoomStore
from relay_app.rooms.topics import name_of
from relay_app.routes import parse_routes
from relay_app.sentry.settings import SentryConfig
from relay_app.spool.store import Store
from relay_app.words import ENGLISH
from tests.conftest import (
    API_URL,
    CHAT_ID,
    OK,
    ROUTE_SOURCES,
    TOKEN,
    FakeTime,
    run_background,
    sent_bodies,
    sentry_on,
)
from tests.in_process import GLITCHTIP, Chat, alone, refused, webhook
from tests.payloads import issue, issue_alert
from tests.prometheus import parse, value
from tests.test_presses import press
from tests.test_sentry import CLIENT_SECRET as SENTRY_SECRET
from tests.test_sentry import SENTRY, with_urls
from tests.test_sentry import sample_bytes as sentry_sample
from tests.test_sentry import signed_post as sentry_post

ROUTES = parse_routes(
    '[[route]]\nname = "ops"\nthread = 7\ntopics = "per_issue"\n', "routes.toml", ROUTE_SOURCES
)
HOME = Destination(CHAT_ID, 7)
CHAT = str(CHAT_ID)
NOW = 1_800_000_000.0


def alert(number: int = 4, title: str = "KeyError: 'cart' in checkout") -> dict[str, Any]:
    return {"text": "GlitchTip Alert", **alone(number, title)}


@pytest.fixture
def chat(built: Callable[..., Relay], fake_time: FakeTime) -> Chat:
    fake_time.now = 1_800_000_000.0
    return Chat.of(built, fake_time, routes=ROUTES)


def calls(chat: Chat, method: str) -> list[dict[str, Any]]:
    return [params for _, name, params in chat.telegram.other_calls if name == method]


def upkeep(chat: Chat) -> None:
    """The leader's upkeep, as the dispatcher runs it, then what it queued sent."""
    chat.clock.now += 10
    for each in chat.relay.running.upkeep:
        each()
    chat.settle()


def rooms(chat: Chat) -> RoomStore:
    assert chat.relay.spool is not None
    return chat.relay.spool.of(RoomStore)


def test_an_issue_gets_a_topic_of_its_own_its_alerts_go_there_and_the_route_topic_points_to_it(
    chat: Chat,
) -> None:
    webhook(chat.relay, alert(), HOME)  # its turn makes the topic first
    chat.settle()
    [made] = calls(chat, "createForumTopic")
    assert made["name"] == "🔴 BACKEND-4A · KeyError: 'cart' in checkout"
    assert made["icon_color"] == 0xFB6F5F
    # The alert went into the topic, with its buttons; its card is kept there.
    assert chat.telegram.accepted_to == [Destination(CHAT_ID, 1000)]
    kept = chat.store.message(CHAT, 1)
    assert kept is not None
    assert kept.thread == 1000
    # One short line in the route's own topic points to the room.
    [pointer] = calls(chat, "sendMessage")
    assert pointer["message_thread_id"] == 7
    assert pointer["text"] == (
        "🧵 BACKEND-4A · KeyError: 'cart' in checkout\nhttps://t.me/c/1234567890/1000"
    )
    # The issue's next alert goes to its topic; no second topic is made.
    webhook(chat.relay, alert(), HOME)
    chat.settle()
    assert len(calls(chat, "createForumTopic")) == 1
    assert chat.telegram.accepted_to[-1] == Destination(CHAT_ID, 1000)
    samples = parse(chat.relay.metrics.exposition().decode())
    assert value(samples, "relay_rooms_total", outcome="made") == 1
    assert value(samples, "relay_rooms_total", outcome="pointed") == 1


def test_a_digest_goes_to_the_route_topic_and_makes_no_topic(chat: Chat) -> None:
    two = issue_alert(
        issue(4, link=f"{GLITCHTIP}/acme/issues/4"), issue(5, link=f"{GLITCHTIP}/acme/issues/5")
    )
    webhook(chat.relay, two, HOME)
    chat.settle()
    assert calls(chat, "createForumTopic") == []
    assert chat.telegram.accepted_to == [HOME]


def test_the_topic_closes_when_the_issue_is_resolved_and_reopens_when_it_alerts_again(
    chat: Chat, glitchtip: responses.RequestsMock
) -> None:
    webhook(chat.relay, alert(), HOME)
    chat.settle()
    [key] = [b.key for b in chat.store.message(CHAT, 1).buttons]  # type: ignore[union-attr]
    glitchtip.put(
        f"{GLITCHTIP}/api/0/organizations/acme/issues/4/", json={"id": "4", "status": "resolved"}
    )
    chat.update(press(callback_data("resolve", key), chat=CHAT, message_id=1))
    chat.settle()
    upkeep(chat)
    renamed, closed = chat.telegram.other_calls[-2:]
    assert renamed[1:] == (
        "editForumTopic",
        {"message_thread_id": 1000, "name": "✅ 🔴 BACKEND-4A · KeyError: 'cart' in checkout"},
    )
    assert closed[1:] == ("closeForumTopic", {"message_thread_id": 1000})
    upkeep(chat)  # in step: nothing more
    assert len(chat.telegram.other_calls) == 4
    # It alerts again: its turn reopens the topic, the alert goes there, the name comes back.
    webhook(chat.relay, alert(), HOME)
    chat.settle()
    methods = [name for _, name, _ in chat.telegram.other_calls[4:]]
    assert methods == ["reopenForumTopic", "editForumTopic"]
    assert (
        chat.telegram.other_calls[-1][2]["name"] == "🔴 BACKEND-4A · KeyError: 'cart' in checkout"
    )
    assert chat.telegram.accepted_to[-1] == Destination(CHAT_ID, 1000)
    assert len(calls(chat, "createForumTopic")) == 1


def test_without_the_right_to_manage_topics_alerts_go_to_the_route_topic_and_it_is_said_once(
    chat: Chat, caplog: pytest.LogCaptureFixture
) -> None:
    chat.telegram.refusing["createForumTopic"] = refused(
        "createForumTopic", "Bad Request: not enough rights to create a topic"
    )
    with caplog.at_level(logging.ERROR):
        for number in (4, 5):
            webhook(chat.relay, alert(number), HOME)
            chat.settle()
    # Both delivered to the route's own topic; the topic asked for once, not again for 10 min.
    assert chat.telegram.accepted_to == [HOME, HOME]
    assert chat.telegram.writes.count("createForumTopic") == 1
    [said] = [r for r in caplog.records if "TOPICS REFUSED" in r.getMessage()]
    assert "can_manage_topics" in said.getMessage()
    assert rooms(chat).refusal(CHAT, since=0, now=chat.clock.now) == "rights"
    # Granted since: ten minutes on, the next alert gets its topic.
    del chat.telegram.refusing["createForumTopic"]
    chat.clock.now += 601
    webhook(chat.relay, alert(6), HOME)
    chat.settle()
    assert chat.telegram.accepted_to[-1] == Destination(CHAT_ID, 1000)
    assert rooms(chat).refusal(CHAT, since=0, now=chat.clock.now) is None


def test_a_topic_deleted_by_hand_sends_its_issue_back_to_the_route_topic(
    chat: Chat, caplog: pytest.LogCaptureFixture
) -> None:
    webhook(chat.relay, alert(), HOME)
    chat.settle()
    chat.telegram.errors.append(
        refused("the message", "Bad Request: message thread not found", ThreadNotFound)
    )
    with caplog.at_level(logging.ERROR):
        webhook(chat.relay, alert(), HOME)
        chat.settle()
    assert chat.telegram.accepted_to[-1] == HOME
    assert any("TOPIC DELETED" in r.getMessage() for r in caplog.records)
    webhook(chat.relay, alert(), HOME)
    chat.settle()
    assert chat.telegram.accepted_to[-1] == HOME
    assert len(calls(chat, "createForumTopic")) == 1


def test_a_message_written_in_the_topic_is_a_comment_on_its_issue(
    chat: Chat, glitchtip: responses.RequestsMock
) -> None:
    webhook(chat.relay, alert(), HOME)
    chat.settle()
    glitchtip.get(f"{GLITCHTIP}/api/0/organizations/acme/issues/?id=4", json=[{"id": "4"}])
    comments = glitchtip.post(f"{GLITCHTIP}/api/0/issues/4/comments/", status=201, json={"id": 1})
    message = {
        "message_id": 90,
        "from": {"id": 7, "is_bot": False, "first_name": "Ada", "username": "ada"},
        "chat": {"id": CHAT_ID, "type": "supergroup", "is_forum": True},
        "date": 1_800_000_000,
        "text": "rolling back the cart service",
        "message_thread_id": 1000,
        "is_topic_message": True,
    }
    chat.update({"update_id": 5, "message": message})
    chat.settle()
    assert comments.call_count == 1
    assert b"rolling back the cart service" in comments.calls[0].request.body


def test_one_topic_per_issue_and_chat_whatever_the_race(chat: Chat) -> None:
    store = rooms(chat)
    room = Room(CHAT, "4", None, "making", "BACKEND-4A", "t", "error", 7, None)
    now = chat.clock.now
    assert store.start_making(room, "alert 1", now=now)
    assert not store.start_making(room, "alert 2", now=now)
    assert store.start_making(room, "alert 1", now=now + 1)  # its own attempt, again
    # The relay that was making it stopped: after MAKING_FOR another may.
    assert store.start_making(room, "alert 2", now=now + MAKING_FOR + 2)
    store.made(CHAT, "4", 1000, now=now + MAKING_FOR + 3)
    assert not store.start_making(room, "alert 3", now=now + 10 * MAKING_FOR)


def test_a_sentry_issue_gets_its_room_and_closes_it_when_sentry_says_it_is_resolved(
    settings: Settings, telegram: responses.RequestsMock, fake_time: FakeTime
) -> None:
    sentry = SentryConfig(SENTRY_SECRET, "b" * 64, SENTRY)
    app = create_app(replace(settings, theirs=sentry_on(sentry), routes=ROUTES), clock=fake_time)
    relay = relay_of(app)
    assert relay is not None
    api = f"{API_URL}/bot{TOKEN}"
    telegram.post(
        f"{api}/createForumTopic", json={"ok": True, "result": {"message_thread_id": 900}}
    )
    telegram.post(f"{api}/sendMessage", json=OK)
    for method in ("editForumTopic", "closeForumTopic", "editMessageText"):
        telegram.post(f"{api}/{method}", json={"ok": True, "result": True})
    alert = sentry_sample("issue_alert.json").replace(b"https://sentry.io", SENTRY.encode())
    client = app.test_client()
    assert sentry_post(client, alert, "event_alert", request_id="a" * 32).status_code == 202
    run_background(relay.dispatcher, fake_time)
    made = [c for c in telegram.calls if str(c.request.url).endswith("/createForumTopic")]
    assert len(made) == 1
    alerts = [body for body in sent_bodies(telegram) if "reply_markup" in body]
    assert [body["message_thread_id"] for body in alerts] == [900]
    # Resolved in Sentry's UI: its issue webhook says so, and the topic closes.
    resolved = sentry_sample("issue_created.json").replace(b"1170820242", b"1117540176")
    body = with_urls(json.loads(resolved) | {"action": "resolved"}, org="test-org")
    fake_time.now += 1
    said = sentry_post(client, json.dumps(body).encode(), "issue", request_id="b" * 32)
    assert said.status_code == 200
    run_background(relay.dispatcher, fake_time)
    fake_time.now += 10
    for chore in relay.running.upkeep:
        chore()
    run_background(relay.dispatcher, fake_time)
    closed = [c for c in telegram.calls if str(c.request.url).endswith("/closeForumTopic")]
    assert len(closed) == 1
    assert json.loads(closed[0].request.body)["message_thread_id"] == 900  # type: ignore[arg-type]
    relay.dispatcher.shutdown()


def test_a_topic_already_as_asked_is_done_and_one_gone_is_forgotten(
    chat: Chat, glitchtip: responses.RequestsMock, caplog: pytest.LogCaptureFixture
) -> None:
    webhook(chat.relay, alert(), HOME)
    chat.settle()
    # Someone closed it by hand already: Telegram's TOPIC_NOT_MODIFIED is the close done.
    chat.telegram.refusing["closeForumTopic"] = refused(
        "closeForumTopic", "Bad Request: TOPIC_NOT_MODIFIED"
    )
    [key] = [b.key for b in chat.store.message(CHAT, 1).buttons]  # type: ignore[union-attr]
    glitchtip.put(
        f"{GLITCHTIP}/api/0/organizations/acme/issues/4/", json={"id": "4", "status": "resolved"}
    )
    chat.update(press(callback_data("resolve", key), chat=CHAT, message_id=1))
    chat.settle()
    with caplog.at_level(logging.ERROR):
        upkeep(chat)
    assert not [r for r in caplog.records if "CHAT NOT UPDATED" in r.getMessage()]
    assert chat.relay.spool is not None
    assert chat.relay.spool.queue.pending() == 0
    # Deleted by hand before it is renamed back: forgotten, and the issue's alerts go home.
    chat.telegram.refusing["reopenForumTopic"] = refused(
        "reopenForumTopic", "Bad Request: message thread not found", ThreadNotFound
    )
    webhook(chat.relay, alert(), HOME)
    chat.settle()
    assert chat.telegram.accepted_to[-1] == HOME
    assert rooms(chat).room(CHAT, "4", now=chat.clock.now).state == "gone"  # type: ignore[union-attr]


def test_a_topics_name_fits_telegrams_128_characters_as_telegram_counts_them() -> None:
    room = Room(CHAT, "4", None, "open", "BACKEND-4A", "🔥" * 200, "fatal", 7, None)
    name = name_of(room, ENGLISH)
    assert len(name.encode("utf-16-le")) // 2 <= 128
    assert name.startswith("💀 BACKEND-4A · 🔥")
    assert name.endswith("…")
    closed = replace(room, state="closed", why="ignored")
    assert name_of(closed, REGISTRY.words_in(ENGLISH)).startswith("🔕 💀 BACKEND-4A")


def test_rooms_are_kept_alike_for_every_relay_on_either_database(
    two_stores: tuple[Store, Store],
) -> None:
    """Two relays' connections to one spool: one makes a topic, the other never makes a second
    one; the state each reads is the other's; a closed room whose cards were forgotten is not
    taken for open."""
    mine, theirs = (RoomStore(store) for store in two_stores)
    room = Room(CHAT, "4", None, "making", "BACKEND-4A", "t", "error", 7, None)
    assert mine.start_making(room, "alert 1", now=NOW)
    assert not theirs.start_making(room, "alert 2", now=NOW + 1)
    mine.made(CHAT, "4", 1000, now=NOW + 2)
    found = theirs.in_thread(CHAT, 1000, now=NOW + 3)
    assert found is not None
    assert (found.state, found.thread, found.home) == ("open", 1000, 7)
    two_stores[1].write(lambda tx: theirs.carded(tx, CHAT, 1000, 41), now=NOW + 4)
    assert mine.room(CHAT, "4", now=NOW + 5).card == 41  # type: ignore[union-attr]
    theirs.closed(CHAT, "4", "resolved", now=NOW + 6)
    [(kept, status)] = mine.kept(now=NOW + 7)
    assert (kept.state, kept.why, status) == ("closed", "resolved", None)  # no card kept
    assert theirs.refused(CHAT, "rights", now=NOW + 8)
    assert not mine.refused(CHAT, "rights", now=NOW + 9)  # said once, across the fleet
    assert mine.refusal(CHAT, since=NOW, now=NOW + 10) == "rights"
    theirs.allowed(CHAT, now=NOW + 11)
    assert mine.refusal(CHAT, since=NOW, now=NOW + 12) is None
    assert theirs.gone(CHAT, 1000, now=NOW + 13) is not None
    assert mine.gone(CHAT, 1000, now=NOW + 14) is None  # gone once
    assert mine.forget_old(now=NOW + 15 + KEPT_CLOSED) == 1
    assert theirs.room(CHAT, "4", now=NOW + 16 + KEPT_CLOSED) is None


def test_a_spool_that_cannot_say_where_costs_the_alert_nothing(
    chat: Chat, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def stalled(*args: object, **kwargs: object) -> None:
        raise SpoolError("the spool was busy for too long")

    monkeypatch.setattr(RoomStore, "room", stalled)
    monkeypatch.setattr(RoomStore, "kept", stalled)
    with caplog.at_level(logging.WARNING):
        webhook(chat.relay, alert(), HOME)
        chat.settle()
        upkeep(chat)  # the rooms' look waits for the next
    assert chat.telegram.accepted_to == [HOME]
    [said] = [r for r in caplog.records if "could not be decided" in r.getMessage()]
    assert said.levelno == logging.WARNING
    assert said.exc_info is None
