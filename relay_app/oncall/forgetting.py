"""What on call keeps is forgotten once it can matter no more (the dispatcher's upkeep, at most
once an hour): covers ended a week ago, and the private calls older than their alerts' records
(oncall/people.py's CALL_KEPT), whose buttons act no more."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from ..core.errors import SpoolError
from .covers import CoverStore
from .people import PeopleStore

log = logging.getLogger(__name__)

EVERY = 3600.0


class Forgetting:
    def __init__(
        self, covers: CoverStore, people: PeopleStore, *, clock: Callable[[], float] = time.time
    ) -> None:
        self._covers = covers
        self._people = people
        self._clock = clock
        self._done_at: float | None = None

    def upkeep(self) -> int:
        """Forget what is old, if an hour has passed since the last time; how many rows."""
        if self._done_at is not None and time.monotonic() - self._done_at < EVERY:
            return 0
        self._done_at = time.monotonic()
        now = self._clock()
        try:
            return self._covers.tidy(now=now) + self._people.tidy(now=now)
        except SpoolError as exc:
            log.debug("old covers and private calls could not be forgotten now: %s", exc)
            return 0
