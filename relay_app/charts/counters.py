"""The charts' metrics."""

from __future__ import annotations

from ..core.metrics import CounterSpec

CHARTS = CounterSpec(
    "relay_charts",
    "Charts of issues asked for in the chats: drawn, sent again from this process's minute"
    " (cached), sent as a photo, sent as text (Telegram refused the photo), not drawn in time or"
    " memory (failed: its numbers went as text), source not answering (unavailable), refused"
    " (too many drawing, busy; the typed-input budget spent, refused)",
    ("outcome",),
    ("drawn", "cached", "sent", "as_text", "failed", "unavailable", "busy", "refused"),
)
