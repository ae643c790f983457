"""Something that may happen a thousand times a minute (a stranger's guesses at the webhook's
URL, a flood of commands in a chat), said in the log at most once a period for each kind of it,
with how many there were since: a flood costs a counter and a line a minute, never a line each.

Each process keeps its own counts; `shared` (spool/warnings.py: SpoolWarnings.says) says
whether this process is the one of the relay's to speak now, so the fleet says it once too.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

EVERY = 60.0


class Tally:
    def __init__(
        self,
        *,
        every: float = EVERY,
        shared: Callable[[str, float], bool] | None = None,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._every = every
        self._shared = shared
        self._monotonic = monotonic
        self._lock = threading.Lock()
        self._said_at: dict[str, float] = {}
        self._since: dict[str, int] = {}  # of each kind, since its last line

    def note(self, kind: str) -> int | None:
        """One more of `kind`: how many there were since its last line when one is due now
        (this process's turn, and the fleet's), else None."""
        now = self._monotonic()
        with self._lock:
            self._since[kind] = self._since.get(kind, 0) + 1
            last = self._said_at.get(kind)
            if last is not None and now - last < self._every:
                return None
            self._said_at[kind] = now
            count, self._since[kind] = self._since[kind], 0
        if self._shared is not None and not self._shared(kind, self._every):
            return None
        return count
