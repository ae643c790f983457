"""Alert storms within Telegram's limits, on fake time: relays `assemble()`d on one spool
against a Telegram that keeps its rate limits on the test's clock (one message a second per
chat, twenty a minute per group, any flood wait) and answers anything faster with a 429, as the
real one does. Webhooks arrive as GlitchTip's workers post them, and the dispatcher does
meanwhile what falls due: a minute of a storm in a fraction of a second, the same every run.

Under real processes (two gunicorn workers, three relays on PostgreSQL) the same limits are
kept in tests/e2e/test_storms.py and tests/e2e/test_fleet.py."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from relay_app import Relay
from relay_app.core.routing import Destination
from relay_app.spool import Precedence
from relay_app.spool.model import NewJob
from relay_app.words import ENGLISH
from tests.conftest import CHAT_ID, DESTINATION, FakeTime, run_background, run_until
from tests.in_process import LimitedTelegram, numbered, title_numbers, webhook
from tests.telegram_rules import visible_text

OTHER = Destination(-1009876543210)
CALL, ANSWER = Precedence.CALL, Precedence.ANSWER


def arrive(
    relays: list[Relay],
    clock: FakeTime,
    alerts: list[tuple[dict[str, Any], Destination]],
    *,
    over: float,
) -> None:
    """The alerts' webhooks, evenly over `over` seconds, to each relay in turn (GlitchTip's
    posts landing on one worker or another); between them, each relay's dispatcher does what
    falls due."""
    started = clock.now
    for n, (payload, destination) in enumerate(alerts):
        arrives_at = started + over * n / len(alerts)
        for relay in relays:
            run_until(relay.dispatcher, clock, arrives_at)
        webhook(relays[n % len(relays)], payload, destination)


def settle(relays: list[Relay], clock: FakeTime) -> None:
    """Every relay's dispatcher until nothing is left to send."""
    for _ in range(10):
        for relay in relays:
            run_background(relay.dispatcher, clock)
        if all(relay.spool is not None and relay.spool.queue.pending() == 0 for relay in relays):
            return
    raise AssertionError("alerts still pending")


def delivered_to(telegram: LimitedTelegram, destination: Destination) -> list[int]:
    """The alerts' numbers in the order that chat received them."""
    return [
        number
        for message, to in zip(telegram.delivered, telegram.accepted_to, strict=True)
        if to == destination
        for number in title_numbers(message.text)
    ]


def test_a_storm_of_200_alerts_reaches_a_group_within_a_minute_in_20_messages_without_a_429(
    built: Callable[..., Relay], fake_time: FakeTime
) -> None:
    telegram = LimitedTelegram(fake_time)
    workers = [built(telegram), built(telegram)]  # two workers on one spool
    started = fake_time.now
    arrive(workers, fake_time, [(m, DESTINATION) for m in numbered(200)], over=10)
    settle(workers, fake_time)
    assert telegram.refused == []  # paced, not pushed back
    assert delivered_to(telegram, DESTINATION) == list(range(1, 201))  # each once, in order
    assert len(telegram.delivered) <= 20
    assert telegram.accepted_at[-1] - started < 60


def test_a_storm_into_two_chats_paces_each_on_its_own(
    built: Callable[..., Relay], fake_time: FakeTime
) -> None:
    telegram = LimitedTelegram(fake_time)
    relay = built(telegram)
    alerts = [(m, to) for m in numbered(40) for to in (DESTINATION, OTHER)]
    arrive([relay], fake_time, alerts, over=4)
    settle([relay], fake_time)
    assert telegram.refused == []
    for chat in (DESTINATION, OTHER):
        assert delivered_to(telegram, chat) == list(range(1, 41))
        assert telegram.accepted_to.count(chat) <= 8
    # Side by side, not one chat after the other: each chat's first message at once.
    firsts = [
        telegram.accepted_at[telegram.accepted_to.index(chat)] for chat in (DESTINATION, OTHER)
    ]
    assert abs(firsts[0] - firsts[1]) < 1


def test_a_long_429_pause_holds_every_worker_and_costs_no_attempt(
    built: Callable[..., Relay], fake_time: FakeTime, caplog: pytest.LogCaptureFixture
) -> None:
    telegram = LimitedTelegram(fake_time)
    workers = [built(telegram, retry_attempts=1), built(telegram, retry_attempts=1)]
    flooded_at = fake_time.now
    telegram.limits.flood(str(CHAT_ID), 6)  # Telegram: no message to this chat for 6 s
    first, *rest = numbered(30)
    webhook(workers[0], first)  # refused with Telegram's pause
    # The other worker's next turn for the chat is after the pause, as the spool says it.
    assert workers[1].spool is not None
    assert workers[1].spool.queue.next_turn(DESTINATION, now=flooded_at) >= flooded_at + 6
    arrive(workers, fake_time, [(m, DESTINATION) for m in rest], over=3)
    settle(workers, fake_time)
    # The first attempt met the pause; neither worker tried the chat again until it was over,
    [(pushed_back_at, _)] = telegram.refused
    assert pushed_back_at == flooded_at
    assert telegram.accepted_at[0] >= flooded_at + 6
    assert delivered_to(telegram, DESTINATION) == list(range(1, 31))
    # and the pause cost no alert its single retry (RELAY_RETRY_ATTEMPTS=1).
    assert "ALERT NOT DELIVERED" not in caplog.text
    assert "Telegram asked for a pause of 6 s" in caplog.text


def test_a_backlog_longer_than_a_message_goes_in_valid_messages_each_saying_it_was_cut(
    built: Callable[..., Relay], fake_time: FakeTime
) -> None:
    telegram = LimitedTelegram(fake_time)
    relay = built(telegram)
    # 150 alerts of about 480 characters: a line each in a backlog, titles cut, never cut out.
    arrive([relay], fake_time, [(m, DESTINATION) for m in numbered(150, title_length=300)], over=2)
    settle([relay], fake_time)
    assert telegram.refused == []
    assert delivered_to(telegram, DESTINATION) == list(range(1, 151))
    visible = [visible_text(m.html, parse_mode="HTML") for m in telegram.delivered]
    backlogs = [text for text in visible if text.startswith("🗂 ")]
    assert len(backlogs) >= 2  # 149 waiting alerts do not fit in one, even as lines
    assert all(text.endswith(ENGLISH.cut_note) for text in backlogs)  # cut, and said
    assert all(len(text) <= 4096 for text in visible)


def test_an_alert_goes_before_a_thousand_answers_and_a_hundred_calls_waiting_in_its_chat(
    built: Callable[..., Relay], fake_time: FakeTime
) -> None:
    telegram = LimitedTelegram(fake_time)
    relay = built(telegram)
    assert relay.spool is not None
    queue = relay.spool.queue
    for number in range(1000):  # answers to what people typed, queued before the alert
        said = {"say": {"word": "issues_none", "values": {}}, "message_id": 5000 + number}
        lane = DESTINATION.message_lane(5000 + number)
        queue.add(NewJob("reply", said, DESTINATION, ANSWER, lane=lane), now=fake_time.now)
    for number in range(100):  # people called under alerts nobody took
        said = {"say": {"word": "escalation_call", "values": {"minutes": "5", "people": "@a"}}}
        lane = DESTINATION.message_lane(100 + number)
        about = {**said, "message_id": 100 + number}
        queue.add(NewJob("reply", about, DESTINATION, CALL, lane=lane), now=fake_time.now)
    run_until(relay.dispatcher, fake_time, fake_time.now + 30)  # the chat's pace: ~10 sent
    sent_before = len(telegram.replies)
    arrived = fake_time.now
    webhook(relay, numbered(1)[0])
    while not telegram.delivered:
        run_until(relay.dispatcher, fake_time, fake_time.now + 1)
    assert telegram.accepted_at[0] - arrived <= 3.1  # its chat's next turn, a group's pace
    assert len(telegram.replies) - sent_before <= 1  # at most the one under way before it
    assert telegram.refused == []
    # The calls, all hundred, went before any answer, those sent before the alert included.
    while len(telegram.replies) < 101:
        run_until(relay.dispatcher, fake_time, fake_time.now + 30)
    kinds = ["call" if "Nobody has taken" in text else "answer" for *_, text in telegram.replies]
    assert kinds[:101] == ["call"] * 100 + ["answer"]
