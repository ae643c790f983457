from __future__ import annotations

import logging
import threading
from collections.abc import Iterator

import pytest

from relay_app import retrier
from relay_app.errors import PermanentDeliveryError, RetryableDeliveryError
from relay_app.formatting import Message, format_alert
from relay_app.glitchtip import parse_alert
from relay_app.retrier import Retrier
from tests.conftest import RecordingSleep
from tests.payloads import issue, issue_alert

MESSAGE = format_alert(parse_alert(issue_alert(issue(1))))
DOWN = RetryableDeliveryError("Telegram did not answer within 5.0 s")


class FlakyTelegram:
    """A delivery function that fails with the scripted errors, then succeeds."""

    def __init__(self, *errors: BaseException) -> None:
        self.errors = list(errors)
        self.delivered: list[Message] = []
        self.calls = 0

    def __call__(self, message: Message) -> None:
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        self.delivered.append(message)


@pytest.fixture(autouse=True)
def fresh_executor() -> Iterator[None]:
    yield
    retrier.shutdown()


def lost_alert_records(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [
        r
        for r in caplog.records
        if r.levelno == logging.ERROR and "ALERT NOT DELIVERED" in r.getMessage()
    ]


def run(
    deliver: FlakyTelegram, sleeps: RecordingSleep, first_error: RetryableDeliveryError = DOWN
) -> None:
    background = Retrier(deliver, attempts=3, wait=30.0, sleep=sleeps)
    assert background.submit(MESSAGE, first_error) is not None
    assert background.wait_idle(timeout=10)


def test_a_retry_delivers_the_prebuilt_message(sleeps: RecordingSleep) -> None:
    telegram = FlakyTelegram(DOWN)
    run(telegram, sleeps)
    assert telegram.delivered == [MESSAGE]
    assert telegram.calls == 2
    assert sleeps.calls == [30.0, 30.0]  # after the failed synchronous attempt, then between


def test_retries_at_the_ceiling_give_up_with_an_error_holding_the_text(
    sleeps: RecordingSleep, caplog: pytest.LogCaptureFixture
) -> None:
    last = RetryableDeliveryError("Telegram answered HTTP 502 without a Bot API reply")
    telegram = FlakyTelegram(DOWN, DOWN, last, DOWN)
    run(telegram, sleeps)
    assert telegram.calls == 3
    assert telegram.delivered == []
    [record] = lost_alert_records(caplog)
    assert MESSAGE.text in record.getMessage()
    assert "after 3 background attempt(s)" in record.getMessage()
    assert str(last) in record.getMessage()


def test_telegrams_retry_after_lengthens_the_wait(sleeps: RecordingSleep) -> None:
    telegram = FlakyTelegram(RetryableDeliveryError("429", retry_after=90))
    run(telegram, sleeps, first_error=RetryableDeliveryError("429", retry_after=45))
    assert sleeps.calls == [45.0, 90.0]
    assert telegram.delivered == [MESSAGE]


def test_a_permanent_error_stops_the_retries_at_once(
    sleeps: RecordingSleep, caplog: pytest.LogCaptureFixture
) -> None:
    kicked = PermanentDeliveryError("kicked", error_code=403, description="Forbidden")
    telegram = FlakyTelegram(kicked, DOWN)
    run(telegram, sleeps)
    assert telegram.calls == 1
    [record] = lost_alert_records(caplog)
    assert MESSAGE.text in record.getMessage()
    assert "Telegram refused it permanently after 1 background attempt" in record.getMessage()


def test_a_crashing_job_logs_the_alert_and_the_traceback(
    sleeps: RecordingSleep, caplog: pytest.LogCaptureFixture
) -> None:
    run(FlakyTelegram(ZeroDivisionError("bug")), sleeps)
    [record] = lost_alert_records(caplog)
    assert MESSAGE.text in record.getMessage()
    assert record.exc_info is not None
    assert record.exc_info[0] is ZeroDivisionError


def test_a_hundred_failing_alerts_are_retried_side_by_side() -> None:
    # Each job's first pause waits for all hundred to be pausing at once: if jobs queued
    # behind each other, the barrier would break instead.
    everyone_waiting = threading.Barrier(100, timeout=10)

    def pause(seconds: float) -> None:
        if seconds == 30.0:
            everyone_waiting.wait()

    telegram = FlakyTelegram()
    background = Retrier(telegram, attempts=3, wait=30.0, sleep=pause)
    for _ in range(100):
        background.submit(MESSAGE, DOWN)
    assert background.wait_idle(timeout=20)
    assert not everyone_waiting.broken
    assert len(telegram.delivered) == 100


def test_an_overflowing_queue_refuses_loudly(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(retrier, "MAX_PENDING_RETRIES", 2)
    release = threading.Event()

    def pause(_: float) -> None:
        release.wait(10)

    background = Retrier(FlakyTelegram(), attempts=3, wait=0, sleep=pause)
    assert background.submit(MESSAGE, DOWN) is not None
    assert background.submit(MESSAGE, DOWN) is not None
    assert background.submit(MESSAGE, DOWN) is None
    [record] = lost_alert_records(caplog)
    assert "2 alerts are already waiting" in record.getMessage()
    assert MESSAGE.text in record.getMessage()
    release.set()
    assert background.wait_idle(timeout=10)
    assert background.submit(MESSAGE, DOWN) is not None  # room again once they are done


def test_shutdown_wakes_sleeping_retries_for_a_last_attempt_and_logs_what_is_left(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(retrier, "MAX_RETRY_THREADS", 2)
    telegram = FlakyTelegram(*[DOWN] * 10)
    # The real pause: 30 minutes, which only shutdown can cut short.
    background = Retrier(telegram, attempts=3, wait=1800.0)
    for _ in range(4):  # two running, two waiting in the queue
        background.submit(MESSAGE, DOWN)
    retrier.shutdown()
    assert background.wait_idle(timeout=0)
    assert telegram.calls == 2  # one last attempt each for the two that were running
    records = lost_alert_records(caplog)
    assert len(records) == 4
    assert all(MESSAGE.text in r.getMessage() for r in records)
    reasons = sorted(r.getMessage().split("\n")[0] for r in records)
    assert sum("the relay shut down before it could start" in r for r in reasons) == 2
    assert sum("the relay is shutting down after 1 background attempt" in r for r in reasons) == 2


def test_nothing_is_accepted_while_shutting_down(caplog: pytest.LogCaptureFixture) -> None:
    background = Retrier(FlakyTelegram(), attempts=1, wait=0)
    retrier._stopping.set()
    try:
        assert background.submit(MESSAGE, DOWN) is None
    finally:
        retrier._stopping.clear()
    assert any("shutting down" in r.getMessage() for r in lost_alert_records(caplog))
