"""One part of a webhook (the whole of it, without routes) walked down the stages after the
routes: held back by a hold (hold.py), or queued on disk before anything slow, with its issues'
details within their budget (queue.py, details.py), then its first attempt waited for until the
webhook must be answered (attempt.py). Each stage is called once, in that order, from here.

Its message is not rendered here: the job renders it when it is sent. What the webhook needs
before then is read from the alert as it was received (its issues, for their details and
buttons; its words, for the log and its arrival's note), and the message is made here only
when a hold of its chat asks, to tell whether it matches.

Nothing here may lose the alert to an error of the relay's own: a failure before the alert is
queued logs it, with its text, as `ALERT NOT DELIVERED`; after, it waits in the queue, and the
retrier sends it. Either way the webhook is answered 500, and the log says which.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..core.alerts import Alert, plain_text
from ..core.lookups import Lookups
from ..core.routing import Destination
from ..message.formatting import Message, message_for
from ..message.subjects import NO_HOMES, IssueHomes, Subjects, split_by_origin, subjects_of
from ..routes import Route
from ..routes.steps import steps_as_json
from ..spool.model import Job
from ..words import ENGLISH
from .attempt import FirstAttempts, answer_of
from .details import Detailed
from .hold import Hold, held
from .queue import AlertQueue
from .receive import Received
from .taken import INTERNAL_ERROR, Taken

if TYPE_CHECKING:
    from ..delivery.job import Jobs
    from ..delivery.render import Renderer

log = logging.getLogger(__name__)

Clock = Callable[[], float]


@dataclass(frozen=True)
class SourceIssues:
    """What the relay knows of its sources' issues: whether they get buttons; where each
    source's issues must be to get them (`homes`: each source with a token, at its own address;
    a webhook may name any link); and where each source's issues' details are looked up (None:
    not at all)."""

    lookups: Lookups | None = None
    buttons: bool = False
    homes: IssueHomes = NO_HOMES


# No source's issue is known (no source has a token): none is looked up, none gets buttons.
NO_SOURCE_ISSUES = SourceIssues()


class WebhookAlerts:
    def __init__(
        self,
        *,
        queue: AlertQueue,
        attempts: FirstAttempts,
        renderer: Renderer,
        silencing: Hold | None,
        jobs: Jobs,
        issues: SourceIssues = NO_SOURCE_ISSUES,
        clock: Clock = time.time,
    ) -> None:
        self._detailed = Detailed(queue, issues.lookups, issues.homes, renderer.sources)
        self._attempts = attempts
        self._renderer = renderer
        self._buttons = issues.buttons
        self._homes = issues.homes
        self._silencing = silencing
        self._jobs = jobs
        self._clock = clock

    def take(
        self, part: Received, destination: Destination, *, route: Route | None = None
    ) -> Taken:
        """`part`: the webhook as received, or the part of it the routes sent `destination`'s
        way; `route`: the route that sent it (None: no route; where the webhook's URL says),
        whose `mention` it calls, whose `sound` says when it rings (decided when it is sent),
        whose `escalate` steps call while nobody acts (oncall/steps.py)."""
        mentions = route.mention if route is not None else ()
        text = ""
        queued: Job | None = None
        try:
            text = plain_text(part.alert)
            # Every issue it names: which are not at their source's address is said here.
            subjects = subjects_of(part.alert, self._renderer.sources)
            self._check_links(subjects)
            received_at = self._clock()

            def message() -> Message:
                return self._renderer.webhook(
                    part.alert, mentions, received_at=received_at, vetted=False
                )

            silence = held(self._silencing, message, destination)
            if silence is not None:
                # Kept in the spool and counted; its silence's summary says so when it ends.
                return Taken("silenced", "silence", 200, silence=silence.id, text=text)
            called = {**(part.also or {}), **_route_data(route)}
            queued = self._detailed.queued(part, called, subjects, text, destination)
            if queued is None:  # it could wait nowhere; its text is logged
                return Taken(
                    "failed", "cannot_queue", 503, error="the alert could not be queued", text=text
                )
            if not part.attempt:
                return answer_of(queued, text, self._attempts.leave(queued))
            attempted = self._attempts.first_attempt(queued, by=part.deadline)
            return answer_of(queued, text, attempted)
        except Exception as exc:
            return self._failed(part.alert, queued, exc)

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

    def _failed(self, alert: Alert, queued: Job | None, exc: Exception) -> Taken:
        if queued is not None:
            log.exception(
                "taking alert %s in failed after it was queued: it waits there, and the "
                "retrier sends it",
                queued.label,
            )
            return Taken("queued", "internal_error", 500, queued, error=INTERNAL_ERROR)
        # Its text as the log can hold it, whatever failed: the alert's raw form at worst.
        text = message_for(alert, ENGLISH, sources=self._renderer.sources).text
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
