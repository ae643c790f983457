"""A webhook's alert taken in, from its read payload to what its answer says: held back by a
silence, or queued as a job (on disk before anything slow) holding the payload and whom its route
calls; given its issues' details from GlitchTip's API when they come within their budget (the
one way details reach a message: an alert waits for them, within RELAY_DETAILS_BUDGET, and one
that waits its turn gets them whenever they come before it goes); then its first attempt,
waited for until the webhook must be answered (delivery/intake.py).

Its message is not rendered here: the job renders it when it is sent. What the webhook needs
before then is read from the payload as it was parsed (its issues, for their details and
buttons; its words, for the log and its arrival's note), and the message is made here only
when a silence of its chat holds now, to tell whether it matches.

Nothing here may lose the alert to an error of the relay's own: a failure before the alert is
queued logs it, with its text, as `ALERT NOT DELIVERED`; after, it waits in the queue, and the
retrier sends it. Either way the webhook is answered 500, and the log says which.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from ..core.metrics import WebhookOutcome
from ..core.outcomes import Dead, Delivered, RetryAt
from ..core.routing import Destination
from ..core.services import Key
from ..core.sources import Sources
from ..delivery.intake import deadline
from ..glitchtip.details import IssueDetails, details_as_json, details_by_issue, filled
from ..glitchtip.lookups import Lookups, scoped
from ..glitchtip.webhook import Alert, IssueAlert, parse_alert, plain_text, with_short_ids
from ..message.formatting import Message, message_for
from ..message.subjects import (
    NO_HOMES,
    IssueHomes,
    Subjects,
    issue_ref,
    split_by_origin,
    subjects_of,
)
from ..routes import Route
from ..routes.steps import steps_as_json
from ..spool.model import Job
from ..words import ENGLISH

if TYPE_CHECKING:
    from ..delivery.intake import Attempted, Intake
    from ..delivery.job import Jobs
    from ..delivery.render import Renderer

log = logging.getLogger(__name__)

INTERNAL_ERROR = "internal error; see the relay's log"
Clock = Callable[[], float]


@dataclass(frozen=True)
class GlitchTipIssues:
    """What the relay knows of GlitchTip's own issues: their links' origin (GLITCHTIP_PUBLIC_URL,
    or GLITCHTIP_URL; a webhook may name any link, and only these ids go to GlitchTip's API),
    and whether they get buttons; where each source's issues must be to get them (`homes`:
    Sentry's too); and where each source's issues' details are looked up (None: not at all)."""

    origin: str | None = None
    lookups: Lookups | None = None
    buttons: bool = False
    homes: IssueHomes = NO_HOMES


# No issue is known to be GlitchTip's own (GLITCHTIP_URL unset): none is looked up, none gets
# buttons.
NOT_GLITCHTIPS = GlitchTipIssues()


class Silence(Protocol):
    """What holds an alert back from its chat (a silence: silences/)."""

    @property
    def id(self) -> int: ...


class Hold(Protocol):
    """What may hold a webhook's alert back from its chat, keeping it (silences/silencing.py,
    registered when the relay is assembled): the message is made only when asked for."""

    def hold(
        self, message: Message | Callable[[], Message], destination: Destination
    ) -> Silence | None: ...


class HeldNoted(Protocol):
    """Told of each alert a hold kept back from its place (the daily summaries count it)."""

    def held(self, destination: Destination) -> None: ...


HOLD: Key[Hold] = Key("hold")
HELD_NOTED: Key[HeldNoted] = Key("held noted")


@dataclass(frozen=True)
class Taken:
    """What became of a webhook's alert, as its answer says it."""

    outcome: WebhookOutcome
    reason: str
    status: int
    alert: Job | None = None
    error: str | None = None
    silence: int | None = None
    # Its words, as its arrival's note keeps them ("" when it could not be read).
    text: str = ""

    @property
    def in_spool(self) -> bool:
        """Whether the spool's queue took its alert in (and noted its arrival with it)."""
        return self.alert is not None and self.alert.home == "spool"


class WebhookAlerts:
    def __init__(
        self,
        *,
        intake: Intake,
        renderer: Renderer,
        silencing: Hold | None,
        jobs: Jobs,
        glitchtip: GlitchTipIssues = NOT_GLITCHTIPS,
        clock: Clock = time.time,
    ) -> None:
        self._intake = intake
        self._renderer = renderer
        self._buttons = glitchtip.buttons
        self._homes = glitchtip.homes
        self._silencing = silencing
        self._jobs = jobs
        self._lookups = glitchtip.lookups
        self._clock = clock

    def take(
        self,
        payload: dict[str, Any],
        destination: Destination,
        started: float,
        *,
        route: Route | None = None,
        also: Mapping[str, Any] | None = None,
        attempt: bool = True,
        alert: Alert | None = None,
    ) -> Taken:
        """`started`: when the webhook arrived (monotonic); `route`: the route that sent it
        here (None: no route; where the webhook's URL says), whose `mention` it calls, whose
        `sound` says when it rings (decided when it is sent), whose `escalate` steps call
        while nobody acts (oncall/steps.py); `also`: more for its job; `attempt` False: once it
        is queued, it is left to the dispatcher, and the answer does not wait for a send
        (a source that gives up on a slow answer: Sentry's); `alert`: the payload as the
        routes read it already (read here otherwise: it is read once on the way in)."""
        mentions = route.mention if route is not None else ()
        text = ""
        queued: Job | None = None
        try:
            alert = alert if alert is not None else parse_alert(payload)
            text = plain_text(alert)
            # Every issue it names: which are not GlitchTip's is said here.
            subjects = subjects_of(alert, self._renderer.sources)
            self._check_links(subjects)
            received_at = self._clock()

            def message() -> Message:
                return self._renderer.webhook(
                    payload, mentions, received_at=received_at, vetted=False
                )

            silence = (
                self._silencing.hold(message, destination) if self._silencing is not None else None
            )
            if silence is not None:
                # Kept in the spool and counted; its silence's summary says so when it ends.
                return Taken("silenced", "silence", 200, silence=silence.id, text=text)
            called = {**(also or {}), **_route_data(route)}
            queued = self._queued(payload, called, subjects, text, destination, started, attempt)
            if queued is None:  # it could wait nowhere; its text is logged
                return Taken(
                    "failed", "cannot_queue", 503, error="the alert could not be queued", text=text
                )
            if not attempt:
                return _answer(queued, text, self._intake.leave(queued))
            return _answer(queued, text, self._intake.first_attempt(queued, started=started))
        except Exception as exc:
            return self._failed(payload, queued, exc)

    def _check_links(self, subjects: Subjects) -> None:
        """Say once, as its webhook arrives, that an alert names issues whose links are not at
        their source's own address (GLITCHTIP_PUBLIC_URL or GLITCHTIP_URL; SENTRY_URL): they get
        no buttons."""
        if not self._buttons:
            return
        _, left_out = split_by_origin(subjects, self._homes)
        if left_out:
            origins = sorted({issue.origin for issue in left_out})
            log.warning(
                "an alert names %d issue(s) whose link is not at its source's address (%s): they "
                "get no buttons. Their links are at %s; if that is GlitchTip, set "
                "GLITCHTIP_PUBLIC_URL to it (for Sentry, SENTRY_URL)",
                len(left_out),
                self._homes.described(),
                ", ".join(origins[:3]) + (" and others" if len(origins) > 3 else ""),
            )

    def _queued(
        self,
        payload: dict[str, Any],
        called: Mapping[str, Any],
        subjects: Subjects,
        text: str,
        destination: Destination,
        started: float,
        attempt: bool = True,
    ) -> Job | None:
        """The alert's job, with its issues' details that are known now; due when the rest
        come within their budget, or when the budget is spent. Without a first attempt of its
        webhook's (`attempt` False), the webhook's answer does not wait for them."""
        about: dict[str, Any] = {"webhook": payload, **called}
        keys = self._detail_keys(subjects)
        if self._lookups is None or not keys:
            return self._intake.admit(about, destination, started=started, text=text, held=attempt)
        # What the webhook itself said of its issues (Sentry's event): the look-ups fill in.
        found = _Found(
            payload, details_by_issue(called.get("details")), keys, self._renderer.sources
        )
        known = self._lookups.within(list(keys.values()), 0.0)
        coming = [key for key in keys.values() if key not in known]
        about |= found.with_details(known)
        due_in = self._lookups.budget if coming else 0.0
        job = self._intake.admit(
            about, destination, started=started, text=text, due_in=due_in, held=attempt
        )
        if job is not None and coming:
            if attempt:
                self._wait_for_details(job, found, coming, dict(known), started)
            else:
                self._given_later(job, found, coming, dict(known))
        return job

    def _detail_keys(self, subjects: Subjects) -> dict[str, str]:
        """The look-up key of each of the alert's issues whose details their source's API is
        asked for, by the relay's id of it: those of a source's own (the issues that get
        buttons: `homes`), a GlitchTip issue as the organization its link names (a webhook may
        name any link: it is read as that organization's, or not at all), a Sentry issue by
        its id (its alert came signed)."""
        if self._lookups is None:
            return {}
        return {
            issue.id: scoped(issue.org, issue.id) if issue.org else issue.id
            for issue in subjects.issues
            if self._homes.owns(issue)
        }

    def _wait_for_details(
        self,
        job: Job,
        found: _Found,
        coming: list[str],
        known: dict[str, IssueDetails],
        started: float,
    ) -> None:
        """Wait for the details still coming, within the budget from the webhook's arrival,
        and add what came to the job; what comes later is added while it waits its turn."""
        assert self._lookups is not None
        until = min(started + self._lookups.budget, deadline(started))
        try:
            came = self._lookups.within(coming, max(0.0, until - time.monotonic()))
        except Exception:  # a bug here must not cost the alert: it goes without them
            log.exception("looking up the details of issue(s) %s failed", ", ".join(coming))
            return
        known.update(came)
        # Due now, with what came: the budget is spent.
        self._intake.merge(job, found.with_details(known), wake=False)
        missing = [key for key in coming if key not in came]
        if missing:
            self._given_later(job, found, missing, known)

    def _given_later(
        self, job: Job, found: _Found, coming: list[str], known: dict[str, IssueDetails]
    ) -> None:
        """The details still coming, given to the job while it waits its turn (due at once)."""
        assert self._lookups is not None

        def later(came: Mapping[str, IssueDetails]) -> None:
            if came:
                self._intake.merge(job, found.with_details({**known, **came}))

        self._lookups.when_known(coming, later)

    def _failed(self, payload: dict[str, Any], queued: Job | None, exc: Exception) -> Taken:
        if queued is not None:
            log.exception(
                "taking alert %s in failed after it was queued: it waits there, and the "
                "retrier sends it",
                queued.label,
            )
            return Taken("queued", "internal_error", 500, queued, error=INTERNAL_ERROR)
        # Its text as the log can hold it, whatever failed: the payload's raw form at worst.
        text = message_for(payload, ENGLISH, sources=self._renderer.sources).text
        self._jobs.undelivered(text, "the relay failed while taking it in", exc, exc_info=True)
        return Taken("failed", "internal_error", 500, error=INTERNAL_ERROR)


def _route_data(route: Route | None) -> dict[str, Any]:
    """What the alert's route says of it, as its job keeps it: whom its message calls, when it
    rings, and whom to call while nobody acts."""
    data: dict[str, Any] = {}
    if route is None:
        return data
    if route.mention:
        data["mentions"] = list(route.mention)
    if route.sound:
        data["sound"] = route.sound.to_json()
    if route.escalate:
        data["escalate"] = steps_as_json(route.escalate)
    if not route.reply_takes:
        data["reply_takes"] = False
    if route.take_for is not None:
        data["take_for"] = route.take_for
    return data


@dataclass(frozen=True)
class _Found:
    """An alert's webhook and the details it gave of its issues itself (by issue id), to which
    its sources' answers add: what a job keeps of them."""

    payload: dict[str, Any]
    given: Mapping[str, IssueDetails]
    # Each issue's look-up key, by the relay's id of it.
    keys: Mapping[str, str]
    sources: Sources

    def with_details(self, looked_up: Mapping[str, IssueDetails]) -> dict[str, Any]:
        """The job's `details` by issue (the webhook's own, filled in by those looked up by
        key), and its `webhook`, naming each issue's short id where it did not and its source
        does."""
        details = {issue: looked_up[key] for issue, key in self.keys.items() if key in looked_up}
        for issue, own in self.given.items():
            details[issue] = filled(own, details[issue]) if issue in details else own
        return {
            "details": {issue: details_as_json(found) for issue, found in details.items()},
            "webhook": _short_ids_named(self.payload, details, self.sources),
        }


def _short_ids_named(
    payload: dict[str, Any], details: Mapping[str, IssueDetails], sources: Sources
) -> dict[str, Any]:
    """The payload naming the short ids its source gave of its issues where it did not (a
    Sentry event alert names none): what every reader of the job then reads. GlitchTip's own
    names them (its `sections`), and is not read again."""
    if payload.get("sections") or not any(found.short_id for found in details.values()):
        return payload
    alert = parse_alert(payload)
    if not isinstance(alert, IssueAlert):
        return payload

    def short_id_of(link: str) -> str | None:
        ref = issue_ref(link, None, source=sources.named(alert.source))
        known = details.get(ref.id) if ref is not None else None
        return known.short_id if known is not None else None

    return with_short_ids(payload, short_id_of)


def _again(job: Job, text: str, outcome: RetryAt, error: str | None) -> Taken:
    """An alert due again after its first attempt: with the retrier (502), or, where its turn
    made what its place needs first (its issue's topic), in the queue for its next (202)."""
    if not outcome.after_failure and error is None:
        return Taken("queued", "paced", 202, job, text=text)
    reason = "topic_not_found" if outcome.destination is not None else "attempt_failed"
    return Taken("queued", reason, 502, job, error=error, text=text)


def _answer(job: Job, text: str, attempted: Attempted) -> Taken:
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
