"""Where a claim's alerts go when they are sent, as the capabilities that place alerts decide
(a forum topic of the issue's own), and what becomes of the claim when its place needed a write
first or turned out to be gone. Used by the jobs' run (job.py); it names no capability."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from ..core.errors import RetryableDeliveryError, SpoolError, ThreadNotFound
from ..core.outcomes import Outcome, RetryAt
from ..core.routing import Destination
from ..message.formatting import Message
from ..spool.model import Claim, Job, Settlement
from .render import Call

log = logging.getLogger(__name__)


class Placing(Protocol):
    """Where a claim's alerts go, as a capability decides it when they are sent (a forum topic
    of their issue's own, rooms/): None, where they were queued; another place in the same
    chat; or a write that must go first (the topic made, or opened again), in this turn of the
    chat, the alerts going at its next. A `Call` it asks for must handle every refusal of its
    own (`Call.refused`): an alert never waits on a write that cannot be made."""

    def place(
        self, jobs: Sequence[Job], alerts: Sequence[Message], destination: Destination
    ) -> Destination | Call | None: ...

    def lost(self, placed: Destination, destination: Destination) -> None:
        """Telegram says the place it chose is gone (a topic deleted by hand): the alerts go
        again, to be placed anew."""

    def made_for(self, job: Job) -> bool:
        """Whether the job's last turn made its place (it goes alone now, into it)."""


def _made_for(placing: Placing, job: Job) -> bool:
    try:
        return placing.made_for(job)
    except Exception:  # a bug there never stops a claim: the job goes as it would
        log.exception("whether %s goes alone could not be told", _what([job]))
        return False


@dataclass(frozen=True)
class Placed:
    """Where a claim's alerts go (`destination`), which capability said so (`by`), and the
    write it needs made first (`first`)."""

    destination: Destination
    by: Placing | None = None
    first: Call | None = None


def made_for_any(places: Sequence[Placing], job: Job) -> bool:
    """Whether a capability made the job's place by its last turn: it goes alone, into it."""
    return any(_made_for(placing, job) for placing in places)


def placed_by(places: Sequence[Placing], claim: Claim, alerts: Sequence[Message]) -> Placed:
    """Where the claim's alerts go, as the first capability that decides it says; where
    they were queued when none does, or when deciding fails (a bug there never costs an
    alert its delivery)."""
    for placing in places:
        try:
            found = placing.place(claim.jobs, alerts, claim.destination)
        except SpoolError as exc:  # the spool said why (a stall): no trace per alert
            log.warning(
                "where %s go could not be decided (%s): they go where they were queued",
                _what(claim.jobs),
                exc,
            )
            return Placed(claim.destination)
        except Exception:
            log.exception(
                "where %s go could not be decided: they go where they were queued",
                _what(claim.jobs),
            )
            return Placed(claim.destination)
        if isinstance(found, Call):
            return Placed(claim.destination, placing, first=found)
        if found is not None:
            return Placed(found, placing)
    return Placed(claim.destination)


def placed_anew(
    claim: Claim, error: Exception | None, now: float, placed: Placed
) -> Settlement | None:
    """The alerts due again at once, to be placed anew: the write their place needed
    first took this turn (or was refused, and its capability recorded why), or the place
    chosen is gone (a topic deleted by hand); None otherwise."""
    jobs, again = claim.jobs, RetryAt(now, after_failure=False)
    if placed.first is not None and not isinstance(error, RetryableDeliveryError):
        if error is not None:
            log.error(
                "%s could not be made before %s (%s): they go again, placed anew",
                placed.first.text,
                _what(jobs),
                error,
            )
        why = str(error) if error is not None else None
        return Settlement(_each(jobs, again), "answered", "attempt", why)
    moved = placed.by is not None and placed.destination != claim.destination
    if isinstance(error, ThreadNotFound) and moved and placed.by is not None:
        placed.by.lost(placed.destination, claim.destination)
        return Settlement(_each(jobs, again), "answered", "attempt", str(error))
    return None


def _each(jobs: Sequence[Job], outcome: Outcome) -> list[tuple[Job, Outcome]]:
    return [(job, outcome) for job in jobs]


def _what(jobs: Sequence[Job]) -> str:
    """'alert(s) #3, #4': a claim's alerts as the attempts' log lines name them (job.py)."""
    return "alert(s) " + ", ".join(job.label for job in jobs)
