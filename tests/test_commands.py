"""The chat's commands (chat/commands.py): /issues, /oncall, /silences and /status answered
with a reply under the command, in the chats the relay serves only, once per update; a command
for another bot left to it. The relay as a whole against the scripted Telegram, on the test's
clock."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from relay_app import Relay, assemble
from relay_app.capabilities import REGISTRY
from relay_app.cards.card import IssueButton, SentMessage, callback_data
from relay_app.cards.sent import SentStore
from relay_app.chat.answers import Served
from relay_app.chat.commands import Command, Commands
from relay_app.core.routing import Destination
from relay_app.intake.receive import deadline
from relay_app.oncall.command import oncall_command
from relay_app.operating.config import Settings
from relay_app.routes import parse_routes
from relay_app.routes.rotation import Roster
from relay_app.sentry.deliveries import DeliveryStore
from relay_app.sentry.settings import SentryConfig
from relay_app.silences.buttons import MUTE
from relay_app.telegram.bot_commands import described
from relay_app.watch.store import Seen, Watched, WatchStore
from relay_app.words import ENGLISH, RUSSIAN
from tests.conftest import (
    CHAT_ID,
    OFFERED_COMMANDS,
    ROUTE_SOURCES,
    FakeTime,
    glitchtip_on,
    sentry_on,
)
from tests.in_process import (
    GLITCHTIP,
    GLITCHTIP_ON,
    MESSAGE,
    PAYLOAD,
    Chat,
    ScriptedTelegram,
    alone,
)
from tests.prometheus import parse, value

CHAT = str(CHAT_ID)
NOW = 1_800_000_000.0
STRANGERS = "-1009999999999"
HERE = Destination(CHAT_ID)


def command(
    text: str, update_id: int, chat: str = CHAT, thread: int | None = None, *, by: int = 9
) -> dict[str, Any]:
    """A command as Telegram delivers it, written by Bo (or the person numbered `by`)."""
    message: dict[str, Any] = {
        "message_id": 500 + update_id,
        "from": {"id": by, "is_bot": False, "first_name": "Bo", "username": "bo"},
        "chat": {"id": int(chat), "type": "supergroup"},
        "text": text,
        "entities": [{"type": "bot_command", "offset": 0, "length": len(text.split()[0])}],
    }
    if thread is not None:
        message.update(message_thread_id=thread, is_topic_message=True)
    return {"update_id": update_id, "message": message}


@pytest.fixture
def chat(built: Callable[..., Relay], fake_time: FakeTime) -> Chat:
    fake_time.now = NOW
    start = datetime.fromtimestamp(NOW - 3600, ZoneInfo("UTC")).replace(tzinfo=None)
    routes = parse_routes(
        "[[rotation]]\nname = 'shop'\npeople = ['@anna_ops', '@boris_ops']\nevery = '1d'\n"
        f"start = '{start:%Y-%m-%dT%H:%M}'\ntimezone = 'UTC'\n",
        "r.toml",
        ROUTE_SOURCES,
    )
    chat = Chat.of(built, fake_time, routes=routes)
    assert chat.relay.spool is not None
    watched = chat.relay.spool.of(WatchStore)
    watched.watch(
        [
            Watched("1", "acme", alone(1, "Quiet one"), CHAT, None),
            Watched("2", "acme", alone(2, "Busy one"), CHAT, None),
            Watched("3", "acme", alone(3, "Fixed one"), CHAT, None),
        ],
        now=NOW,
    )
    watched.seen(
        {
            "1": Seen("unresolved", 4, (0,) * 23 + (4,)),
            "2": Seen("unresolved", 900, (0,) * 22 + (100, 800)),
            "3": Seen("resolved", 50, (0,) * 24),
        },
        now=NOW,
    )
    return chat


def answers(chat: Chat) -> list[tuple[str, int | None, int, str]]:
    chat.settle()
    return chat.telegram.replies


def test_issues_lists_the_unresolved_ones_most_events_first_under_the_command(chat: Chat) -> None:
    chat.clock.now += 30
    chat.update(command("/issues", 1))
    [(where, thread, replied_to, text)] = answers(chat)
    assert (where, thread, replied_to) == (CHAT, None, 501)
    assert text.split("\n") == [
        "📋 Unresolved issues here, most events first (2):",
        "• BACKEND-2A · seen 900 times · " + "▁" * 22 + "▂█ · Busy one",
        "• BACKEND-1A · seen 4 times · " + "▁" * 23 + "█ · Quiet one",
        "🕑 As read 30 s ago.",
    ]
    assert chat.telegram.replies_silent == [True]  # an answer never rings
    # Telegram delivers the update again: answered once.
    chat.update(command("/issues", 1))
    assert len(answers(chat)) == 1
    samples = parse(chat.relay.metrics.exposition().decode())
    assert value(samples, "relay_commands_total", command="issues") == 1


def test_issues_lists_one_not_yet_read_and_asks_the_tracker_for_an_old_list(chat: Chat) -> None:
    assert chat.relay.spool is not None
    watched = chat.relay.spool.of(WatchStore)
    store = chat.relay.spool.of(lambda store: store)

    def next_round() -> float:
        return float(store.read(lambda tx: tx.one("SELECT next_at FROM watch_round")["next_at"]))

    watched.take_round(now=NOW, every=60.0)  # a round now: the next one a minute on
    assert next_round() > NOW
    chat.clock.now = NOW + 14
    watched.watch([Watched("4", "acme", alone(4, "Brand new"), CHAT, None)], now=NOW + 14)
    chat.update(command("/issues", 7))
    text = answers(chat)[-1][3].split("\n")
    assert text[0] == "📋 Unresolved issues here, most events first (3):"  # the new one too
    assert "• BACKEND-4A · ? · ▁ · Brand new" in text  # alerted on, not read yet
    assert text[-1] == "🕑 As read 14 s ago; asking again now."
    assert next_round() <= NOW + 14  # the leader's next look asks the tracker
    watched.seen({"4": Seen("unresolved", 1, (0,) * 24)}, now=NOW + 15)
    watched.take_round(now=NOW + 15, every=60.0)
    chat.clock.now = NOW + 200  # past two rounds since the list was read
    chat.update(command("/issues", 8, by=10))
    assert answers(chat)[-1][3].split("\n")[-1] == "🕑 As read 3 min 20 s ago; asking again now."
    assert next_round() <= NOW + 200


def test_a_chat_the_relay_does_not_serve_gets_no_answer(chat: Chat) -> None:
    chat.update(command("/issues", 2, chat=STRANGERS))
    chat.update(command("/status", 3, chat=STRANGERS))
    assert answers(chat) == []


def test_oncall_silences_and_status_tell_what_the_relay_knows(chat: Chat) -> None:
    # Each asked by someone else: one answer per person every few seconds (answers.py).
    chat.update(command("/oncall", 4))
    assert answers(chat)[-1][3].startswith("👥 On call:\nshop: @anna_ops until ")
    assert answers(chat)[-1][3].endswith(", then @boris_ops")

    chat.update(command("/silences", 5, by=10))
    assert answers(chat)[-1][3] == "🔊 Nothing is muted in this chat."
    assert chat.relay.spool is not None
    card = SentMessage(
        CHAT, 41, "<b>alert</b>", NOW, buttons=(IssueButton("k", "2", GLITCHTIP, "BACKEND-2A"),)
    )
    chat.relay.spool.of(SentStore).keep(card, [])
    press = {
        "update_id": 6,
        "callback_query": {
            "id": "p6",
            "from": {"id": 7, "is_bot": False, "first_name": "Ada", "username": "ada"},
            "message": {"message_id": 41, "chat": {"id": CHAT_ID}},
            "data": callback_data(MUTE, "k"),
        },
    }
    chat.update(press)
    chat.update(command("/silences", 7, by=11))
    muted = answers(chat)[-1][3]
    assert muted.startswith("🔇 Muted in this chat:\n")
    assert "BACKEND-2A" in muted
    assert muted.endswith("UTC (@ada)")

    chat.update(command("/status@", 8, by=12))  # an empty bot name is no other bot's
    assert answers(chat)[-1][3] == (
        "Telegram: answers\nGlitchTip: answers\nQueue: 0 waiting, 0 dead letters"
    )


def test_a_command_for_another_bot_is_left_to_it_and_an_unknown_one_goes_on() -> None:
    handled: list[str] = []

    class Answering:
        def may_answer(self, asker: Any) -> bool:
            return True

        def answer(self, asker: Any, said: Any) -> bool:
            handled.append(said.word)
            return True

    commands = Commands(
        commands=[oncall_command(Roster())],
        served=Served(frozenset({CHAT}), bot_username=lambda: "relay_bot"),
        first_time=lambda keys: True,
        answering=Answering(),  # type: ignore[arg-type]
        words=ENGLISH,
    )
    mine, theirs = Command.of(command("/oncall@Relay_Bot", 1)), Command.of(command("/oncall@x", 2))
    assert mine is not None
    assert theirs is not None
    assert commands.handle(mine)
    assert commands.handle(theirs)  # another bot's: nothing to comment on either
    assert handled == ["oncall_none"]
    unknown = Command.of(command("/start", 3))
    assert unknown is not None
    assert not commands.handle(unknown)  # not the relay's: it goes on as any message
    assert Command.of({"update_id": 4, "message": {"text": "issues", "chat": {"id": 1}}}) is None


def test_the_commands_are_described_in_the_relays_language(settings: Settings) -> None:
    with_token = replace(settings, theirs=glitchtip_on(GLITCHTIP_ON))
    relay = assemble(with_token, telegram=ScriptedTelegram())
    relay.dispatcher.shutdown()
    russian, english = REGISTRY.words_in(RUSSIAN), REGISTRY.words_in(ENGLISH)
    listed = described(relay.commands, russian)
    assert [c["command"] for c in listed] == OFFERED_COMMANDS
    assert [c["description"] for c in listed] == [
        RUSSIAN.command_issues,
        RUSSIAN.command_oncall,
        RUSSIAN.command_cover,
        RUSSIAN.command_silences,
        russian.word("command_chart"),
        RUSSIAN.command_status,
    ]
    pairs = zip(listed, described(relay.commands, english), strict=True)
    assert all(ru["description"] != en["description"] for ru, en in pairs)


def test_the_commands_are_offered_whenever_any_source_can_act(settings: Settings) -> None:
    sentry = SentryConfig("c" * 64, "t" * 64, "https://sentry.example.org")
    relay = assemble(replace(settings, theirs=sentry_on(sentry)), telegram=ScriptedTelegram())
    relay.dispatcher.shutdown()
    relay.running.stop()
    assert [c.name for c in relay.commands if not c.private] == OFFERED_COMMANDS
    signed_only = replace(
        settings, theirs=sentry_on(SentryConfig("c" * 64, None, "https://sentry.io"))
    )
    quiet = assemble(signed_only, telegram=ScriptedTelegram())
    quiet.dispatcher.shutdown()
    assert quiet.commands == ()  # nothing answers them: none is offered


def test_status_says_each_sources_state(built: Callable[..., Relay], fake_time: FakeTime) -> None:
    fake_time.now = NOW
    sentry = SentryConfig("c" * 64, "t" * 64, "https://sentry.example.org")
    chat = Chat.of(built, fake_time, theirs=sentry_on(sentry), glitchtip=None)
    chat.update(command("/status", 1))
    said = answers(chat)[-1][3].splitlines()
    assert said[1] == "GlitchTip: not connected (no GLITCHTIP_API_TOKEN)"
    assert said[-1] == "Sentry: signed alerts, buttons and details; no delivery in the last 7 days"
    assert chat.relay.spool is not None
    chat.relay.spool.of(DeliveryStore).claim(["request-1"], now=NOW - 120)
    chat.update(command("/status", 2, by=10))
    assert answers(chat)[-1][3].splitlines()[-1] == (
        "Sentry: signed alerts, buttons and details; last delivery 2027-01-15 07:58:00 UTC"
    )


def test_a_flood_of_commands_costs_a_persons_burst_and_a_line_a_minute(
    chat: Chat, caplog: pytest.LogCaptureFixture
) -> None:
    for update_id in range(1, 1001):
        chat.update(command("/issues", update_id))
    firsts = [text.split("\n")[0] for *_, text in answers(chat)]
    assert firsts == [
        *["📋 Unresolved issues here, most events first (2):"] * 3,  # three in a row
        "⏳ 3 answers in a row at most: ask again in 15 s.",  # told once, not 997 times
    ]
    samples = parse(chat.relay.metrics.exposition().decode())
    assert value(samples, "relay_answers_refused_total", reason="person") == 997
    lines = [r.getMessage() for r in caplog.records if "not answered since" in r.getMessage()]
    assert len(lines) == 1  # and a line a minute, with how many
    assert not [r for r in caplog.records if r.levelname == "ERROR"]
    chat.update(command("/issues", 1001))
    assert len(answers(chat)) == 4  # nothing more
    chat.clock.now += 15  # the person's turns have come again
    chat.update(command("/issues", 1002))
    assert len(answers(chat)) == 5


def test_a_persons_short_burst_is_answered(chat: Chat) -> None:
    for update_id, asked in enumerate(("/issues", "/oncall", "/status"), start=1):
        chat.update(command(asked, update_id))
    said = [text.split("\n")[0] for *_, text in answers(chat)]
    assert len(said) == 3
    assert not any(text.startswith("⏳") for text in said)


def test_at_most_five_answers_wait_for_a_chat_whoever_asks(chat: Chat) -> None:
    assert chat.relay.spool is not None
    for person in range(20):
        chat.update(command("/status", 100 + person, by=1000 + person))
    assert chat.relay.spool.answers.waiting(HERE, now=chat.clock.now) == 5
    assert len(answers(chat)) == 5
    samples = parse(chat.relay.metrics.exposition().decode())
    assert value(samples, "relay_answers_refused_total", reason="chat") == 15
    chat.update(command("/status", 200, by=2000))  # once they went, the chat is answered again
    assert len(answers(chat)) == 6


def test_answers_never_push_an_alert_out_of_the_spool(
    built: Callable[..., Relay], fake_time: FakeTime
) -> None:
    fake_time.now = NOW
    chat = Chat.of(built, fake_time, spool_max_pending=1)
    for person in range(250):
        chat.update(command("/status", 300 + person, by=3000 + person))
    job = chat.relay.alert_queue.admit(
        {"webhook": PAYLOAD}, HERE, by=deadline(time.monotonic()), text="an alert"
    )
    assert job is not None
    assert job.home == "spool"  # not kept in memory only
    assert len(answers(chat)) == 5
    assert [m.text for m in chat.telegram.delivered] == [MESSAGE.text]
