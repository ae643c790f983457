"""What snoozes count (registered in plugin.py)."""

from __future__ import annotations

from ..core.metrics import CounterSpec

SNOOZES = CounterSpec(
    "relay_snoozes",
    (
        "Issues ignored from a card until a time or so many more events, by outcome: made, "
        "back (the condition met: unresolved again in GlitchTip, said under the alert), or "
        "cancelled (no longer ignored meanwhile)"
    ),
    ("outcome",),
    ("made", "back", "cancelled"),
)
