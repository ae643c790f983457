"""What an alert's message carries besides its text, and what its delivery leaves behind.

Before an attempt (`plan`): Resolve and Ignore buttons for each issue of its issue alerts (when
GLITCHTIP_API_TOKEN is set), and, for an uptime monitor's recovery, the message announcing its
outage to reply to. After delivery (`delivered`): the record of what the buttons act on and of
each outage announced (spool/sent.py), and, for each outage the message ends, a line on the
outage's card saying it is over, shown by the card's edit (a job, as every write is).

Nothing here may cost an alert: a record that cannot be kept is logged, and the alert stays
delivered.
"""

from __future__ import annotations

import logging
import secrets
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from ..core.errors import SpoolError
from ..core.routing import Destination
from ..delivery.outbox import Outbox
from ..message.cards import IssueButton, SentMessage, keyboard, new_buttons
from ..message.formatting import Message
from ..message.subjects import Subjects, split_by_origin
from ..spool.model import Job
from ..spool.sent import KEPT_AT_LEAST, Outage, SentStore
from ..telegram.courier import NO_EXTRAS, Extras, Sent
from ..words import Words
from .daily_summary import DailySummaries
from .escalation import Escalation
from .watcher import Watcher

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


class Outgoing:
    def __init__(
        self,
        store: SentStore | None,
        *,
        outbox: Outbox | None,
        buttons: bool,
        words: Words,
        glitchtip_links: str | None = None,
        keep_for: float = KEPT_AT_LEAST,
        clock: Clock = time.time,
        escalation: Escalation | None = None,
        watcher: Watcher | None = None,
        summaries: DailySummaries | None = None,
    ) -> None:
        """`store` None: nothing is kept (no spool), so there are neither buttons nor threads.
        Only issues whose links are at `glitchtip_links` (GlitchTip's origin) get buttons.
        Records are kept `keep_for` seconds after their message was sent (at least a week)."""
        self._store = store
        self._outbox = outbox
        self._words = words
        self._buttons = buttons and store is not None
        self._glitchtip_links = glitchtip_links
        self._keep_for = max(keep_for, KEPT_AT_LEAST)
        self._clock = clock
        self._escalation = escalation
        self._watcher = watcher
        self._summaries = summaries
        self._pruned_at: float | None = None

    def tidy(self) -> None:
        """Forget records past their time (the dispatcher's upkeep: at most once a minute)."""
        if self._store is None:
            return
        if self._pruned_at is not None and time.monotonic() - self._pruned_at < PRUNE_EVERY:
            return
        self._pruned_at = time.monotonic()
        try:
            self._store.prune(before=self._clock() - self._keep_for)
        except SpoolError as exc:
            log.debug("old sent-message records could not be pruned: %s", exc)

    def check_links(self, subjects: Subjects) -> None:
        """Say once, as its webhook arrives, that an alert names issues whose links are not at
        GlitchTip's own address (GLITCHTIP_PUBLIC_URL, or GLITCHTIP_URL): they get no buttons."""
        if not self._buttons:
            return
        _, left_out = split_by_origin(subjects, self._glitchtip_links)
        if left_out:
            origins = sorted({issue.origin for issue in left_out})
            log.warning(
                "an alert names %d issue(s) whose link is not at GlitchTip's address (%s): they "
                "get no buttons. Their links are at %s; if that is GlitchTip, set "
                "GLITCHTIP_PUBLIC_URL to it",
                len(left_out),
                self._glitchtip_links,
                ", ".join(origins[:3]) + (" and others" if len(origins) > 3 else ""),
            )

    def _new_buttons(self, alerts: Sequence[Message]) -> tuple[IssueButton, ...]:
        if not self._buttons:
            return ()
        issues = (issue for alert in alerts for issue in alert.subjects.issues)
        return new_buttons(issues, _fresh_keys())

    def plan(self, alerts: Sequence[Message], destination: Destination) -> Plan:
        if self._store is None:
            return NOTHING
        buttons = self._new_buttons(alerts)
        recoveries = tuple(self._outages_ended(alerts, destination))
        answering = next((alert.reply_to for alert in alerts if alert.reply_to is not None), None)
        reply_to = recoveries[-1][1].message_id if recoveries else answering
        if not buttons and reply_to is None:
            return NOTHING
        return Plan(Extras(keyboard(buttons, self._words), reply_to), buttons, recoveries)

    def delivered(
        self,
        plan: Plan,
        sent: Sent,
        alerts: Sequence[Message],
        jobs: Sequence[Job],
        destination: Destination,
    ) -> None:
        """Keep what later changes to this message need, at once (a press may come any
        moment), mark each outage it ends as over, and start its route's escalation steps."""
        self._followed_up(sent, jobs, destination)
        if self._store is None:
            return
        self._keep(plan, sent, _outages_announced(sent, alerts, jobs, destination))
        for index, outage in plan.recoveries:
            self._say_over(outage, jobs[index].received_at - outage.down_at)

    def _followed_up(self, sent: Sent, jobs: Sequence[Job], destination: Destination) -> None:
        """What follows an alert's delivery: its escalation steps planned, its issues watched,
        and it counted for the place's daily summary."""
        about = [job.data for job in jobs]
        if self._escalation is not None:
            self._escalation.delivered(
                sent.chat, destination.thread, sent.message_id, self._clock(), about
            )
        if self._watcher is not None:
            self._watcher.alerted(about, sent.chat, destination.thread)
        webhooks = sum(1 for data in about if "webhook" in data)  # not a summary, nor a notice
        if self._summaries is not None and webhooks:
            self._summaries.delivered(destination, webhooks)

    def _keep(self, plan: Plan, sent: Sent, outages: Sequence[Outage]) -> None:
        assert self._store is not None
        if not plan.buttons and not outages:
            return
        message = SentMessage(
            sent.chat, sent.message_id, sent.html, self._clock(), (), plan.buttons
        )
        try:
            self._store.keep(message, outages)
        except SpoolError as exc:
            log.warning(
                "message %d in chat %s was sent, but what its buttons and outages refer to "
                "could not be kept (%s): presses on it will be refused, and its monitors' "
                "recoveries sent without a reply",
                sent.message_id,
                sent.chat,
                exc,
            )

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

    def _say_over(self, outage: Outage, lasted: float) -> None:
        """The outage's card gets a line saying the monitor is back, and its edit is queued."""
        assert self._store is not None
        words = self._words
        note = words.back_up_after.format(name=outage.name, duration=words.duration(lasted))
        try:
            if self._store.recovered(outage, note) is not None and self._outbox is not None:
                self._outbox.card(outage.chat, outage.message_id)
        except SpoolError as exc:
            log.warning(
                "the outage message %d of monitor %s could not be marked as over (%s)",
                outage.message_id,
                outage.link,
                exc,
            )


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
        if monitor.state == "down"
    ]


def _fresh_keys() -> Iterator[str]:
    """Keys no client can guess: a button's data names one, and only what it names counts."""
    while True:
        yield secrets.token_urlsafe(9)
