"""The webhook's side of delivery: its alert queued as a job (on disk before anything slow),
then its first attempt, made at once when its lane may go now (dispatcher.first_attempt), and
waited for until the webhook must be answered: 200 when Telegram has the alert, 502 when that
attempt failed (the job waits in the queue for its retry), 202 when it waits its turn or is
still in flight.

The job is held for its webhook: due at the webhook's deadline, so no pass of any process or
relay takes it up between its queueing and its webhook's claim (a pass that did would leave the
webhook a 202 while Telegram was healthy and the chat's turn had come). The claim takes it as
due; a webhook that cannot claim it leaves it to the passes at once (due now), and one whose
process dies first leaves it to them at its deadline.

GlitchTip waits at most 10 s for the answer and never sends again. Every wait of the webhook's
(the spool's lock, its issues' details, its attempt) ends by one deadline, `deadline(started)`,
computed here only; an attempt the webhook stops waiting for goes on, on the dispatcher's pool,
and its outcome is recorded as any other's. So an attempt never needs time reserved for it:
any RELAY_SEND_TIMEOUT the relay takes leaves the webhook its attempt.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from typing import Any, Literal

from ..core.errors import QueueFull, SpoolBusy, SpoolError
from ..core.outcomes import Dead, Delivered, Outcome
from ..core.routing import Destination
from ..spool.model import Job, NewJob, Precedence, Settlement
from ..spool.queue import Queue
from .dispatcher import Dispatcher, WaitReason
from .job import Jobs

log = logging.getLogger(__name__)

Clock = Callable[[], float]

# GlitchTip's wait for the answer (10 s), less a margin for the network.
ANSWER_WITHIN = 9.5
# Of that, what is kept back for what follows the last wait: the alert written to memory when
# the spool could not take it, and the answer itself.
KEPT_FOR_ANSWER = 0.25
# Why a webhook's alert has no outcome yet: it waits (dispatcher.WaitReason), or its attempt
# was still under way when the webhook had to be answered.
# "accepted": queued for the dispatcher, its webhook answered without waiting (`leave`).
Waiting = WaitReason | Literal["in_flight", "accepted"]


def deadline(started: float) -> float:
    """When every wait of a webhook that arrived at `started` (monotonic) ends."""
    return started + ANSWER_WITHIN - KEPT_FOR_ANSWER


@dataclass(frozen=True)
class Attempted:
    """What became of the alert while the webhook waited: its first attempt's outcome (and
    Telegram's error when it failed), or why it has none yet."""

    outcome: Outcome | None
    error: str | None = None
    waiting: Waiting | None = None


@dataclass(frozen=True)
class Refused:
    """Why a queue did not take an alert; `full` when it was the operator's cap."""

    problem: str
    full: bool = False


class Intake:
    def __init__(
        self, *, queues: list[Queue], jobs: Jobs, dispatcher: Dispatcher, clock: Clock = time.time
    ) -> None:
        """`queues`, in the order an alert tries them: the spool, this host's own file (where
        an alert waits when the spool in PostgreSQL cannot take it in time; spool/moving.py
        moves it there later), and memory last, the last resort when no disk would take it."""
        *self._on_disk, self._memory = queues
        self._queues = {queue.home: queue for queue in queues}
        self._jobs = jobs
        self._dispatcher = dispatcher
        self._clock = clock

    def admit(
        self,
        about: Mapping[str, Any],
        destination: Destination,
        *,
        started: float,
        text: str,
        due_in: float = 0.0,
        held: bool = True,
    ) -> Job | None:
        """Queue the alert (`about`: its job's data), in the spool or, when the spool cannot
        take it, in this host's file, or in memory (and say so); due `due_in` from now; `text`:
        its words, noted with its arrival. `held` False: its webhook makes no attempt of its
        own (`leave`), so it is due at once. None when it can wait nowhere: its message's text
        is logged."""
        problems: list[str] = []
        due = self._due(destination, started, due_in, held)
        for queue in self._on_disk:
            job = self._into(queue, about, destination, started, text, due)
            if isinstance(job, Refused):
                problems.append(job.problem)
                if job.full:
                    break  # the operator's cap: this host's file is no way round it
                continue
            if problems:
                log.warning(
                    "alert %s could not be written to the spool (%s): it waits in this "
                    "host's file %s, and moves into the spool when it answers again",
                    job.label,
                    problems[0],
                    queue.name,
                )
            return job
        said = "; ".join(problems)
        try:
            job = self._memory.add(
                NewJob("alert", about, destination, Precedence.ALERT, due_in=due),
                now=self._clock(),
                quiet=True,
            )
        except QueueFull as exc:
            said_it = self._text_of(about, destination)
            self._jobs.undelivered(said_it, f"it cannot wait anywhere: {said}; {exc}", None)
            return None
        except Exception as exc:  # a bug: its text is logged, with the traceback
            reason = f"it cannot wait anywhere: {said}; memory failed"
            self._jobs.undelivered(self._text_of(about, destination), reason, exc, exc_info=True)
            return None
        if problems:
            log.error(
                "alert %s could not be written to the spool (%s): it is kept in memory only, "
                "and lost if this process stops before it is delivered",
                job.label,
                said,
            )
        return job

    def _due(self, destination: Destination, started: float, due_in: float, held: bool) -> float:
        """When a new alert is due, from now: held for its webhook's first attempt, unless its
        webhook makes none or its chat's turn has not come."""
        if not held:
            return due_in
        if due_in == 0.0 and self._dispatcher.turn_at(destination) is not None:
            # Its chat's turn has not come: not held for a claim of its webhook's, which could
            # not take it; due now, for the passes (`first_attempt`).
            return 0.0
        return _held(started, due_in)

    def _text_of(self, about: Mapping[str, Any], destination: Destination) -> str:
        """The message an alert that waits nowhere would have been, for the log that is its
        last trace: rendered now, as its job would have been."""
        now = self._clock()
        job = Job("alert", about, destination, received_at=now, retry_from=now, id=0)
        return self._jobs.renderer.text_of(job, now=now)

    def _into(
        self,
        queue: Queue,
        about: Mapping[str, Any],
        destination: Destination,
        started: float,
        text: str,
        due: float,
    ) -> Job | Refused:
        """The alert queued in `queue`, due `due` from now, or why it could not be."""
        where = "the spool" if queue.home == "spool" else "this host's file"
        try:
            job = queue.add(
                NewJob("alert", about, destination, Precedence.ALERT, due_in=due),
                now=self._clock(),
                wait_until=deadline(started),
                arrival=text,
                quiet=True,
            )
            return job
        except QueueFull as exc:
            return Refused(f"{where} is full: {exc}", full=True)
        except SpoolBusy as exc:
            return Refused(f"{where} stayed busy: {exc}")
        except SpoolError as exc:
            return Refused(f"{where} is unusable: {exc}")
        except Exception as exc:  # what no mapping foresaw must not cost the alert either
            log.exception("%s failed to take an alert in", where)
            return Refused(f"{where} failed: {exc!r}")

    def merge(self, job: Job, more: Mapping[str, Any], *, wake: bool = True) -> None:
        """Add to what the queued alert is about (its issues' details came) while no attempt
        of it was made; after one, it goes as that one sent it. `wake` False: its webhook makes
        its first attempt next, and it stays held for it. Nothing here may cost the alert: it
        goes as it was queued when this fails."""
        try:
            if self._queue(job).merge(job, more, now=self._clock(), due_now=wake) and wake:
                self._dispatcher.wake()
        except Exception:
            log.exception(
                "alert %s could not be given its issues' details: it goes without them",
                job.label,
            )

    def leave(self, job: Job) -> Attempted:
        """The alert, queued unheld, left to the dispatcher, which is woken to take it now."""
        self._dispatcher.wake()
        return self._waits(job, Attempted(None, waiting="accepted"))

    def first_attempt(self, job: Job, *, started: float) -> Attempted:
        """The alert's first attempt, made at once when its lane may go now, waited for until
        the webhook's deadline. When it failed, the job is back in its queue, due when the
        retry policy says, before this returns."""
        by = deadline(started)
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


def _held(started: float, due_in: float) -> float:
    """When a webhook's alert is due: at the webhook's deadline, held for it until then, or
    later when it waits for its issues' details longer."""
    return max(due_in, deadline(started) - time.monotonic())


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
