"""Whether GlitchTip's API is failing (core/lookups.py), kept in the spool: every process
of the relay, and every relay on a shared database, then stops looking issues up together, and
one of them logs the WARNING (warnings.py). Times are the store's clock, guarded against steps
(clock.py)."""

from __future__ import annotations

import threading
import time
from contextlib import suppress

from ..core.clock import stepped_back
from ..core.errors import SpoolError
from ..core.lookups import LocalApiHealth
from ..spool.store import Store, Tx
from ..spool.warnings import SpoolWarnings

# A webhook asks before it looks an issue up: it must not wait long for the answer...
READ_BUDGET = 0.25
# ...nor ask the store each time: a pause is a minute long, a second late costs nothing.
REMEMBERED_FOR = 1.0
# The key of its WARNING among the spool's shared warnings (warnings.py).
WARNING = "glitchtip-api-failing"


class SpoolGlitchTipHealth:
    def __init__(self, store: Store, *, read_budget: float = READ_BUDGET) -> None:
        """`read_budget`: how long a webhook waits to learn whether GlitchTip is paused, before
        it goes by what this process knows."""
        self._store = store
        self._read_budget = read_budget
        # One process of all those on the spool logs the WARNING, once per period.
        self._warnings = SpoolWarnings(store)
        self._lock = threading.Lock()
        self._known: tuple[float, bool] | None = None  # (when read, monotonic; paused)
        # Where a failure is kept when the spool cannot keep it.
        self._fallback = LocalApiHealth()

    def paused(self) -> bool:
        with self._lock:
            if self._known is not None and time.monotonic() - self._known[0] < REMEMBERED_FOR:
                return self._known[1]
        try:
            paused = self._store.read(_paused, wait_until=time.monotonic() + self._read_budget)
        except SpoolError:
            return self._fallback.paused()
        self._remember(paused)
        return paused

    def failed(self, pause: float, warn_every: float) -> bool:
        def failed(tx: Tx) -> None:
            now = tx.at.db
            tx.execute(
                "UPDATE glitchtip_api SET paused_until = ?, paused_at = ?", (now + pause, now)
            )

        try:
            self._store.write(failed)
            warn = self._warnings.due(WARNING, warn_every)
        except SpoolError:
            return self._fallback.failed(pause, warn_every)
        self._remember(True)
        return warn

    def answered(self) -> None:
        with self._lock:
            known = self._known
        if known is not None and not known[1]:
            return  # not paused as far as this process knows: nothing to clear
        with suppress(SpoolError):  # when it cannot be cleared, the pause ends by itself
            self._store.write(lambda tx: tx.execute("UPDATE glitchtip_api SET paused_until = NULL"))
        self._fallback.answered()
        self._remember(False)

    def _remember(self, paused: bool) -> None:
        with self._lock:
            self._known = (time.monotonic(), paused)


def _paused(tx: Tx) -> bool:
    row = tx.one("SELECT paused_until, paused_at FROM glitchtip_api")
    if row is None or row["paused_until"] is None:
        return False
    now = tx.at.db
    return not stepped_back(row["paused_at"], now) and now < row["paused_until"]
