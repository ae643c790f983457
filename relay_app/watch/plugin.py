"""The watcher of GlitchTip, as a capability: cards kept in step with GlitchTip, escalating
issues posted again, and the tables of what it watches. Its parts are still built by the wiring
(parts.py)."""

from __future__ import annotations

from ..operating.capability import Capability
from .counters import CARDS_IN_STEP, ESCALATING_POSTS, WATCHER_REQUESTS
from .watcher import ESCALATING

CAPABILITY = Capability(
    "watch",
    counters=(WATCHER_REQUESTS, CARDS_IN_STEP, ESCALATING_POSTS),
    notes=(ESCALATING,),
    tables=("watched", "watch_round", "organizations"),
)
