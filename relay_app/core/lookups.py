"""Reading issues' details from their source's API for alert messages (each source's own
look-ups: GlitchTip's, Sentry's), without ever holding an alert back for them.

An alert waits for its issues' details at most a short budget (RELAY_DETAILS_BUDGET); what
arrives later is given to it while it still waits its turn (`when_known`), and is not added
after it was sent. Each
issue is read once per few minutes, however many alerts name it (a storm about one issue reads
it once), and remembered in a bounded cache. While a source's API fails, no look-up is made at
all for a while, so that its outage costs the alerts nothing, and one WARNING every few
minutes says so, never one per alert. A source may share that knowledge among every process
(and replica) on the spool (`ApiHealth`: GlitchTip's, glitchtip/health.py), so a relay of
several workers warns once too.

The look-ups run on a small pool this object owns, per process (the one fork rule,
core/process.py), shut down with the worker.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Protocol

from .errors import IssueGone, SourceSetup, TrackerError
from .issue_details import IssueDetails
from .metrics import LookupOutcome
from .process import PerProcess

log = logging.getLogger(__name__)

Read = Callable[[str], IssueDetails]
Count = Callable[[LookupOutcome], None]
Known = Callable[[Mapping[str, IssueDetails]], None]

# An issue's details are read again after this: its count grows, its latest event changes.
FRESH_FOR = 300.0
# After a failure, no look-up is tried for this long: GlitchTip is down, slow or refusing.
PAUSE_AFTER_FAILURE = 60.0
WARN_EVERY = 300.0
MAX_KEPT = 1000
# Look-ups waiting for the pool past this are not made: a storm of distinct issues against a
# slow GlitchTip must not pile up work (or memory) without end.
MAX_WAITING = 64
WORKERS = 4
# Each call's hard deadline. Past the alert's budget a look-up serves only alerts that wait
# their turn, and the next alerts about the same issue (it is cached).
CALL_TIMEOUT = 5.0


class ApiHealth(Protocol):
    """Whether GlitchTip's API is known to be failing."""

    def paused(self) -> bool:
        """No look-up is to be tried now."""

    def failed(self, pause: float, warn_every: float) -> bool:
        """A look-up failed: none for `pause` seconds. True for the one caller that is to log
        the WARNING (none did for `warn_every` seconds)."""

    def answered(self) -> None:
        """A look-up got an answer: they may go again."""


class LocalApiHealth:
    """This process's own knowledge of it (no spool to share it in), on the monotonic clock."""

    def __init__(self, monotonic: Callable[[], float] = time.monotonic) -> None:
        self._monotonic = monotonic
        self._lock = threading.Lock()
        self._paused_until: float | None = None
        self._warned_at: float | None = None

    def paused(self) -> bool:
        with self._lock:
            return self._paused_until is not None and self._monotonic() < self._paused_until

    def failed(self, pause: float, warn_every: float) -> bool:
        now = self._monotonic()
        with self._lock:
            self._paused_until = now + pause
            if self._warned_at is not None and now - self._warned_at < warn_every:
                return False
            self._warned_at = now
            return True

    def answered(self) -> None:
        with self._lock:
            self._paused_until = None


class IssueLookups(PerProcess):
    def __init__(
        self,
        read: Read,
        *,
        setup: SourceSetup,
        budget: float,
        count: Count | None = None,
        health: ApiHealth | None = None,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        """`read` is its source's `details` (GlitchTipApi's, or SentryApi's: `setup` names the
        source); `budget` the seconds an alert may wait for it; `health` where the source's
        failing is known (unset: in this process)."""
        self._read = read
        self._setup = setup
        self.budget = budget
        self._count = count or (lambda outcome: None)
        self._health = health if health is not None else LocalApiHealth(monotonic)
        self._monotonic = monotonic
        self._start_in_this_process()

    def _start_over(self) -> None:
        self._lock = threading.Lock()
        self._pool: ThreadPoolExecutor | None = None
        # issue id -> (read at, its details; None: GlitchTip has no such issue)
        self._kept: OrderedDict[str, tuple[float, IssueDetails | None]] = OrderedDict()
        self._reading: dict[str, Future[IssueDetails | None]] = {}

    def within(self, issue_ids: Sequence[str], seconds: float) -> dict[str, IssueDetails]:
        """The details of these issues that are known or arrive within `seconds` (0: those
        known now). Those that do not are still being read (when GlitchTip is not known to be
        failing)."""
        futures = self._futures(issue_ids)
        pending = [future for future in futures.values() if not future.done()]
        if pending and seconds > 0:
            wait(pending, timeout=seconds)
        return _results(futures)

    def when_known(self, issue_ids: Sequence[str], then: Known) -> None:
        """Call `then` with the details of these issues once every look-up of them has ended: at
        once when none is under way, otherwise on the thread of the last to end."""
        futures = self._futures(issue_ids)
        left = [len(futures)]
        guard = threading.Lock()

        def one_ended(_: Future[IssueDetails | None]) -> None:
            with guard:
                left[0] -= 1
                if left[0] != 0:
                    return
            try:
                then(_results(futures))
            except Exception:
                log.exception("what was to follow an issue's details failed")

        if not futures:
            then({})
            return
        for future in futures.values():
            future.add_done_callback(one_ended)

    def shutdown(self) -> None:
        """Stop the pool (the worker's exit): look-ups under way end by their own deadline."""
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)

    # --- inside ------------------------------------------------------------------------------

    def _futures(self, issue_ids: Sequence[str]) -> dict[str, Future[IssueDetails | None]]:
        self._here()
        now = self._monotonic()
        wanted = list(dict.fromkeys(issue_ids))
        with self._lock:
            futures = _found({issue_id: self._known(issue_id, now) for issue_id in wanted})
        missing = [issue_id for issue_id in wanted if issue_id not in futures]
        if not missing:
            return futures
        # Asked outside the lock: the spool's answer may take a moment.
        if self._health.paused():
            for _ in missing:
                self._count("skipped")
            return futures
        with self._lock:
            return futures | _found({i: self._known(i, now) or self._new(i) for i in missing})

    def _known(self, issue_id: str, now: float) -> Future[IssueDetails | None] | None:
        """A look-up of the issue that is done (its details are known) or under way; None
        when a new one is needed. Called under the lock."""
        kept = self._kept.get(issue_id)
        if kept is not None and now - kept[0] < FRESH_FOR:
            self._kept.move_to_end(issue_id)
            self._count("cached")
            return _done(kept[1])
        return self._reading.get(issue_id)

    def _new(self, issue_id: str) -> Future[IssueDetails | None] | None:
        """A new look-up, unless too many wait already. Called under the lock."""
        if len(self._reading) >= MAX_WAITING:
            self._count("skipped")
            return None
        if self._pool is None:
            prefix = f"relay-{self._setup.name.lower()}"
            self._pool = ThreadPoolExecutor(WORKERS, thread_name_prefix=prefix)
        future = self._pool.submit(self._look_up, issue_id)
        self._reading[issue_id] = future
        return future

    def _look_up(self, issue_id: str) -> IssueDetails | None:
        details: IssueDetails | None = None
        try:
            details = self._read(issue_id)
            outcome: LookupOutcome = "read"
        except IssueGone:
            outcome = "gone"  # remembered as such: no need to ask again soon
        except (TrackerError, ValueError) as exc:
            outcome = "failed"
            self._failed(exc)
        except Exception as exc:  # a bug reading an answer must not cost more than the details
            outcome = "failed"
            log.exception("reading %s issue %s's details failed", self._setup.name, issue_id)
            self._failed(exc, logged=True)
        if outcome != "failed":
            self._health.answered()
        now = self._monotonic()
        with self._lock:
            self._reading.pop(issue_id, None)
            if outcome != "failed":
                self._kept[issue_id] = (now, details)
                self._kept.move_to_end(issue_id)
                while len(self._kept) > MAX_KEPT:
                    self._kept.popitem(last=False)
        self._count(outcome)
        return details

    def _failed(self, exc: Exception, *, logged: bool = False) -> None:
        if not self._health.failed(PAUSE_AFTER_FAILURE, WARN_EVERY) or logged:
            return
        setup = self._setup
        log.warning(
            "issue details could not be read from %s (%s): alerts go without them, and "
            "no look-up is tried for %.0f s; this is said once every %.0f min while it lasts "
            "(relay_%s_lookups_total counts each). Check %s, and that %s may read issues and "
            "events",
            setup.name,
            exc,
            PAUSE_AFTER_FAILURE,
            WARN_EVERY / 60,
            setup.name.lower(),
            setup.url,
            setup.token,
        )


def _found(
    futures: Mapping[str, Future[IssueDetails | None] | None],
) -> dict[str, Future[IssueDetails | None]]:
    return {issue_id: future for issue_id, future in futures.items() if future is not None}


def _done(details: IssueDetails | None) -> Future[IssueDetails | None]:
    future: Future[IssueDetails | None] = Future()
    future.set_result(details)
    return future


def _results(futures: Mapping[str, Future[IssueDetails | None]]) -> dict[str, IssueDetails]:
    found: dict[str, IssueDetails] = {}
    for issue_id, future in futures.items():
        if future.done() and not future.cancelled():
            details = future.result()
            if details is not None:
                found[issue_id] = details
    return found


class Lookups(Protocol):
    """What reads issues' details for alerts: one source's look-ups, or each source's."""

    budget: float

    def within(self, issue_ids: Sequence[str], seconds: float) -> dict[str, IssueDetails]: ...

    def when_known(self, issue_ids: Sequence[str], then: Known) -> None: ...

    def shutdown(self) -> None: ...


Owns = Callable[[str], bool]


class EachSource:
    """Each source's look-ups as one (GlitchTip's API for its issues, Sentry's for Sentry's): an
    issue is asked of the first source that owns its id, and of none when no source does. Each
    source keeps its own cache, pool and health, so that one failing costs the other nothing."""

    def __init__(
        self,
        sources: Sequence[tuple[Owns, IssueLookups]],
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._sources = tuple(sources)
        self._monotonic = monotonic
        self.budget = max(lookups.budget for _, lookups in self._sources)

    def within(self, issue_ids: Sequence[str], seconds: float) -> dict[str, IssueDetails]:
        until = self._monotonic() + seconds
        asked = self._by_source(issue_ids)
        # Every source's look-ups begin before any is waited for.
        found = {k: v for lookups, ids in asked for k, v in lookups.within(ids, 0.0).items()}
        for lookups, ids in asked:
            missing = [issue for issue in ids if issue not in found]
            if missing and seconds > 0:
                found |= lookups.within(missing, max(0.0, until - self._monotonic()))
        return found

    def when_known(self, issue_ids: Sequence[str], then: Known) -> None:
        asked = self._by_source(issue_ids)
        if not asked:
            then({})
            return
        guard = threading.Lock()
        found: dict[str, IssueDetails] = {}
        left = [len(asked)]

        def one_known(came: Mapping[str, IssueDetails]) -> None:
            with guard:
                found.update(came)
                left[0] -= 1
                if left[0] != 0:
                    return
            then(dict(found))

        for lookups, ids in asked:
            lookups.when_known(ids, one_known)

    def shutdown(self) -> None:
        for _, lookups in self._sources:
            lookups.shutdown()

    def _by_source(self, issue_ids: Sequence[str]) -> list[tuple[IssueLookups, list[str]]]:
        asked: dict[int, tuple[IssueLookups, list[str]]] = {}
        for issue_id in dict.fromkeys(issue_ids):
            for index, (owns, lookups) in enumerate(self._sources):
                if owns(issue_id):
                    asked.setdefault(index, (lookups, []))[1].append(issue_id)
                    break
        return [asked[index] for index in sorted(asked)]


def scoped(org: str, issue_id: str) -> str:
    """A GlitchTip issue's look-up key: its id as its alert's link's organization's (`acme/12`),
    so that it is read, and kept, as that organization's alone."""
    return f"{org}/{issue_id}"


def unscoped(key: str) -> tuple[str | None, str]:
    """A look-up key's organization (None for a key without one: Sentry's) and issue id."""
    org, _, issue_id = key.rpartition("/")
    return org or None, issue_id


@dataclass(frozen=True)
class DetailSource:
    """A source's issues' details, as the capability that is the source declares them when it
    starts (`Running.details`: GlitchTip's, Sentry's): which of the relay's issue ids are its
    (`owns`), how one is read, the fix its failure names, its counter, and where its API's
    failing is known (None: in this process; GlitchTip's is on the spool). The wiring looks
    each source's up with its own cache, pool and pause (EachSource)."""

    owns: Owns
    read: Read
    setup: SourceSetup
    count: Count
    health: ApiHealth | None = None
