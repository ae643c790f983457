"""Background delivery: retries for alerts whose synchronous attempt failed, and the resumption
of alerts that another process left in the spool.

GlitchTip never resends, so these retries are the only ones an alert gets. Each alert being
retried is one job on a module-level thread pool, created lazily in each process (gunicorn
forks its workers after import), and retried by a tenacity policy declared once, in
`Retrier._policy`. The job works from the alert's spool row, so when the process dies the row
is still there: its lease expires and another worker, or the next start, takes it up.

The retry horizon: `sendMessage` is not idempotent, so attempts that may have reached Telegram
(timeouts, lost connections, 5xx) are limited to RELAY_RETRY_ATTEMPTS after the first, as
before. Attempts that certainly did not reach it (refused, DNS, connect timeout, 429) risk no
duplicate and go on, with capped exponential backoff, until the alert is RELAY_RETRY_MAX_AGE
old. An alert that ends without delivery is kept as a dead letter and logged at ERROR with its
full text, whatever the reason.
"""

from __future__ import annotations

import logging
import os
import threading
import time
import weakref
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import wait as wait_for_futures

from tenacity import RetryCallState, Retrying, retry_if_exception_type

from .delivery import log_undelivered
from .errors import DeliveryError, PermanentDeliveryError, RetryableDeliveryError
from .formatting import Message, with_late_note
from .spool import Spool, SpooledAlert, SpoolError, SpoolFull

log = logging.getLogger(__name__)

Sleep = Callable[[float], None]
Clock = Callable[[], float]
Deliver = Callable[[Message], None]

# One thread per alert being retried, so a hundred alerts failing together each keep their own
# schedule instead of queueing behind each other's sleeps. Spooled alerts beyond the threads
# wait in the spool, where any worker with a free thread claims them.
MAX_RETRY_THREADS = 128
# Alerts retried from memory only (spool unusable or off) wait in the pool's queue up to this;
# past it, new ones are refused, with their text logged.
MAX_MEMORY_RETRIES = 1000
# How often each worker looks for spooled alerts whose lease is free or expired.
RESUME_INTERVAL = 1.0
# A lease covers one attempt (at most RELAY_SEND_TIMEOUT) plus this, for the spool writes around
# it; an attempt never outlives its lease, so no two workers ever send the same row at once.
LEASE_MARGIN = 5.0
# Backoff for attempts that certainly never reached Telegram: 1, 2, 4, ... s up to
# RELAY_RETRY_WAIT.
FIRST_BACKOFF = 1.0

_lock = threading.Lock()
_executor: ThreadPoolExecutor | None = None
_active = 0  # jobs submitted and not yet finished
_memory_jobs = 0
_stopping = threading.Event()  # wakes sleeping jobs: set once the queue is cancelled
_closing = False  # no new job: set first, so nothing starts between cancelling and waking
_resumer: threading.Thread | None = None
_given_back = 0  # spooled alerts whose jobs stopped for the shutdown, left for the next start
_retriers: weakref.WeakSet[Retrier] = weakref.WeakSet()


def _reset_after_fork() -> None:
    # A forked child inherits the parent's pool object but none of its threads, and possibly a
    # lock some other thread held at fork time: start from nothing.
    global _lock, _executor, _active, _memory_jobs, _stopping, _closing, _resumer, _given_back
    _lock = threading.Lock()
    _closing = False
    _given_back = 0
    _executor = None
    _active = 0
    _memory_jobs = 0
    _stopping = threading.Event()
    _resumer = None


os.register_at_fork(after_in_child=_reset_after_fork)


def _sleep_unless_stopping(seconds: float) -> None:
    # Shutdown wakes every sleeping job at once: spooled ones give their lease back, in-memory
    # ones get one last attempt instead of a lost wait.
    _stopping.wait(seconds)


def start_resuming(retrier: Retrier) -> None:
    """Take up spooled alerts now and every RESUME_INTERVAL (gunicorn's post_worker_init)."""
    global _resumer
    with _lock:
        if _resumer is not None or _refusing():
            return
        _resumer = threading.Thread(
            target=_resume_periodically, args=(retrier,), name="relay-resume", daemon=True
        )
        _resumer.start()


def _resume_periodically(retrier: Retrier) -> None:
    while True:
        try:
            retrier.resume_once()
            retrier.tidy_spool()
        except Exception:  # the loop must outlive any one bad pass
            log.exception("taking up spooled alerts failed; trying again shortly")
        if _stopping.wait(RESUME_INTERVAL):
            return


def shutdown() -> None:
    """Stop deliberately (gunicorn's worker_exit hook): start no new attempt, let running ones
    finish (each within RELAY_SEND_TIMEOUT), give every spooled alert's lease back so the next
    process takes it up at once, and give in-memory alerts one last attempt, logging the text of
    any that still fail."""
    global _executor, _resumer, _given_back, _closing
    with _lock:
        executor, _executor = _executor, None
        resumer, _resumer = _resumer, None
        _closing = True
    try:
        # Queued jobs are cancelled before the sleeping ones wake: a woken job that finished
        # quickly would otherwise free its thread for a queued one, which would then start.
        if executor is not None:
            executor.shutdown(wait=False, cancel_futures=True)
        _stopping.set()
        if resumer is not None:
            resumer.join()
        if executor is not None:
            executor.shutdown(wait=True)
        for retrier in list(_retriers):
            retrier.release_leases()
        with _lock:
            given_back, _given_back = _given_back, 0
        if given_back:
            log.info(
                "stopping: %d spooled alert(s) left in the spool for the next start", given_back
            )
    finally:
        with _lock:
            _closing = False
        _stopping.clear()


def _refusing() -> bool:
    """No new job may start: the process is stopping (call with _lock held)."""
    return _closing or _stopping.is_set()


def _pool() -> ThreadPoolExecutor:
    """This process's pool, created on first use (call with _lock held)."""
    global _executor
    if _executor is None:
        _executor = ThreadPoolExecutor(
            max_workers=MAX_RETRY_THREADS, thread_name_prefix="relay-retry"
        )
    return _executor


class _Interrupted(Exception):
    """The process is stopping: a spooled alert goes back to the spool, not to Telegram."""


class _LeaseLost(Exception):
    """Another worker took the alert over (our lease expired): it is that worker's now."""


class Retrier:
    def __init__(
        self,
        deliver: Deliver,
        *,
        spool: Spool | None,
        attempts: int,
        wait: float,
        max_age: float,
        attempt_timeout: float,
        late_after: float = 60.0,
        sleep: Sleep | None = None,
        clock: Clock = time.time,
    ) -> None:
        self._deliver = deliver
        self._spool = spool
        self._attempts = attempts
        self._wait = wait
        self._max_age = max_age
        self._lease_for = attempt_timeout + LEASE_MARGIN
        self._late_after = late_after
        self._sleep: Sleep = sleep or _sleep_unless_stopping
        self._clock = clock
        self._futures: set[Future[None]] = set()
        self._futures_lock = threading.Lock()
        _retriers.add(self)

    # --- the webhook's side ------------------------------------------------------------------

    def admit(self, message: Message) -> SpooledAlert:
        """Write the alert ahead of its first attempt. Never fails: when the spool cannot take
        it, the alert is held in memory, and its record says why."""
        now = self._clock()
        refused = None
        if self._spool is not None:
            try:
                return self._spool.add(message, received_at=now, lease_until=now + self._lease_for)
            except SpoolFull as exc:
                refused = f"the spool is full ({exc})"
            except SpoolError:
                pass  # the spool logged that durability is lost; memory is what is left
        return SpooledAlert(message, received_at=now, retry_from=now, retry_refused=refused)

    def delivered(self, alert: SpooledAlert) -> None:
        if self._spool is None or alert.id is None:
            return
        try:
            self._spool.delivered(alert)
        except SpoolError as exc:
            log.error(
                "alert %s was delivered but could not be removed from the spool (%s): "
                "it may be sent again",
                alert.label,
                exc,
            )

    def give_up(
        self,
        alert: SpooledAlert,
        reason: str,
        error: BaseException | None,
        *,
        exc_info: bool = False,
    ) -> None:
        """Keep the alert as a dead letter and log it, text and all, at ERROR."""
        if error is not None:
            alert.last_error = str(error)
        elif alert.last_error is not None:
            reason = f"{reason}; last error: {alert.last_error}"
        kept = ""
        if self._spool is not None and alert.id is not None:
            try:
                self._spool.bury(alert)
                kept = f"; kept as a dead letter (resend: relay-app spool retry {alert.id})"
            except SpoolError as exc:
                kept = f"; could not be kept as a dead letter ({exc})"
        log_undelivered(
            alert.message, f"alert {alert.label}: {reason}{kept}", error, exc_info=exc_info
        )

    def retry_later(self, alert: SpooledAlert, error: RetryableDeliveryError) -> str | None:
        """Schedule background attempts after a failed synchronous one. Returns the alert's
        label, or None when no retry is possible, in which case its text has been logged."""
        if alert.retry_refused is not None:
            log_undelivered(alert.message, f"no retry possible: {alert.retry_refused}", error)
            return None
        self._count_failure(alert, error)
        alert.next_attempt_at = self._clock() + self._pause_after(alert, error)
        if alert.id is None:
            return self._submit_from_memory(alert, error)
        if not self._submit(alert):
            # No free thread here (or stopping): the row waits, unleased, for any worker.
            self._save(alert, lease_until=None)
        log.info("alert %s will be retried in the background after: %s", alert.label, error)
        return alert.label

    def spool_problem(self) -> str | None:
        """Why the spool is unusable, or None (also when it is switched off)."""
        return self._spool.problem() if self._spool is not None else None

    # --- resuming and stopping ---------------------------------------------------------------

    def resume_once(self) -> int:
        """Claim the spooled alerts that are due and unleased (left by a stopped or dead
        process, or waiting for a free thread) and start their jobs. Returns how many."""
        if self._spool is None:
            return 0
        with _lock:
            free = 0 if _refusing() else MAX_RETRY_THREADS - _active
        if free <= 0:
            return 0
        try:
            claimed = self._spool.claim(
                free, due_by=self._clock() + RESUME_INTERVAL, lease_for=self._lease_for
            )
        except SpoolError:
            return 0  # logged by the spool; the next pass tries again
        for alert in claimed:
            if not self._submit(alert, leased=True):
                self._save(alert, lease_until=None)
        if claimed:
            log.info(
                "took up %d spooled alert(s): %s",
                len(claimed),
                ", ".join(alert.label for alert in claimed),
            )
        return len(claimed)

    def tidy_spool(self) -> None:
        """The spool's upkeep, off the webhooks' path: its checkpoint."""
        if self._spool is not None:
            self._spool.checkpoint()

    def release_leases(self) -> None:
        if self._spool is None:
            return
        try:
            released = self._spool.release_all()
        except SpoolError:
            return  # the leases expire by themselves
        global _given_back
        with _lock:
            _given_back += released

    def wait_idle(self, timeout: float) -> bool:
        """Wait until every job of this retrier has ended; True if they all did in time."""
        with self._futures_lock:
            futures = list(self._futures)
        _, not_done = wait_for_futures(futures, timeout=timeout)
        return not not_done

    # --- jobs --------------------------------------------------------------------------------

    def _submit(self, alert: SpooledAlert, *, leased: bool = False) -> bool:
        """Start a job for a spooled alert if this process has a free thread for it. `leased`:
        the claim already holds the row through the wait and the next attempt."""
        global _active
        with _lock:
            if _refusing() or _active >= MAX_RETRY_THREADS:
                return False
            _active += 1  # the thread is ours while we take the lease
        if not leased:
            # Hold the row through the wait and the next attempt, before another worker looks.
            attempt_at = max(alert.next_attempt_at, self._clock())
            if self._save(alert, lease_until=attempt_at + self._lease_for) is False:
                with _lock:
                    _active -= 1
                return True  # another worker has it now: nothing left for us to do
        with _lock:
            if _refusing():
                _active -= 1
                return False
            future = _pool().submit(self._run, alert)
        self._track(future, alert)
        return True

    def _submit_from_memory(self, alert: SpooledAlert, error: RetryableDeliveryError) -> str | None:
        global _active, _memory_jobs
        with _lock:
            refusal = None
            if _refusing():
                refusal = "the relay is shutting down"
            elif _memory_jobs >= MAX_MEMORY_RETRIES:
                refusal = f"{MAX_MEMORY_RETRIES} alerts are already waiting for a retry in memory"
            else:
                future = _pool().submit(self._run, alert)
                _active += 1
                _memory_jobs += 1
        if refusal is not None:
            log_undelivered(alert.message, f"no retry possible: {refusal}", error)
            return None
        self._track(future, alert)
        # An unusable spool is a fault (ERROR); a spool switched off is the operator's choice.
        log.log(
            logging.WARNING if self._spool is None else logging.ERROR,
            "alert %s is retried from memory only (%s): it is lost if this process stops "
            "first; last error: %s",
            alert.label,
            "RELAY_SPOOL_PATH=off" if self._spool is None else "the spool is unusable",
            error,
        )
        return alert.label

    def _track(self, future: Future[None], alert: SpooledAlert) -> None:
        with self._futures_lock:
            self._futures.add(future)
        future.add_done_callback(lambda done: self._finished(done, alert))

    def _finished(self, future: Future[None], alert: SpooledAlert) -> None:
        global _active, _memory_jobs
        with _lock:
            _active -= 1
            if alert.id is None:
                _memory_jobs -= 1
        with self._futures_lock:
            self._futures.discard(future)
        if future.cancelled():
            if alert.id is not None:
                self._hand_back(alert)
            else:
                log_undelivered(
                    alert.message,
                    f"alert {alert.label}: the relay shut down before retrying it",
                    None,
                )

    def _policy(self) -> Retrying:
        return Retrying(
            stop=self._should_stop,
            wait=self._pause_after_attempt,
            retry=retry_if_exception_type(RetryableDeliveryError),
            before_sleep=self._before_sleep,
            sleep=self._sleep,
            reraise=True,
        )

    def _run(self, alert: SpooledAlert) -> None:
        if (beyond := self._beyond_ceiling(alert)) is not None:
            self.give_up(alert, beyond, None)  # resumed with no attempt left that is safe
            return
        try:
            self._sleep(max(0.0, alert.next_attempt_at - self._clock()))
            self._policy()(self._attempt, alert)
        except _Interrupted:
            self._hand_back(alert)
        except _LeaseLost:
            log.warning(
                "alert %s was taken over by another worker after its lease here expired; "
                "leaving it to that one",
                alert.label,
            )
        except RetryableDeliveryError as exc:
            if _stopping.is_set() and alert.id is not None:
                self._hand_back(alert)
            else:
                self.give_up(alert, self._why_stopped(alert), exc)
        except PermanentDeliveryError as exc:
            self.give_up(alert, "Telegram refused it permanently", exc)
        except Exception as exc:  # a bug must not swallow the alert: log it with its text
            self.give_up(alert, "the relay failed while retrying it", exc, exc_info=True)
        else:
            self.delivered(alert)
            late = self._clock() - alert.received_at
            log.info(
                "alert %s delivered on attempt %d, %.1f s after it arrived",
                alert.label,
                alert.attempts,
                late,
            )

    def _attempt(self, alert: SpooledAlert) -> None:
        if alert.id is not None and _stopping.is_set():
            raise _Interrupted
        now = self._clock()
        alert.attempts += 1
        # Counted before sending: if the process dies mid-attempt, whoever resumes the alert
        # must assume this attempt may have reached Telegram.
        alert.unsure_attempts += 1
        if self._save(alert, lease_until=now + self._lease_for) is False:
            raise _LeaseLost
        message = alert.message
        if now - alert.received_at > self._late_after:
            message = with_late_note(message, received_at=alert.received_at, now=now)
        try:
            self._deliver(message)
        except RetryableDeliveryError as exc:
            self._count_failure(alert, exc)
            raise
        except DeliveryError as exc:
            alert.last_error = str(exc)
            raise

    def _hand_back(self, alert: SpooledAlert) -> None:
        """The process is stopping: give the lease back so the next process need not wait."""
        global _given_back
        self._save(alert, lease_until=None)
        with _lock:
            _given_back += 1

    def _count_failure(self, alert: SpooledAlert, error: RetryableDeliveryError) -> None:
        if not error.maybe_delivered:
            alert.unsure_attempts -= 1
        alert.last_error = str(error)

    def _beyond_ceiling(self, alert: SpooledAlert) -> str | None:
        if alert.unsure_attempts > self._attempts:
            return (
                f"giving up: {alert.unsure_attempts} attempts may have reached Telegram (the "
                f"first and RELAY_RETRY_ATTEMPTS={self._attempts} more), and another could post "
                "it twice"
            )
        return None

    def _should_stop(self, state: RetryCallState) -> bool:
        alert: SpooledAlert = state.args[0]
        return (
            _stopping.is_set()
            or self._beyond_ceiling(alert) is not None
            or self._clock() - alert.retry_from >= self._max_age
        )

    def _why_stopped(self, alert: SpooledAlert) -> str:
        if _stopping.is_set():
            return "the relay is shutting down"
        if (beyond := self._beyond_ceiling(alert)) is not None:
            return beyond
        return (
            f"giving up after {alert.attempts} attempts: it is older than "
            f"RELAY_RETRY_MAX_AGE ({self._max_age:g} s)"
        )

    def _pause_after(self, alert: SpooledAlert, error: BaseException | None) -> float:
        """Seconds before the next attempt: RELAY_RETRY_WAIT after one that may have reached
        Telegram; doubling up to it after ones that certainly did not; never sooner than
        Telegram asked; and never past the end of the retry horizon unless Telegram asked."""
        if not isinstance(error, RetryableDeliveryError):
            return self._wait
        if error.maybe_delivered:
            pause = self._wait
        else:
            never_sent = max(1, alert.attempts - alert.unsure_attempts)
            pause = min(self._wait, FIRST_BACKOFF * 2 ** min(never_sent - 1, 30))
        retry_after = error.retry_after or 0.0
        horizon_left = alert.retry_from + self._max_age - self._clock()
        return max(0.0, retry_after, min(pause, horizon_left))

    def _pause_after_attempt(self, state: RetryCallState) -> float:
        error = state.outcome.exception() if state.outcome else None
        return self._pause_after(state.args[0], error)

    def _before_sleep(self, state: RetryCallState) -> None:
        alert: SpooledAlert = state.args[0]
        error = state.outcome.exception() if state.outcome else None
        pause = state.next_action.sleep if state.next_action else 0.0
        alert.next_attempt_at = self._clock() + pause
        if self._save(alert, lease_until=alert.next_attempt_at + self._lease_for) is False:
            raise _LeaseLost
        never_sent = alert.attempts - alert.unsure_attempts
        # During a long outage an alert is tried hundreds of times; only attempts that risk a
        # duplicate, and every doubling of the others, are worth a WARNING each.
        noteworthy = getattr(error, "maybe_delivered", True) or never_sent & (never_sent - 1) == 0
        log.log(
            logging.WARNING if noteworthy else logging.DEBUG,
            "alert %s: attempt %d failed: %s; next attempt in %.1f s",
            alert.label,
            alert.attempts,
            error,
            pause,
        )

    def _save(self, alert: SpooledAlert, *, lease_until: float | None) -> bool | None:
        """Persist a spooled alert's state; None when there is no spool to persist to (the
        error is logged and the alert carries on from memory)."""
        if self._spool is None or alert.id is None:
            return None
        try:
            return self._spool.save(alert, lease_until=lease_until)
        except SpoolError as exc:
            log.error(
                "alert %s: could not record its progress in the spool (%s); it carries on from "
                "memory, and may be sent again by the process that resumes it",
                alert.label,
                exc,
            )
            return None
