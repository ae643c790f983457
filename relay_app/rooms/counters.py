"""The rooms' metrics."""

from __future__ import annotations

from ..core.metrics import CounterSpec

ROOMS = CounterSpec(
    "relay_rooms",
    "Forum topics of issues: made, reopened, closed, renamed, pointed to from the route's own"
    " topic, refused by Telegram (no right, not a forum), or found deleted by hand",
    ("outcome",),
    ("made", "reopened", "closed", "renamed", "pointed", "refused", "gone"),
)
