"""What the watcher of GlitchTip counts: its requests, the cards it keeps in step, the issues it
posts again (registered in plugin.py)."""

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

CARDS_IN_STEP = CounterSpec(
    "relay_cards_in_step",
    (
        "Issue buttons on cards made to show the status GlitchTip has for the issue, changed "
        "outside the chat (its UI or API), by that status"
    ),
    ("status",),
    ("resolved", "ignored", "unresolved"),
)

ESCALATING_POSTS = CounterSpec(
    "relay_escalating_posts",
    ("Unresolved issues the relay alerted on, posted again because they are escalating"),
)
