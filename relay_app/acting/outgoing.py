"""What a message carries besides its text, and what its delivery leaves behind.

As the webhook arrives (`prepared`): the message, with what GlitchTip's API says of its issues
when that is known already; once the alert is on disk, `enriched` waits for the rest within the
look-ups' budget (glitchtip/lookups.py), for the webhook's own attempt.

Before an attempt (`plan`): Resolve and Ignore buttons for each issue of its issue alerts (when
GLITCHTIP_API_TOKEN is set), and, for an uptime monitor's recovery, the message announcing its
outage to reply to. After delivery (`delivered`): the record of what the buttons act on and of
each outage announced (spool/sent.py), the outage's message edited to say it is over, and an
alert's message edited to add its issues' details when they came after it was built.

Nothing here may cost an alert: a record that cannot be kept, or an edit Telegram refuses, is
logged, and the alert stays delivered.
"""

from __future__ import annotations

import logging
import secrets
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

from ..core.errors import DeliveryError, SpoolError
from ..core.routing import Destination
from ..glitchtip.details import IssueDetails
from ..glitchtip.lookups import IssueLookups
from ..message.details import details_note
from ..message.formatting import Message, message_for
from ..message.subjects import IssueRef, split_by_origin
from ..spool.model import SpooledAlert
from ..spool.sent import KEPT_AT_LEAST, IssueButton, Outage, SentMessage, SentStore
from ..telegram.courier import NO_EXTRAS, Extras, Sent
from ..words import Words
from .keyboards import Edit, keyboard, new_buttons, show

log = logging.getLogger(__name__)

Clock = Callable[[], float]
PRUNE_EVERY = 60.0


@dataclass(frozen=True)
class Plan:
    extras: Extras = NO_EXTRAS
    buttons: tuple[IssueButton, ...] = ()
    # Each recovery in the message, with the outage it ends.
    recoveries: tuple[tuple[SpooledAlert, Outage], ...] = ()


NOTHING = Plan()


class Outgoing:
    def __init__(
        self,
        store: SentStore | None,
        *,
        edit: Edit,
        buttons: bool,
        words: Words,
        glitchtip_links: str | None = None,
        keep_for: float = KEPT_AT_LEAST,
        lookups: IssueLookups | None = None,
        clock: Clock = time.time,
    ) -> None:
        """`store` None: nothing is kept (no spool), so there are neither buttons nor threads.
        Only issues whose links are at `glitchtip_links` (GlitchTip's origin) get buttons, and
        their details from `lookups`. Records are kept `keep_for` seconds after their message
        was sent (at least a week)."""
        self._store = store
        self._words = words
        self._lookups = lookups
        self._edit = edit
        self._buttons = buttons and store is not None
        self._glitchtip_links = glitchtip_links
        self._keep_for = max(keep_for, KEPT_AT_LEAST)
        self._clock = clock
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

    def prepared(self, payload: dict[str, Any]) -> Message:
        """The message for a webhook's payload, as it may be kept (`vetted`), at once: with the
        details of its issues already known; the others' look-ups start (`enriched`)."""
        return self._built(payload, wait=0.0)

    def enriched(
        self, payload: dict[str, Any], message: Message, *, arrived: float, until: float
    ) -> Message | None:
        """The message again with the details it lacked, when some arrive within the look-ups'
        budget from `arrived` and before `until` (monotonic); None when none came in time. The
        alert is on disk meanwhile: a worker killed while GlitchTip answers costs it nothing."""
        coming = self._coming(message)
        if self._lookups is None or not coming:
            return None
        seconds = min(arrived + self._lookups.budget, until) - time.monotonic()
        if seconds <= 0 or not self._lookups.within(coming, seconds):
            return None
        return self._built(payload, wait=0.0, said=True)

    def when_enriched(
        self, payload: dict[str, Any], message: Message, then: Callable[[Message], object]
    ) -> None:
        """Call `then` with the message built again once the details it lacked have come (on
        the look-up's thread), if any came: for an alert that waits its turn meanwhile."""
        coming = self._coming(message)
        if self._lookups is None or not coming:
            return

        def rebuild(found: Mapping[str, IssueDetails]) -> None:
            if found:
                then(self._built(payload, wait=0.0, said=True))

        self._lookups.when_known(coming, rebuild)

    @staticmethod
    def _coming(message: Message) -> list[str]:
        return [issue.id for issue in message.subjects.issues if issue.details_later]

    def _built(self, payload: dict[str, Any], *, wait: float, said: bool = False) -> Message:
        """`said`: built again, after `prepared` warned about its links."""
        details = partial(self._details, wait=wait) if self._lookups is not None else None
        message = message_for(payload, self._words, details=details, now=self._clock())
        return self.vetted(message, warn=not said)

    def _details(
        self, issues: Sequence[IssueRef], *, wait: float
    ) -> tuple[dict[str, IssueDetails], frozenset[str]]:
        """Details of the issues at GlitchTip's own address (a webhook may name any link, and
        only GlitchTip's ids may go to its API) known within `wait`, and the ids of those that
        did not come."""
        assert self._lookups is not None
        ids = [issue.id for issue in issues if issue.origin == self._glitchtip_links]
        try:
            found = self._lookups.within(ids, wait) if ids else {}
        except Exception:  # a bug here must not cost the alert its message: it goes without
            log.exception("looking up the details of issue(s) %s failed", ", ".join(ids))
            return {}, frozenset()
        return found, frozenset(ids) - found.keys()

    def vetted(self, message: Message, *, warn: bool = True) -> Message:
        """The message as it may be kept: the issues it names whose links are not GlitchTip's
        own (GLITCHTIP_PUBLIC_URL, or GLITCHTIP_URL) get no buttons, and one WARNING says so
        (once per webhook: `warn` False when its message is built again)."""
        if not self._buttons:
            return message
        subjects, left_out = split_by_origin(message.subjects, self._glitchtip_links)
        if left_out and warn:
            origins = sorted({issue.origin for issue in left_out})
            log.warning(
                "an alert names %d issue(s) whose link is not at GlitchTip's address (%s): they "
                "get no buttons. Their links are at %s; if that is GlitchTip, set "
                "GLITCHTIP_PUBLIC_URL to it",
                len(left_out),
                self._glitchtip_links,
                ", ".join(origins[:3]) + (" and others" if len(origins) > 3 else ""),
            )
        return replace(message, subjects=subjects) if left_out else message

    def plan(self, alerts: Sequence[SpooledAlert], destination: Destination) -> Plan:
        if self._store is None:
            return NOTHING
        buttons: tuple[IssueButton, ...] = ()
        if self._buttons:
            issues = (issue for alert in alerts for issue in alert.message.subjects.issues)
            buttons = new_buttons(issues, _fresh_keys())
        recoveries = tuple(self._outages_ended(alerts, destination))
        reply_to = recoveries[-1][1].message_id if recoveries else None
        if not buttons and reply_to is None:
            return NOTHING
        return Plan(Extras(keyboard(buttons, self._words), reply_to), buttons, recoveries)

    def delivered(
        self, plan: Plan, sent: Sent, alerts: Sequence[SpooledAlert], destination: Destination
    ) -> Callable[[], None] | None:
        """Keep what later changes to this message need, at once (a press may come any moment);
        returns what is left to tell Telegram (each outage it ends is over), if anything."""
        if self._store is None:
            return None
        outages = [
            Outage(
                destination.lane,
                monitor.link,
                sent.chat,
                sent.message_id,
                monitor.name,
                alert.received_at,
            )
            for alert in alerts
            for monitor in alert.message.subjects.monitors
            if monitor.state == "down"
        ]
        if plan.buttons or outages:
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
        details_later = self._details_later(alerts, sent)
        if not plan.recoveries:
            return details_later

        def say_over() -> None:
            for alert, outage in plan.recoveries:
                self._say_over(outage, alert.received_at - outage.down_at)

        return say_over

    def _details_later(
        self, alerts: Sequence[SpooledAlert], sent: Sent
    ) -> Callable[[], None] | None:
        """For a message of one alert whose issues' details had not come when it was built:
        what asks for them, and adds them to the message by an edit when they come. (A digest
        of many gets none: its lines say where to read each issue.)"""
        if self._lookups is None or self._store is None or len(alerts) != 1:
            return None
        alert = alerts[0]
        later = [issue for issue in alert.message.subjects.issues if issue.details_later]
        if not later:
            return None
        lookups = self._lookups

        def add(found: Mapping[str, IssueDetails]) -> None:
            now = self._clock()
            shown = alert.message.text
            notes = [
                note
                for issue in later
                if issue.id in found
                and (
                    note := details_note(
                        issue.label, found[issue.id], self._words, shown=shown, now=now
                    )
                )
            ]
            if notes:
                self._add_note(sent, "\n".join(notes))

        return lambda: lookups.when_known([issue.id for issue in later], add)

    def _add_note(self, sent: Sent, note: str) -> None:
        store = self._store
        assert store is not None
        self._show(
            lambda: store.noted(sent.chat, sent.message_id, note),
            f"message {sent.message_id} in chat {sent.chat} could not be edited to add its "
            "issues' details",
        )

    def _show(self, noted: Callable[[], SentMessage | None], failing: str) -> None:
        """Record a line added to a sent message (`noted`: the message as it now stands, None
        when it is not kept), and edit the message to show it; `failing` is what a WARNING
        says when either fails."""
        try:
            message = noted()
            if message is not None:
                show(self._edit, message, self._words)
        except (SpoolError, DeliveryError) as exc:
            log.warning("%s (%s)", failing, exc)

    def _outages_ended(
        self, alerts: Sequence[SpooledAlert], destination: Destination
    ) -> Iterator[tuple[SpooledAlert, Outage]]:
        assert self._store is not None
        for alert in alerts:
            for monitor in alert.message.subjects.monitors:
                if monitor.state != "up":
                    continue
                try:
                    outage = self._store.outage(destination.lane, monitor.link)
                except SpoolError:
                    outage = None  # sent plainly, as when its outage was never seen
                if outage is not None:
                    yield alert, outage

    def _say_over(self, outage: Outage, lasted: float) -> None:
        store = self._store
        assert store is not None
        words = self._words
        note = words.back_up_after.format(name=outage.name, duration=words.duration(lasted))
        self._show(
            lambda: store.recovered(outage, note),
            f"the outage message {outage.message_id} of monitor {outage.link} could not be "
            "marked as over",
        )


def _fresh_keys() -> Iterator[str]:
    """Keys no client can guess: a button's data names one, and only what it names counts."""
    while True:
        yield secrets.token_urlsafe(9)
