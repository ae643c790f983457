"""What a webhook's walk ends with, for each part the routes made of it: what became of its
alert, as the answer says it (web/views.py makes it HTTP) and the record notes it."""

from __future__ import annotations

from dataclasses import dataclass

from ..core.metrics import WebhookOutcome
from ..spool.model import Job

INTERNAL_ERROR = "internal error; see the relay's log"


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
