"""Sentry's metrics."""

from __future__ import annotations

from ..core.metrics import LOOKUP_OUTCOMES, CounterSpec

LOOKUPS = CounterSpec(
    "relay_sentry_lookups",
    "Look-ups of a Sentry issue's details in Sentry's API for an alert's message (an event"
    " alert's short id and count, a new issue's frame), by outcome, as relay_glitchtip_lookups",
    ("outcome",),
    LOOKUP_OUTCOMES,
)
