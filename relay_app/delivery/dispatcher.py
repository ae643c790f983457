"""The retrier: this process's background delivery, one object that owns its thread, its job
pool and its stop event (as sentry-python's BackgroundWorker does).

The thread looks at the queues whenever something may have become due (a webhook queued an
alert, a job ended, a time came) and at least once a second; for each lane whose oldest job is
due and whose lease is free, it claims what goes in one write and hands the claim to the pool,
where a job (job.py) makes one attempt and ends. Nothing waits in a thread: a failed job's wait
is its due time in the queue, so the alerts of a chat that came back are claimed together,
oldest first. While Telegram fails (health.py), the thread only asks whether it is back (one
process of the relay asks), and retires jobs that pass their horizon.

A webhook's alert gets its first attempt at once (`first_attempt`): the webhook's thread claims
its lane as the thread would, and waits for the job the pool runs, up to its answer's deadline.

The pool is created lazily, in the process that uses it: gunicorn creates the app before it
forks its workers, and a fork carries no threads over, so a dispatcher used in a process other
than the one it was made in starts over there (the one fork rule: objects that own threads or
connections check the pid they were made in). gunicorn's worker_exit hook stops it
deliberately (`shutdown`).
"""

from __future__ import annotations

import contextlib
import logging
import secrets
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import wait as wait_for_futures
from dataclasses import dataclass
from typing import Any, Literal

from ..core.errors import SpoolError
from ..core.metrics import AttemptKind, Metrics
from ..core.process import PerProcess
from ..core.routing import Destination
from ..core.timing import PRODUCTION, Timing
from ..spool.health_store import TelegramHealth
from ..spool.holders import Holder, this_process
from ..spool.model import Claim, Job, Lane, Later, Settlement
from ..spool.moving import Mover
from ..spool.queue import Claimant, Queue, Taking
from .health import probe_due
from .job import Jobs

log = logging.getLogger(__name__)

Clock = Callable[[], float]
# Asks Telegram a question that posts nothing; True when it answered.
Probe = Callable[[], bool]
# Why a webhook's alert was not attempted with it: older jobs of its lane go first (or another
# process is sending them), its chat's turn has not come, Telegram is failing, or the spool
# stayed busy for the webhook's time.
WaitReason = Literal["behind_older", "paced", "telegram_down", "spool_busy"]

# Jobs running at once in one process: one per destination at most, each within
# RELAY_SEND_TIMEOUT. Destinations beyond it wait for a free thread, in the queue.
MAX_JOB_THREADS = 32
# How often the thread looks when nothing tells it sooner (work queued by another process):
# production's (core/timing.py, where a test compresses it).
POLL_INTERVAL = PRODUCTION.poll_interval
# At shutdown, the alerts held in memory get one last attempt each, within this.
LAST_CHANCE_SECONDS = 15.0


@dataclass(frozen=True)
class OwnClaim:
    """A webhook's claim of its own alert (held for it until then), on the webhook's thread,
    waiting for the spool's lock until `wait_until` (monotonic)."""

    job_id: int
    wait_until: float | None


@dataclass(frozen=True)
class Chores:
    """What the dispatcher's thread does besides its jobs, with the queues' own upkeep, once a
    poll interval, off the webhooks' path: the relay's `upkeep` (the leader's chores), and the
    `mover` that takes what waits in this host's local file into the spool."""

    upkeep: Callable[[], None] = lambda: None
    mover: Mover | None = None


NO_CHORES = Chores()


class Dispatcher(PerProcess):
    def __init__(
        self,
        queues: Sequence[Queue],
        jobs: Jobs,
        metrics: Metrics,
        *,
        chores: Chores = NO_CHORES,
        clock: Clock = time.time,
        timing: Timing = PRODUCTION,
    ) -> None:
        """Telegram's health, and the prober's question, are the jobs' (job.py)."""
        self.queues = list(queues)
        self._upkeep = chores.upkeep
        self._mover = chores.mover
        self._jobs = jobs
        self.health = jobs.health
        self._probe = jobs.probe
        self._metrics = metrics
        self._lease_for = jobs.attempts.timeout + timing.lease_margin
        self._poll_interval = timing.poll_interval
        self._idle_interval = timing.idle_interval
        self._clock = clock
        self._start_in_this_process()

    def _start_over(self) -> None:
        """Everything that belongs to one process (core/process.py)."""
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._pool: ThreadPoolExecutor | None = None
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._next_pass_at = 0.0  # wall clock; a wake for a later time changes nothing
        # Tokens of the claims this process is working on, the webhooks' own included: a
        # lease in this set is never taken over, whatever the clock says.
        self._in_flight: set[str] = set()
        self._jobs_running = 0
        self._futures: set[Future[Any]] = set()  # every one on the pool, a probe's too
        # Each chat's next turn, as this process's last claim that found it had not come
        # learnt it (`turn_at`).
        self._turns: dict[str, float] = {}

    # --- for the rest of the relay -------------------------------------------------------------

    def start(self) -> None:
        """Start this process's thread (gunicorn's post_worker_init): it takes up waiting
        alerts at once, those a stopped or crashed process left included."""
        self._here()
        with self._lock:
            if self._thread is not None or self._stop.is_set():
                return
            self._thread = threading.Thread(target=self._loop, name="relay-dispatch", daemon=True)
            self._thread.start()
        # Other relays sharing a database say when they queue work or free a lane.
        for queue in self.queues:
            queue.subscribe(self.wake)

    def wake(self, at: float | None = None) -> None:
        """Have the thread look at `at` (a wall-clock time), or now."""
        self._here()
        with self._lock:
            if at is not None and at >= self._next_pass_at:
                return  # a pass is planned by then anyway
            self._next_pass_at = min(self._next_pass_at, at if at is not None else 0.0)
        self._wake.set()

    def turn_at(self, destination: Destination) -> float | None:
        """When the destination's chat has its next turn, as this process's last claim that
        found it had not come learnt; None once that time has passed, or when no claim found
        it. A turn only moves later (each send, limit and pause adds to it), so a webhook whose
        chat is known to wait leaves its alert to the passes without a claim of its own; were
        the turn ever earlier, the passes, which claim as always, take the alert then."""
        self._here()
        with self._lock:
            at = self._turns.get(destination.chat_key)
        return at if at is not None and at > self._clock() else None

    def first_attempt(
        self, queue: Queue, job: Job, *, wait_until: float | None = None
    ) -> Future[Settlement] | WaitReason:
        """A webhook's alert, just queued and held for it (intake/queue.py): its lane claimed
        now, on the caller's thread, as a pass would claim it, and the job run on the pool (the
        future of its settlement, which holds the alert's outcome); or why it waits, left to
        the passes. `wait_until` (monotonic) bounds the wait for the spool's lock."""
        self._here()
        if not self.health.current().sending:
            return self._left_to_passes(queue, job, "telegram_down")
        if not self._thread_free():  # the thread takes it up in turn
            return self._left_to_passes(queue, job, "behind_older")
        now = self._clock()
        lane = Lane(job.lane, job.destination, now, free=True)
        try:
            started = self._start(queue, lane, now, send=True, own=OwnClaim(job.id, wait_until))
        except SpoolError:
            return "spool_busy"  # held until the webhook's deadline, then any pass's
        if isinstance(started, Later):
            return "paced"  # the claim left it to the passes
        if started is None or job.id not in {each.id for each in started[0].jobs}:
            return "behind_older"  # the claim left it to the passes
        return started[1]

    def _left_to_passes(self, queue: Queue, job: Job, why: WaitReason) -> WaitReason:
        # Failing, the spool said why: the alert stays held until its webhook's deadline.
        with contextlib.suppress(SpoolError):
            queue.leave_to_passes(job, now=self._clock())
        return why

    def shutdown(self) -> None:
        """Stop deliberately (gunicorn's worker_exit hook): claim nothing more, let running
        jobs finish (each within RELAY_SEND_TIMEOUT), give the alerts held in memory one last
        attempt, and log what is left. Spooled alerts simply stay for the next start."""
        self._here()
        with self._lock:
            self._stop.set()
            thread, pool = self._thread, self._pool
        self._wake.set()
        for queue in self.queues:
            queue.unsubscribe()
        if thread is not None:
            thread.join()
        if pool is not None:
            pool.shutdown(wait=True)
        for queue in self.queues:
            if queue.durable:
                self._leave_for_next_start(queue)
            else:
                self._last_chance(queue)

    def _hold(self) -> str:
        """A fresh claim token, in flight in this process until `_release`: made before the
        claim it names, so no pass of this dispatcher can take that claim over meanwhile."""
        token = secrets.token_hex(8)
        with self._lock:
            self._in_flight.add(token)
        return token

    def _release(self, token: str) -> None:
        with self._lock:
            self._in_flight.discard(token)

    def _in_flight_now(self) -> frozenset[str]:
        with self._lock:
            return frozenset(self._in_flight)

    def wait_idle(self, timeout: float) -> bool:
        """Wait until every job this dispatcher started has ended; True if they did in time."""
        self._here()
        with self._lock:
            futures = list(self._futures)
        _, not_done = wait_for_futures(futures, timeout=timeout)
        return not not_done

    # --- one pass ------------------------------------------------------------------------------

    def pass_once(self) -> float | None:
        """Claim what is due and start a job for each claim; probe Telegram when that is due.
        Returns the soonest time something known becomes due (None: nothing is planned)."""
        self._here()
        now = self._clock()
        health = self.health.current()
        soonest: float | None = None
        if not health.sending:
            if self._maybe_probe(now, health):
                soonest = now  # what its answer makes due: the probe's end wakes the thread
            elif health.next_probe_at > now:
                soonest = health.next_probe_at
        for queue in self.queues:
            for due_at in self._take_up(queue, now, send=health.sending):
                soonest = _earliest(soonest, due_at)
        return soonest

    def _take_up(self, queue: Queue, now: float, *, send: bool) -> Iterator[float]:
        """Claim the queue's due lanes that are free, and start their jobs; yields when each
        lane that is not due yet will be. Lanes come alerts first (Queue.lanes); once a chat's
        turn has not come, its other lanes wait for the next pass (their claims would say
        the same: a hundred calls waiting cost one look, not a hundred)."""
        try:
            lanes = queue.lanes(now=now, holder=this_process(), in_flight=self._in_flight_now())
            paced: set[str] = set()
            yield from _held_ends(lanes)
            for lane in lanes:
                if not lane.free or lane.destination.chat_key in paced:
                    continue
                if lane.due_at > now:
                    yield lane.due_at
                elif send and not self._thread_free():
                    return  # a job that ends wakes the thread
                elif isinstance(later := self._start(queue, lane, now, send=send), Later):
                    paced.add(lane.destination.chat_key)
                    yield later.at
        except SpoolError:
            return  # logged by the spool; the next pass tries again

    def _start(
        self, queue: Queue, lane: Lane, now: float, *, send: bool, own: OwnClaim | None = None
    ) -> tuple[Claim, Future[Settlement]] | Later | None:
        """Claim the lane and start its job on the pool (the claim, and the future of its
        settlement); Later when its chat's turn has not come; None when nothing went. `own`:
        a webhook's claim of its own alert (its attempt `sync`), not a pass's."""
        token = self._hold()
        try:
            claimed = queue.claim(
                lane,
                Claimant(this_process(), token, self._lease_for, self._in_flight_now()),
                Taking(self._jobs.fit, self._jobs.attempts.policy.before_attempt, send),
                now=now,
                wait_until=own.wait_until if own is not None else None,
                oldest=own.job_id if own is not None else None,
            )
        except BaseException:
            self._release(token)
            raise
        if isinstance(claimed, Claim) and claimed.jobs:
            kind: AttemptKind = "sync" if own is not None else "background"
            return claimed, self._submit(queue, claimed, kind=kind)  # its end frees the token
        self._release(token)
        if isinstance(claimed, Later):
            with self._lock:
                self._turns[lane.destination.chat_key] = claimed.at
        if isinstance(claimed, Claim):
            self._jobs.report_retired(queue, claimed)
            return None
        return claimed

    def _loop(self) -> None:
        checkpointed_at = 0.0
        while not self._stop.is_set():
            with self._lock:
                self._next_pass_at = float("inf")  # a pass runs: a wake now may be too late for it
            soonest = None
            try:
                soonest = self.pass_once()
                if time.monotonic() - checkpointed_at >= self._poll_interval:
                    checkpointed_at = time.monotonic()
                    self._tidy()
            except Exception:  # the loop must outlive any one bad pass
                log.exception("taking up waiting alerts failed; trying again shortly")
            now = self._clock()
            with self._lock:
                self._wake.clear()  # wakes until now are in _next_pass_at; later ones set it
                self._next_pass_at = min(
                    self._next_pass_at, now + self._longest_wait(), soonest or float("inf")
                )
                # Waits are monotonic: a wall-clock step changes when things are due, not how
                # long this sleeps (at most the poll interval).
                timeout = max(0.0, self._next_pass_at - now)
            if not self._stop.is_set():
                self._wake.wait(timeout)

    def _longest_wait(self) -> float:
        """The poll interval; the idle one while the spool tells of news (another process's
        work wakes this one at once, and every lease held is waited for by its end)."""
        return self._idle_interval if self.queues[0].hears() else self._poll_interval

    # --- jobs ----------------------------------------------------------------------------------

    def _thread_free(self) -> bool:
        with self._lock:
            return self._jobs_running < MAX_JOB_THREADS

    def _submit(self, queue: Queue, claim: Claim, *, kind: AttemptKind) -> Future[Settlement]:
        with self._lock:
            self._jobs_running += 1
            future = self._executor().submit(self._run, queue, claim, kind)
            self._futures.add(future)
        future.add_done_callback(self._forget)
        return future

    def _run(self, queue: Queue, claim: Claim, kind: AttemptKind) -> Settlement:
        try:
            return self._jobs.run(queue, claim, kind=kind)
        except Exception as exc:  # a bug must not lose the alerts: log them with their text
            for job in claim.jobs:
                self._jobs.undelivered(
                    self._jobs.renderer.text_of(job, now=self._clock()),
                    "the relay failed while sending it",
                    exc,
                    job=job,
                    exc_info=True,
                )
            raise
        finally:
            with self._lock:
                self._in_flight.discard(claim.token)
                self._jobs_running -= 1
            self.wake()  # the lane is free: its next alerts, and destinations left for a thread

    def _forget(self, future: Future[Any]) -> None:
        with self._lock:
            self._futures.discard(future)

    def _executor(self) -> ThreadPoolExecutor:
        """This process's pool, created on first use (call with _lock held)."""
        if self._pool is None:
            self._pool = ThreadPoolExecutor(
                max_workers=MAX_JOB_THREADS + 1, thread_name_prefix="relay-job"
            )
        return self._pool

    # --- Telegram's health -------------------------------------------------------------------

    def _maybe_probe(self, now: float, health: TelegramHealth) -> bool:
        """Ask Telegram whether it is back, if that is due and no other process is asking;
        True when this process asks."""
        prober = Holder.parse(health.prober)
        me = this_process()
        gone = prober is not None and prober.is_here(me) and prober.is_gone()
        if not probe_due(health, now, prober_gone=gone):
            return False  # as this pass read it: not worth a write to the spool to ask again
        if not self.health.take_probe(now, str(me), now + self._lease_for, prober_gone=gone):
            return False
        with self._lock:
            future = self._executor().submit(self._ask_telegram)
            self._futures.add(future)
        future.add_done_callback(self._forget)
        return True

    def _ask_telegram(self) -> None:
        answered = False
        asked_at = self._clock()
        try:
            answered = self._probe()
        finally:
            self._metrics.probe(answered)
            self.health.probed(answered, self._clock(), asked_at=asked_at)
            self.wake()

    # --- upkeep and stopping -------------------------------------------------------------------

    def _tidy(self) -> None:
        for queue in self.queues:
            with contextlib.suppress(SpoolError):  # the store says why, once
                queue.tidy()
        self._upkeep()
        if self._mover is not None:
            # Failing, the spool (or the file) said why; the next upkeep tries again.
            with contextlib.suppress(SpoolError):
                self._mover.move(
                    holder=this_process(),
                    in_flight=self._in_flight_now(),
                    lease_for=self._lease_for,
                    now=self._clock(),
                )

    def _last_chance(self, queue: Queue) -> None:
        """The alerts held in memory are lost with the process: one last attempt each, in as
        few messages as fit, whatever their schedule; the text of any still left is logged."""
        give_up_at = time.monotonic() + LAST_CHANCE_SECONDS
        tried: set[int] = set()
        while time.monotonic() < give_up_at and self._one_last_attempt(queue, tried):
            pass
        for job in queue.take_all():
            text = self._jobs.renderer.text_of(job, now=self._clock())
            if job.kind == "alert":
                self._jobs.undelivered(text, "the relay is shutting down", None, job=job)

    def _one_last_attempt(self, queue: Queue, tried: set[int]) -> bool:
        """One write of jobs not `tried` yet; False when none is left to try."""
        token = self._hold()
        try:
            claim = queue.last_claim(
                self._jobs.fit, holder=this_process(), token=token, tried=tried
            )
            if claim is None:
                return False
            tried.update(job.id for job in claim.jobs)
            self._jobs.run(queue, claim, kind="background")
        except SpoolError:
            return False  # nothing to claim from: what it held is logged next, if it can be read
        finally:
            self._release(token)
        return True

    def _leave_for_next_start(self, queue: Queue) -> None:
        try:
            queue.release(this_process())
            pending = queue.pending()
        except SpoolError:
            return  # the leases name this process, which the next start finds gone
        if pending:
            log.info(
                "stopping: %d alert(s) wait in %s %s for the next start",
                pending,
                "the spool" if queue.home == "spool" else "this host's file",
                queue.name,
            )


def _earliest(soonest: float | None, at: float) -> float:
    return at if soonest is None else min(soonest, at)


def _held_ends(lanes: list[Lane]) -> list[float]:
    """When the lanes another process holds are free, should their holders not settle first
    (a settlement tells of it at once where the spool tells of news)."""
    return [lane.held_until for lane in lanes if not lane.free and lane.held_until is not None]
