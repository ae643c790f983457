"""What summaries count (registered in plugin.py)."""

from __future__ import annotations

from ..core.metrics import CounterSpec

SUMMARIES = CounterSpec(
    "relay_summaries",
    ("Daily summaries posted (a route's summary), once a day per place for the fleet"),
)
