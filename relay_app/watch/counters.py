"""What the watcher of GlitchTip counts: its requests and the issues it posts again
(registered in plugin.py)."""

from __future__ import annotations

from ..core.metrics import CounterSpec

WATCHER_REQUESTS = CounterSpec(
    "relay_watcher_requests",
    (
        "Requests the watcher of GlitchTip made about the issues the relay alerted on, by "
        "outcome: answered, or failed (GlitchTip down, slow, or refusing the token)"
    ),
    ("outcome",),
    ("answered", "failed"),
)

ESCALATING_POSTS = CounterSpec(
    "relay_escalating_posts",
    ("Unresolved issues the relay alerted on, posted again because they are escalating"),
)
