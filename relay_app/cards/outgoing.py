"""What an alert's message carries besides its text, and what its delivery leaves behind.

Before an attempt (`plan`): Resolve and Ignore buttons for each issue of its issue alerts (when
GLITCHTIP_API_TOKEN is set), and, for an uptime monitor's recovery, the message announcing its
outage to reply to. After delivery (`records`): the record of what the buttons act on and of
each outage announced (cards/sent.py), and, for each outage the message ends, a line on the
outage's card saying it is over, shown by the card's edit (a job, as every write is); and what
the capabilities record after it (`FollowUp`, registered when the relay is assembled: its
route's escalation steps, its issues watched, its count for the place's summary). All of it
one write, made in the unit of work that records the delivery when its jobs waited in the spool
(Queue.settle's `also`), in one of its own otherwise (this host's file, memory).

Nothing here may cost an alert: records that cannot be kept are logged, and the alert stays
delivered.
"""

from __future__ import annotations

import logging
import secrets
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace

from ..core.errors import SpoolError
from ..core.json_values import json_object
from ..core.routing import Destination
from ..core.sources import Sources
from ..core.trackers import IssueStatus
from ..delivery.job import Delivery, FollowUp
from ..delivery.outbox import Outbox
from ..message.formatting import Message
from ..message.subjects import alerted_in
from ..spool.model import Job
from ..spool.queue import Queue
from ..spool.store import Tx
from ..telegram.client import NO_EXTRAS, Extras
from ..telegram.courier import Sent
from ..words import Words
from .card import Button, IssueButton, SentMessage, keyboard, new_buttons
from .sent import KEPT_AT_LEAST, Outage, SentStore, recovered_in

log = logging.getLogger(__name__)

Clock = Callable[[], float]
PRUNE_EVERY = 60.0


@dataclass(frozen=True)
class Plan:
    extras: Extras = NO_EXTRAS
    buttons: tuple[IssueButton, ...] = ()
    # Each recovery in the message (its place among the message's alerts), with the outage it
    # ends.
    recoveries: tuple[tuple[int, Outage], ...] = ()


NOTHING = Plan()
# The states that begin an outage's thread (its recovery replies under its first message).
OPENING = ("down", "warning")


@dataclass(frozen=True)
class Kept:
    """What the message's routes say of its issues: whether a reply under it takes its issue
    (no alert's route says not), and how long one may be taken before its taker is called again
    (the shortest any says; None: no limit)."""

    thread: int | None = None  # where it went
    replies_take: bool = True
    take_for: float | None = None


class OldRecords:
    """What the relay keeps of the messages it sent, forgotten `keep_for` seconds after each
    was sent (at least a week): the dispatcher's upkeep, at most once a minute."""

    def __init__(
        self, store: SentStore, *, keep_for: float = KEPT_AT_LEAST, clock: Clock = time.time
    ) -> None:
        self._store = store
        self._keep_for = max(keep_for, KEPT_AT_LEAST)
        self._clock = clock
        self._pruned_at: float | None = None

    def tidy(self) -> None:
        if self._pruned_at is not None and time.monotonic() - self._pruned_at < PRUNE_EVERY:
            return
        self._pruned_at = time.monotonic()
        try:
            self._store.prune(before=self._clock() - self._keep_for)
        except SpoolError as exc:
            log.debug("old sent-message records could not be pruned: %s", exc)


class Outgoing:
    def __init__(
        self,
        store: SentStore | None,
        outbox: Outbox,
        *,
        buttons: bool,
        words: Words,
        sources: Sources,
        clock: Clock = time.time,
        follow_ups: Sequence[FollowUp] = (),
        theirs: Sequence[Button] = (),
    ) -> None:
        """`store` None: nothing is kept (no spool), so there are neither buttons nor threads;
        `outbox`: on the spool's queue (or memory's, without one), where what follows a
        delivery is written and the cards' edits queued; `buttons`: whether the issues at
        GlitchTip's own address get buttons; `theirs`: the capabilities' buttons on each."""
        self._store = store
        self._sources = sources
        self._queue = outbox.queue
        self._outbox = outbox
        self._words = words
        self._buttons = buttons and store is not None
        self._clock = clock
        self._follow_ups = tuple(follow_ups)
        self._theirs = tuple(theirs)

    @property
    def buttons(self) -> bool:
        """Whether issues at GlitchTip's own address get buttons."""
        return self._buttons

    def _new_buttons(self, alerts: Sequence[Message]) -> tuple[IssueButton, ...]:
        if not self._buttons:
            return ()
        issues = (issue for alert in alerts for issue in alert.subjects.issues)
        return new_buttons(issues, _fresh_keys())

    def plan(self, alerts: Sequence[Message], destination: Destination) -> Plan:
        own = next((alert.keyboard for alert in alerts if alert.keyboard is not None), None)
        if own is not None:  # a private call: its alert's buttons, which act there
            return Plan(Extras(dict(own)))
        if self._store is None:
            return NOTHING
        buttons = self._new_buttons(alerts)
        recoveries = tuple(self._outages_ended(alerts, destination))
        reply_to = self._reply_to(alerts, destination, recoveries)
        if not buttons and reply_to is None:
            return NOTHING
        return Plan(
            Extras(keyboard(buttons, self._words, theirs=self._theirs), reply_to),
            buttons,
            recoveries,
        )

    def records(
        self,
        plan: Plan,
        sent: Sent,
        alerts: Sequence[Message],
        jobs: Sequence[Job],
        destination: Destination,
    ) -> Callable[[Tx], None]:
        """What the delivery leaves behind, as one write: what later changes to the message
        need (a press may come any moment), each outage it ends marked over (its card's edit
        queued), and what each capability records after it (`follow_ups`)."""
        delivery = Delivery(sent, jobs, destination, self._clock())
        plan = _with_levels(plan, jobs, self._sources)
        writes = [
            *(follow_up(delivery) for follow_up in self._follow_ups),
            self._kept(
                plan,
                sent,
                _outages_announced(sent, alerts, jobs, destination),
                Kept(
                    thread=destination.thread,
                    replies_take=all(job.data.get("reply_takes", True) for job in jobs),
                    take_for=min(
                        (float(job.data["take_for"]) for job in jobs if "take_for" in job.data),
                        default=None,
                    ),
                ),
            ),
            *(
                self._said_over(outage, jobs[index].received_at - outage.down_at)
                for index, outage in plan.recoveries
            ),
        ]
        chosen = [write for write in writes if write is not None]

        def record(tx: Tx) -> None:
            for write in chosen:
                write(tx)

        return record

    def records_with(self, queue: Queue) -> bool:
        """Whether a delivery from `queue` is recorded with what follows it, in one unit of
        work: the jobs waited where the records go."""
        return queue is self._queue

    def record_apart(self, records: Callable[[Tx], None], sent: Sent) -> None:
        """`records` in a unit of work of their own (the jobs waited elsewhere)."""
        try:
            self._queue.record(records, now=self._clock())
        except SpoolError as exc:
            self.not_recorded(sent, exc)
            return
        self.recorded()

    def recorded(self) -> None:
        """Once the records were written: the dispatcher looks at the edits they queued."""
        self._outbox.wake()

    @staticmethod
    def not_recorded(sent: Sent, error: Exception) -> None:
        """Said once per message. A failure other than the spool's own (a statement refused
        inside a unit of work that otherwise went through, a bug) carries its traceback."""
        log.warning(
            "message %d in chat %s was sent, but what follows it could not be recorded (%s): "
            "presses on it will be refused, its monitors' recoveries sent without a reply, "
            "nobody called if nobody acts on it, its issues not watched",
            sent.message_id,
            sent.chat,
            error,
            exc_info=None if isinstance(error, SpoolError) else error,
        )

    def _kept(
        self, plan: Plan, sent: Sent, outages: Sequence[Outage], kept: Kept
    ) -> Callable[[Tx], None] | None:
        if self._store is None or (not plan.buttons and not outages):
            return None
        message = SentMessage(
            sent.chat,
            sent.message_id,
            sent.html,
            self._clock(),
            (),
            plan.buttons,
            replies_take=kept.replies_take,
            take_for=kept.take_for,
            thread=kept.thread,
        )
        outbox, store = self._outbox, self._store

        def keep(tx: Tx) -> None:
            if store.keep_in(tx, message, outages):  # an issue someone has: the card says who
                outbox.card_in(tx, sent.chat, sent.message_id)

        return keep

    def _outages_ended(
        self, alerts: Sequence[Message], destination: Destination
    ) -> Iterator[tuple[int, Outage]]:
        assert self._store is not None
        for index, alert in enumerate(alerts):
            for monitor in alert.subjects.monitors:
                if monitor.state != "up":
                    continue
                try:
                    outage = self._store.outage(destination.lane, monitor.link)
                except SpoolError:
                    outage = None  # sent plainly, as when its outage was never seen
                if outage is not None:
                    yield index, outage

    def _reply_to(
        self,
        alerts: Sequence[Message],
        destination: Destination,
        recoveries: Sequence[tuple[int, Outage]],
    ) -> int | None:
        """What the message answers: the outage a recovery ends, the message an answer is to,
        or the first message of an outage still going on (a warning turned critical)."""
        if recoveries:
            return recoveries[-1][1].message_id
        answering = next((alert.reply_to for alert in alerts if alert.reply_to is not None), None)
        if answering is not None:
            return answering
        return next(self._outages_going_on(alerts, destination), None)

    def _outages_going_on(
        self, alerts: Sequence[Message], destination: Destination
    ) -> Iterator[int]:
        """The message that began an outage still going on, for each alert that says it again
        (a metric alert's warning, then its critical): the thread it goes in."""
        assert self._store is not None
        for alert in alerts:
            for monitor in alert.subjects.monitors:
                if monitor.state not in OPENING:
                    continue
                try:
                    outage = self._store.outage(destination.lane, monitor.link)
                except SpoolError:
                    outage = None  # sent plainly, as a first outage is
                if outage is not None:
                    yield outage.message_id

    def _said_over(self, outage: Outage, lasted: float) -> Callable[[Tx], None]:
        """The outage's card gets a line saying the monitor is back, and its edit is queued."""
        words = self._words
        note = words.back_up_after.format(name=outage.name, duration=words.duration(lasted))
        outbox = self._outbox

        def say(tx: Tx) -> None:
            if recovered_in(tx, outage, note) is not None:
                outbox.card_in(tx, outage.chat, outage.message_id)

        return say


def _outages_announced(
    sent: Sent, alerts: Sequence[Message], jobs: Sequence[Job], destination: Destination
) -> list[Outage]:
    """The monitors' outages a message announced: each one's recovery replies to it."""
    return [
        Outage(
            destination.lane,
            monitor.link,
            sent.chat,
            sent.message_id,
            monitor.name,
            job.received_at,
        )
        for alert, job in zip(alerts, jobs, strict=True)
        for monitor in alert.subjects.monitors
        if monitor.state in OPENING
    ]


def _with_levels(plan: Plan, jobs: Sequence[Job], sources: Sources) -> Plan:
    """The plan's buttons with each issue's level as its alert said it (the weekly report
    counts alerts by it), and its state where the job says what its source said it is (a
    link's card of a resolved issue offers Reopen: its edit follows at once)."""
    levels = {
        found.issue.id: found.level for job in jobs for found in alerted_in(job.data, sources)
    }
    states: dict[str, IssueStatus] = {}
    for job in jobs:
        for issue_id, status in json_object(job.data.get("states")).items():
            if status in ("resolved", "ignored"):
                states[str(issue_id)] = status
    return replace(
        plan,
        buttons=tuple(
            replace(b, level=levels.get(b.issue_id), status=states.get(b.issue_id))
            for b in plan.buttons
        ),
    )


def _fresh_keys() -> Iterator[str]:
    """Keys no client can guess: a button's data names one, and only what it names counts."""
    while True:
        yield secrets.token_urlsafe(9)
