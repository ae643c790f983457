"""Delivery after the webhook, on fake time: the queue and the first attempt, the dispatcher,
the jobs, the policy and the spool together, against a scripted Telegram. Every wait is a due
time in the queue, so hours of retries run in milliseconds."""

from __future__ import annotations

import itertools
import logging
import re
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import responses

from relay_app import (
    Relay,
    create_app,
    start_background_work,
    stop_background_work,
)
from relay_app.core.alerts import ALERT_KEY, alert_as_json
from relay_app.core.errors import (
    PermanentDeliveryError,
    RateLimited,
    RetryableDeliveryError,
    ThreadNotFound,
)
from relay_app.core.logs import EVENT_ATTRIBUTE, escape_controls
from relay_app.core.outcomes import Delivered, RetryAt
from relay_app.core.pacing import GROUP_INTERVAL
from relay_app.core.routing import Destination
from relay_app.delivery.health import PROBE_INTERVAL
from relay_app.intake.receive import ANSWER_WITHIN, deadline
from relay_app.message.formatting import (
    Message,
    with_first_line,
)
from relay_app.operating.config import Settings
from relay_app.spool import Admin, Claimant, Holder, Taking, on_store, this_process
from relay_app.spool.database import Database
from relay_app.spool.model import Claim, Job, Lane
from relay_app.telegram.courier import Sent
from relay_app.words import ENGLISH, Said
from tests.conftest import (
    CHAT_ID,
    DESTINATION,
    SECRET,
    TOKEN,
    FakeTime,
    queue_alert,
    run_background,
)
from tests.e2e.helpers import wait_until
from tests.in_process import (
    MESSAGE,
    PAYLOAD,
    ScriptedTelegram,
    numbered,
    text_of,
    title_numbers,
    waits,
    webhook,
)
from tests.payloads import read
from tests.telegram_rules import visible_text

# May have reached Telegram: counts toward RELAY_RETRY_ATTEMPTS.
DOWN = RetryableDeliveryError("Telegram did not answer within 5.0 s")
SERVER_ERROR = RetryableDeliveryError(
    "Telegram refused the message (500): Internal Server Error", error_code=500
)
# Certainly did not: goes on until RELAY_RETRY_MAX_AGE.
REFUSED = RetryableDeliveryError(
    "connection to Telegram failed: Connection refused", maybe_delivered=False
)
KICKED = PermanentDeliveryError("kicked", error_code=403, description="Forbidden")


@pytest.fixture
def clock(fake_time: FakeTime) -> FakeTime:
    """The relays' clock (`built`), which each test moves."""
    return fake_time


def lost_alert_records(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [
        r
        for r in caplog.records
        if r.levelno == logging.ERROR and "ALERT NOT DELIVERED" in r.getMessage()
    ]


def admin(relay: Relay) -> Admin:
    assert relay.spool is not None
    return relay.spool.admin


# --- retries ----------------------------------------------------------------------------------


def test_a_retry_delivers_the_prebuilt_message_and_empties_the_spool(
    built: Callable[..., Relay], clock: FakeTime
) -> None:
    telegram = ScriptedTelegram(REFUSED, clock=clock)  # nothing of it reached Telegram
    relay = built(telegram)
    arrived = clock.now
    assert isinstance(webhook(relay), RetryAt)
    run_background(relay.dispatcher, clock)
    assert telegram.delivered == [MESSAGE]  # the very text, never rebuilt
    assert telegram.destinations == [DESTINATION, DESTINATION]
    # Its first retry once Telegram answered the question a second after the failure, on
    # the chat's next turn.
    assert telegram.probe_times == [arrived + 1]
    assert waits(telegram, arrived) == [0.0, GROUP_INTERVAL]
    assert admin(relay).counts() == {"pending": 0, "dead": 0}


def test_attempts_that_may_have_arrived_stop_at_the_ceiling_and_leave_a_dead_letter(
    built: Callable[..., Relay], clock: FakeTime, caplog: pytest.LogCaptureFixture
) -> None:
    last = RetryableDeliveryError("Telegram answered HTTP 502 without a Bot API reply")
    telegram = ScriptedTelegram(DOWN, DOWN, DOWN, last, DOWN, clock=clock)
    relay = built(telegram, second_chance=False)
    arrived = clock.now
    webhook(relay)
    run_background(relay.dispatcher, clock)
    assert telegram.calls == 4  # the webhook's, and RELAY_RETRY_ATTEMPTS more
    # Telegram answers getMe: sendMessage keeps failing, so after the first quick retry the
    # attempts keep RELAY_RETRY_WAIT apart.
    assert waits(telegram, arrived) == [0.0, GROUP_INTERVAL, 30.0, 30.0]
    [dead] = admin(relay).alerts("dead")
    assert (dead.last_error, dead.unsure_attempts, dead.data) == (
        str(last),
        4,
        {ALERT_KEY: alert_as_json(read(PAYLOAD))},
    )
    [record] = lost_alert_records(caplog)
    assert escape_controls(MESSAGE.text) in record.getMessage()  # one line: logs.py
    assert "giving up: 4 attempts may have reached Telegram (the first and" in record.getMessage()
    assert f"relay-app spool retry {dead.id}" in record.getMessage()
    assert str(last) in record.getMessage()


def test_attempts_that_never_reached_telegram_go_on_with_capped_backoff(
    built: Callable[..., Relay], clock: FakeTime
) -> None:
    telegram = ScriptedTelegram(*[REFUSED] * 12, clock=clock)
    relay = built(telegram)
    arrived = clock.now
    webhook(relay)
    run_background(relay.dispatcher, clock)
    [delivered] = telegram.delivered  # 13 attempts, far past RELAY_RETRY_ATTEMPTS=3
    assert delivered.text.startswith(MESSAGE.text)
    # (The second retry's 2 s is its group's turn: one message every 3.05 s.)
    assert waits(telegram, arrived) == [0.0, GROUP_INTERVAL, GROUP_INTERVAL, 4, 8, 16] + [30.0] * 7


def test_only_the_uncertain_attempts_count_toward_the_ceiling(
    built: Callable[..., Relay], clock: FakeTime
) -> None:
    # At most 1 + RELAY_RETRY_ATTEMPTS attempts in all may reach Telegram: that many copies
    # at worst. Here the webhook's attempt certainly was not one.
    telegram = ScriptedTelegram(REFUSED, REFUSED, DOWN, REFUSED, REFUSED, DOWN, REFUSED, DOWN, DOWN)
    relay = built(telegram, second_chance=False)
    webhook(relay)
    run_background(relay.dispatcher, clock)
    assert telegram.calls == 9
    assert telegram.delivered == []
    [dead] = admin(relay).alerts("dead")
    assert (dead.attempts, dead.unsure_attempts) == (9, 4)


def test_while_telegram_is_down_only_the_question_goes_and_the_horizon_ends_it(
    built: Callable[..., Relay], clock: FakeTime, caplog: pytest.LogCaptureFixture
) -> None:
    telegram = ScriptedTelegram(forever=REFUSED, clock=clock, answers=False)
    relay = built(telegram, retry_max_age=600.0)
    started = clock.now
    webhook(relay)
    run_background(relay.dispatcher, clock)
    assert telegram.calls == 1  # the webhook's: after that, nothing that could post
    [dead] = admin(relay).alerts("dead")
    assert dead.dead_at is not None
    assert dead.dead_at - started == pytest.approx(600.0, abs=PROBE_INTERVAL)
    gaps = [b - a for a, b in itertools.pairwise([started, *telegram.probe_times])]
    assert gaps[0] == 1.0  # a second after the failure, then every second while it waits
    assert all(gap == pytest.approx(PROBE_INTERVAL / 2) for gap in gaps[1:-1])
    [record] = lost_alert_records(caplog)
    assert "older than RELAY_RETRY_MAX_AGE (600 s)" in record.getMessage()
    assert "Connection refused" in record.getMessage()  # its last error
    assert admin(relay).counts() == {"pending": 0, "dead": 1}


def test_telegrams_pause_is_honoured_exactly_and_costs_no_attempt(
    built: Callable[..., Relay], clock: FakeTime
) -> None:
    telegram = ScriptedTelegram(
        RateLimited("429", retry_after=45), *[RateLimited("429", retry_after=90)] * 5, clock=clock
    )
    relay = built(telegram, retry_attempts=1)
    arrived = clock.now
    webhook(relay)
    run_background(relay.dispatcher, clock)
    assert waits(telegram, arrived) == [0.0, 45.0, 90.0, 90.0, 90.0, 90.0, 90.0]
    assert len(telegram.delivered) == 1
    assert telegram.probe_times == []  # a 429 is Telegram answering


def test_a_429_pauses_the_chat_for_every_process_on_the_spool(
    built: Callable[..., Relay], clock: FakeTime, spool_path: str
) -> None:
    relay = built(ScriptedTelegram(RateLimited("429", retry_after=120)))
    webhook(relay)
    other_process = on_store(Database(spool_path)).queue
    assert other_process.next_turn(DESTINATION, now=clock.now + 5) == clock.now + 120
    [waiting] = admin(relay).alerts("pending")
    assert (waiting.attempts, waiting.unsure_attempts) == (0, 0)  # no attempt was spent


def test_the_chats_next_turn_counts_from_when_the_message_left(
    built: Callable[..., Relay], clock: FakeTime, spool_path: str
) -> None:
    # A busy host: the message leaves, and is answered, a moment after its turn was taken.
    relay = built(ScriptedTelegram(clock=clock, takes=[0.4]))
    turn = clock.now
    webhook(relay)
    other_process = on_store(Database(spool_path)).queue
    assert other_process.next_turn(DESTINATION, now=turn + 1) == turn + 0.4 + GROUP_INTERVAL


def test_a_retry_after_an_attempt_that_may_have_arrived_says_so_first(
    built: Callable[..., Relay], clock: FakeTime
) -> None:
    # A timeout after the request went out: Telegram may have posted it, and only its reply
    # was lost.
    telegram = ScriptedTelegram(DOWN, clock=clock)
    relay = built(telegram)
    webhook(relay)
    run_background(relay.dispatcher, clock)
    assert telegram.delivered == [with_first_line(MESSAGE, ENGLISH.repeat_note)]
    assert telegram.delivered[0].html.endswith(MESSAGE.html)  # the prebuilt text below it


def test_a_message_delivered_after_a_minute_says_when_it_was_sent(
    built: Callable[..., Relay], clock: FakeTime
) -> None:
    telegram = ScriptedTelegram(DOWN, DOWN, DOWN)
    relay = built(telegram)
    webhook(relay)
    run_background(relay.dispatcher, clock)
    [delivered] = telegram.delivered
    # Each attempt timed out, and may have posted it: the retry says so first.
    assert delivered.text.startswith(f"{ENGLISH.repeat_note}\n\n{MESSAGE.text}")
    assert re.search(r"UTC; delivered 1 min \d s later\.$", delivered.text)
    assert "⏳ Late: GlitchTip sent this at 2027-01-15 08:00:00 UTC" in delivered.html


def test_a_message_delivered_within_a_minute_is_sent_as_built(
    built: Callable[..., Relay], clock: FakeTime
) -> None:
    telegram = ScriptedTelegram(DOWN, DOWN)
    relay = built(telegram)
    webhook(relay)
    run_background(relay.dispatcher, clock)
    # 31 s late: no line about it; the timeouts' line only
    assert telegram.delivered == [with_first_line(MESSAGE, ENGLISH.repeat_note)]


def test_a_permanent_error_stops_the_retries_at_once(
    built: Callable[..., Relay], clock: FakeTime, caplog: pytest.LogCaptureFixture
) -> None:
    telegram = ScriptedTelegram(DOWN, KICKED, DOWN)
    relay = built(telegram)
    webhook(relay)
    run_background(relay.dispatcher, clock)
    assert telegram.calls == 2
    [record] = lost_alert_records(caplog)
    assert escape_controls(MESSAGE.text) in record.getMessage()  # one line: logs.py
    assert "Telegram refused it permanently" in record.getMessage()
    assert "sent once more" not in record.getMessage()  # a refusal gets no second chance
    assert [dead.last_error for dead in admin(relay).alerts("dead")] == ["kicked"]


def test_a_crashing_attempt_logs_the_alert_and_the_traceback(
    built: Callable[..., Relay], clock: FakeTime, caplog: pytest.LogCaptureFixture
) -> None:
    relay = built(ScriptedTelegram(DOWN, ZeroDivisionError("bug")))
    webhook(relay)
    run_background(relay.dispatcher, clock)
    [record] = lost_alert_records(caplog)
    assert escape_controls(MESSAGE.text) in record.getMessage()  # one line: logs.py
    assert record.exc_info is not None
    assert record.exc_info[0] is ZeroDivisionError
    assert admin(relay).counts()["dead"] == 1


# --- order and recovery -------------------------------------------------------------------------


def test_a_webhook_joins_older_alerts_for_its_chat_instead_of_going_first(
    built: Callable[..., Relay], clock: FakeTime
) -> None:
    telegram = ScriptedTelegram(DOWN, clock=clock)
    relay = built(telegram)
    first, second, third = numbered(3)
    assert isinstance(webhook(relay, first), RetryAt)
    clock.now += 0.5  # Telegram answers again, but the first alert waits for its retry
    assert webhook(relay, second) is None  # no attempt of its own, ahead of the first
    assert webhook(relay, third) is None
    run_background(relay.dispatcher, clock)
    [digest] = telegram.delivered
    assert title_numbers(digest.text) == [1, 2, 3]
    assert telegram.calls == 2


def queued_by_a_webhook(relay: Relay, payload: dict[str, Any] = PAYLOAD) -> tuple[Job, float]:
    """What the view does first: the alert queued, held for its webhook; and when it came."""
    started = time.monotonic()
    job = relay.alert_queue.admit({"webhook": payload}, DESTINATION, by=deadline(started), text="")
    assert job is not None
    return job, started


def test_no_pass_of_another_worker_takes_a_webhooks_alert_before_its_webhook_claims_it(
    built: Callable[..., Relay], clock: FakeTime
) -> None:
    # Two workers on one spool: the other's pass (its poll, or woken by an attempt's end)
    # runs between this webhook's queueing and its claim. Taken by that pass, the alert's
    # webhook was answered 202 behind_older while Telegram was healthy and the turn had come
    # (two loaded runs of the end-to-end tests did, on PostgreSQL and on SQLite).
    telegram = ScriptedTelegram(clock=clock)
    this_worker, other_worker = built(telegram), built(telegram)
    job, started = queued_by_a_webhook(this_worker)
    other_worker.dispatcher.pass_once()
    this_worker.dispatcher.pass_once()
    assert telegram.calls == 0
    attempted = this_worker.attempts.first_attempt(job, by=deadline(started))
    assert isinstance(attempted.outcome, Delivered)
    assert telegram.calls == 1


def test_a_webhooks_alert_it_cannot_send_is_left_to_the_passes_at_once(
    built: Callable[..., Relay], clock: FakeTime
) -> None:
    # The chat's turn has not come: the webhook answers 202, and its alert goes at the turn
    # (3 s later), not once the webhook's deadline (9.25 s) has passed.
    telegram = ScriptedTelegram(clock=clock)
    this_worker, other_worker = built(telegram), built(telegram)
    assert isinstance(webhook(this_worker, numbered(1)[0]), Delivered)
    job, started = queued_by_a_webhook(this_worker, numbered(2)[1])
    assert this_worker.attempts.first_attempt(job, by=deadline(started)).waiting == "paced"
    clock.now += GROUP_INTERVAL
    other_worker.dispatcher.pass_once()
    assert other_worker.dispatcher.wait_idle(10)
    assert [title_numbers(message.text) for message in telegram.delivered] == [[1], [2]]


def test_a_webhook_whose_chat_is_known_to_wait_makes_no_claim_and_its_alert_goes_at_the_turn(
    built: Callable[..., Relay], clock: FakeTime, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The second webhook's claim learns the chat's next turn (3 s away). The third, within
    # it, is not held for a claim of its own that could not take it: queued due now, answered
    # 202 paced without a claim; both go at the turn, as the passes claim them.
    telegram = ScriptedTelegram(clock=clock)
    relay = built(telegram)
    assert isinstance(webhook(relay, numbered(1)[0]), Delivered)
    job, started = queued_by_a_webhook(relay, numbered(2)[1])
    assert relay.dispatcher.turn_at(DESTINATION) is None  # no claim has found it waits yet
    assert relay.attempts.first_attempt(job, by=deadline(started)).waiting == "paced"
    assert relay.dispatcher.turn_at(DESTINATION) == pytest.approx(clock.now + GROUP_INTERVAL)
    assert relay.spool is not None
    queue, claims = relay.spool.queue, []
    claim = queue.claim

    def counted(*args: Any, **kwargs: Any) -> Any:
        claims.append(args)
        return claim(*args, **kwargs)

    monkeypatch.setattr(queue, "claim", counted)
    third, started = queued_by_a_webhook(relay, numbered(3)[2])
    assert third.next_attempt_at <= clock.now  # due now, not held for its webhook
    assert relay.attempts.first_attempt(third, by=deadline(started)).waiting == "paced"
    assert claims == []
    clock.now += GROUP_INTERVAL
    assert relay.dispatcher.turn_at(DESTINATION) is None  # its time has passed
    relay.dispatcher.pass_once()
    assert relay.dispatcher.wait_idle(10)
    assert [title_numbers(message.text) for message in telegram.delivered] == [[1], [2, 3]]


def test_a_webhooks_alert_is_left_to_the_passes_when_telegram_is_down(
    built: Callable[..., Relay], clock: FakeTime
) -> None:
    telegram = ScriptedTelegram(clock=clock)
    relay = built(telegram)
    relay.dispatcher.health.send_failed(clock.now)
    job, started = queued_by_a_webhook(relay)
    assert relay.attempts.first_attempt(job, by=deadline(started)).waiting == "telegram_down"
    relay.dispatcher.health.probed(True, clock.now)  # Telegram answers again at once
    relay.dispatcher.pass_once()
    assert relay.dispatcher.wait_idle(10)
    assert telegram.calls == 1


def test_a_webhook_whose_worker_dies_before_its_claim_leaves_its_alert_to_passes_by_its_deadline(
    built: Callable[..., Relay], clock: FakeTime
) -> None:
    telegram = ScriptedTelegram(clock=clock)
    dying, surviving = built(telegram), built(telegram)
    queued_by_a_webhook(dying)  # and no claim: its worker is gone
    surviving.dispatcher.pass_once()
    assert telegram.calls == 0
    clock.now += ANSWER_WITHIN
    surviving.dispatcher.pass_once()
    assert surviving.dispatcher.wait_idle(10)
    assert telegram.calls == 1


def test_after_a_429_the_alerts_go_oldest_first(
    built: Callable[..., Relay], clock: FakeTime
) -> None:
    telegram = ScriptedTelegram(RateLimited("429", retry_after=5), clock=clock)
    relay = built(telegram, coalesce=False)
    for message in numbered(6):
        webhook(relay, message)
        clock.now += 0.3
    run_background(relay.dispatcher, clock)
    assert [title_numbers(m.text) for m in telegram.delivered] == [[n] for n in range(1, 7)]


def test_an_outage_costs_one_request_then_one_question_per_two_seconds_and_ends_in_a_digest(
    built: Callable[..., Relay], clock: FakeTime
) -> None:
    # Telegram answers 500 to everything for 30 s while ten alerts arrive 3 s apart.
    recovered_at = clock.now + 30
    telegram = ScriptedTelegram(
        forever=SERVER_ERROR, clock=clock, answers=lambda: clock.now >= recovered_at
    )
    relay = built(telegram)
    for n, message in enumerate(numbered(10)):
        clock.now = recovered_at - 30 + 3 * n
        webhook(relay, message)
        relay.dispatcher.pass_once()
        assert relay.dispatcher.wait_idle(10)
    while clock.now < recovered_at:  # the rest of the outage, pass by pass
        clock.now = min(relay.dispatcher.pass_once() or clock.now + 1, recovered_at)
        assert relay.dispatcher.wait_idle(10)
    telegram.forever = None
    run_background(relay.dispatcher, clock)
    assert telegram.calls == 2  # the first alert's webhook, then the digest after recovery
    assert len(telegram.probe_times) <= 1 + 30 / PROBE_INTERVAL
    assert telegram.times[-1] - recovered_at <= PROBE_INTERVAL  # at the first answer
    [digest] = telegram.delivered
    assert title_numbers(digest.text) == list(range(1, 11))


# --- digests ----------------------------------------------------------------------------------


def queue_alerts(relay: Relay, clock: FakeTime, payloads: list[dict[str, Any]]) -> None:
    """Webhooks arriving faster than the chat's turns: the first is attempted, the rest wait."""
    for payload in payloads:
        webhook(relay, payload)
        clock.now += 0.05


def test_waiting_alerts_become_digests_within_telegrams_limit_none_split_none_lost(
    built: Callable[..., Relay], clock: FakeTime
) -> None:
    telegram = ScriptedTelegram()
    relay = built(telegram)
    queue_alerts(relay, clock, numbered(201, title_length=400))
    run_background(relay.dispatcher, clock)
    digests = telegram.delivered[1:]
    assert len(digests) >= 3  # 200 alerts of about 550 characters, even as lines
    seen = []
    for digest in digests:
        visible = visible_text(digest.html, parse_mode="HTML")  # Telegram's own checks
        assert visible == digest.text
        count = int(visible.split()[1])
        assert visible.startswith(f"🗂 {count} alerts, received ")
        found = [int(n) for n in re.findall(r"Error (\d+) x", visible)]
        assert len(found) == count
        seen += found
    assert seen == list(range(2, 202))  # each exactly once, oldest first
    assert admin(relay).counts() == {"pending": 0, "dead": 0}


def test_an_alert_leaves_the_spool_only_with_its_digest(
    built: Callable[..., Relay], clock: FakeTime, spool_path: str
) -> None:
    pending_at_each_send: list[int] = []
    spool = Admin(Database(spool_path))

    class Counting(ScriptedTelegram):
        def deliver(
            self, message: Message, destination: Destination, extras: object = None
        ) -> Sent:
            pending_at_each_send.append(spool.counts()["pending"])
            return super().deliver(message, destination)

    telegram = Counting()
    relay = built(telegram, retry_attempts=1)
    queue_alerts(relay, clock, numbered(4))
    telegram.errors = [DOWN]
    run_background(relay.dispatcher, clock)
    # The first alone (delivered); a digest of the other three failed, and its retry, of the
    # same three, delivered them.
    assert pending_at_each_send == [1, 3, 3]
    assert telegram.delivered[-1].text.startswith(f"{ENGLISH.repeat_note_digest}\n\n🗂 3 alerts")
    assert spool.counts() == {"pending": 0, "dead": 0}


def test_without_coalescing_each_alert_is_its_own_message_on_its_own_turn(
    built: Callable[..., Relay], clock: FakeTime
) -> None:
    telegram = ScriptedTelegram(clock=clock)
    relay = built(telegram, coalesce=False)
    arrived = clock.now
    queue_alerts(relay, clock, numbered(4))
    run_background(relay.dispatcher, clock)
    assert [title_numbers(m.text) for m in telegram.delivered] == [[1], [2], [3], [4]]
    assert waits(telegram, arrived) == [0.0, GROUP_INTERVAL, GROUP_INTERVAL, GROUP_INTERVAL]


def test_an_alert_past_its_ceiling_is_given_up_alone_and_its_digest_goes_on(
    built: Callable[..., Relay], clock: FakeTime, caplog: pytest.LogCaptureFixture
) -> None:
    telegram = ScriptedTelegram(DOWN, DOWN, clock=clock)
    relay = built(telegram, retry_attempts=1, second_chance=False)
    queue_alerts(relay, clock, numbered(3))  # the first fails; the others wait behind it
    run_background(relay.dispatcher, clock)
    # The digest of all three failed: the first had used its one retry, the others go on.
    assert telegram.calls == 3
    [delivered] = telegram.delivered
    assert delivered.text.startswith(f"{ENGLISH.repeat_note_digest}\n\n🗂 2 alerts")
    assert title_numbers(delivered.text) == [2, 3]
    [record] = lost_alert_records(caplog)
    assert "alert #1 " in record.getMessage()
    assert admin(relay).counts() == {"pending": 0, "dead": 1}


def test_a_missing_topic_sends_its_alerts_once_to_the_chat_itself_oldest_first(
    built: Callable[..., Relay], clock: FakeTime, caplog: pytest.LogCaptureFixture
) -> None:
    topic = Destination(CHAT_ID, 404)

    class WithoutTheTopic(ScriptedTelegram):
        def deliver(
            self, message: Message, destination: Destination, extras: object = None
        ) -> Sent:
            if destination == topic:
                self.destinations.append(destination)
                raise ThreadNotFound(
                    "Telegram refused the message (400): Bad Request: message thread not found",
                    error_code=400,
                    description="Bad Request: message thread not found",
                )
            return super().deliver(message, destination)

    telegram = WithoutTheTopic()
    relay = built(telegram)
    first, second, third = numbered(3)
    webhook(relay, first, topic)  # tried in the topic: gone, so it moves to the chat
    assert webhook(relay, second, topic) is None
    assert webhook(relay, third, topic) is None
    run_background(relay.dispatcher, clock)
    assert set(telegram.destinations) == {topic, DESTINATION}
    delivered = [n for message in telegram.delivered for n in title_numbers(message.text)]
    assert delivered == [1, 2, 3]  # in the chat itself, each once, oldest first
    records = [r for r in caplog.records if "TOPIC NOT FOUND" in r.getMessage()]
    assert len(records) == 3
    assert sorted(title_numbers(r.getMessage())[0] for r in records) == [
        1,
        2,
        3,
    ]  # each, text and all
    assert all(r.levelno == logging.ERROR for r in records)
    assert lost_alert_records(caplog) == []


def test_a_permanent_refusal_of_a_digest_keeps_every_alert_as_a_dead_letter(
    built: Callable[..., Relay], clock: FakeTime, caplog: pytest.LogCaptureFixture
) -> None:
    relay = built(ScriptedTelegram(forever=KICKED))
    queue_alerts(relay, clock, numbered(3))
    run_background(relay.dispatcher, clock)
    assert admin(relay).counts() == {"pending": 0, "dead": 3}
    records = lost_alert_records(caplog)
    # One record per alert, each holding that alert's own text.
    assert sorted(title_numbers(r.getMessage()) for r in records) == [[1], [2], [3]]


# --- a second chance --------------------------------------------------------------------------


def test_an_alert_that_used_up_its_attempts_is_sent_once_more_when_its_chat_accepts_one(
    built: Callable[..., Relay], clock: FakeTime, caplog: pytest.LogCaptureFixture
) -> None:
    telegram = ScriptedTelegram(*[SERVER_ERROR] * 4, clock=clock)  # getMe works meanwhile
    relay = built(telegram)
    first, second = numbered(2)
    webhook(relay, first)
    run_background(relay.dispatcher, clock)
    [record] = lost_alert_records(caplog)  # it died, and says so with its text
    assert escape_controls(text_of(first)) in record.getMessage()
    assert "it is sent once more when its chat next accepts a message" in record.getMessage()
    clock.now += 600
    assert isinstance(webhook(relay, second), Delivered)
    run_background(relay.dispatcher, clock)
    again = telegram.delivered[-1]
    assert again.text.startswith(
        f"{ENGLISH.repeat_note}\n\n{text_of(first)}\n\n⏳ Late: GlitchTip sent "
    )
    assert again.text.endswith("later.")
    assert admin(relay).counts() == {"pending": 0, "dead": 0}
    assert "1 dead letter(s) for chat" in caplog.text


def test_without_a_second_chance_a_dead_letter_stays_dead(
    built: Callable[..., Relay], clock: FakeTime
) -> None:
    telegram = ScriptedTelegram(*[SERVER_ERROR] * 4, clock=clock)
    relay = built(telegram, second_chance=False)
    first, second = numbered(2)
    webhook(relay, first)
    run_background(relay.dispatcher, clock)
    clock.now += 600
    webhook(relay, second)
    run_background(relay.dispatcher, clock)
    assert len(telegram.delivered) == 1
    assert admin(relay).counts() == {"pending": 0, "dead": 1}


# --- what another process left ------------------------------------------------------------------


def left_by_a_dead_process(spool_path: str, clock: FakeTime, count: int = 1) -> list[int]:
    """Alerts written ahead by a process that died: one during its webhook's attempt, the
    others while they waited for their turn."""
    gone = replace(this_process(), pid=2**22 + 7, started="1")
    queue = on_store(Database(spool_path)).queue
    ids = [queue_alert(queue, PAYLOAD, now=clock.now).id for _ in range(count)]
    lane = Lane(DESTINATION.lane, DESTINATION, clock.now, free=True)
    claim = queue.claim(
        lane,
        Claimant(gone, "theirs", 7.0, ()),
        Taking(fit=lambda jobs: 1, retire=lambda job, now: None, send=True),
        now=clock.now,
    )
    assert isinstance(claim, Claim)  # the first, mid-attempt when its process died
    return ids


def test_alerts_left_by_a_dead_process_are_taken_up_at_once_and_sent_once(
    built: Callable[..., Relay], clock: FakeTime, spool_path: str
) -> None:
    left_by_a_dead_process(spool_path, clock, count=3)
    clock.now += GROUP_INTERVAL  # its webhook took the chat's turn before it died
    telegram = ScriptedTelegram()
    relay = built(telegram)
    relay.dispatcher.pass_once()  # no waiting for the dead process's lease to run out
    assert relay.dispatcher.wait_idle(10)
    [digest] = telegram.delivered
    # Its attempt was under way when the process died: it may have posted them.
    assert digest.text.startswith(f"{ENGLISH.repeat_note_digest}\n\n🗂 3 alerts")
    assert admin(relay).counts() == {"pending": 0, "dead": 0}


def test_an_interrupted_attempt_counts_as_one_that_may_have_arrived(
    built: Callable[..., Relay], clock: FakeTime, spool_path: str
) -> None:
    left_by_a_dead_process(spool_path, clock)
    clock.now += GROUP_INTERVAL
    telegram = ScriptedTelegram(forever=DOWN)
    relay = built(telegram, retry_attempts=2, second_chance=False)
    run_background(relay.dispatcher, clock)
    assert telegram.calls == 2  # the dead process's attempt was the first of three
    [dead] = admin(relay).alerts("dead")
    assert dead.unsure_attempts == 3


def test_an_alert_resumed_at_its_ceiling_is_not_sent_again(
    built: Callable[..., Relay],
    clock: FakeTime,
    spool_path: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    [alert_id] = left_by_a_dead_process(spool_path, clock)
    # Another process worked it up to the ceiling and died before recording the outcome.
    Database(spool_path).write(
        lambda tx: tx.execute("UPDATE jobs SET unsure_attempts = 4, attempts = 4")
    )
    clock.now += GROUP_INTERVAL
    telegram = ScriptedTelegram()
    relay = built(telegram)
    run_background(relay.dispatcher, clock)
    assert telegram.calls == 0
    assert [dead.id for dead in admin(relay).alerts("dead")] == [alert_id]
    [record] = lost_alert_records(caplog)
    assert "another could post it twice" in record.getMessage()


def test_a_job_of_a_kind_this_relay_does_not_know_is_given_up_named_never_sent_as_another(
    built: Callable[..., Relay],
    clock: FakeTime,
    spool_path: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    telegram = ScriptedTelegram()
    relay = built(telegram)
    assert relay.outbox is not None
    relay.outbox.call(str(CHAT_ID), None, 41, Said("issues_none"))
    # A newer relay's kind of write (or a person's edit), its data a reply's.
    Database(spool_path).write(lambda tx: tx.execute("UPDATE jobs SET kind = 'photo'"))
    run_background(relay.dispatcher, clock)
    assert telegram.calls == 0  # not written as a reply, nor as an alert
    assert admin(relay).counts() == {"pending": 0, "dead": 0}  # given up, no alert among them
    [record] = [r for r in caplog.records if "CHAT NOT UPDATED" in r.getMessage()]
    assert record.levelno == logging.ERROR
    assert "a job of kind 'photo', which this relay does not know" in record.getMessage()


# --- clocks -----------------------------------------------------------------------------------


def test_a_clock_stepped_back_an_hour_stalls_nothing(
    built: Callable[..., Relay], clock: FakeTime
) -> None:
    telegram = ScriptedTelegram(DOWN, clock=clock)
    relay = built(telegram)
    first, second = numbered(2)
    webhook(relay, first)  # fails: due again in a second, in the stepped-off future
    clock.now -= 3600  # NTP, or a VM resumed
    webhook(relay, second)
    run_background(relay.dispatcher, clock)
    assert telegram.times[-1] - clock.now <= GROUP_INTERVAL + PROBE_INTERVAL
    assert title_numbers(telegram.delivered[-1].text) == [1, 2]


def test_a_clock_stepped_forward_during_a_slow_attempt_never_sends_it_twice(
    built: Callable[..., Relay], clock: FakeTime
) -> None:
    entered, release = threading.Event(), threading.Event()

    class Slow(ScriptedTelegram):
        def deliver(
            self, message: Message, destination: Destination, extras: object = None
        ) -> Sent:
            entered.set()
            assert release.wait(10)
            return super().deliver(message, destination)

    telegram = Slow()
    relay = built(telegram)
    sending = threading.Thread(target=webhook, args=(relay,))
    sending.start()
    assert entered.wait(10)
    clock.now += 600  # ten minutes "pass" while the attempt runs: its lease has "run out"
    relay.dispatcher.pass_once()
    release.set()
    sending.join(10)
    assert relay.dispatcher.wait_idle(10)
    assert telegram.calls == 1


# --- Telegram's health, shared ------------------------------------------------------------------


def test_one_relay_asks_once_however_many_workers_it_has(
    built: Callable[..., Relay], clock: FakeTime
) -> None:
    telegram = ScriptedTelegram(forever=REFUSED, clock=clock, answers=False)
    workers = [built(telegram), built(telegram)]  # two workers on one spool
    webhook(workers[0])
    for _ in range(20):
        clock.now += 0.5
        for worker in workers:
            worker.dispatcher.pass_once()
            assert worker.dispatcher.wait_idle(10)
    gaps = [b - a for a, b in itertools.pairwise(telegram.probe_times)]
    # 10 s with an alert waiting: at 1, then every second, by one worker or the other
    assert len(telegram.probe_times) == 10
    assert all(gap >= PROBE_INTERVAL / 2 for gap in gaps)
    assert telegram.calls == 1


# --- stopping, and alerts held in memory --------------------------------------------------------


def test_stopping_leaves_spooled_alerts_for_the_next_start_unleased(
    built: Callable[..., Relay], clock: FakeTime, spool_path: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="relay_app")
    telegram = ScriptedTelegram(forever=DOWN)
    relay = built(telegram)
    for chat in (-1, -2, -3):
        webhook(relay, PAYLOAD, Destination(chat))  # the first fails: the others wait
    relay.dispatcher.shutdown()
    assert telegram.calls == 1  # no attempt more for the shutdown
    queue = on_store(Database(spool_path)).queue
    lanes = queue.lanes(now=clock.now, holder=Holder("other", "b", 1, "1"), in_flight=())
    assert len(lanes) == 3
    assert all(lane.free for lane in lanes)
    assert "stopping: 3 alert(s) wait in the spool" in caplog.text


def test_stopping_gives_alerts_in_memory_a_last_attempt_and_logs_what_is_left(
    built: Callable[..., Relay], clock: FakeTime, caplog: pytest.LogCaptureFixture
) -> None:
    telegram = ScriptedTelegram(forever=DOWN)
    relay = built(telegram, spool_path=None, retry_wait=1800.0)
    for chat in (-1, -2):
        for message in numbered(2):
            webhook(relay, message, Destination(chat))  # the first fails: the others wait
    assert telegram.calls == 1
    relay.dispatcher.shutdown()
    assert telegram.calls == 3  # one last attempt per chat, as a digest of its two alerts
    records = lost_alert_records(caplog)
    assert len(records) == 4
    assert all("the relay is shutting down" in r.getMessage() for r in records)
    assert all(MESSAGE.text.split("\n")[0] in r.getMessage() for r in records)


def test_a_last_attempt_sends_a_chats_alerts_in_as_many_messages_as_they_need(
    built: Callable[..., Relay], clock: FakeTime, caplog: pytest.LogCaptureFixture
) -> None:
    telegram = ScriptedTelegram(REFUSED)  # the first fails; the rest are accepted
    relay = built(telegram, spool_path=None, retry_wait=1800.0, coalesce=False)
    for message in numbered(3):
        webhook(relay, message)  # the first fails: the others wait
    relay.dispatcher.shutdown()
    # One message each, oldest first.
    assert [title_numbers(message.text) for message in telegram.delivered] == [[1], [2], [3]]
    assert lost_alert_records(caplog) == []
    assert "taken over by another worker" not in caplog.text


def test_without_a_spool_a_failed_alert_is_retried_from_memory_and_says_so(
    built: Callable[..., Relay], clock: FakeTime, caplog: pytest.LogCaptureFixture
) -> None:
    telegram = ScriptedTelegram(REFUSED)
    relay = built(telegram, spool_path=None)
    webhook(relay)
    run_background(relay.dispatcher, clock)
    assert telegram.delivered == [MESSAGE]
    [warning] = [r for r in caplog.records if "kept in memory only" in r.getMessage()]
    assert warning.levelno == logging.WARNING  # the operator's choice, not a fault
    assert "(RELAY_SPOOL_PATH=off)" in warning.getMessage()


def test_without_a_spool_alerts_are_still_paced(
    built: Callable[..., Relay], clock: FakeTime
) -> None:
    telegram = ScriptedTelegram(clock=clock)
    relay = built(telegram, spool_path=None)
    arrived = clock.now
    queue_alerts(relay, clock, numbered(2))
    run_background(relay.dispatcher, clock)
    assert waits(telegram, arrived) == [0.0, GROUP_INTERVAL]


def test_an_unusable_spool_falls_back_to_memory(
    built: Callable[..., Relay], clock: FakeTime, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    telegram = ScriptedTelegram(REFUSED)
    relay = built(telegram, spool_path=str(tmp_path / "missing-directory" / "spool.sqlite3"))
    webhook(relay)
    run_background(relay.dispatcher, clock)
    assert telegram.delivered == [MESSAGE]
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert any(m.startswith("DURABILITY LOST") for m in errors)
    assert any(
        "could not be written to the spool" in m and "kept in memory only" in m for m in errors
    )


def test_a_full_spool_keeps_the_alert_in_memory_and_says_so(
    built: Callable[..., Relay], clock: FakeTime, caplog: pytest.LogCaptureFixture
) -> None:
    telegram = ScriptedTelegram(forever=DOWN)
    relay = built(telegram, spool_max_pending=1)
    webhook(relay)
    webhook(relay, PAYLOAD, Destination(-5))
    [record] = [r for r in caplog.records if "could not be written to the spool" in r.getMessage()]
    assert "the spool is full: 1 alerts are already pending" in record.getMessage()
    assert relay.memory.queue.pending() == 1


def test_an_overflowing_memory_refuses_loudly(
    built: Callable[..., Relay], clock: FakeTime, caplog: pytest.LogCaptureFixture
) -> None:
    relay = built(ScriptedTelegram(forever=DOWN), spool_path=None)
    relay.memory.queue.max_pending = 2
    webhook(relay)
    webhook(relay)
    about = {"webhook": PAYLOAD}
    assert relay.alert_queue.admit(about, DESTINATION, by=deadline(0.0), text=MESSAGE.text) is None
    [record] = lost_alert_records(caplog)
    assert "2 alerts are already waiting in memory" in record.getMessage()
    assert escape_controls(MESSAGE.text) in record.getMessage()  # one line: logs.py


# --- starting, and the records an alert leaves ----------------------------------------------------


def test_each_worker_takes_up_spooled_alerts_as_it_starts(
    settings: Settings,
    clock: FakeTime,
    spool_path: str,
    telegram: responses.RequestsMock,
    caplog: pytest.LogCaptureFixture,
) -> None:
    left_by_a_dead_process(spool_path, clock, count=3)
    clock.now += 11
    telegram.post(f"{settings.telegram_api_url}/bot{TOKEN}/sendMessage", json={"ok": True})
    # The start-up check's other questions (the chat, the commands) are refused, not left
    # unanswered: a question nothing answers is an unreachable Telegram, whose alerts wait.
    telegram.post(
        re.compile(rf"{re.escape(settings.telegram_api_url)}/bot{TOKEN}/\w+"),
        status=400,
        json={"ok": False, "error_code": 400, "description": "Bad Request: not in this test"},
    )
    app = create_app(settings, clock=clock)
    start_background_work(app)  # what gunicorn's post_worker_init does in each worker
    assert wait_until(lambda: "delivered" in caplog.text, timeout=5)
    stop_background_work(app)
    sent = [c for c in telegram.calls if str(c.request.url).endswith("/sendMessage")]
    assert len(sent) == 1
    digest = "of alert(s) #1, #2, #3 to chat -1001234567890 (a digest of 3) (background, "
    assert re.search(
        re.escape(digest) + r"\d+ ms\): delivered 11\.0 s after the first", caplog.text
    )
    assert SECRET not in caplog.text


def test_a_wrapped_app_is_reported_rather_than_silently_not_resumed(
    caplog: pytest.LogCaptureFixture,
) -> None:
    start_background_work(object())
    assert "alerts left in the spool by an earlier process will not be taken up" in caplog.text


def test_each_attempt_logs_one_record_and_a_long_outage_warns_at_each_doubling(
    built: Callable[..., Relay], clock: FakeTime, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="relay_app")
    telegram = ScriptedTelegram(*[REFUSED] * 10, clock=clock)
    relay = built(telegram)
    webhook(relay)
    run_background(relay.dispatcher, clock)
    attempts = [
        (r.levelno, fields)
        for r in caplog.records
        if (fields := getattr(r, EVENT_ATTRIBUTE, {})).get("event") == "attempt"
    ]
    assert [fields["attempt"] for _, fields in attempts] == list(range(1, 12))
    assert [fields["kind"] for _, fields in attempts] == ["sync"] + ["background"] * 10
    outcomes = [fields["outcome"] for _, fields in attempts]
    assert outcomes == ["retryable_error"] * 10 + ["delivered"]
    assert all(fields["alerts"] == ["#1"] for _, fields in attempts)
    warned = [fields["attempt"] for level, fields in attempts if level == logging.WARNING]
    assert warned == [1, 2, 4, 8]  # posted nothing: the rest are INFO


# --- two relays, one lane ---------------------------------------------------------------------


def test_a_claim_held_up_past_its_lease_sends_nothing_where_another_relay_took_over(
    built: Callable[..., Relay], clock: FakeTime, caplog: pytest.LogCaptureFixture
) -> None:
    # Relay A claims the lane, then is held up (a busy host, every spool connection in use)
    # until its lease has run out; relay B takes the lane over and sends. A must not send as
    # well: two messages at once break the chat's pace, and Telegram answers 429.
    telegram = ScriptedTelegram(clock=clock)
    relay = built(telegram)
    assert relay.spool is not None
    queue = relay.spool.queue
    queue_alert(queue, PAYLOAD, now=clock.now)
    relay_a, relay_b = Holder("host-a", "boot", 1, "1"), Holder("host-b", "boot", 2, "2")
    lease_for = 7.0

    def claim_as(holder: Holder, token: str) -> Claim:
        [lane] = queue.lanes(now=clock.now, holder=holder, in_flight=())
        claim = queue.claim(
            lane,
            Claimant(holder, token, lease_for, {token}),
            Taking(fit=relay.jobs.fit, retire=lambda alert, now: None, send=True),
            now=clock.now,
        )
        assert isinstance(claim, Claim), claim
        return claim

    held_up = claim_as(relay_a, "token-a")
    clock.now += lease_for + GROUP_INTERVAL  # A is held up; its lease and the turn are over
    taken_over = claim_as(relay_b, "token-b")
    relay.jobs.run(queue, taken_over, kind="background")
    relay.jobs.run(queue, held_up, kind="background")  # A goes on at last
    assert telegram.calls == 1
    assert telegram.times == [clock.now]
    assert "their lease ran out before the attempt could start" in caplog.text
    assert admin(relay).counts() == {"pending": 0, "dead": 0}


def test_a_lane_another_process_holds_is_looked_at_again_when_its_lease_ends(
    built: Callable[..., Relay], clock: FakeTime
) -> None:
    # Where the spool tells of news, an idle dispatcher waits 5 s between looks: a lane held by
    # a process that died must still be looked at when its lease ends, not a look later.
    telegram = ScriptedTelegram(clock=clock)
    relay = built(telegram)
    assert relay.spool is not None
    queue = relay.spool.queue
    queue_alert(queue, PAYLOAD, now=clock.now)
    gone = Holder("host-gone", "boot", 1, "1")
    [lane] = queue.lanes(now=clock.now, holder=gone, in_flight=())
    lease_for = 7.0
    held = queue.claim(
        lane,
        Claimant(gone, "token-gone", lease_for, {"token-gone"}),
        Taking(fit=relay.jobs.fit, retire=lambda alert, now: None, send=True),
        now=clock.now,
    )
    assert isinstance(held, Claim)
    assert relay.dispatcher.pass_once() == pytest.approx(clock.now + lease_for)
    assert telegram.calls == 0
    clock.now += lease_for
    [free] = queue.lanes(now=clock.now, holder=gone, in_flight=())
    assert free.free
    assert free.held_until is None


def test_a_chats_pace_runs_from_when_telegram_had_the_message_however_late_it_went(
    built: Callable[..., Relay], clock: FakeTime
) -> None:
    # A busy host begins the request, then sends it two seconds later (or the network takes
    # that long): Telegram has it only then. The next message to the group, this relay's or
    # another's, must keep the group's pace from then, or Telegram answers 429.
    telegram = ScriptedTelegram(clock=clock, takes=[2.0])
    relay = built(telegram)
    for message in numbered(2):
        webhook(relay, message)  # the first goes at once, the second waits its turn
    run_background(relay.dispatcher, clock)
    assert telegram.calls == 2
    first, second = telegram.times
    assert second - first >= GROUP_INTERVAL - 1e-6  # it was 1.05 s
