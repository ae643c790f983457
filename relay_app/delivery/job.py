"""A job's run: one attempt for the jobs a claim holds (render.py makes what they write, then
Telegram is asked once), an outcome for each (`Delivered | RetryAt | Dead`, outcomes.py),
recorded by the queue as one change, then told: one log record per attempt, an ERROR record
for each alert that will not arrive (`ALERT NOT DELIVERED`, with its text), and one for each
other write given up (`CHAT NOT UPDATED`, with what it should have said).

Every write runs here, on the dispatcher's pool, the webhook's first attempt of its alert
included. A job never waits: when the attempt fails, the jobs go back to the queue due at the
time the policy says, and the run ends.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol, TypeVar

from ..core.errors import (
    PermanentDeliveryError,
    RateLimited,
    RetryableDeliveryError,
    SpoolError,
    ThreadNotFound,
)
from ..core.logs import event
from ..core.metrics import AttemptKind, AttemptResult, Metrics
from ..core.outcomes import Dead, Delivered, Outcome, Refund, RetryAt
from ..core.routing import Destination
from ..core.timing import PRODUCTION
from ..message.formatting import Message
from ..spool.model import NOT_RECORDED, Claim, Job, Settled, Settlement, refunded
from ..spool.queue import Queue
from ..spool.store import Tx
from ..telegram.client import NO_EXTRAS, Extras
from ..telegram.courier import Sent, Telegram
from .health import Health
from .placing import Placed, Placing, made_for_any, placed_anew, placed_by
from .policy import RetryPolicy
from .render import Call, Edit, Photo, Reaction, Renderer, ReplyUnder, Send, Write

log = logging.getLogger(__name__)

Clock = Callable[[], float]
Plan = TypeVar("Plan", bound="Planned")


@dataclass(frozen=True)
class Delivery:
    """An alert's message Telegram took (one alert's, or a digest's): what a capability records
    after it is made from this."""

    sent: Sent
    jobs: Sequence[Job]
    destination: Destination
    at: float

    @property
    def about(self) -> list[Mapping[str, Any]]:
        """What each of its jobs is about."""
        return [job.data for job in self.jobs]


# What a capability records after a delivery (its escalation steps, its issues watched, its
# summary's count), registered when the relay is assembled: a write of the delivery's unit of
# work, or None.
FollowUp = Callable[[Delivery], Callable[[Tx], None] | None]


class Planned(Protocol):
    @property
    def extras(self) -> Extras: ...


class AroundDelivery(Protocol[Plan]):
    """What the relay does around an alert's delivery, beyond it (cards/outgoing.py, which the
    app's wiring gives the jobs): what to send with the message, and what to keep after it,
    written with the delivery when its jobs waited where those records go."""

    def plan(self, alerts: Sequence[Message], destination: Destination) -> Plan: ...

    def records(
        self,
        plan: Plan,
        sent: Sent,
        alerts: Sequence[Message],
        jobs: Sequence[Job],
        destination: Destination,
    ) -> Callable[[Tx], None]: ...

    def records_with(self, queue: Queue) -> bool: ...

    def record_apart(self, records: Callable[[Tx], None], sent: Sent) -> None: ...

    def recorded(self) -> None: ...

    def not_recorded(self, sent: Sent, error: Exception) -> None: ...


@dataclass(frozen=True)
class Attempts:
    """How a job's attempts are made: `policy` says when one is tried again and when given
    up; `timeout` is how long one may last (the courier's deadline, RELAY_SEND_TIMEOUT) and
    `settle_margin` what it leaves at its lease's end for the writes after it; `second_chance`
    whether an alert given up is tried once more when Telegram answers again
    (RELAY_SECOND_CHANCE)."""

    policy: RetryPolicy
    timeout: float = 5.0
    settle_margin: float = PRODUCTION.settle_margin
    second_chance: bool = True


@dataclass(frozen=True)
class Writing:
    """What the relay writes for its jobs and keeps around them: `renderer` makes each write
    from its jobs at send time (by the shapes the capabilities registered); `outgoing` says what
    goes with an alert's message and records what follows it."""

    renderer: Renderer
    outgoing: AroundDelivery[Any]


class Jobs:
    def __init__(
        self,
        telegram: Telegram,
        writing: Writing,
        attempts: Attempts,
        *,
        health: Health,
        metrics: Metrics,
        clock: Clock = time.time,
        places: Sequence[Placing] = (),
    ) -> None:
        """`health` is Telegram's, which every attempt tells and the dispatcher reads;
        `places`: the capabilities that may choose where an alert goes when it is sent."""
        self._telegram = telegram
        self._places = tuple(places)
        self.renderer = writing.renderer
        self._outgoing = writing.outgoing
        self.attempts = attempts
        self.health = health
        self._metrics = metrics
        self._clock = clock

    def probe(self) -> bool:
        """Whether Telegram answers now (the prober's one question)."""
        return self._telegram.probe()

    def fit(self, jobs: list[Job]) -> int:
        """How many of these waiting jobs, oldest first, go in the next write: one where its
        place was made for it (its issue's topic, by its last turn), never a digest."""
        if jobs and made_for_any(self._places, jobs[0]):
            return 1
        return self.renderer.how_many(jobs)

    def run(self, queue: Queue, claim: Claim, *, kind: AttemptKind) -> Settlement:
        """The claim's one attempt, settled in `queue` (a claim holds at least one job; the
        dispatcher reports one whose jobs were all retired with `report_retired`)."""
        self.report_retired(queue, claim)
        if self._too_late(claim):
            return self._not_attempted(queue, claim)
        started = time.monotonic()
        sent = sent_at = None
        write, placed, plan, error = self._prepared(claim)
        if error is None and write is not None:
            sent, error, sent_at = self._attempt(write, placed.destination, plan)
        self._attempt_made(claim, kind, error, time.monotonic() - started, first=placed.first)
        now = self._clock()
        settlement = replace(self._settlement(claim, error, now, placed), sent_at=sent_at)
        records = None
        if isinstance(write, Send) and sent is not None:
            records = self._outgoing.records(
                plan, sent, write.alerts, claim.jobs, placed.destination
            )
            if not self._outgoing.records_with(queue):
                # Kept before the claim is settled: once its lane is free, a press on the
                # message finds its buttons.
                self._outgoing.record_apart(records, sent)
                records = None
        settled = self._record(queue, claim, settlement, now, also=records)
        if records is not None and sent is not None and settled.recorded:
            if settled.also_failed is None:
                self._outgoing.recorded()
            else:
                self._outgoing.not_recorded(sent, settled.also_failed)
        self._report(queue, claim, settlement, settled, error)
        return settlement

    def _prepared(self, claim: Claim) -> tuple[Write | None, Placed, Any, Exception | None]:
        """What the claim writes (the write its alerts' place needs first, when it needs one),
        where, with what (`plan`); or why nothing can be written."""
        placed = Placed(claim.destination)
        try:
            write = self.renderer.write(claim.jobs, now=self._clock())
            if not isinstance(write, Send):
                return write, placed, None, None
            placed = placed_by(self._places, claim, write.alerts)
            if placed.first is not None:
                return placed.first, placed, None, None
            return write, placed, self._outgoing.plan(write.alerts, placed.destination), None
        except Exception as exc:  # unreadable data, or a bug in rendering: no request is made
            return None, placed, None, exc

    def _too_late(self, claim: Claim) -> bool:
        """Whether an attempt starting now could outlast the claim's lease: this process was
        held up since the claim (a busy host, a slow spool), and another relay may take the
        lane over and send before this attempt ends, two writes where the chat's pace allows
        one. The attempt's deadline is the courier's; the margin is for the writes after it."""
        if claim.leased_until is None:
            return False
        return (
            self._clock() + self.attempts.timeout + self.attempts.settle_margin > claim.leased_until
        )

    def _not_attempted(self, queue: Queue, claim: Claim) -> Settlement:
        """The claim given back, its attempt not made: its jobs due at once, the attempt
        counted for them taken back, and its chat's turn returned."""
        now = self._clock()
        log.warning(
            "%s to %s were not sent: their lease ran out before the attempt could start (this "
            "process was held up); they go again at once",
            _what(claim.jobs),
            claim.destination.describe(),
        )
        retry = RetryAt(now, after_failure=False)
        why = "not attempted: the lease ran out before the attempt could start"
        settlement = Settlement(_each(claim.jobs, retry), refund="attempt", error=why)
        self._record(queue, claim, settlement, now)
        return settlement

    def _attempt(
        self, write: Write, destination: Destination, plan: Any
    ) -> tuple[Sent | None, Exception | None, float | None]:
        """The one request: what Telegram answered, or why it failed; and when that came. The
        write reached Telegram before then, if at all: the chat's pace runs from that time,
        not from when the request was begun, which a busy host can leave seconds before the
        request really goes."""
        sent = error = None
        try:
            sent = self._write(write, destination, plan.extras if plan is not None else NO_EXTRAS)
        except Exception as exc:  # sorted later: Telegram's refusals, the network, a bug
            error = exc
        return sent, error, self._clock()

    def _write(self, write: Write, destination: Destination, extras: Extras) -> Sent | None:
        telegram = self._telegram
        if isinstance(write, Send):
            return telegram.deliver(
                write.message, destination, replace(extras, silent=write.silent)
            )
        if isinstance(write, Photo):
            sent, file_id = telegram.send_photo(write.picture, destination)
            write.done(sent, file_id)
        elif isinstance(write, Call):
            self._call(write)
        elif isinstance(write, Edit):
            telegram.edit(
                write.chat, write.message_id, write.html, write.keyboard, caption=write.caption
            )
        elif isinstance(write, ReplyUnder):
            self._reply(write)
        else:
            self._react(write)
        return None

    def _call(self, call: Call) -> None:
        """A capability's write, and what it keeps of the answer; a refusal it handles is its
        own (the job is done)."""
        try:
            result = self._telegram.call(call.chat, call.method, call.params)
        except PermanentDeliveryError as exc:
            if not call.refused(exc):
                raise
            return
        call.done(result)

    def _react(self, reaction: Reaction) -> None:
        try:
            self._telegram.react(reaction.chat, reaction.message_id, reaction.emoji)
        except PermanentDeliveryError as exc:  # reactions off in this chat, say
            log.info("a reaction was refused (%s); replying instead", exc)
            self._reply(reaction.instead)

    def _reply(self, reply: ReplyUnder) -> None:
        self._telegram.reply(
            reply.chat,
            reply.thread,
            reply.message_id,
            reply.text,
            silent=reply.silent,
            html=reply.html,
        )

    def _record(
        self,
        queue: Queue,
        claim: Claim,
        settlement: Settlement,
        now: float,
        *,
        also: Callable[[Tx], None] | None = None,
    ) -> Settled:
        """The settlement in the queue (with what follows a delivery, `also`, in the same unit
        of work), and what it says of Telegram in its health."""
        settled = NOT_RECORDED
        try:
            settled = queue.settle(claim, settlement, now=now, also=also)
        except SpoolError as exc:
            log.error(
                "%s: the outcome of their attempt (%s) could not be recorded in the spool (%s); "
                "this process takes them up again, and may send them twice",
                _what(claim.jobs),
                "delivered" if settlement.delivered else "not delivered",
                exc,
            )
        if settlement.telegram == "failing":
            self.health.send_failed(now)
        elif settlement.telegram == "answered":
            self.health.answered(now)
        return settled

    def report_retired(self, queue: Queue, claim: Claim) -> None:
        for job, dead in claim.retired:
            self._dead(queue, job, dead, settled=True)

    def undelivered(
        self,
        text: str,
        reason: str,
        error: BaseException | None,
        *,
        job: Job | None = None,
        exc_info: bool = False,
    ) -> None:
        """Count an alert that will not reach Telegram, and log it with its text: the one way
        every such alert is recorded, whether or not it ever got an id."""
        self._metrics.undelivered.inc()
        log_undelivered(
            text,
            reason,
            error,
            alert=job.label if job is not None else None,
            destination=job.destination if job is not None else None,
            exc_info=exc_info,
        )

    # --- the attempt's outcome ---------------------------------------------------------------

    def _settlement(
        self, claim: Claim, error: Exception | None, now: float, placed: Placed
    ) -> Settlement:
        """What the attempt decided for each job, and what it says of Telegram."""
        jobs = claim.jobs
        anew = placed_anew(claim, error, now, placed)
        if anew is not None:
            return anew
        if error is None:
            since = now - self.attempts.policy.max_age if self.attempts.second_chance else None
            return Settlement(_each(jobs, Delivered()), "answered", second_chance_since=since)
        if isinstance(error, RetryableDeliveryError):
            return self._to_retry(jobs, error, now)
        if isinstance(error, ThreadNotFound) and claim.destination.thread is not None:
            chat = claim.destination.without_topic()  # a 400: nothing was posted
            moved = RetryAt(now, after_failure=False, destination=chat)
            return Settlement(_each(jobs, moved), "answered", "unsure", str(error))
        if isinstance(error, PermanentDeliveryError):
            dead = Dead("refused", "Telegram refused it permanently")
            return Settlement(_each(jobs, dead), "answered", "unsure", str(error))
        dead = Dead("internal", "the relay failed while sending it")
        return Settlement(_each(jobs, dead), error=str(error))

    def _to_retry(
        self, jobs: Sequence[Job], error: RetryableDeliveryError, now: float
    ) -> Settlement:
        if isinstance(error, RateLimited):
            # Telegram's pause is not the job's failure: the attempt is given back.
            outcomes = self._after_failure(jobs, error, now, "attempt")
            pause = max(outcome.at for _, outcome in outcomes if isinstance(outcome, RetryAt))
            return Settlement(outcomes, "answered", "attempt", str(error), pause_chat_until=pause)
        refund: Refund = "none" if error.maybe_delivered else "unsure"
        outcomes = self._after_failure(jobs, error, now, refund)
        return Settlement(outcomes, "failing", refund, str(error))

    def _after_failure(
        self, jobs: Sequence[Job], error: RetryableDeliveryError, now: float, refund: Refund
    ) -> list[tuple[Job, Outcome]]:
        """Each job's outcome, as the policy decides on its ledger after this attempt."""
        return [
            (job, self.attempts.policy.after_failure(refunded(job, refund, str(error)), error, now))
            for job in jobs
        ]

    # --- telling it ----------------------------------------------------------------------------

    def _report(
        self,
        queue: Queue,
        claim: Claim,
        settlement: Settlement,
        settled: Settled,
        error: Exception | None,
    ) -> None:
        if settled.lease_lost:
            log.warning(
                "%s were taken over by another worker while this one attempted them; leaving "
                "them to that one",
                _what(claim.jobs),
            )
            return
        if settlement.pause_chat_until is not None:
            log.warning(
                "Telegram asked for a pause of %.0f s in %s (429): holding every write for it",
                settlement.pause_chat_until - self._clock(),
                claim.destination.describe(),
            )
        for job, outcome in settlement.outcomes:
            if isinstance(outcome, Dead):
                self._dead(
                    queue,
                    job,
                    outcome,
                    settled=settled.recorded,
                    error=error,
                    exc_info=outcome.kind == "internal",
                )
            elif isinstance(outcome, RetryAt) and outcome.destination is not None:
                log.error(
                    "TOPIC NOT FOUND: %s could not be posted in %s (%s); sending it once to the "
                    "chat itself instead. Fix the topic id (TELEGRAM_THREAD_ID or the webhook "
                    "URL's thread_id). Its text: %s",
                    _what([job]),
                    claim.destination.describe(),
                    error,
                    self.renderer.text_of(job, now=self._clock()),
                )
        if settled.revived:
            self._metrics.second_chances.inc(settled.revived)
            log.warning(
                "%d dead letter(s) for chat %s get a second chance now that it accepts "
                "messages again: each is sent once more, saying it may repeat an earlier message",
                settled.revived,
                claim.destination.chat,
            )

    def _dead(
        self,
        queue: Queue,
        job: Job,
        dead: Dead,
        *,
        settled: bool,
        error: BaseException | None = None,
        exc_info: bool = False,
    ) -> None:
        reason = dead.reason
        if error is None and job.last_error is not None:
            reason = f"{reason}; last error: {job.last_error}"
        text = self.renderer.text_of(job, now=self._clock())
        if job.kind != "alert":
            log.error(
                "CHAT NOT UPDATED: %s for %s was given up (%s%s); it should have said: %s",
                _what([job]),
                job.destination.describe(),
                reason,
                f"; last error: {error}" if error is not None else "",
                text,
                exc_info=error if exc_info else None,
                extra=event(event="not_written", kind=job.kind, reason=reason, text=text),
            )
            return
        reason += self._where_it_stays(queue, job, dead, settled=settled)
        self.undelivered(text, reason, error, job=job, exc_info=exc_info)

    def _where_it_stays(self, queue: Queue, job: Job, dead: Dead, *, settled: bool) -> str:
        if not settled:
            return "; it could not be kept as a dead letter" if queue.durable else ""
        kept = (
            f"; kept as a dead letter (resend: relay-app spool retry {job.id}; alerts for the "
            "default chat go to TELEGRAM_CHAT_ID as it is then, and --chat ID [--thread N] "
            "sends them to another)"
        )
        again = dead.kind == "exhausted" and self.attempts.second_chance and not job.second_chance
        return (kept if queue.durable else "") + (
            "; it is sent once more when its chat next accepts a message" if again else ""
        )

    def _attempt_made(
        self,
        claim: Claim,
        kind: AttemptKind,
        error: BaseException | None,
        seconds: float,
        *,
        first: Call | None = None,
    ) -> None:
        """One record per attempt, the webhook's or a background one, naming every job in
        it, so a job's whole story greps by its label; and its counts. `first`: the write the
        alerts' place needed, which this turn made instead of them."""
        jobs, destination = claim.jobs, claim.destination
        error_code = getattr(error, "error_code", None)
        attempt = max(job.attempts for job in jobs)
        now = self._clock()
        arrived = [job.received_at for job in jobs]
        waited = now - min(arrived)
        job_kind = jobs[0].kind if first is None else "place"
        if error is None and job_kind == "alert":
            self._metrics.delivered(arrived, now)
        level, outcome, said = _verdict(jobs, error, waited, first)
        self._metrics.attempt(kind, outcome, error_code, job=job_kind)
        digest = f" (a digest of {len(jobs)})" if len(jobs) > 1 and job_kind == "alert" else ""
        log.log(
            level,
            "attempt %d of %s to %s%s (%s, %.0f ms): %s",
            attempt,
            _what(jobs),
            destination.describe(),
            digest,
            kind,
            seconds * 1000,
            said,
            extra=event(
                event="attempt",
                alerts=[job.label for job in jobs],
                job=job_kind,
                destination=destination.describe(),
                kind=kind,
                attempt=attempt,
                outcome=outcome,
                latency_ms=round(seconds * 1000, 1),
                since_arrival_s=round(waited, 3),
                error=str(error) if error is not None else None,
                error_code=error_code,
            ),
        )


def _verdict(
    jobs: Sequence[Job], error: BaseException | None, waited: float, made: Call | None = None
) -> tuple[int, AttemptResult, str]:
    """How an attempt is logged: its level, its outcome, and what it says (`made`: the write
    their place needed, which this turn made instead of them)."""
    if error is None and made is not None:
        return logging.INFO, "delivered", f"{made.text} made first; they go at the next turn"
    if error is None:
        first = "the first" if jobs[1:] else "it"
        return logging.INFO, "delivered", f"delivered {waited:.1f} s after {first} arrived"
    if not isinstance(error, RetryableDeliveryError):
        return logging.WARNING, "permanent_error", f"failed (permanent): {error}"
    # In a long outage a job is tried many times; attempts that risk a duplicate, and every
    # doubling of the others, are worth a WARNING each.
    never_sent = 1 + max(job.attempts - job.unsure_attempts for job in jobs)
    loud = error.maybe_delivered or never_sent & (never_sent - 1) == 0
    level = logging.WARNING if loud else logging.INFO
    return level, "retryable_error", f"failed (retryable): {error}"


def _each(jobs: Sequence[Job], outcome: Outcome) -> list[tuple[Job, Outcome]]:
    return [(job, outcome) for job in jobs]


def log_undelivered(
    text: str,
    reason: str,
    error: BaseException | None,
    *,
    alert: str | None = None,
    destination: Destination | None = None,
    exc_info: bool = False,
) -> None:
    """The one record that says an alert did not reach Telegram, holding everything it said.
    `alert` is its label, when it got one."""
    last_error = f"; last error: {error}" if error is not None else ""
    which = ""
    if alert is not None:
        which = f"alert {alert}" + (f" for {destination.describe()}" if destination else "") + ": "
    log.error(
        # One line: the text's line breaks are escaped (logs.py), as every value's are.
        "ALERT NOT DELIVERED: %s%s%s; alert text: %s",
        which,
        reason,
        last_error,
        text,
        exc_info=error if exc_info else None,
        extra=event(
            event="undelivered",
            alerts=[alert] if alert is not None else [],
            destination=destination.describe() if destination is not None else None,
            reason=reason,
            error=str(error) if error is not None else None,
            error_code=getattr(error, "error_code", None),
            text=text,
        ),
    )


def _what(jobs: Sequence[Job]) -> str:
    """'alert(s) #3, #4, #9', 'card #12 (message 40)': how logs name the jobs of one write."""
    labels = ", ".join(job.label for job in jobs)
    first = jobs[0]
    if first.kind == "alert":
        return f"alert(s) {labels}"
    return f"{first.kind} {labels} (message {first.data.get('message_id')})"
