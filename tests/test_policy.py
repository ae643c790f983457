"""The retry policy alone: a ledger and an error in, a due time or a death out."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from relay_app.core.errors import RateLimited, RetryableDeliveryError
from relay_app.core.outcomes import Dead, RetryAt
from relay_app.delivery.policy import RetryPolicy

NOW = 1_800_000_000.0
TIMED_OUT = RetryableDeliveryError("Telegram did not answer within 5.0 s")
REFUSED = RetryableDeliveryError("connection refused", maybe_delivered=False)
POLICY = RetryPolicy(attempts=3, wait=30.0, max_age=3600.0)


@dataclass
class Ledger:
    attempts: int
    unsure_attempts: int
    retry_from: float = NOW
    second_chance: bool = False


def wait_after(ledger: Ledger, error: RetryableDeliveryError, now: float = NOW) -> float:
    decision = POLICY.after_failure(ledger, error, now)
    assert isinstance(decision, RetryAt), decision
    return decision.at - now


def test_the_first_retry_after_a_reply_that_may_be_lost_comes_a_second_later_the_rest_spaced() -> (
    None
):
    assert [wait_after(Ledger(n, n), TIMED_OUT) for n in (1, 2, 3)] == [1.0, 30.0, 30.0]


def test_attempts_that_never_reached_telegram_double_up_to_the_wait() -> None:
    waits = [wait_after(Ledger(n, 0), REFUSED) for n in range(1, 9)]
    assert waits == [1.0, 2.0, 4.0, 8.0, 16.0, 30.0, 30.0, 30.0]


def test_each_kind_counts_only_its_own_failures() -> None:
    # Four refused attempts then one that timed out: the first of its kind, a second's wait.
    assert wait_after(Ledger(5, 1), TIMED_OUT) == 1.0
    # Three that timed out, then a refused one: the first refusal, a second's wait.
    assert wait_after(Ledger(4, 3), REFUSED) == 1.0


def test_at_most_one_plus_retry_attempts_may_reach_telegram() -> None:
    dead = POLICY.after_failure(Ledger(4, 4), TIMED_OUT, NOW)
    assert dead == Dead(
        "exhausted",
        "giving up: 4 attempts may have reached Telegram (the first and "
        "RELAY_RETRY_ATTEMPTS=3 more), and another could post it twice",
    )
    assert POLICY.before_attempt(Ledger(4, 4), NOW) == dead
    assert POLICY.before_attempt(Ledger(9, 3), NOW) is None  # six of them never arrived


def test_a_second_chance_is_one_more_attempt_that_may_arrive() -> None:
    assert POLICY.before_attempt(Ledger(4, 4, second_chance=True), NOW) is None
    dead = POLICY.after_failure(Ledger(5, 5, second_chance=True), TIMED_OUT, NOW)
    assert isinstance(dead, Dead)
    assert "RELAY_RETRY_ATTEMPTS=3 more, and its second chance" in dead.reason


def test_the_horizon_ends_retries_and_cuts_the_last_wait() -> None:
    assert wait_after(Ledger(9, 0), REFUSED, now=NOW + 3590) == 10.0  # not 30
    dead = POLICY.after_failure(Ledger(9, 0), REFUSED, NOW + 3600)
    assert dead == Dead(
        "too_old", "giving up after 9 attempts: it is older than RELAY_RETRY_MAX_AGE (3600 s)"
    )
    assert POLICY.before_attempt(Ledger(0, 0), NOW + 3600) == dead.__class__(
        "too_old", "giving up after 0 attempts: it is older than RELAY_RETRY_MAX_AGE (3600 s)"
    )


@pytest.mark.parametrize(("retry_after", "waits"), [(45.0, 45.0), (None, 1.0)])
def test_a_429_waits_exactly_what_telegram_asked_and_never_counts(
    retry_after: float | None, waits: float
) -> None:
    # Even at the end of its horizon, with every attempt used: a 429 posted nothing.
    decision = POLICY.after_failure(
        Ledger(3, 3), RateLimited("429", retry_after=retry_after), NOW + 3599
    )
    assert decision == RetryAt(NOW + 3599 + waits, after_failure=False)


def test_a_failure_naming_its_own_pause_is_never_retried_sooner() -> None:
    slow = RetryableDeliveryError("503", retry_after=50.0)
    assert wait_after(Ledger(1, 1), slow) == 50.0


def test_retries_after_a_failure_wait_for_telegram_to_answer() -> None:
    decision = POLICY.after_failure(Ledger(1, 1), TIMED_OUT, NOW)
    assert isinstance(decision, RetryAt)
    assert decision.after_failure  # due at once when Telegram answers again


def test_a_wait_is_tenacitys_own_however_many_failures_came_before() -> None:
    # Read through tenacity's own loop (a replay whose sleep only notes the waits): past the
    # first few failures a doubling wait has reached its ceiling, and stays there.
    policy = RetryPolicy(attempts=3, wait=30.0, max_age=86400.0)
    refused = RetryableDeliveryError("refused", maybe_delivered=False)
    assert [policy.wait_after(refused, n) for n in (1, 2, 3, 4, 5, 6)] == [1, 2, 4, 8, 16, 30]
    assert policy.wait_after(refused, 10_000) == 30.0
    assert [policy.wait_after(RetryableDeliveryError("timed out"), n) for n in (1, 2, 3)] == [
        1,
        30,
        30,
    ]
