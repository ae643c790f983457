"""The rooms kept in step with their issues (the fleet's leader's upkeep): a room whose issue
was resolved or ignored (a press in the chat, or the source's UI as the watcher or Sentry's
issue webhook tell) is renamed to say so and closed; a closed one whose issue is open again
(unresolved in the UI, or alerting again in a digest) is reopened and renamed back. Its
issue's state is its latest card's in the chat (cards/records.py); a room whose cards are no
longer kept (forgotten after a week) stays as it is."""

from __future__ import annotations

import logging
from collections.abc import Callable

from ..core.errors import SpoolError
from ..delivery.outbox import Outbox
from .placing import room_job
from .store import RoomStore

log = logging.getLogger(__name__)

Clock = Callable[[], float]
# How often the rooms are compared with their issues (at most: upkeep runs at each look at
# the queue).
EVERY = 5.0
CLOSED_BY = ("resolved", "ignored")
# How often rooms closed long ago are forgotten.
FORGET_EVERY = 3600.0


class Following:
    def __init__(
        self,
        store: RoomStore,
        outbox: Outbox,
        *,
        count: Callable[[str], None],
        clock: Clock,
        every: float = EVERY,
    ) -> None:
        self._store = store
        self._outbox = outbox
        self._count = count
        self._clock = clock
        self._every = every
        self._next = 0.0  # on the clock
        self._forget_at = 0.0

    def upkeep(self) -> None:
        now = self._clock()
        if self._next - self._every <= now < self._next:  # a step back of the clock: look now
            return
        self._next = now + self._every
        try:
            self._follow(now)
        except SpoolError as exc:  # the spool said why; the next look tries again
            log.debug("the rooms could not be looked at now: %s", exc)

    def _follow(self, now: float) -> None:
        if now >= self._forget_at:
            self._forget_at = now + FORGET_EVERY
            self._store.forget_old(now=now)
        for room, status in self._store.kept(now=now):
            if room.state == "open" and status in CLOSED_BY:
                self._store.closed(room.chat, room.issue_id, status, now=now)
                room_job(self._outbox, room, "rename")
                room_job(self._outbox, room, "close")
                log.info("closing the topic of %s in chat %s: %s", room.label, room.chat, status)
            elif room.state == "closed" and status is not None and status not in CLOSED_BY:
                self._store.opened(room.chat, room.issue_id, now=now)
                room_job(self._outbox, room, "reopen")
                room_job(self._outbox, room, "rename")
                log.info("reopening the topic of %s in chat %s", room.label, room.chat)
