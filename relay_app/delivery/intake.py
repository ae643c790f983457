"""The webhook's side of delivery: admit an alert to the queue (on disk before any attempt),
attempt it at once when it may go now, and leave it to the retrier when it may not or when the
attempt fails. GlitchTip waits at most 10 s for the answer, so everything here keeps to a
budget well inside that: waiting for the spool's lock, the attempt, and recording its outcome.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from ..core.errors import QueueFull, SpoolBusy, SpoolError
from ..core.outcomes import Delivered, Outcome, RetryAt
from ..core.routing import Destination
from ..message.formatting import Message
from ..spool.holders import this_process
from ..spool.model import Admission, Claim, SpooledAlert
from ..spool.queue import Queue
from .dispatcher import Dispatcher
from .health import Health
from .job import Jobs

log = logging.getLogger(__name__)

Clock = Callable[[], float]
# The alert's message built again by then (monotonic), when what it lacked came; None if not.
Enrich = Callable[[float], Message | None]

# Past this much time since the webhook arrived, it is answered: GlitchTip waits 10 s.
ANSWER_BUDGET = 9.5
# Kept back from the budget for recording an attempt's outcome after it.
SETTLE_RESERVE = 0.5


@dataclass(frozen=True)
class Attempted:
    """The webhook's own attempt: the alert's outcome, and Telegram's error when it failed."""

    outcome: Outcome
    error: str | None


class Intake:
    def __init__(
        self,
        *,
        spool: Queue | None,
        memory: Queue,
        jobs: Jobs,
        dispatcher: Dispatcher,
        health: Health,
        attempt_timeout: float,
        clock: Clock = time.time,
    ) -> None:
        self._spool = spool
        self._memory = memory
        self._jobs = jobs
        self._dispatcher = dispatcher
        self._health = health
        self._attempt_timeout = attempt_timeout
        self._clock = clock

    def admit(
        self, message: Message, destination: Destination, *, started: float
    ) -> Admission | None:
        """Write the alert ahead of its first attempt, in the spool or, when the spool cannot
        take it, in memory (and say so). None when it can wait nowhere: its text is logged.
        `started` is when the webhook arrived (monotonic)."""
        answer_by = started + ANSWER_BUDGET
        problem = None
        if self._spool is not None:
            admission, problem = self._into_spool(self._spool, message, destination, answer_by)
            if admission is not None:
                self._queued(admission)
                return admission
        try:
            admission = self._admit(self._memory, message, destination, answer_by)
        except QueueFull as exc:
            reason = f"it cannot wait anywhere: {problem + '; ' if problem else ''}{exc}"
            self._jobs.undelivered(message, reason, None)
            return None
        except Exception as exc:  # a bug: its text is logged, with the traceback
            reason = f"it cannot wait anywhere: {problem + '; ' if problem else ''}memory failed"
            self._jobs.undelivered(message, reason, exc, exc_info=True)
            return None
        if problem is not None:
            log.error(
                "alert %s could not be written to the spool (%s): it is kept in memory only, "
                "and lost if this process stops before it is delivered",
                admission.alert.label,
                problem,
            )
        elif admission.claim is None:
            self._kept_in_memory(admission, None)
        self._queued(admission)
        return admission

    def _into_spool(
        self, spool: Queue, message: Message, destination: Destination, answer_by: float
    ) -> tuple[Admission | None, str | None]:
        """The alert admitted to the spool, or why it could not be."""
        try:
            return self._admit(spool, message, destination, answer_by), None
        except QueueFull as exc:
            return None, f"the spool is full: {exc}"
        except SpoolBusy as exc:
            return None, f"the spool stayed busy: {exc}"
        except SpoolError as exc:
            return None, f"the spool is unusable: {exc}"
        except Exception as exc:  # what no mapping foresaw must not cost the alert either
            log.exception("the spool failed to take an alert in")
            return None, f"the spool failed: {exc!r}"

    def attempt(
        self, admission: Admission, *, started: float, enrich: Enrich | None = None
    ) -> Attempted:
        """The webhook's own attempt, for an alert admitted with its claim; first, `enrich`
        may build its message again (its issues' details came), until the attempt must
        start. When the attempt fails, the alert is back in its queue, due when the retry
        policy says, before this returns."""
        claim, alert = admission.claim, admission.alert
        assert claim is not None
        queue = self._memory if alert.in_memory else self._spool
        assert queue is not None
        try:
            if enrich is not None:
                claim = self._enriched(claim, alert, enrich, started)
            settlement = self._jobs.run(
                queue,
                claim,
                kind="sync",
                wait_until=started + ANSWER_BUDGET,
                later=self._dispatcher.soon,
            )
        finally:
            self._dispatcher.release(claim.token)
        outcome = next(outcome for each, outcome in settlement.outcomes if each.id == alert.id)
        if isinstance(outcome, RetryAt) and self._spool is None:
            self._kept_in_memory(admission, settlement.error)
        # As after any job: its destination is free, and what waited behind it may go.
        self._dispatcher.wake()
        return Attempted(outcome, None if isinstance(outcome, Delivered) else settlement.error)

    def revise(self, alert: SpooledAlert, message: Message) -> SpooledAlert | None:
        """`alert`, waiting in its queue, with its message built again before its first
        attempt (its issues' details came); None when an attempt came first. Nothing here may
        cost the alert: it goes as it was written when this fails."""
        queue = self._memory if alert.in_memory else self._spool
        assert queue is not None
        try:
            return queue.revise(alert, message, now=self._clock())
        except Exception:
            log.exception(
                "alert %s could not be written again with its issues' details: it goes as it "
                "was, and they are added by an edit once it is sent",
                alert.label,
            )
            return None

    def _enriched(self, claim: Claim, alert: SpooledAlert, enrich: Enrich, started: float) -> Claim:
        """The claim, its alert's message built again when `enrich` gives one before the
        attempt must start."""
        try:
            message = enrich(started + ANSWER_BUDGET - self._attempt_timeout - SETTLE_RESERVE)
        except Exception:
            log.exception("the details of alert %s's issues could not be read", alert.label)
            return claim
        revised = self.revise(alert, message) if message is not None else None
        if revised is None:
            return claim
        return replace(claim, alerts=[revised if a.id == alert.id else a for a in claim.alerts])

    def _admit(
        self, queue: Queue, message: Message, destination: Destination, answer_by: float
    ) -> Admission:
        telegram = self._health.current()
        token = self._dispatcher.hold()
        try:
            admission = queue.admit(
                message,
                destination,
                now=self._clock(),
                holder=this_process(),
                token=token,
                in_flight=self._dispatcher.in_flight(),
                telegram_up=telegram.sending,
                # A lock held for seconds (a backup, another tool) is waited out, durably;
                # when that leaves no time for the attempt, the retrier makes it.
                attempt_by=answer_by - self._attempt_timeout - SETTLE_RESERVE,
                lease_for=self._dispatcher.lease_for,
                wait_until=answer_by - SETTLE_RESERVE,
            )
        except BaseException:
            self._dispatcher.release(token)
            raise
        if admission.claim is None:
            self._dispatcher.release(token)
        return admission

    def _queued(self, admission: Admission) -> None:
        """Tell the dispatcher when a queued alert needs it. One that joins older alerts needs
        nothing: their destination is planned for already, or busy and woken when its job
        ends; in a storm, a pass per webhook would only compete with the webhooks. One
        waiting for Telegram waits for the question the dispatcher asks anyway."""
        if admission.waiting == "paced":
            self._dispatcher.wake(admission.wake_at)
        elif admission.waiting == "spool_busy":
            self._dispatcher.wake()

    def _kept_in_memory(self, admission: Admission, error: str | None) -> None:
        """RELAY_SPOOL_PATH=off: the operator's choice, so a WARNING when an alert must wait."""
        log.warning(
            "alert %s is kept in memory only (RELAY_SPOOL_PATH=off): it is lost if this process "
            "stops first; %s",
            admission.alert.label,
            f"last error: {error}" if error is not None else "waiting for its turn",
        )
