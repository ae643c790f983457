"""The stage after the queue: a webhook's alert's first attempt, made at once when its lane may
go now (dispatcher.first_attempt), and waited for until the webhook must be answered; then what
the answer says of it (`answer_of`): 200 when Telegram has the alert, 502 when that attempt
failed (the job waits in the queue for its retry), 202 when it waits its turn or is still in
flight.

An attempt the webhook stops waiting for goes on, on the dispatcher's pool, and its outcome is
recorded as any other's (receive.py's `deadline`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from typing import Literal

from ..core.outcomes import Dead, Delivered, Outcome, RetryAt
from ..delivery.dispatcher import Dispatcher, WaitReason
from ..spool.model import Job, Settlement
from ..spool.queue import Queue
from .taken import INTERNAL_ERROR, Taken

log = logging.getLogger(__name__)

Clock = Callable[[], float]

# Why a webhook's alert has no outcome yet: it waits (dispatcher.WaitReason), or its attempt
# was still under way when the webhook had to be answered.
# "accepted": queued for the dispatcher, its webhook answered without waiting (`leave`).
Waiting = WaitReason | Literal["in_flight", "accepted"]


@dataclass(frozen=True)
class Attempted:
    """What became of the alert while the webhook waited: its first attempt's outcome (and
    Telegram's error when it failed), or why it has none yet."""

    outcome: Outcome | None
    error: str | None = None
    waiting: Waiting | None = None


class FirstAttempts:
    def __init__(
        self, *, queues: list[Queue], dispatcher: Dispatcher, clock: Clock = time.time
    ) -> None:
        """`queues`: as the queue stage tries them (queue.py), memory last; an alert that
        waits with no queue on disk is said to be kept in memory only."""
        *self._on_disk, _ = queues
        self._queues = {queue.home: queue for queue in queues}
        self._dispatcher = dispatcher
        self._clock = clock

    def leave(self, job: Job) -> Attempted:
        """The alert, queued unheld, left to the dispatcher, which is woken to take it now."""
        self._dispatcher.wake()
        return self._waits(job, Attempted(None, waiting="accepted"))

    def first_attempt(self, job: Job, *, by: float) -> Attempted:
        """The alert's first attempt, made at once when its lane may go now, waited for until
        the webhook's deadline (`by`, monotonic). When it failed, the job is back in its queue,
        due when the retry policy says, before this returns."""
        turn = self._dispatcher.turn_at(job.destination)
        if turn is not None and job.next_attempt_at <= self._clock():
            # Left to the passes as it was queued (`admit`): no claim, and a look at its turn.
            self._dispatcher.wake(turn)
            return self._waits(job, Attempted(None, waiting="paced"))
        tried = self._dispatcher.first_attempt(self._queue(job), job, wait_until=by)
        if isinstance(tried, Future):
            attempted = _waited_for(tried, job, by)
        else:
            self._dispatcher.wake()  # its lane is known to the thread, which takes it in turn
            attempted = Attempted(None, waiting=tried)
        return self._waits(job, attempted)

    def _waits(self, job: Job, attempted: Attempted) -> Attempted:
        if not self._on_disk and not isinstance(attempted.outcome, Delivered | Dead):
            self._kept_in_memory(job, attempted)
        return attempted

    def _queue(self, job: Job) -> Queue:
        return self._queues[job.home]

    def _kept_in_memory(self, job: Job, attempted: Attempted) -> None:
        """RELAY_SPOOL_PATH=off: the operator's choice, so a WARNING when an alert must wait."""
        log.warning(
            "alert %s is kept in memory only (RELAY_SPOOL_PATH=off): it is lost if this process "
            "stops first; %s",
            job.label,
            f"last error: {attempted.error}" if attempted.error else f"({attempted.waiting})",
        )


def _waited_for(attempt: Future[Settlement], job: Job, by: float) -> Attempted:
    """The attempt's outcome for `job`, if it ends by `by` (monotonic)."""
    try:
        settlement = attempt.result(timeout=max(0.0, by - time.monotonic()))
    except FutureTimeout:
        return Attempted(None, waiting="in_flight")
    except Exception as exc:  # a bug: the run logged its alerts with their text
        return Attempted(Dead("internal", "the relay failed while sending it"), str(exc))
    outcome = settlement.outcome_of(job)
    return Attempted(outcome, None if isinstance(outcome, Delivered) else settlement.error)


def answer_of(job: Job, text: str, attempted: Attempted) -> Taken:
    """What the webhook's answer says of its queued alert, after its first attempt."""
    outcome, error = attempted.outcome, attempted.error
    if outcome is None:
        # Not a failure: older alerts for its chat go first, its chat's turn has not come,
        # Telegram is failing, or its attempt is still under way. It waits in the queue.
        return Taken("queued", attempted.waiting or "paced", 202, job, text=text)
    if isinstance(outcome, Delivered):
        return Taken("sent", "delivered", 200, job, text=text)
    if isinstance(outcome, RetryAt):
        return _again(job, text, outcome, error)
    assert isinstance(outcome, Dead)  # kept as a dead letter, and logged with its text
    if outcome.kind == "internal":
        return Taken("failed", "internal_error", 500, job, error=INTERNAL_ERROR, text=text)
    return Taken("failed", "refused", 502, job, error=error, text=text)


def _again(job: Job, text: str, outcome: RetryAt, error: str | None) -> Taken:
    """An alert due again after its first attempt: with the retrier (502), or, where its turn
    made what its place needs first (its issue's topic), in the queue for its next (202)."""
    if not outcome.after_failure and error is None:
        return Taken("queued", "paced", 202, job, text=text)
    reason = "topic_not_found" if outcome.destination is not None else "attempt_failed"
    return Taken("queued", reason, 502, job, error=error, text=text)
