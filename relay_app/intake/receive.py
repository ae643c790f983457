"""The first stage: a webhook received, as its source's page read it (once) into the alert every
later stage reads (routes, holds, the queue's details, the hidden issues' count, and the job,
which keeps it whole: core/alerts.py); and its arrival starts the one clock every wait of the
webhook's ends by (`deadline`).

GlitchTip waits at most 10 s for the answer and never sends again. Every wait of the webhook's
(the spool's lock, its issues' details, its attempt) ends by one deadline, `deadline(started)`,
computed here only; an attempt the webhook stops waiting for goes on, on the dispatcher's pool,
and its outcome is recorded as any other's. So an attempt never needs time reserved for it: any
RELAY_SEND_TIMEOUT the relay takes leaves the webhook its attempt.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..core.alerts import Alert
from ..core.routing import Destination

# GlitchTip's wait for the answer (10 s), less a margin for the network.
ANSWER_WITHIN = 9.5
# Of that, what is kept back for what follows the last wait: the alert written to memory when
# the spool could not take it, and the answer itself.
KEPT_FOR_ANSWER = 0.25


def deadline(started: float) -> float:
    """When every wait of a webhook that arrived at `started` (monotonic) ends."""
    return started + ANSWER_WITHIN - KEPT_FOR_ANSWER


@dataclass(frozen=True)
class Received:
    """A webhook as every stage after this one reads it: the alert its source's page read from
    it, where its URL says it goes (`asked`), when it arrived (monotonic), what more its
    jobs carry (`also`: an escalating issue's trend, a Sentry issue's details), and whether its
    answer waits for a first attempt (`attempt` False: a source that gives up on a slow answer,
    Sentry's)."""

    alert: Alert
    asked: Destination
    started: float
    # When every wait of the webhook's ends (monotonic): a value the later stages are given,
    # not a question they come back here to ask.
    deadline: float
    also: Mapping[str, Any] | None = None
    attempt: bool = True


def receive(
    alert: Alert,
    asked: Destination,
    started: float,
    *,
    also: Mapping[str, Any] | None = None,
    attempt: bool = True,
) -> Received:
    """The webhook received: its alert, and when each of its waits ends."""
    return Received(alert, asked, started, deadline(started), also, attempt)
