"""The first stage: a webhook received. Its payload is read once, here, into the alert every
later stage reads (routes, holds, the queue's details, the hidden issues' count); and its
arrival starts the one clock every wait of the webhook's ends by (`deadline`).

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

from ..core.routing import Destination
from ..glitchtip.webhook import Alert, parse_alert

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
    """A webhook as every stage after this one reads it: its payload and the alert read from
    it (once), where its URL says it goes (`asked`), when it arrived (monotonic), what more its
    jobs carry (`also`: an escalating issue's trend, a Sentry issue's details), and whether its
    answer waits for a first attempt (`attempt` False: a source that gives up on a slow answer,
    Sentry's)."""

    payload: dict[str, Any]
    alert: Alert
    asked: Destination
    started: float
    # When every wait of the webhook's ends (monotonic): a value the later stages are given,
    # not a question they come back here to ask.
    deadline: float
    also: Mapping[str, Any] | None = None
    attempt: bool = True


def receive(
    payload: dict[str, Any],
    asked: Destination,
    started: float,
    *,
    also: Mapping[str, Any] | None = None,
    attempt: bool = True,
) -> Received:
    """The webhook read: its alert parsed from the payload, the one time it is."""
    by = deadline(started)
    return Received(payload, parse_alert(payload), asked, started, by, also, attempt)
