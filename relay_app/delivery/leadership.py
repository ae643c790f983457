"""One leader for the fleet's chores: of every process of every relay on the spool, one runs
what the fleet needs done once (polling Telegram's updates, the watcher's rounds, the upkeep:
escalation steps, summaries, handoffs, silences that ran out, old records forgotten); the
others serve webhooks and dispatch jobs.

Each process looks at the leader's lease (spool/leader.py) every `Timing.leader_look`: the
leader renews it for `Timing.leader_term`, any other takes it once it is free. A leader that
stops gives it back, and another takes over at its next look; one that dies is replaced at the
next look of a process on its host (its holder is gone) or once its term lapses; one that
stalls (a stopped process, a host cut off from the database) loses it when its term lapses,
and stops its chores at its own next look. So the fleet is without a leader for a look after a
clean stop, and a term and a look at most otherwise (6 s in production). Every chore is its own
unit of work in the spool (a step fires once, a summary is posted once, a round is taken once),
so what a late leader still does is never done twice.

A leader whose spool cannot be reached keeps leading until its term is over by its own clock,
then stops: its chores need the spool anyway.
"""

from __future__ import annotations

import contextlib
import logging
import secrets
import time
from collections.abc import Callable, Sequence
from typing import Protocol

from ..core.errors import SpoolError
from ..core.process import OwnThread
from ..core.timing import PRODUCTION, Timing
from ..spool.holders import this_process
from ..spool.leader import LeaderLease

log = logging.getLogger(__name__)

Clock = Callable[[], float]


class Chore(Protocol):
    """A fleet-wide chore with a thread of its own: started when this process comes to lead,
    stopped when it no longer does (and started again if it leads again)."""

    def start(self) -> None: ...

    def stop(self) -> None: ...


class WhenLeading:
    """A chore that is one call as this process comes to lead (the start-up check's cue to
    ask at once), and nothing when it stops leading."""

    def __init__(self, call: Callable[[], None]) -> None:
        self._call = call

    def start(self) -> None:
        self._call()

    def stop(self) -> None:
        """Nothing runs between the calls."""


class Leadership(OwnThread):
    thread_name = "relay-leader"

    def __init__(
        self,
        lease: LeaderLease,
        chores: Sequence[Chore] = (),
        *,
        timing: Timing = PRODUCTION,
        clock: Clock = time.time,
        monotonic: Clock = time.monotonic,
    ) -> None:
        self._lease = lease
        self._chores = list(chores)
        self._look = timing.leader_look
        self._term = timing.leader_term
        self._clock = clock
        self._monotonic = monotonic
        self.join_for = 5.0
        self._start_in_this_process()

    def _start_over(self) -> None:
        super()._start_over()
        self._token: str | None = None  # this process's term, while it leads
        self._leads_until = 0.0  # by this process's monotonic clock

    def leads(self) -> bool:
        """Whether this process leads the fleet's chores now: it renewed the lease within its
        term (measured on its own monotonic clock, from before it asked)."""
        return self.term() is not None

    def term(self) -> str | None:
        """This process's term's token while it leads (what fences a chore's writes, as the
        updates' offset: spool/leader.py); None when it does not."""
        self._here()
        with self._lock:
            leading = self._token is not None and self._monotonic() < self._leads_until
            return self._token if leading else None

    def look(self) -> bool:
        """Renew the lease, or take it if it is free; start or stop the chores as that turns
        out. Whether this process leads. (The thread does this every look; tests call it.)"""
        self._here()
        with self._lock:
            token = self._token or secrets.token_hex(8)
        asked_at = self._monotonic()
        try:
            # Within a look: one that cannot have the lease's row by then looks again next time
            # (time.monotonic, the store's own clock for its waits, not the one tests move).
            held = self._lease.take(
                this_process(),
                token,
                hold_for=self._term,
                now=self._clock(),
                wait_until=time.monotonic() + self._look,
            )
        except SpoolError as exc:
            log.debug("the leader's lease could not be looked at now: %s", exc)
            if self.leads():
                return True  # a leader leads out its term, unrenewed
            self._follow("its term ran out while the spool could not be reached")
            return False
        if held:
            self._lead(token, asked_at)
        else:
            self._follow("another process leads now")
        return held

    def shutdown(self) -> None:
        """Stop for good (the worker stops): the chores stopped, then the lease given back, so
        that another process leads at its next look."""
        super().shutdown()
        with self._lock:
            token = self._token
        self._follow("this process stops")
        if token is not None:
            with contextlib.suppress(SpoolError):  # the lease lapses by its term anyway
                self._lease.release(token)

    def _loop(self) -> None:
        while True:
            try:
                self.look()
            except Exception:  # the loop must outlive any one bad look
                log.exception("looking at the leader's lease failed; looking again shortly")
            if self._stop.wait(self._look):
                return

    def _lead(self, token: str, asked_at: float) -> None:
        with self._lock:
            began = self._token is None
            self._token = token
            self._leads_until = asked_at + self._term
        if began:
            log.info(
                "this process leads the fleet's chores now (Telegram's updates, the watcher, "
                "the upkeep)"
            )
            for chore in self._chores:
                chore.start()

    def _follow(self, why: str) -> None:
        with self._lock:
            ended = self._token is not None
            self._token = None
        if ended:
            log.info("this process no longer leads the fleet's chores: %s", why)
            for chore in self._chores:
                chore.stop()


class Upkeep:
    """The upkeep the dispatcher runs each poll interval, done only where the fleet's leader
    is (`leads`)."""

    def __init__(
        self, chores: Sequence[Callable[[], object]], *, leads: Callable[[], bool]
    ) -> None:
        self._chores = list(chores)
        self._leads = leads

    def __call__(self) -> None:
        if not self._leads():
            return
        for chore in self._chores:
            chore()
