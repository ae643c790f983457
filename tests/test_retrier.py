from __future__ import annotations

import itertools
import logging
import re
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import responses

from relay_app import create_app, retrier, start_background_work
from relay_app.config import Settings
from relay_app.errors import (
    PermanentDeliveryError,
    RateLimited,
    RetryableDeliveryError,
    ThreadNotFound,
)
from relay_app.formatting import Message, format_alert
from relay_app.glitchtip import parse_alert
from relay_app.logs import EVENT_ATTRIBUTE
from relay_app.pacing import CHAT_INTERVAL
from relay_app.retrier import Deliver, Retrier
from relay_app.routing import Destination
from relay_app.spool import Spool, SpooledAlert
from tests.conftest import DESTINATION, SEND_URL, FakeTime, run_background
from tests.payloads import issue, issue_alert
from tests.telegram_rules import visible_text

MESSAGE = format_alert(parse_alert(issue_alert(issue(1))))
# May have reached Telegram: counts toward RELAY_RETRY_ATTEMPTS.
DOWN = RetryableDeliveryError("Telegram did not answer within 5.0 s")
# Certainly did not: goes on until RELAY_RETRY_MAX_AGE.
REFUSED = RetryableDeliveryError(
    "connection to Telegram failed: Connection refused", maybe_delivered=False
)


class FlakyTelegram:
    """A delivery function that fails with the scripted errors, then succeeds; it notes when
    each call came, on the test's clock."""

    def __init__(
        self,
        *errors: BaseException,
        forever: BaseException | None = None,
        clock: FakeTime | None = None,
    ) -> None:
        self.errors = list(errors)
        self.forever = forever
        self.clock = clock
        self.delivered: list[Message] = []
        self.destinations: list[Destination] = []
        self.times: list[float] = []
        self.calls = 0
        self._lock = threading.Lock()

    def __call__(self, message: Message, destination: Destination) -> None:
        with self._lock:
            self.calls += 1
            self.destinations.append(destination)
            if self.clock is not None:
                self.times.append(self.clock.now)
            if self.errors:
                raise self.errors.pop(0)
            if self.forever is not None:
                raise self.forever
            self.delivered.append(message)


@pytest.fixture(autouse=True)
def fresh_executor() -> Iterator[None]:
    yield
    retrier.shutdown()


@pytest.fixture
def clock() -> FakeTime:
    return FakeTime()


@pytest.fixture
def spool(tmp_path: Path, clock: FakeTime) -> Spool:
    return Spool(str(tmp_path / "spool.sqlite3"), clock=clock)


def make_retrier(
    telegram: Deliver,
    spool: Spool | None,
    clock: FakeTime | None = None,
    *,
    attempts: int = 3,
    wait: float = 30.0,
    max_age: float = 21600.0,
    coalesce: bool = True,
    sleep: Callable[[float], None] | None = None,
) -> Retrier:
    """A retrier on fake time by default; `sleep` alone for one whose pauses a test holds,
    neither for real time and real pauses."""
    return Retrier(
        telegram,
        spool=spool,
        attempts=attempts,
        wait=wait,
        max_age=max_age,
        attempt_timeout=5.0,
        coalesce=coalesce,
        sleep=sleep or (clock.sleep if clock is not None else None),
        clock=clock or time.time,
    )


def admit(background: Retrier, to: Destination = DESTINATION) -> SpooledAlert:
    return background.admit(MESSAGE, to).alert


def fail_synchronously(
    background: Retrier, clock: FakeTime, first_error: RetryableDeliveryError = DOWN
) -> SpooledAlert:
    """What the webhook does: write ahead, fail the first attempt, hand over; then what the
    dispatchers do, until the alert has been delivered or given up."""
    admission = background.admit(MESSAGE, DESTINATION)
    assert admission.send_now
    assert background.retry_later(admission.alert, first_error) is not None
    if admission.alert.id is None:
        assert background.wait_idle(timeout=10)
    else:
        run_background(background, clock)
    return admission.alert


def waits(telegram: FlakyTelegram, since: float) -> list[float]:
    """The pauses before each background attempt, the first one counted from `since`."""
    times = [since, *telegram.times]
    return [round(later - earlier, 3) for earlier, later in itertools.pairwise(times)]


def paused_until(release: threading.Event) -> Callable[[float], None]:
    """A pause that lasts until the test releases it, whatever its length."""

    def pause(_: float) -> None:
        release.wait(10)

    return pause


def lost_alert_records(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [
        r
        for r in caplog.records
        if r.levelno == logging.ERROR and "ALERT NOT DELIVERED" in r.getMessage()
    ]


def test_a_retry_delivers_the_prebuilt_message_and_empties_the_spool(
    spool: Spool, clock: FakeTime
) -> None:
    telegram = FlakyTelegram(DOWN, clock=clock)
    arrived = clock.now
    fail_synchronously(make_retrier(telegram, spool, clock), clock)
    assert telegram.delivered == [MESSAGE]
    assert telegram.destinations == [DESTINATION, DESTINATION]
    assert waits(telegram, arrived) == [30.0, 30.0]  # after the synchronous attempt, then between
    assert spool.counts() == {"pending": 0, "dead": 0}


def test_attempts_that_may_have_arrived_stop_at_the_ceiling_and_leave_a_dead_letter(
    spool: Spool, clock: FakeTime, caplog: pytest.LogCaptureFixture
) -> None:
    last = RetryableDeliveryError("Telegram answered HTTP 502 without a Bot API reply")
    telegram = FlakyTelegram(DOWN, DOWN, last, DOWN)
    alert = fail_synchronously(make_retrier(telegram, spool, clock), clock)
    assert telegram.calls == 3  # RELAY_RETRY_ATTEMPTS after the synchronous one
    assert telegram.delivered == []
    [dead] = spool.alerts("dead")
    assert (dead.id, dead.last_error, dead.unsure_attempts) == (alert.id, str(last), 4)
    assert dead.message == MESSAGE
    [record] = lost_alert_records(caplog)
    assert MESSAGE.text in record.getMessage()
    assert "giving up: 4 attempts may have reached Telegram (the first and" in record.getMessage()
    assert f"relay-app spool retry {alert.id}" in record.getMessage()
    assert str(last) in record.getMessage()


def test_attempts_that_never_reached_telegram_go_on_with_capped_backoff(
    spool: Spool, clock: FakeTime
) -> None:
    telegram = FlakyTelegram(*[REFUSED] * 12, clock=clock)
    arrived = clock.now
    fail_synchronously(make_retrier(telegram, spool, clock), clock, REFUSED)
    [delivered] = telegram.delivered  # 13 attempts, far past RELAY_RETRY_ATTEMPTS=3
    assert delivered.text.startswith(MESSAGE.text)
    # The first wait is the chat's turn (pacing), a little over the one second of backoff.
    assert waits(telegram, arrived) == [CHAT_INTERVAL, 2, 4, 8, 16, 30, 30, 30, 30, 30, 30, 30, 30]


def test_only_the_uncertain_attempts_count_toward_the_ceiling(
    spool: Spool, clock: FakeTime
) -> None:
    # At most 1 + RELAY_RETRY_ATTEMPTS attempts in all may reach Telegram: that many copies
    # at worst, as before the spool. Here the synchronous attempt was certainly not one.
    telegram = FlakyTelegram(REFUSED, DOWN, REFUSED, REFUSED, DOWN, REFUSED, DOWN, DOWN)
    fail_synchronously(make_retrier(telegram, spool, clock), clock, REFUSED)
    assert telegram.calls == 8
    assert telegram.delivered == []
    [dead] = spool.alerts("dead")
    assert (dead.attempts, dead.unsure_attempts) == (9, 4)


def test_a_long_outage_ends_at_the_maximum_age_not_sooner(
    spool: Spool, clock: FakeTime, caplog: pytest.LogCaptureFixture
) -> None:
    telegram = FlakyTelegram(forever=REFUSED, clock=clock)
    started = clock.now
    fail_synchronously(make_retrier(telegram, spool, clock, max_age=3600.0), clock, REFUSED)
    assert clock.now - started == pytest.approx(3600.0)  # the last wait is cut to the horizon
    # Waits of CHAT_INTERVAL (the first turn), 2, 4, 8 and 16 s, then one every 30 s while the
    # alert is younger than the horizon.
    assert telegram.calls == 5 + (3600 - 31) // 30
    [record] = lost_alert_records(caplog)
    assert "older than RELAY_RETRY_MAX_AGE (3600 s)" in record.getMessage()
    assert "Connection refused" in record.getMessage()  # its last error
    assert spool.counts() == {"pending": 0, "dead": 1}


def test_telegrams_pause_is_honoured_exactly_and_costs_no_attempt(
    spool: Spool, clock: FakeTime
) -> None:
    telegram = FlakyTelegram(*[RateLimited("429", retry_after=90)] * 5, clock=clock)
    background = make_retrier(telegram, spool, clock, attempts=1)
    arrived = clock.now
    fail_synchronously(background, clock, RateLimited("429", retry_after=45))
    assert waits(telegram, arrived) == [45.0, 90.0, 90.0, 90.0, 90.0, 90.0]
    assert len(telegram.delivered) == 1


def test_a_429_pauses_the_chat_for_every_process_on_the_spool(
    spool: Spool, clock: FakeTime
) -> None:
    background = make_retrier(FlakyTelegram(), spool, clock)
    alert = admit(background)
    background.retry_later(alert, RateLimited("429", retry_after=120))
    other_process = Spool(spool.path, clock=clock)
    chat = DESTINATION.chat_key
    assert other_process.reserve(chat, group=True, now=clock.now + 5) == clock.now + 120
    [waiting] = other_process.alerts("pending")
    assert (waiting.attempts, waiting.unsure_attempts) == (0, 0)  # no attempt was spent


def test_a_message_delivered_after_a_minute_says_when_it_was_sent(
    spool: Spool, clock: FakeTime
) -> None:
    telegram = FlakyTelegram(DOWN, DOWN)
    alert = fail_synchronously(make_retrier(telegram, spool, clock), clock)
    [delivered] = telegram.delivered
    assert delivered.text.startswith(MESSAGE.text)
    assert delivered.text.endswith("UTC; delivered 1 min 30 s later.")
    assert "⏳ Late: GlitchTip sent this at 2027-01-15 08:00:00 UTC" in delivered.html
    assert alert.received_at == 1_800_000_000.0


def test_a_message_delivered_within_a_minute_is_sent_as_built(
    spool: Spool, clock: FakeTime
) -> None:
    telegram = FlakyTelegram()
    fail_synchronously(make_retrier(telegram, spool, clock), clock)
    assert telegram.delivered == [MESSAGE]  # 30 s late: no note


def test_a_permanent_error_stops_the_retries_at_once(
    spool: Spool, clock: FakeTime, caplog: pytest.LogCaptureFixture
) -> None:
    kicked = PermanentDeliveryError("kicked", error_code=403, description="Forbidden")
    telegram = FlakyTelegram(kicked, DOWN)
    fail_synchronously(make_retrier(telegram, spool, clock), clock)
    assert telegram.calls == 1
    [record] = lost_alert_records(caplog)
    assert MESSAGE.text in record.getMessage()
    assert "Telegram refused it permanently" in record.getMessage()
    assert [dead.last_error for dead in spool.alerts("dead")] == ["kicked"]


def test_a_crashing_job_logs_the_alert_and_the_traceback(
    spool: Spool, clock: FakeTime, caplog: pytest.LogCaptureFixture
) -> None:
    fail_synchronously(make_retrier(FlakyTelegram(ZeroDivisionError("bug")), spool, clock), clock)
    [record] = lost_alert_records(caplog)
    assert MESSAGE.text in record.getMessage()
    assert record.exc_info is not None
    assert record.exc_info[0] is ZeroDivisionError
    assert spool.counts()["dead"] == 1


# --- digests --------------------------------------------------------------------------------


def queue_alerts(background: Retrier, clock: FakeTime, messages: list[Message]) -> None:
    """Webhooks arriving faster than the chat's turns: all but the first wait."""
    for message in messages:
        admission = background.admit(message, DESTINATION)
        if admission.send_now:  # the webhook's own attempt, which succeeds
            background.delivered([admission.alert])
        else:
            assert background.queue(admission.alert) is not None
        clock.now += 0.05


def _title_numbers(text: str) -> list[int]:
    return [int(n) for n in re.findall(r"Error (\d+)\b", text)]


def numbered(count: int, *, title_length: int = 0) -> list[Message]:
    return [
        format_alert(parse_alert(issue_alert(issue(n, title=f"Error {n} " + "x" * title_length))))
        for n in range(1, count + 1)
    ]


def test_waiting_alerts_become_digests_within_telegrams_limit_none_split_none_lost(
    spool: Spool, clock: FakeTime
) -> None:
    telegram = FlakyTelegram()
    background = make_retrier(telegram, spool, clock)
    queue_alerts(background, clock, numbered(61, title_length=400))
    run_background(background, clock)
    digests = telegram.delivered
    assert len(digests) >= 3  # 60 alerts of about 550 characters do not fit in two
    seen = []
    for digest in digests:
        visible = visible_text(digest.html, parse_mode="HTML")  # Telegram's own checks
        assert visible == digest.text
        count = int(visible.split()[1])
        assert visible.startswith(f"🗂 {count} alerts, received ")
        found = [int(n) for n in re.findall(r"Error (\d+) x", visible)]
        assert len(found) == count
        seen += found
    assert seen == list(range(2, 62))  # each exactly once, oldest first
    assert spool.counts() == {"pending": 0, "dead": 0}


def test_an_alert_leaves_the_spool_only_with_its_digest(spool: Spool, clock: FakeTime) -> None:
    telegram = FlakyTelegram(DOWN)
    pending_at_each_send: list[int] = []

    def deliver(message: Message, destination: Destination) -> None:
        pending_at_each_send.append(spool.counts()["pending"])
        telegram(message, destination)

    background = make_retrier(deliver, spool, clock, attempts=1)
    queue_alerts(background, clock, numbered(4))
    run_background(background, clock)
    # One digest of three failed; its retry, of the same three, delivered them.
    assert pending_at_each_send == [3, 3]
    [digest] = telegram.delivered
    assert digest.text.startswith("🗂 3 alerts")
    assert spool.counts() == {"pending": 0, "dead": 0}


def test_without_coalescing_each_alert_is_its_own_message_on_its_own_turn(
    spool: Spool, clock: FakeTime
) -> None:
    telegram = FlakyTelegram(clock=clock)
    background = make_retrier(telegram, spool, clock, coalesce=False)
    arrived = clock.now
    queue_alerts(background, clock, numbered(4))
    run_background(background, clock)
    assert [_title_numbers(m.text) for m in telegram.delivered] == [[2], [3], [4]]
    assert waits(telegram, arrived) == [CHAT_INTERVAL] * 3


def test_an_alert_past_its_ceiling_is_given_up_alone_and_its_digest_goes_on(
    spool: Spool, clock: FakeTime, caplog: pytest.LogCaptureFixture
) -> None:
    telegram = FlakyTelegram(DOWN, clock=clock)
    background = make_retrier(telegram, spool, clock, attempts=1)
    failed = admit(background)
    background.retry_later(failed, DOWN)  # its one retry is all it has left
    clock.now += 0.5
    queue_alerts(background, clock, numbered(2))
    clock.now += 30  # all three are waiting now
    run_background(background, clock)
    assert telegram.calls == 2
    assert telegram.times[0] == telegram.times[1] - 30
    [delivered] = telegram.delivered  # the second attempt: the two younger ones only
    assert delivered.text.startswith("🗂 2 alerts")
    [record] = lost_alert_records(caplog)
    assert f"alert #{failed.id}" in record.getMessage()
    assert spool.counts() == {"pending": 0, "dead": 1}


def test_a_missing_topic_sends_the_digest_once_to_the_chat_itself(
    spool: Spool, clock: FakeTime, caplog: pytest.LogCaptureFixture
) -> None:
    gone = ThreadNotFound(
        "Telegram refused the message (400): Bad Request: message thread not found",
        error_code=400,
        description="Bad Request: message thread not found",
    )
    telegram = FlakyTelegram(gone)
    background = make_retrier(telegram, spool, clock)
    topic = Destination(DESTINATION.chat, 404)
    first = background.admit(MESSAGE, topic)
    background.delivered([first.alert])
    for _ in range(2):
        assert background.queue(background.admit(MESSAGE, topic).alert) is not None
    run_background(background, clock)
    assert telegram.destinations == [topic, DESTINATION]
    assert telegram.delivered[0].text.startswith("🗂 2 alerts")
    records = [r for r in caplog.records if "TOPIC NOT FOUND" in r.getMessage()]
    assert len(records) == 2
    assert all(r.levelno == logging.ERROR and MESSAGE.text in r.getMessage() for r in records)
    assert lost_alert_records(caplog) == []


def test_a_permanent_refusal_of_a_digest_keeps_every_alert_as_a_dead_letter(
    spool: Spool, clock: FakeTime, caplog: pytest.LogCaptureFixture
) -> None:
    kicked = PermanentDeliveryError("kicked", error_code=403, description="Forbidden")
    background = make_retrier(FlakyTelegram(kicked), spool, clock)
    queue_alerts(background, clock, numbered(3))
    run_background(background, clock)
    assert spool.counts() == {"pending": 0, "dead": 2}
    records = lost_alert_records(caplog)
    # One record per alert, each holding that alert's own text.
    assert sorted(_title_numbers(r.getMessage()) for r in records) == [[2], [3]]


# --- resuming what another process left -----------------------------------------------------


def left_by_a_dead_process(spool_path: str, clock: FakeTime, count: int = 1) -> list[int]:
    """Alerts written ahead by a process that died, one during its synchronous attempt and
    the others while they waited for their turn."""
    other_process = Spool(spool_path, clock=clock)
    ids = [
        other_process.add(MESSAGE, DESTINATION, received_at=clock.now, lease_for=10).alert.id
        for _ in range(count)
    ]
    other_process.close()
    return [alert_id for alert_id in ids if alert_id is not None]


def test_an_alert_left_by_a_dead_process_is_taken_up_once_its_lease_expires(
    spool: Spool, clock: FakeTime
) -> None:
    [alert_id] = left_by_a_dead_process(spool.path, clock)
    telegram = FlakyTelegram()
    background = make_retrier(telegram, spool, clock)
    background.dispatch_once()  # its lease still runs: it may still be in flight
    assert background.wait_idle(timeout=10)
    assert telegram.calls == 0
    clock.now += 11
    run_background(background, clock)
    assert telegram.delivered == [MESSAGE]
    assert spool.counts() == {"pending": 0, "dead": 0}
    assert alert_id == 1


def test_an_interrupted_attempt_counts_as_one_that_may_have_arrived(
    spool: Spool, clock: FakeTime
) -> None:
    left_by_a_dead_process(spool.path, clock)
    clock.now += 11
    telegram = FlakyTelegram(forever=DOWN)
    background = make_retrier(telegram, spool, clock, attempts=2)
    run_background(background, clock)
    assert telegram.calls == 2  # the dead process's attempt was the first of three
    [dead] = spool.alerts("dead")
    assert dead.unsure_attempts == 3


def test_an_alert_resumed_at_its_ceiling_is_not_sent_again(
    spool: Spool, clock: FakeTime, caplog: pytest.LogCaptureFixture
) -> None:
    [alert_id] = left_by_a_dead_process(spool.path, clock)
    clock.now += 11
    # Another process worked it up to the ceiling and died before recording the outcome.
    [alert] = spool.claim(DESTINATION, lease_for=5, how_many=len)
    alert.unsure_attempts = 4
    spool.save([alert], lease_until=None)
    telegram = FlakyTelegram()
    background = make_retrier(telegram, spool, clock, attempts=3)
    run_background(background, clock)
    assert telegram.calls == 0
    assert [dead.id for dead in spool.alerts("dead")] == [alert_id]
    [record] = lost_alert_records(caplog)
    assert "another could post it twice" in record.getMessage()


def test_a_worker_without_free_threads_leaves_destinations_waiting_for_later(
    spool: Spool, clock: FakeTime, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(retrier, "MAX_RETRY_THREADS", 2)
    release = threading.Event()
    telegram = FlakyTelegram()
    background = make_retrier(telegram, spool, clock, sleep=paused_until(release))
    for chat in (-1, -2, -3, -4):
        background.retry_later(admit(background, Destination(chat)), REFUSED)
    clock.now += 2
    background.dispatch_once()
    time.sleep(0.2)
    unleased = [a for a in spool.alerts("pending") if a.lease_owner is None]
    assert len(unleased) == 2  # two threads, two destinations taken up
    release.set()
    run_background(background, clock)
    assert len(telegram.delivered) == 4
    assert spool.counts() == {"pending": 0, "dead": 0}


def test_a_worker_never_works_an_alert_another_has_taken_over(
    spool: Spool, clock: FakeTime
) -> None:
    telegram = FlakyTelegram()
    background = make_retrier(telegram, spool, clock)
    alert = admit(background)
    clock.now += 60  # this worker stalled past its lease...
    other_worker = Spool(spool.path, clock=clock)
    assert len(other_worker.claim(DESTINATION, lease_for=35, how_many=len)) == 1  # ...lost it
    background.retry_later(alert, DOWN)
    background.dispatch_once()
    assert background.wait_idle(timeout=10)
    assert telegram.calls == 0
    assert spool.alerts("pending")[0].lease_owner == other_worker.owner


# --- stopping ------------------------------------------------------------------------------


def test_shutdown_gives_spooled_alerts_back_without_another_attempt(
    spool: Spool, clock: FakeTime, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(retrier, "MAX_RETRY_THREADS", 2)
    telegram = FlakyTelegram(forever=DOWN)
    # Fake time for scheduling, the real pause (30 minutes) for waiting: only shutdown can
    # cut it short.
    background = make_retrier(
        telegram, spool, clock, wait=1800.0, sleep=retrier._sleep_unless_stopping
    )
    for chat in (-1, -2, -3):
        background.retry_later(admit(background, Destination(chat)), DOWN)
    clock.now += 1800
    background.dispatch_once()  # two jobs; the third destination waits in the spool
    deadline = time.monotonic() + 5
    while telegram.calls < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.1)  # both are in their 30-minute pause now
    retrier.shutdown()
    assert background.wait_idle(timeout=0)
    assert telegram.calls == 2
    pending = spool.alerts("pending")
    assert len(pending) == 3
    assert all(a.lease_owner is None and a.lease_until is None for a in pending)
    assert sorted(a.unsure_attempts for a in pending) == [1, 2, 2]  # every attempt remembered


def test_shutdown_gives_in_memory_retries_a_last_attempt_and_logs_what_is_left(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(retrier, "MAX_RETRY_THREADS", 2)
    telegram = FlakyTelegram(forever=DOWN)
    background = make_retrier(telegram, None, wait=1800.0)
    for chat in (-1, -2, -3, -4):  # two running, two waiting in the queue
        background.retry_later(admit(background, Destination(chat)), DOWN)
    retrier.shutdown()
    assert background.wait_idle(timeout=0)
    assert telegram.calls == 2  # one last attempt each for the two that were running
    records = lost_alert_records(caplog)
    assert len(records) == 4
    assert all(MESSAGE.text in r.getMessage() for r in records)
    reasons = [r.getMessage().split("\n")[0] for r in records]
    assert sum("the relay shut down before retrying it" in r for r in reasons) == 2
    assert sum("the relay is shutting down" in r for r in reasons) == 2


def test_an_alert_failing_while_the_relay_stops_stays_in_the_spool(
    spool: Spool, clock: FakeTime
) -> None:
    background = make_retrier(FlakyTelegram(), spool, clock)
    retrier._stopping.set()
    try:
        assert background.retry_later(admit(background), DOWN) is not None
    finally:
        retrier._stopping.clear()
    [pending] = spool.alerts("pending")
    assert pending.lease_owner is None


# --- without a usable spool -----------------------------------------------------------------


def test_without_a_spool_a_failed_alert_is_retried_from_memory_and_says_so(
    clock: FakeTime, caplog: pytest.LogCaptureFixture
) -> None:
    telegram = FlakyTelegram(DOWN)
    fail_synchronously(make_retrier(telegram, None, clock), clock)
    assert telegram.delivered == [MESSAGE]
    [warning] = [r for r in caplog.records if "kept in memory only" in r.getMessage()]
    assert warning.levelno == logging.WARNING  # the operator's choice, not a fault
    assert "(RELAY_SPOOL_PATH=off)" in warning.getMessage()


def test_without_a_spool_alerts_are_still_paced(
    clock: FakeTime, caplog: pytest.LogCaptureFixture
) -> None:
    telegram = FlakyTelegram(clock=clock)
    background = make_retrier(telegram, None, clock)
    arrived = clock.now
    assert background.admit(MESSAGE, DESTINATION).send_now
    later = background.admit(MESSAGE, DESTINATION)
    assert not later.send_now
    assert background.queue(later.alert) == later.alert.label
    assert background.wait_idle(timeout=10)
    assert waits(telegram, arrived) == [CHAT_INTERVAL]


def test_an_unusable_spool_falls_back_to_memory(
    tmp_path: Path, clock: FakeTime, caplog: pytest.LogCaptureFixture
) -> None:
    broken = Spool(str(tmp_path / "missing-directory" / "spool.sqlite3"), clock=clock)
    telegram = FlakyTelegram(DOWN)
    background = make_retrier(telegram, broken, clock)
    alert = fail_synchronously(background, clock)
    assert alert.id is None
    assert telegram.delivered == [MESSAGE]
    assert background.spool_problem() is not None
    assert "does not exist" in (background.spool_problem() or "")
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert any(m.startswith("DURABILITY LOST") for m in errors)
    assert any("kept in memory only (the spool is unusable)" in m for m in errors)


def test_a_full_spool_still_tries_but_cannot_retry(
    tmp_path: Path, clock: FakeTime, caplog: pytest.LogCaptureFixture
) -> None:
    spool = Spool(str(tmp_path / "spool.sqlite3"), max_pending=1, clock=clock)
    background = make_retrier(FlakyTelegram(), spool, clock)
    admit(background)
    over = admit(background, Destination(-5))
    assert over.id is None
    assert background.retry_later(over, DOWN) is None
    [record] = lost_alert_records(caplog)
    assert "the spool is full (1 alerts are already pending)" in record.getMessage()
    assert MESSAGE.text in record.getMessage()


def test_failing_destinations_are_retried_side_by_side(spool: Spool, clock: FakeTime) -> None:
    # Each job's pause after its failed attempt waits for all of them to be pausing at once:
    # if jobs queued behind each other, the barrier would break instead. (25 chats: within
    # the bot's 30 messages a second, so that every chat has its turn at once.)
    chats = 25
    everyone_waiting = threading.Barrier(chats, timeout=10)

    def pause(seconds: float) -> None:
        if seconds >= 30:  # the pause after the failed attempt, not a wait for a turn
            everyone_waiting.wait()
        clock.sleep(seconds)

    telegram = FlakyTelegram(*[DOWN] * chats)
    background = make_retrier(telegram, spool, clock, sleep=pause)
    for chat in range(1, chats + 1):
        background.retry_later(admit(background, Destination(-chat)), REFUSED)
    clock.now += 2  # every chat's turn has come
    background.dispatch_once()
    assert background.wait_idle(timeout=20)
    assert not everyone_waiting.broken
    assert len(telegram.delivered) == chats


def test_an_overflowing_memory_queue_refuses_loudly(
    clock: FakeTime, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(retrier, "MAX_MEMORY_RETRIES", 2)
    release = threading.Event()
    background = make_retrier(FlakyTelegram(), None, wait=1.0, sleep=paused_until(release))
    assert background.retry_later(admit(background), DOWN) is not None
    assert background.retry_later(admit(background), DOWN) is not None
    assert background.retry_later(admit(background), DOWN) is None
    [record] = lost_alert_records(caplog)
    assert "2 alerts are already waiting for a retry in memory" in record.getMessage()
    assert MESSAGE.text in record.getMessage()
    release.set()
    assert background.wait_idle(timeout=10)
    assert background.retry_later(admit(background), DOWN) is not None


def test_each_worker_takes_up_spooled_alerts_as_it_starts(
    settings: Settings,
    telegram: responses.RequestsMock,
    clock: FakeTime,
    caplog: pytest.LogCaptureFixture,
) -> None:
    assert settings.spool_path is not None
    left_by_a_dead_process(settings.spool_path, clock, count=3)
    clock.now += 11
    telegram.post(SEND_URL, json={"ok": True, "result": {"message_id": 1}})
    app = create_app(settings, retry_sleep=clock.sleep, clock=clock)
    start_background_work(app)  # what gunicorn's post_worker_init does in each worker
    deadline = time.monotonic() + 5
    while "delivered" not in caplog.text and time.monotonic() < deadline:
        time.sleep(0.02)
    assert len(telegram.calls) == 1
    digest = "of alert(s) #1, #2, #3 to chat -1001234567890 (a digest of 3) (background, "
    assert re.search(
        re.escape(digest) + r"\d+ ms\): delivered 11\.0 s after the first", caplog.text
    )


def test_a_wrapped_app_is_reported_rather_than_silently_not_resumed(
    caplog: pytest.LogCaptureFixture,
) -> None:
    start_background_work(object())
    assert "alerts left in the spool by an earlier process will not be taken up" in caplog.text


def test_each_attempt_logs_one_record_and_a_long_outage_warns_at_each_doubling(
    spool: Spool, clock: FakeTime, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="relay_app")
    telegram = FlakyTelegram(*[REFUSED] * 10, clock=clock)
    background = make_retrier(telegram, spool, clock)
    alert = admit(background)
    with pytest.raises(RetryableDeliveryError):
        background.send_now(alert)  # the webhook's own attempt
    background.retry_later(alert, REFUSED)
    run_background(background, clock)
    attempts = [
        (r.levelno, fields)
        for r in caplog.records
        if (fields := getattr(r, EVENT_ATTRIBUTE, {})).get("event") == "attempt"
    ]
    assert [fields["attempt"] for _, fields in attempts] == list(range(1, 12))
    assert [fields["kind"] for _, fields in attempts] == ["sync"] + ["background"] * 10
    outcomes = [fields["outcome"] for _, fields in attempts]
    assert outcomes == ["retryable_error"] * 10 + ["delivered"]
    assert all(fields["alerts"] == [alert.label] for _, fields in attempts)
    warned = [fields["attempt"] for level, fields in attempts if level == logging.WARNING]
    assert warned == [1, 2, 4, 8]  # posted nothing: the rest are INFO
