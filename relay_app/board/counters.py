"""The boards' metrics."""

from __future__ import annotations

from ..core.metrics import CounterSpec

BOARDS = CounterSpec(
    "relay_boards",
    "Boards of open issues: posted, edited, pinned, not pinned (no right), found deleted or"
    " unpinned (and posted anew), refused (written again after a while)",
    ("outcome",),
    ("posted", "edited", "pinned", "not_pinned", "deleted", "unpinned", "refused"),
)
