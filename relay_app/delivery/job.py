"""A delivery job: one attempt for the alerts a claim holds, an outcome for each
(`Delivered | RetryAt | Dead`, outcomes.py), recorded by the queue as one change, then told:
one log record per attempt, and ERROR records for the alerts that will not arrive.

The webhook runs the first job of an alert itself, on its request thread; the dispatcher runs
every later one on its pool. Either way a job never waits: when the attempt fails, the alerts
go back to the queue due at the time the policy says, and the job ends.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from itertools import takewhile
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
from ..message.digest import compose, how_many_fit
from ..message.formatting import Message, with_first_line, with_mentions
from ..spool.model import Claim, Settled, Settlement, SpooledAlert, refunded
from ..spool.queue import Queue
from ..telegram.courier import Extras, Sent
from ..words import Words
from .health import Health
from .policy import RetryPolicy

log = logging.getLogger(__name__)

Clock = Callable[[], float]
Deliver = Callable[[Message, Destination, Extras], Sent | None]
Plan = TypeVar("Plan", bound="Planned")


class Planned(Protocol):
    @property
    def extras(self) -> Extras: ...


class AroundDelivery(Protocol[Plan]):
    """What the relay does around a delivery, beyond it (outgoing.py, which the app's wiring
    gives the jobs): what to send with the message, and what to keep and tell after it."""

    def plan(self, alerts: Sequence[SpooledAlert], destination: Destination) -> Plan: ...

    def delivered(
        self, plan: Plan, sent: Sent, alerts: Sequence[SpooledAlert], destination: Destination
    ) -> Callable[[], None] | None: ...


# Runs work after the job, off the caller's thread (the dispatcher's pool): the webhook's own
# attempt must not spend GlitchTip's 10 s on what follows a delivery.
Later = Callable[[Callable[[], None]], None]


class Jobs:
    def __init__(
        self,
        deliver: Deliver,
        *,
        policy: RetryPolicy,
        health: Health,
        metrics: Metrics,
        outgoing: AroundDelivery[Any],
        words: Words,
        clock: Clock = time.time,
        attempt_timeout: float = 5.0,
        late_after: float = 60.0,
        coalesce: bool = True,
        second_chance: bool = True,
        settle_margin: float = PRODUCTION.settle_margin,
    ) -> None:
        """`attempt_timeout` is how long an attempt may last (the courier's deadline);
        `settle_margin` what it leaves at its lease's end for the writes after it."""
        self._deliver = deliver
        self._attempt_timeout = attempt_timeout
        self._settle_margin = settle_margin
        self._outgoing = outgoing
        self._words = words
        self.policy = policy
        self._health = health
        self._metrics = metrics
        self._clock = clock
        self._late_after = late_after
        self._coalesce = coalesce
        self._second_chance = second_chance

    def fit(self, alerts: list[SpooledAlert]) -> int:
        """How many of these waiting alerts, oldest first, go into the next message: as many
        as fit one digest; one when coalescing is off. An alert on its second chance goes
        alone, with a line saying it may repeat an earlier message; so does an uptime
        monitor's recovery, a reply to the message that announced its outage."""
        if not self._coalesce or _alone(alerts[0]):
            return 1
        fresh = list(takewhile(lambda alert: not _alone(alert), alerts))
        return how_many_fit([alert.message for alert in fresh], self._words)

    def run(
        self,
        queue: Queue,
        claim: Claim,
        *,
        kind: AttemptKind,
        wait_until: float | None = None,
        later: Later | None = None,
    ) -> Settlement:
        """The claim's one attempt, settled in `queue` (a claim holds at least one alert;
        the dispatcher reports one whose alerts were all retired with `report_retired`).
        What follows a delivery (outgoing.py) runs through `later` when given."""
        self.report_retired(queue, claim)
        plan = self._outgoing.plan(claim.alerts, claim.destination)
        if self._too_late(claim):
            return self._not_attempted(queue, claim, wait_until)
        sent, error, sent_at = self._attempt(claim, plan.extras, kind)
        now = self._clock()
        settlement = replace(self._settlement(claim, error, now), sent_at=sent_at)
        settled = self._record(queue, claim, settlement, wait_until, now)
        self._report(queue, claim, settlement, settled, error)
        if sent is not None:
            follow_up = self._outgoing.delivered(plan, sent, claim.alerts, claim.destination)
            if follow_up is not None:
                (later or _now)(follow_up)
        return settlement

    def _too_late(self, claim: Claim) -> bool:
        """Whether an attempt starting now could outlast the claim's lease: this process was
        held up since the claim (a busy host, a slow spool), and another relay may take the
        lane over and send before this attempt ends, two messages where the chat's pace allows
        one. The attempt's deadline is the courier's; the margin is for the writes after it."""
        if claim.leased_until is None:
            return False
        return self._clock() + self._attempt_timeout + self._settle_margin > claim.leased_until

    def _not_attempted(self, queue: Queue, claim: Claim, wait_until: float | None) -> Settlement:
        """The claim given back, its attempt not made: its alerts due at once, the attempt
        counted for them taken back, and its chat's turn returned."""
        now = self._clock()
        log.warning(
            "alert(s) %s to %s were not sent: their lease ran out before the attempt could "
            "start (this process was held up); they go again at once",
            _labels(claim.alerts),
            claim.destination.describe(),
        )
        retry = RetryAt(now, after_failure=False)
        why = "not attempted: the lease ran out before the attempt could start"
        settlement = Settlement(_each(claim.alerts, retry), refund="attempt", error=why)
        self._record(queue, claim, settlement, wait_until, now)
        return settlement

    def _attempt(
        self, claim: Claim, extras: Extras, kind: AttemptKind
    ) -> tuple[Sent | None, Exception | None, float | None]:
        """The one attempt: what Telegram answered, or why it failed; and when that came
        (None: no request was made). The message reached Telegram before then, if at all:
        the chat's pace runs from that time, not from when the request was begun, which a
        busy host can leave seconds before the request really goes."""
        started = time.monotonic()
        sent = error = answered_at = None
        try:
            message = self._message(claim.alerts, self._clock())
        except Exception as exc:  # a bug in composing: no request is made
            error = exc
        else:
            try:
                sent = self._deliver(message, claim.destination, extras)
            except Exception as exc:  # sorted later: Telegram's refusals, the network, a bug
                error = exc
            answered_at = self._clock()
        self._attempt_made(claim, kind, error, time.monotonic() - started)
        return sent, error, answered_at

    def _record(
        self,
        queue: Queue,
        claim: Claim,
        settlement: Settlement,
        wait_until: float | None,
        now: float,
    ) -> Settled | None:
        """The settlement in the queue, and what it says of Telegram in its health; None when
        the queue could not take it."""
        settled = None
        try:
            settled = queue.settle(claim, settlement, now=now, wait_until=wait_until)
        except SpoolError as exc:
            log.error(
                "alert(s) %s: the outcome of their attempt (%s) could not be recorded in the "
                "spool (%s); this process takes them up again, and may send them twice",
                _labels(claim.alerts),
                "delivered" if settlement.delivered else "not delivered",
                exc,
            )
        if settlement.telegram == "failing":
            self._health.send_failed(now)
        elif settlement.telegram == "answered":
            self._health.answered(now)
        return settled

    def report_retired(self, queue: Queue, claim: Claim) -> None:
        for alert, dead in claim.retired:
            self._dead(queue, alert, dead, settled=True)

    def undelivered(
        self,
        message: Message,
        reason: str,
        error: BaseException | None,
        *,
        alert: SpooledAlert | None = None,
        exc_info: bool = False,
    ) -> None:
        """Count an alert that will not reach Telegram, and log it with its text: the one way
        every such alert is recorded, whether or not it ever got an id."""
        self._metrics.undelivered.inc()
        log_undelivered(
            message,
            reason,
            error,
            alert=alert.label if alert is not None else None,
            destination=alert.destination if alert is not None else None,
            exc_info=exc_info,
        )

    # --- the attempt's outcome ---------------------------------------------------------------

    def _message(self, alerts: Sequence[SpooledAlert], now: float) -> Message:
        message = compose(
            [alert.message for alert in alerts],
            [alert.received_at for alert in alerts],
            self._words,
            now=now,
            late_after=self._late_after,
        )
        # Whom the alerts' routes call, once for the message, however many alerts call them.
        called = dict.fromkeys(m for alert in alerts for m in alert.message.subjects.mentions)
        message = with_mentions(message, list(called), self._words)
        if not any(_maybe_seen(alert) for alert in alerts):
            return message
        words = self._words
        return with_first_line(
            message, words.repeat_note if len(alerts) == 1 else words.repeat_note_digest
        )

    def _settlement(self, claim: Claim, error: Exception | None, now: float) -> Settlement:
        """What the attempt decided for each alert, and what it says of Telegram."""
        alerts = claim.alerts
        if error is None:
            since = now - self.policy.max_age if self._second_chance else None
            return Settlement(_each(alerts, Delivered()), "answered", second_chance_since=since)
        if isinstance(error, RetryableDeliveryError):
            return self._to_retry(alerts, error, now)
        if isinstance(error, ThreadNotFound) and claim.destination.thread is not None:
            chat = claim.destination.without_topic()  # a 400: nothing was posted
            moved = RetryAt(now, after_failure=False, destination=chat)
            return Settlement(
                [(alert, moved) for alert in alerts], "answered", "unsure", str(error)
            )
        if isinstance(error, PermanentDeliveryError):
            dead = Dead("refused", "Telegram refused it permanently")
            return Settlement(_each(alerts, dead), "answered", "unsure", str(error))
        dead = Dead("internal", "the relay failed while sending it")
        return Settlement(_each(alerts, dead), error=str(error))

    def _to_retry(
        self, alerts: Sequence[SpooledAlert], error: RetryableDeliveryError, now: float
    ) -> Settlement:
        if isinstance(error, RateLimited):
            # Telegram's pause is not the alert's failure: the attempt is given back.
            outcomes = self._after_failure(alerts, error, now, "attempt")
            pause = max(outcome.at for _, outcome in outcomes if isinstance(outcome, RetryAt))
            return Settlement(outcomes, "answered", "attempt", str(error), pause_chat_until=pause)
        refund: Refund = "none" if error.maybe_delivered else "unsure"
        outcomes = self._after_failure(alerts, error, now, refund)
        return Settlement(outcomes, "failing", refund, str(error))

    def _after_failure(
        self,
        alerts: Sequence[SpooledAlert],
        error: RetryableDeliveryError,
        now: float,
        refund: Refund,
    ) -> list[tuple[SpooledAlert, Outcome]]:
        """Each alert's outcome, as the policy decides on its ledger after this attempt."""
        return [
            (alert, self.policy.after_failure(refunded(alert, refund, str(error)), error, now))
            for alert in alerts
        ]

    # --- telling it ----------------------------------------------------------------------------

    def _report(
        self,
        queue: Queue,
        claim: Claim,
        settlement: Settlement,
        settled: Settled | None,
        error: Exception | None,
    ) -> None:
        if settled is not None and settled.lease_lost:
            log.warning(
                "alert(s) %s were taken over by another worker while this one attempted them; "
                "leaving them to that one",
                _labels(claim.alerts),
            )
            return
        if settlement.pause_chat_until is not None:
            log.warning(
                "Telegram asked for a pause of %.0f s in %s (429): holding every alert for it",
                settlement.pause_chat_until - self._clock(),
                claim.destination.describe(),
            )
        for alert, outcome in settlement.outcomes:
            if isinstance(outcome, Dead):
                self._dead(
                    queue,
                    alert,
                    outcome,
                    settled=settled is not None,
                    error=error,
                    exc_info=outcome.kind == "internal",
                )
            elif isinstance(outcome, RetryAt) and outcome.destination is not None:
                log.error(
                    "TOPIC NOT FOUND: alert %s could not be posted in %s (%s); sending it once to "
                    "the chat itself instead. Fix the topic id (TELEGRAM_THREAD_ID or the "
                    "webhook URL's thread_id). Alert text: %s",
                    alert.label,
                    claim.destination.describe(),
                    error,
                    alert.message.text,
                )
        if settled is not None and settled.revived:
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
        alert: SpooledAlert,
        dead: Dead,
        *,
        settled: bool,
        error: BaseException | None = None,
        exc_info: bool = False,
    ) -> None:
        reason = dead.reason
        if error is None and alert.last_error is not None:
            reason = f"{reason}; last error: {alert.last_error}"
        reason += self._where_it_stays(queue, alert, dead, settled=settled)
        self.undelivered(alert.message, reason, error, alert=alert, exc_info=exc_info)

    def _where_it_stays(
        self, queue: Queue, alert: SpooledAlert, dead: Dead, *, settled: bool
    ) -> str:
        if not settled:
            return "; it could not be kept as a dead letter" if queue.durable else ""
        kept = (
            f"; kept as a dead letter (resend: relay-app spool retry {alert.id}; alerts for the "
            "default chat go to TELEGRAM_CHAT_ID as it is then, and --chat ID [--thread N] "
            "sends them to another)"
        )
        again = dead.kind == "exhausted" and self._second_chance and not alert.second_chance
        return (kept if queue.durable else "") + (
            "; it is sent once more when its chat next accepts a message" if again else ""
        )

    def _attempt_made(
        self,
        claim: Claim,
        kind: AttemptKind,
        error: BaseException | None,
        seconds: float,
    ) -> None:
        """One record per attempt, the webhook's or a background one, naming every alert in
        it, so an alert's whole story greps by its label; and its counts."""
        alerts, destination = claim.alerts, claim.destination
        error_code = getattr(error, "error_code", None)
        attempt = max(alert.attempts for alert in alerts)
        now = self._clock()
        waited = now - min(alert.received_at for alert in alerts)
        if error is None:
            self._metrics.delivered([alert.received_at for alert in alerts], now)
        level, outcome, said = _verdict(alerts, error, waited)
        self._metrics.attempt(kind, outcome, error_code)
        digest = f" (a digest of {len(alerts)})" if len(alerts) > 1 else ""
        log.log(
            level,
            "attempt %d of alert(s) %s to %s%s (%s, %.0f ms): %s",
            attempt,
            _labels(alerts),
            destination.describe(),
            digest,
            kind,
            seconds * 1000,
            said,
            extra=event(
                event="attempt",
                alerts=[alert.label for alert in alerts],
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
    alerts: Sequence[SpooledAlert], error: BaseException | None, waited: float
) -> tuple[int, AttemptResult, str]:
    """How an attempt is logged: its level, its outcome, and what it says."""
    if error is None:
        first = "the first" if alerts[1:] else "it"
        return logging.INFO, "delivered", f"delivered {waited:.1f} s after {first} arrived"
    if not isinstance(error, RetryableDeliveryError):
        return logging.WARNING, "permanent_error", f"failed (permanent): {error}"
    # In a long outage an alert is tried many times; attempts that risk a duplicate, and every
    # doubling of the others, are worth a WARNING each.
    never_sent = 1 + max(alert.attempts - alert.unsure_attempts for alert in alerts)
    loud = error.maybe_delivered or never_sent & (never_sent - 1) == 0
    level = logging.WARNING if loud else logging.INFO
    return level, "retryable_error", f"failed (retryable): {error}"


def _each(alerts: Sequence[SpooledAlert], outcome: Outcome) -> list[tuple[SpooledAlert, Outcome]]:
    return [(alert, outcome) for alert in alerts]


def log_undelivered(
    message: Message,
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
        message.text,
        exc_info=error if exc_info else None,
        extra=event(
            event="undelivered",
            alerts=[alert] if alert is not None else [],
            destination=destination.describe() if destination is not None else None,
            reason=reason,
            error=str(error) if error is not None else None,
            error_code=getattr(error, "error_code", None),
            text=message.text,
        ),
    )


def _maybe_seen(alert: SpooledAlert) -> bool:
    """Whether an earlier attempt of the alert may have reached the chat: more attempts that may
    have (this one included) than this one, or its second chance."""
    return alert.second_chance or alert.unsure_attempts > 1


def _alone(alert: SpooledAlert) -> bool:
    return alert.second_chance or alert.message.subjects.recovery


def _now(work: Callable[[], None]) -> None:
    work()


def _labels(alerts: Sequence[SpooledAlert]) -> str:
    """'#3, #4, #9': how logs name several alerts at once."""
    return ", ".join(alert.label for alert in alerts)
