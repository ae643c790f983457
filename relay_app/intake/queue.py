"""The stage after the holds: a webhook's alert queued as a job, on disk before anything slow
(the spool, or this host's own file when the spool in PostgreSQL cannot take it in time, or
memory last), and given its issues' details while it waits (details.py).

The job is held for its webhook: due at the webhook's deadline, so no pass of any process or
relay takes it up between its queueing and its webhook's claim (a pass that did would leave the
webhook a 202 while Telegram was healthy and the chat's turn had come). The claim takes it as
due (attempt.py); a webhook that cannot claim it leaves it to the passes at once (due now), and
one whose process dies first leaves it to them at its deadline.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..core.errors import QueueFull, SpoolBusy, SpoolError
from ..core.routing import Destination
from ..delivery.dispatcher import Dispatcher
from ..delivery.job import Jobs
from ..spool.model import Job, NewJob, Precedence
from ..spool.queue import Queue

log = logging.getLogger(__name__)

Clock = Callable[[], float]


@dataclass(frozen=True)
class Refused:
    """Why a queue did not take an alert; `full` when it was the operator's cap."""

    problem: str
    full: bool = False


class AlertQueue:
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
        by: float,
        text: str,
        due_in: float = 0.0,
        held: bool = True,
    ) -> Job | None:
        """Queue the alert (`about`: its job's data), in the spool or, when the spool cannot
        take it, in this host's file, or in memory (and say so); due `due_in` from now; `by`: its
        webhook's deadline (receive.py), which bounds the wait for the spool; `text`:
        its words, noted with its arrival. `held` False: its webhook makes no attempt of its
        own (`leave`), so it is due at once. None when it can wait nowhere: its message's text
        is logged."""
        problems: list[str] = []
        due = self._due(destination, by, due_in, held)
        for queue in self._on_disk:
            job = self._into(queue, about, destination, by, text, due)
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

    def _due(self, destination: Destination, by: float, due_in: float, held: bool) -> float:
        """When a new alert is due, from now: held for its webhook's first attempt, unless its
        webhook makes none or its chat's turn has not come."""
        if not held:
            return due_in
        if due_in == 0.0 and self._dispatcher.turn_at(destination) is not None:
            # Its chat's turn has not come: not held for a claim of its webhook's, which could
            # not take it; due now, for the passes (`first_attempt`).
            return 0.0
        return _held(by, due_in)

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
        by: float,
        text: str,
        due: float,
    ) -> Job | Refused:
        """The alert queued in `queue`, due `due` from now, or why it could not be."""
        where = "the spool" if queue.home == "spool" else "this host's file"
        try:
            job = queue.add(
                NewJob("alert", about, destination, Precedence.ALERT, due_in=due),
                now=self._clock(),
                wait_until=by,
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

    def _queue(self, job: Job) -> Queue:
        return self._queues[job.home]


def _held(by: float, due_in: float) -> float:
    """When a webhook's alert is due: at the webhook's deadline (`by`), held for it until then,
    or later when it waits for its issues' details longer."""
    return max(due_in, by - time.monotonic())
