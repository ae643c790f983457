"""A webhook's alert taken in, from its read payload to what its answer says: its message built
at once, held back by a silence or written to the queue (on disk before anything slow), then
enriched with its issues' details: within their budget when it is attempted now, whenever they
come before its turn when it waits.

Nothing here may lose the alert to an error of the relay's own: a failure before the alert is
queued logs it, with its text, as `ALERT NOT DELIVERED`; after, it waits in the queue, and the
retrier sends it. Either way the webhook is answered 500, and the log says which.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from ..core.metrics import WebhookOutcome
from ..core.outcomes import Dead, Delivered, RetryAt
from ..core.routing import Destination
from ..message.formatting import Message, message_for
from ..spool.model import SpooledAlert
from ..words import ENGLISH

if TYPE_CHECKING:
    from ..acting.outgoing import Outgoing
    from ..acting.silencing import Silencing
    from ..delivery.intake import Attempted, Intake
    from ..delivery.job import Jobs

log = logging.getLogger(__name__)

INTERNAL_ERROR = "internal error; see the relay's log"


@dataclass(frozen=True)
class Taken:
    """What became of a webhook's alert, as its answer says it."""

    outcome: WebhookOutcome
    reason: str
    status: int
    alert: SpooledAlert | None = None
    error: str | None = None
    silence: int | None = None
    # The message it became, as built when it arrived (None when it could not be built).
    message: Message | None = None

    @property
    def in_spool(self) -> bool:
        """Whether the spool's queue took its alert in (and noted its arrival with it)."""
        return self.alert is not None and not self.alert.in_memory

    @property
    def text(self) -> str:
        message = self.message or (self.alert.message if self.alert is not None else None)
        return message.text if message is not None else ""


class WebhookAlerts:
    def __init__(
        self, *, intake: Intake, outgoing: Outgoing, silencing: Silencing | None, jobs: Jobs
    ) -> None:
        self._intake = intake
        self._outgoing = outgoing
        self._silencing = silencing
        self._jobs = jobs

    def take(
        self,
        payload: dict[str, Any],
        destination: Destination,
        started: float,
        *,
        mentions: tuple[str, ...] = (),
    ) -> Taken:
        """`started`: when the webhook arrived (monotonic); `mentions`: whom its route calls,
        kept with its message however it is built again."""
        message: Message | None = None
        queued: SpooledAlert | None = None

        def calling(built: Message) -> Message:
            if not mentions:
                return built
            return replace(built, subjects=replace(built.subjects, mentions=mentions))

        try:
            message = calling(self._outgoing.prepared(payload))
            silence = (
                self._silencing.hold(message, destination) if self._silencing is not None else None
            )
            if silence is not None:
                # Kept in the spool and counted; its silence's summary says so when it ends.
                return Taken("silenced", "silence", 200, silence=silence.id, message=message)
            admission = self._intake.admit(message, destination, started=started)
            if admission is None:  # it could wait nowhere; its text is logged
                return Taken(
                    "failed",
                    "cannot_queue",
                    503,
                    error="the alert could not be queued",
                    message=message,
                )
            queued = admission.alert
            prepared = message
            if admission.claim is None:
                # Not a failure: older alerts for its chat go first, its chat's turn has not
                # come, or Telegram is failing. It waits in the queue; the retrier sends it,
                # with its issues' details if they come before its turn.
                self._outgoing.when_enriched(
                    payload,
                    prepared,
                    lambda revised: self._intake.revise(queued, calling(revised)),
                )
                return Taken("queued", admission.waiting or "paced", 202, queued)

            def enrich(until: float) -> Message | None:
                built = self._outgoing.enriched(payload, prepared, arrived=started, until=until)
                return calling(built) if built is not None else None

            return _answer(queued, self._intake.attempt(admission, started=started, enrich=enrich))
        except Exception as exc:
            return self._failed(payload, message, queued, exc)

    def _failed(
        self,
        payload: dict[str, Any],
        message: Message | None,
        queued: SpooledAlert | None,
        exc: Exception,
    ) -> Taken:
        if queued is not None:
            log.exception(
                "taking alert %s in failed after it was queued: it waits there, and the "
                "retrier sends it",
                queued.label,
            )
            return Taken("queued", "internal_error", 500, queued, error=INTERNAL_ERROR)
        # Its text as the log can hold it, whatever failed: the payload's raw form at worst.
        text = message if message is not None else message_for(payload, ENGLISH)
        self._jobs.undelivered(text, "the relay failed while taking it in", exc, exc_info=True)
        return Taken("failed", "internal_error", 500, error=INTERNAL_ERROR)


def _answer(alert: SpooledAlert, attempted: Attempted) -> Taken:
    outcome, error = attempted.outcome, attempted.error
    if isinstance(outcome, Delivered):
        return Taken("sent", "delivered", 200, alert)
    if isinstance(outcome, RetryAt):  # already with the retrier: its row is due again
        reason = "topic_not_found" if outcome.destination is not None else "attempt_failed"
        return Taken("queued", reason, 502, alert, error=error)
    assert isinstance(outcome, Dead)  # kept as a dead letter, and logged with its text
    if outcome.kind == "internal":
        return Taken("failed", "internal_error", 500, alert, error=INTERNAL_ERROR)
    return Taken("failed", "refused", 502, alert, error=error)
