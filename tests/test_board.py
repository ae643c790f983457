"""The board (board/): one message kept in a route's place listing its open issues, posted and
pinned once, edited in place as issues open, are taken and close, at most one write every
EVERY seconds whatever the alerts, posted anew when deleted or unpinned. In process, on the
test's clock, against the scripted Telegram; its text, pure."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any
from zoneinfo import ZoneInfo

import pytest
import responses

from relay_app import Relay
from relay_app.board.keeping import EVERY, HELD_FOR
from relay_app.board.store import FORGET_AFTER, BoardStore, Listed
from relay_app.board.text import MOST, board_text
from relay_app.capabilities import REGISTRY
from relay_app.cards.card import callback_data
from relay_app.core.routing import Destination
from relay_app.message.subjects import Alerted, IssueRef
from relay_app.routes import parse_routes
from relay_app.spool.store import Store
from relay_app.takes.buttons import TAKE
from relay_app.words import ENGLISH, RUSSIAN
from relay_app.words.catalogue import Words
from tests.conftest import CHAT_ID, ROUTE_SOURCES, FakeTime
from tests.in_process import GLITCHTIP, Chat, alone, refused, webhook
from tests.prometheus import parse, value
from tests.test_presses import press

ROUTES = parse_routes(
    '[[route]]\nname = "ops"\nthread = 7\nboard = true\n', "routes.toml", ROUTE_SOURCES
)
HOME = Destination(CHAT_ID, 7)
CHAT = str(CHAT_ID)
NOW = 1_800_000_000.0  # 2027-01-15 08:00 UTC


def alert(number: int, title: str = "KeyError in checkout") -> dict[str, Any]:
    return {"text": "GlitchTip Alert", **alone(number, title)}


@pytest.fixture
def chat(built: Callable[..., Relay], fake_time: FakeTime) -> Chat:
    fake_time.now = NOW
    return Chat.of(built, fake_time, routes=ROUTES)


def calls(chat: Chat, *methods: str) -> list[tuple[str, dict[str, Any]]]:
    return [(name, params) for _, name, params in chat.telegram.other_calls if name in methods]


def upkeep(chat: Chat, after: float = EVERY + 1) -> None:
    chat.clock.now += after
    for each in chat.relay.running.upkeep:
        each()
    chat.settle()


def english() -> Words:
    return REGISTRY.words_in(ENGLISH)


def test_the_board_is_posted_pinned_silently_and_edited_in_place(
    chat: Chat, glitchtip: responses.RequestsMock
) -> None:
    webhook(chat.relay, alert(4), HOME)
    chat.settle()
    upkeep(chat)
    (posted, params), (pinned, pin) = calls(chat, "sendMessage", "pinChatMessage")
    assert posted == "sendMessage"
    assert params["message_thread_id"] == 7
    assert params["disable_notification"] is True
    assert params["text"] == (
        "📋 <b>Open issues: 1</b>\n"
        f'🔴 <a href="{GLITCHTIP}/acme/issues/4">BACKEND-4A</a> KeyError in checkout'
        " · nobody on it · since 08:00"
    )
    assert pinned == "pinChatMessage"
    assert pin == {"message_id": 2, "disable_notification": True}
    # Nothing changed: nothing written.
    upkeep(chat)
    assert calls(chat, "editMessageText") == []
    # Ada takes it: the board says so, in place.
    [key] = [b.key for b in chat.store.message(CHAT, 1).buttons]  # type: ignore[union-attr]
    chat.update(press(callback_data(TAKE, key), chat=CHAT, message_id=1))
    chat.settle()
    upkeep(chat)
    [(_, edit)] = calls(chat, "editMessageText")
    assert edit["message_id"] == 2
    assert "👤 @ada" in edit["text"]
    # Resolved: off the board; all clear since then.
    glitchtip.put(f"{GLITCHTIP}/api/0/organizations/acme/issues/4/", json={"status": "resolved"})
    chat.update(press(callback_data("resolve", key), chat=CHAT, message_id=1))
    chat.settle()
    upkeep(chat)
    assert calls(chat, "editMessageText")[-1][1]["text"].startswith("✅ <b>All clear</b> since")
    samples = parse(chat.relay.metrics.exposition().decode())
    assert value(samples, "relay_boards_total", outcome="edited") == 2


def test_a_storm_costs_a_few_edits_not_one_per_alert(chat: Chat) -> None:
    upkeep(chat)
    for number in range(1, 61):  # sixty issues over five minutes
        webhook(chat.relay, alert(number, f"Error {number}"), HOME)
        chat.settle()
        if number % 12 == 0:
            for _ in range(12):
                upkeep(chat, after=5)
    writes = calls(chat, "sendMessage", "editMessageText")
    # At most one write a EVERY seconds: 300 s of storm, at most 300 / 15 + 1.
    assert 1 < len(writes) <= 300 / EVERY + 1
    last = writes[-1][1]["text"]
    assert last.startswith("📋 <b>Open issues: 60</b>")
    assert last.endswith(f"… and {60 - MOST} more")


def test_a_deleted_board_is_posted_anew(chat: Chat) -> None:
    webhook(chat.relay, alert(4), HOME)
    chat.settle()
    upkeep(chat)
    chat.telegram.refusing["editMessageText"] = refused(
        "editMessageText", "Bad Request: message to edit not found"
    )
    webhook(chat.relay, alert(5), HOME)
    chat.settle()
    upkeep(chat)
    del chat.telegram.refusing["editMessageText"]
    chat.settle()
    posts = calls(chat, "sendMessage")
    assert len(posts) == 2
    assert "BACKEND-5A" in posts[-1][1]["text"]
    assert len(calls(chat, "pinChatMessage")) == 2


def test_without_the_right_to_pin_the_board_is_still_kept(chat: Chat) -> None:
    chat.telegram.refusing["pinChatMessage"] = refused(
        "pinChatMessage", "Bad Request: not enough rights to manage pinned messages in the chat"
    )
    webhook(chat.relay, alert(4), HOME)
    chat.settle()
    upkeep(chat)
    webhook(chat.relay, alert(5), HOME)
    chat.settle()
    upkeep(chat)
    assert len(calls(chat, "sendMessage")) == 1
    assert "BACKEND-5A" in calls(chat, "editMessageText")[-1][1]["text"]
    samples = parse(chat.relay.metrics.exposition().decode())
    assert value(samples, "relay_boards_total", outcome="not_pinned") == 1


def listed(n: int, level: str, taken: str | None = None) -> Listed:
    return Listed(str(n), f"APP-{n}", f"Error {n}", f"https://gt/i/{n}", level, NOW - n, taken)


def test_the_most_urgent_come_first_ten_at_most_the_rest_counted() -> None:
    issues = [listed(n, "warning") for n in range(1, 12)] + [
        listed(20, "error", "@ada"),
        listed(21, "error"),
        listed(22, "fatal"),
    ]
    text = board_text(
        issues, {"21": 5}, clear_since=None, now=NOW, zone=ZoneInfo("UTC"), words=english()
    )
    lines = text.splitlines()
    assert lines[0] == "📋 <b>Open issues: 14</b>"
    assert [line.split(">")[1].split("<")[0] for line in lines[1:4]] == [
        "APP-22",
        "APP-21",
        "APP-20",
    ]
    assert lines[2].endswith("· 5 in the last hour")
    assert len(lines) == 1 + MOST + 1
    assert lines[-1] == "… and 4 more"


def test_the_board_speaks_the_teams_language_in_the_chats_zone() -> None:
    russian = REGISTRY.words_in(RUSSIAN)
    zone = ZoneInfo("Europe/Moscow")
    text = board_text([listed(1, "error")], {}, clear_since=None, now=NOW, zone=zone, words=russian)
    assert text.splitlines()[0] == "📋 <b>Открытые задачи: 1</b>"
    assert text.endswith("· никто не взял · с 10:59")
    clear = board_text([], {}, clear_since=NOW - 86400, now=NOW, zone=zone, words=russian)
    assert clear == "✅ <b>Всё спокойно</b> с 14.01 11:00"


def test_an_unpinned_board_is_noticed_at_its_next_write_and_posted_and_pinned_anew(
    chat: Chat,
) -> None:
    webhook(chat.relay, alert(4), HOME)
    chat.settle()
    upkeep(chat)
    del chat.telegram.pinned[CHAT]  # someone unpinned it
    webhook(chat.relay, alert(5), HOME)
    chat.settle()
    upkeep(chat)
    posts = calls(chat, "sendMessage")
    assert len(posts) == 2
    assert calls(chat, "editMessageText") == []
    assert chat.telegram.pinned[CHAT] == 4  # the new one (message 3 is the second alert)
    samples = parse(chat.relay.metrics.exposition().decode())
    assert value(samples, "relay_boards_total", outcome="unpinned") == 1


def test_a_board_telegram_refuses_is_said_once_and_written_again_after_a_while(
    chat: Chat, caplog: pytest.LogCaptureFixture
) -> None:
    chat.telegram.refusing["sendMessage"] = refused(
        "sendMessage", "Bad Request: not enough rights to send text messages to the chat"
    )
    with caplog.at_level(logging.ERROR):
        for _ in range(10):  # 160 s of looks
            upkeep(chat)
    said = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(said) == 1
    assert said[0].startswith("BOARD NOT UPDATED in chat -1001234567890 topic 7")
    assert chat.telegram.writes.count("sendMessage") == 1
    del chat.telegram.refusing["sendMessage"]
    upkeep(chat, after=HELD_FOR)
    assert calls(chat, "sendMessage")[-1][1]["text"].startswith("✅ <b>All clear</b>")


def test_boards_are_kept_alike_for_every_relay_on_either_database(
    two_stores: tuple[Store, Store],
) -> None:
    mine, theirs = (BoardStore(store) for store in two_stores)
    place = Destination(CHAT_ID, 7)
    link = f"{GLITCHTIP}/acme/issues/4"
    issue = Alerted(IssueRef("4", GLITCHTIP, "BACKEND-4A", title="KeyError"), link, "error")
    two_stores[0].write(lambda tx: mine.note(tx, place, [issue]), now=NOW)
    two_stores[1].write(lambda tx: theirs.note(tx, place, [issue]), now=NOW + 60)  # again
    [listed] = theirs.open_issues(place, now=NOW + 61)
    assert (listed.label, listed.first_at) == ("BACKEND-4A", NOW)  # first alerted then
    assert mine.board(place, now=NOW).message_id is None
    theirs.shown(place, 41, "digest", clear=False, now=NOW + 62)
    mine.pinned(place, 41, now=NOW + 63)
    board = theirs.board(place, now=NOW + 64)
    assert (board.message_id, board.shown, board.pinned, board.clear_since) == (
        41,
        "digest",
        True,
        None,
    )
    mine.shown(place, 42, "other", clear=True, now=NOW + 65)  # a new post: not pinned yet
    board = theirs.board(place, now=NOW + 66)
    assert (board.message_id, board.pinned, board.clear_since) == (42, False, NOW + 65)
    theirs.hold(place, 900, now=NOW + 67)
    assert mine.board(place, now=NOW + 68).held_until == NOW + 967
    mine.lost(place, now=NOW + 69)
    assert theirs.board(place, now=NOW + 70).message_id is None
    # Without a card to say it closed, an issue leaves a day after it last alerted.
    assert mine.open_issues(place, now=NOW + 60 + FORGET_AFTER + 1) == []
