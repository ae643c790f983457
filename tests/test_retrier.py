from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import responses

from relay_app import create_app, retrier, start_background_work
from relay_app.config import Settings
from relay_app.errors import PermanentDeliveryError, RetryableDeliveryError
from relay_app.formatting import Message, format_alert
from relay_app.glitchtip import parse_alert
from relay_app.retrier import Retrier
from relay_app.spool import Spool, SpooledAlert
from tests.conftest import SEND_URL, FakeTime
from tests.payloads import issue, issue_alert

MESSAGE = format_alert(parse_alert(issue_alert(issue(1))))
# May have reached Telegram: counts toward RELAY_RETRY_ATTEMPTS.
DOWN = RetryableDeliveryError("Telegram did not answer within 5.0 s")
# Certainly did not: goes on until RELAY_RETRY_MAX_AGE.
REFUSED = RetryableDeliveryError(
    "connection to Telegram failed: Connection refused", maybe_delivered=False
)


class FlakyTelegram:
    """A delivery function that fails with the scripted errors, then succeeds."""

    def __init__(self, *errors: BaseException, forever: BaseException | None = None) -> None:
        self.errors = list(errors)
        self.forever = forever
        self.delivered: list[Message] = []
        self.calls = 0

    def __call__(self, message: Message) -> None:
        self.calls += 1
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
    telegram: FlakyTelegram,
    spool: Spool | None,
    clock: FakeTime | None = None,
    *,
    attempts: int = 3,
    wait: float = 30.0,
    max_age: float = 21600.0,
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
        sleep=sleep or (clock.sleep if clock is not None else None),
        clock=clock or time.time,
    )


def fail_synchronously(
    background: Retrier, first_error: RetryableDeliveryError = DOWN
) -> SpooledAlert:
    """What the webhook does: write ahead, fail the first attempt, hand over, then wait here
    until the background is done."""
    alert = background.admit(MESSAGE)
    assert background.retry_later(alert, first_error) is not None
    assert background.wait_idle(timeout=10)
    return alert


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
    telegram = FlakyTelegram(DOWN)
    fail_synchronously(make_retrier(telegram, spool, clock))
    assert telegram.delivered == [MESSAGE]
    assert telegram.calls == 2
    assert clock.sleeps == [30.0, 30.0]  # after the failed synchronous attempt, then between
    assert spool.counts() == {"pending": 0, "dead": 0}


def test_attempts_that_may_have_arrived_stop_at_the_ceiling_and_leave_a_dead_letter(
    spool: Spool, clock: FakeTime, caplog: pytest.LogCaptureFixture
) -> None:
    last = RetryableDeliveryError("Telegram answered HTTP 502 without a Bot API reply")
    telegram = FlakyTelegram(DOWN, DOWN, last, DOWN)
    alert = fail_synchronously(make_retrier(telegram, spool, clock))
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
    telegram = FlakyTelegram(*[REFUSED] * 12)
    fail_synchronously(make_retrier(telegram, spool, clock), REFUSED)
    [delivered] = telegram.delivered  # 13 attempts, far past RELAY_RETRY_ATTEMPTS=3
    assert delivered.text.startswith(MESSAGE.text)
    assert clock.sleeps == [1, 2, 4, 8, 16, 30, 30, 30, 30, 30, 30, 30, 30]


def test_only_the_uncertain_attempts_count_toward_the_ceiling(
    spool: Spool, clock: FakeTime
) -> None:
    # At most 1 + RELAY_RETRY_ATTEMPTS attempts in all may reach Telegram: that many copies
    # at worst, as before the spool. Here the synchronous attempt was certainly not one.
    telegram = FlakyTelegram(REFUSED, DOWN, REFUSED, REFUSED, DOWN, REFUSED, DOWN, DOWN)
    fail_synchronously(make_retrier(telegram, spool, clock), REFUSED)
    assert telegram.calls == 8
    assert telegram.delivered == []
    [dead] = spool.alerts("dead")
    assert (dead.attempts, dead.unsure_attempts) == (9, 4)


def test_a_long_outage_ends_at_the_maximum_age_not_sooner(
    spool: Spool, clock: FakeTime, caplog: pytest.LogCaptureFixture
) -> None:
    telegram = FlakyTelegram(forever=REFUSED)
    started = clock.now
    fail_synchronously(make_retrier(telegram, spool, clock, max_age=3600.0), REFUSED)
    assert clock.now - started == pytest.approx(3600.0)  # the last wait is cut to the horizon
    # After waits of 1, 2, 4, 8 and 16 s, one attempt every 30 s, and a last one at the horizon.
    assert telegram.calls == 5 + (3600 - 31) // 30 + 1
    [record] = lost_alert_records(caplog)
    assert "older than RELAY_RETRY_MAX_AGE (3600 s)" in record.getMessage()
    assert spool.counts() == {"pending": 0, "dead": 1}


def test_telegrams_retry_after_lengthens_the_wait_and_costs_no_attempt(
    spool: Spool, clock: FakeTime
) -> None:
    too_many = RetryableDeliveryError("429", retry_after=90, maybe_delivered=False)
    telegram = FlakyTelegram(*[too_many] * 5)
    first = RetryableDeliveryError("429", retry_after=45, maybe_delivered=False)
    fail_synchronously(make_retrier(telegram, spool, clock, attempts=1), first)
    assert clock.sleeps == [45.0, 90.0, 90.0, 90.0, 90.0, 90.0]
    assert len(telegram.delivered) == 1


def test_a_message_delivered_after_a_minute_says_when_it_was_sent(
    spool: Spool, clock: FakeTime
) -> None:
    telegram = FlakyTelegram(DOWN, DOWN)
    alert = fail_synchronously(make_retrier(telegram, spool, clock))
    [delivered] = telegram.delivered
    assert delivered.text.startswith(MESSAGE.text)
    assert delivered.text.endswith("UTC; delivered 1 min 30 s later.")
    assert "⏳ Late: GlitchTip sent this at 2027-01-15 08:00:00 UTC" in delivered.html
    assert alert.received_at == 1_800_000_000.0


def test_a_message_delivered_within_a_minute_is_sent_as_built(
    spool: Spool, clock: FakeTime
) -> None:
    telegram = FlakyTelegram()
    fail_synchronously(make_retrier(telegram, spool, clock))
    assert telegram.delivered == [MESSAGE]  # 30 s late: no note


def test_a_permanent_error_stops_the_retries_at_once(
    spool: Spool, clock: FakeTime, caplog: pytest.LogCaptureFixture
) -> None:
    kicked = PermanentDeliveryError("kicked", error_code=403, description="Forbidden")
    telegram = FlakyTelegram(kicked, DOWN)
    fail_synchronously(make_retrier(telegram, spool, clock))
    assert telegram.calls == 1
    [record] = lost_alert_records(caplog)
    assert MESSAGE.text in record.getMessage()
    assert "Telegram refused it permanently" in record.getMessage()
    assert [dead.last_error for dead in spool.alerts("dead")] == ["kicked"]


def test_a_crashing_job_logs_the_alert_and_the_traceback(
    spool: Spool, clock: FakeTime, caplog: pytest.LogCaptureFixture
) -> None:
    fail_synchronously(make_retrier(FlakyTelegram(ZeroDivisionError("bug")), spool, clock))
    [record] = lost_alert_records(caplog)
    assert MESSAGE.text in record.getMessage()
    assert record.exc_info is not None
    assert record.exc_info[0] is ZeroDivisionError
    assert spool.counts()["dead"] == 1


# --- resuming what another process left -----------------------------------------------------


def left_by_a_dead_process(spool_path: str, clock: FakeTime, count: int = 1) -> list[int]:
    """Alerts written ahead by a process that died during the synchronous attempt."""
    other_process = Spool(spool_path, clock=clock)
    ids = [
        other_process.add(MESSAGE, received_at=clock.now, lease_until=clock.now + 10).id
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
    assert background.resume_once() == 0  # its lease still runs: it may still be in flight
    clock.now += 11
    assert background.resume_once() == 1
    assert background.wait_idle(timeout=10)
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
    background.resume_once()
    assert background.wait_idle(timeout=10)
    assert telegram.calls == 2  # the dead process's attempt was the first of three
    [dead] = spool.alerts("dead")
    assert dead.unsure_attempts == 3


def test_an_alert_resumed_at_its_ceiling_is_not_sent_again(
    spool: Spool, clock: FakeTime, caplog: pytest.LogCaptureFixture
) -> None:
    [alert_id] = left_by_a_dead_process(spool.path, clock)
    clock.now += 11
    # Another process worked it up to the ceiling and died before recording the outcome.
    [alert] = spool.claim(1, due_by=clock.now, lease_for=5)
    alert.unsure_attempts = 4
    spool.save(alert, lease_until=None)
    telegram = FlakyTelegram()
    background = make_retrier(telegram, spool, clock, attempts=3)
    background.resume_once()
    assert background.wait_idle(timeout=10)
    assert telegram.calls == 0
    assert [dead.id for dead in spool.alerts("dead")] == [alert_id]
    [record] = lost_alert_records(caplog)
    assert "another could post it twice" in record.getMessage()


def test_a_worker_without_free_threads_leaves_alerts_in_the_spool_for_later(
    spool: Spool, clock: FakeTime, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(retrier, "MAX_RETRY_THREADS", 2)
    release = threading.Event()
    telegram = FlakyTelegram()
    background = make_retrier(telegram, spool, clock, sleep=paused_until(release))
    alerts = [background.admit(MESSAGE) for _ in range(4)]
    for alert in alerts:
        assert background.retry_later(alert, DOWN) == alert.label
    waiting = [a for a in spool.alerts("pending") if a.lease_owner is None]
    assert [a.id for a in waiting] == [alerts[2].id, alerts[3].id]
    release.set()
    assert background.wait_idle(timeout=10)
    clock.now += 30
    assert background.resume_once() == 2
    assert background.wait_idle(timeout=10)
    assert len(telegram.delivered) == 4
    assert spool.counts() == {"pending": 0, "dead": 0}


def test_a_worker_never_works_an_alert_another_has_taken_over(
    spool: Spool, clock: FakeTime, caplog: pytest.LogCaptureFixture
) -> None:
    telegram = FlakyTelegram()
    background = make_retrier(telegram, spool, clock)
    alert = background.admit(MESSAGE)
    clock.now += 60  # this worker stalled past its lease...
    other_worker = Spool(spool.path, clock=clock)
    assert len(other_worker.claim(1, due_by=clock.now, lease_for=35)) == 1  # ...and lost it
    background.retry_later(alert, DOWN)
    assert background.wait_idle(timeout=10)
    assert telegram.calls == 0
    assert spool.alerts("pending")[0].lease_owner == other_worker.owner


# --- stopping ------------------------------------------------------------------------------


def test_shutdown_gives_spooled_alerts_back_without_a_last_attempt(
    spool: Spool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(retrier, "MAX_RETRY_THREADS", 2)
    telegram = FlakyTelegram(forever=DOWN)
    # Real time and the real pause: 30 minutes, which only shutdown can cut short.
    background = make_retrier(telegram, spool, wait=1800.0)
    alerts = [background.admit(MESSAGE) for _ in range(3)]
    for alert in alerts:
        background.retry_later(alert, DOWN)  # two sleeping, one waiting in the spool
    retrier.shutdown()
    assert background.wait_idle(timeout=0)
    assert telegram.calls == 0
    pending = spool.alerts("pending")
    assert len(pending) == 3
    assert all(a.lease_owner is None and a.lease_until is None for a in pending)
    assert all(a.unsure_attempts == 1 for a in pending)  # the synchronous attempt is remembered


def test_shutdown_gives_in_memory_retries_a_last_attempt_and_logs_what_is_left(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(retrier, "MAX_RETRY_THREADS", 2)
    telegram = FlakyTelegram(forever=DOWN)
    background = make_retrier(telegram, None, wait=1800.0)
    for _ in range(4):  # two running, two waiting in the queue
        background.retry_later(background.admit(MESSAGE), DOWN)
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
        assert background.retry_later(background.admit(MESSAGE), DOWN) is not None
    finally:
        retrier._stopping.clear()
    [pending] = spool.alerts("pending")
    assert pending.lease_owner is None


# --- without a usable spool -----------------------------------------------------------------


def test_without_a_spool_a_failed_alert_is_retried_from_memory_and_says_so(
    clock: FakeTime, caplog: pytest.LogCaptureFixture
) -> None:
    telegram = FlakyTelegram(DOWN)
    fail_synchronously(make_retrier(telegram, None, clock))
    assert telegram.delivered == [MESSAGE]
    [warning] = [r for r in caplog.records if "retried from memory only" in r.getMessage()]
    assert warning.levelno == logging.WARNING  # the operator's choice, not a fault
    assert "(RELAY_SPOOL_PATH=off)" in warning.getMessage()


def test_an_unusable_spool_falls_back_to_memory(
    tmp_path: Path, clock: FakeTime, caplog: pytest.LogCaptureFixture
) -> None:
    broken = Spool(str(tmp_path / "missing-directory" / "spool.sqlite3"), clock=clock)
    telegram = FlakyTelegram(DOWN)
    background = make_retrier(telegram, broken, clock)
    alert = fail_synchronously(background)
    assert alert.id is None
    assert telegram.delivered == [MESSAGE]
    assert background.spool_problem() is not None
    assert "does not exist" in (background.spool_problem() or "")
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert any(m.startswith("DURABILITY LOST") for m in errors)
    assert any("retried from memory only (the spool is unusable)" in m for m in errors)


def test_a_full_spool_still_tries_but_cannot_retry(
    tmp_path: Path, clock: FakeTime, caplog: pytest.LogCaptureFixture
) -> None:
    spool = Spool(str(tmp_path / "spool.sqlite3"), max_pending=1, clock=clock)
    background = make_retrier(FlakyTelegram(), spool, clock)
    background.admit(MESSAGE)
    over = background.admit(MESSAGE)
    assert over.id is None
    assert background.retry_later(over, DOWN) is None
    [record] = lost_alert_records(caplog)
    assert "the spool is full (1 alerts are already pending)" in record.getMessage()
    assert MESSAGE.text in record.getMessage()


def test_a_hundred_failing_alerts_are_retried_side_by_side(spool: Spool) -> None:
    # Each job's first pause waits for all hundred to be pausing at once: if jobs queued
    # behind each other, the barrier would break instead.
    everyone_waiting = threading.Barrier(100, timeout=10)

    def pause(seconds: float) -> None:
        if seconds > 0:
            everyone_waiting.wait()

    telegram = FlakyTelegram()
    background = make_retrier(telegram, spool, sleep=pause)
    for _ in range(100):
        background.retry_later(background.admit(MESSAGE), DOWN)
    assert background.wait_idle(timeout=20)
    assert not everyone_waiting.broken
    assert len(telegram.delivered) == 100


def test_an_overflowing_memory_queue_refuses_loudly(
    clock: FakeTime, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(retrier, "MAX_MEMORY_RETRIES", 2)
    release = threading.Event()
    background = make_retrier(FlakyTelegram(), None, wait=1.0, sleep=paused_until(release))
    assert background.retry_later(background.admit(MESSAGE), DOWN) is not None
    assert background.retry_later(background.admit(MESSAGE), DOWN) is not None
    assert background.retry_later(background.admit(MESSAGE), DOWN) is None
    [record] = lost_alert_records(caplog)
    assert "2 alerts are already waiting for a retry in memory" in record.getMessage()
    assert MESSAGE.text in record.getMessage()
    release.set()
    assert background.wait_idle(timeout=10)
    assert background.retry_later(background.admit(MESSAGE), DOWN) is not None


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
    while len(telegram.calls) < 3 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert len(telegram.calls) == 3
    assert "took up 3 spooled alert(s): #1, #2, #3" in caplog.text


def test_a_wrapped_app_is_reported_rather_than_silently_not_resumed(
    caplog: pytest.LogCaptureFixture,
) -> None:
    start_background_work(object())
    assert "alerts left in the spool by an earlier process will not be taken up" in caplog.text
