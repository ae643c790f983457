"""What silences count: the alerts they held (registered in plugin.py)."""

from __future__ import annotations

from ..core.metrics import CounterSpec

ALERTS_SILENCED = CounterSpec(
    "relay_alerts_silenced",
    (
        "Alerts held back from their chat by a silence: kept in the spool, counted, and "
        "summed up in one message when the silence ends"
    ),
)
