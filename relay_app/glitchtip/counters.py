"""GlitchTip's metrics: its issues' look-ups for alerts' messages, and the issues an alert
counted and did not attach, by what became of them."""

from __future__ import annotations

from ..core.metrics import LOOKUP_OUTCOMES, CounterSpec

LOOKUPS = CounterSpec(
    "relay_glitchtip_lookups",
    "Look-ups of an issue's details in GlitchTip's API for an alert's message, by "
    "outcome: read, cached (known already), gone (no such issue), failed (GlitchTip "
    "down, slow, or refusing the token), skipped (none tried while it fails)",
    ("outcome",),
    LOOKUP_OUTCOMES,
)
HIDDEN = CounterSpec(
    "relay_hidden_issues",
    "Issues an alert counted and GlitchTip did not attach, by what became of them: "
    "named (found through GlitchTip's API and sent on), not_found (none new to the "
    "chat in the window), failed (GlitchTip did not answer)",
    ("outcome",),
    ("named", "not_found", "failed"),
)
