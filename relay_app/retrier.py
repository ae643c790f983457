"""Background delivery: every send the webhook did not make itself, or made and failed.

GlitchTip never resends, so these are the only retries an alert gets. The spool is the queue:
an alert whose chat's turn had not come (pacing.py), or whose first attempt failed, waits there
for its destination (chat and topic). In each process a dispatcher thread starts, for every
destination with alerts waiting, one drain job on a module-level thread pool (created lazily per
process: gunicorn forks its workers after import). The job waits for the chat's turn, claims the
oldest waiting alerts that fit in one message (one alert alone, several as a digest, digest.py)
and sends them; when that fails, it retries the same alerts under the tenacity policy declared
once, in `Retrier._policy`. A job works from spool rows, so when its process dies the rows are
still there: their leases expire and another worker, or the next start, takes them up.

The retry horizon: `sendMessage` is not idempotent, so attempts that may have reached Telegram
(timeouts, lost connections, 5xx) are limited to RELAY_RETRY_ATTEMPTS after the first. Attempts
that certainly did not (refused, DNS, connect timeout) risk no duplicate and go on, with capped
exponential backoff, until the alert is RELAY_RETRY_MAX_AGE old. Waiting for a turn, and a 429's
pause, are not attempts at all. An alert that ends without delivery is kept as a dead letter and
logged at ERROR with its full text, whatever the reason.
"""

from __future__ import annotations

import logging
import math
import os
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import wait as wait_for_futures
from dataclasses import dataclass

from tenacity import RetryCallState, Retrying, retry_if_exception_type

from .delivery import log_undelivered
from .digest import compose, how_many_fit
from .errors import (
    DeliveryError,
    PermanentDeliveryError,
    RateLimited,
    RetryableDeliveryError,
    ThreadNotFound,
)
from .formatting import Message
from .logs import event
from .metrics import AttemptKind, Metrics
from .pacing import MemoryPacer, Pacer
from .routing import Destination
from .spool import Admission, Spool, SpooledAlert, SpoolError, SpoolFull

log = logging.getLogger(__name__)

Sleep = Callable[[float], None]
Clock = Callable[[], float]
Deliver = Callable[[Message, Destination], None]

# One thread per job, so alerts failing together each keep their own schedule instead of
# queueing behind each other's sleeps. Alerts beyond the threads wait in the spool, where any
# worker with a free thread takes them up.
MAX_RETRY_THREADS = 128
# Alerts retried from memory only (spool unusable or off) wait in the pool's queue up to this;
# past it, new ones are refused, with their text logged.
MAX_MEMORY_RETRIES = 1000
# How often each worker looks for waiting alerts when nothing tells it sooner.
DISPATCH_INTERVAL = 1.0
# A lease covers one attempt (at most RELAY_SEND_TIMEOUT) plus this, for the spool writes around
# it; an attempt never outlives its lease, so no two workers ever send the same row at once.
LEASE_MARGIN = 5.0
# Backoff for attempts that certainly never reached Telegram: 1, 2, 4, ... s up to
# RELAY_RETRY_WAIT; also the pause after a 429 that names none.
FIRST_BACKOFF = 1.0

_lock = threading.Lock()
_executor: ThreadPoolExecutor | None = None
_active = 0  # jobs submitted and not yet finished
_memory_jobs = 0
_stopping = threading.Event()  # wakes sleeping jobs: set once the queue is cancelled
_closing = False  # no new job: set first, so nothing starts between cancelling and waking
_dispatcher: threading.Thread | None = None
_wake = threading.Event()  # the dispatcher looks again at once (or at _wake_at)
_wake_at = math.inf
_next_pass_at = 0.0  # when the dispatcher will look next unless woken sooner
_given_back = 0  # spooled alerts whose jobs stopped for the shutdown, left for the next start
_retriers: weakref.WeakSet[Retrier] = weakref.WeakSet()


def _reset_after_fork() -> None:
    # A forked child inherits the parent's pool object but none of its threads, and possibly a
    # lock some other thread held at fork time: start from nothing.
    global _lock, _executor, _active, _memory_jobs, _stopping, _closing, _dispatcher
    global _given_back, _wake, _wake_at, _next_pass_at
    _lock = threading.Lock()
    _closing = False
    _given_back = 0
    _executor = None
    _active = 0
    _memory_jobs = 0
    _stopping = threading.Event()
    _dispatcher = None
    _wake = threading.Event()
    _wake_at = math.inf
    _next_pass_at = 0.0
    for retrier in list(_retriers):
        retrier._collecting.clear()


os.register_at_fork(after_in_child=_reset_after_fork)


def _sleep_unless_stopping(seconds: float) -> None:
    # Shutdown wakes every sleeping job at once: spooled ones give their lease back, in-memory
    # ones get one last attempt instead of a lost wait.
    _stopping.wait(seconds)


def start_dispatching(retrier: Retrier) -> None:
    """Start this process's dispatcher (gunicorn's post_worker_init): it takes up waiting
    alerts now, those a stopped or crashed process left included, and whenever more are due."""
    global _dispatcher
    with _lock:
        if _dispatcher is not None or _refusing():
            return
        _dispatcher = threading.Thread(
            target=_dispatch_continually, args=(retrier,), name="relay-dispatch", daemon=True
        )
        _dispatcher.start()


def _dispatch_continually(retrier: Retrier) -> None:
    global _wake_at, _next_pass_at
    while not _stopping.is_set():
        with _lock:
            _next_pass_at = math.inf  # a pass is running: a wake now may come too late for it
        soonest = None
        try:
            soonest = retrier.dispatch_once()
            retrier.tidy_spool()
        except Exception:  # the loop must outlive any one bad pass
            log.exception("taking up waiting alerts failed; trying again shortly")
        # Real time, not the retrier's clock: this thread only runs in a real process.
        now = time.time()
        with _lock:
            _wake.clear()  # wakes until now are in _wake_at; later ones set it again
            wake_at, _wake_at = _wake_at, math.inf
            _next_pass_at = min(now + DISPATCH_INTERVAL, wake_at, soonest or math.inf)
            timeout = _next_pass_at - now
        if not _stopping.is_set():
            _wake.wait(max(0.0, timeout))


def _wake_dispatcher(at: float | None = None) -> None:
    """Have the dispatcher look for waiting alerts at `at` (a Unix time), or now."""
    global _wake_at
    with _lock:
        if at is not None and at >= min(_wake_at, _next_pass_at):
            return  # a pass is planned by then anyway
        _wake_at = min(_wake_at, at if at is not None else 0.0)
        _wake.set()  # to plan for the earlier time


def shutdown() -> None:
    """Stop deliberately (gunicorn's worker_exit hook): start no new attempt, let running ones
    finish (each within RELAY_SEND_TIMEOUT), give every spooled alert's lease back so the next
    process takes it up at once, and give in-memory alerts one last attempt, logging the text of
    any that still fail."""
    global _executor, _dispatcher, _given_back, _closing
    with _lock:
        executor, _executor = _executor, None
        dispatcher, _dispatcher = _dispatcher, None
        _closing = True
    try:
        # Queued jobs are cancelled before the sleeping ones wake: a woken job that finished
        # quickly would otherwise free its thread for a queued one, which would then start.
        if executor is not None:
            executor.shutdown(wait=False, cancel_futures=True)
        _stopping.set()
        _wake.set()
        if dispatcher is not None:
            dispatcher.join()
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
        _wake.clear()


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


@dataclass
class Batch:
    """Alerts for one destination, sent together: one alert, or several as a digest."""

    destination: Destination
    alerts: list[SpooledAlert]
    # The chat's turn for the next attempt is already taken (the drain job took it to claim).
    turn_taken: bool = False

    def __post_init__(self) -> None:
        # Fixed at the start: alerts given up along the way leave the list.
        self.spooled = self.alerts[0].id is not None

    @property
    def labels(self) -> str:
        return _labels(self.alerts)


def _telegrams_pause(error: RetryableDeliveryError) -> float:
    """The exact wait a turn or a 429 asks for (a 429 that names none: FIRST_BACKOFF)."""
    return max(0.0, error.retry_after if error.retry_after is not None else FIRST_BACKOFF)


def _labels(alerts: Sequence[SpooledAlert]) -> str:
    """'#3, #4, #9': how logs name several alerts at once."""
    return ", ".join(alert.label for alert in alerts)


class _Interrupted(Exception):
    """The process is stopping: spooled alerts go back to the spool, not to Telegram."""


class _LeaseLost(Exception):
    """Another worker took alerts over (our lease expired): they are that worker's now."""


class _Emptied(Exception):
    """Every alert of the batch reached the end of its horizon before this attempt."""


class _NotYourTurn(RetryableDeliveryError):
    """Pacing: the chat's next turn is later. Not an attempt; the wait is exact."""

    def __init__(self, destination: Destination, wait: float) -> None:
        super().__init__(
            f"waiting {wait:.1f} s for a turn to send to {destination.describe()}",
            retry_after=wait,
            maybe_delivered=False,
        )


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
        coalesce: bool = True,
        metrics: Metrics | None = None,
        sleep: Sleep | None = None,
        clock: Clock = time.time,
    ) -> None:
        self._deliver = deliver
        self._metrics = metrics or Metrics(spool)
        self._spool = spool
        self._attempts = attempts
        self._wait = wait
        self._max_age = max_age
        self._lease_for = attempt_timeout + LEASE_MARGIN
        self._late_after = late_after
        self._how_many: Callable[[list[Message]], int] = (
            how_many_fit if coalesce else lambda waiting: min(1, len(waiting))
        )
        self._sleep: Sleep = sleep or _sleep_unless_stopping
        self._clock = clock
        self._memory_pacer = MemoryPacer()
        # Destinations whose drain job in this process is still taking its turn: one at a time.
        self._collecting: set[Destination] = set()
        self._futures: set[Future[None]] = set()
        self._futures_lock = threading.Lock()
        _retriers.add(self)

    @property
    def spool(self) -> Spool | None:
        return self._spool

    # --- the webhook's side ------------------------------------------------------------------

    def admit(self, message: Message, destination: Destination) -> Admission:
        """Write the alert ahead of its first attempt, and say whether the webhook may make that
        attempt now. Never fails: when the spool cannot take the alert, it is held in memory
        (paced by this process alone), and its record says why."""
        now = self._clock()
        refused = None
        if self._spool is not None:
            try:
                return self._spool.add(
                    message, destination, received_at=now, lease_for=self._lease_for
                )
            except SpoolFull as exc:
                refused = f"the spool is full ({exc})"
            except SpoolError:
                pass  # the spool logged that durability is lost; memory is what is left
        alert = SpooledAlert(message, destination, now, now, retry_refused=refused)
        turn = self._memory_pacer.reserve(destination.chat_key, group=destination.is_group, now=now)
        alert.next_attempt_at = turn
        if turn <= now:
            alert.attempts = alert.unsure_attempts = 1
        return Admission(alert, send_now=turn <= now)

    def queue(self, alert: SpooledAlert) -> str | None:
        """An alert whose turn has not come: the background sends it when it comes. Returns its
        label, or None when it cannot wait anywhere, in which case its text has been logged."""
        if alert.retry_refused is not None:
            self._undelivered(alert, f"it cannot wait: {alert.retry_refused}", None)
            return None
        if alert.id is None:
            return self._submit_from_memory(alert, None)
        with _lock:
            # In a storm, a drain job here is already waiting for the chat's turn and will take
            # this alert with the others; a dispatcher pass per webhook would only cost CPU.
            collecting = alert.destination in self._collecting
        if not collecting:
            _wake_dispatcher(alert.next_attempt_at)
        return alert.label

    def delivered(self, alerts: Sequence[SpooledAlert]) -> None:
        spooled = [alert for alert in alerts if alert.id is not None]
        if self._spool is None or not spooled:
            return
        try:
            self._spool.delivered(spooled)
        except SpoolError as exc:
            log.error(
                "alert(s) %s were delivered but could not be removed from the spool (%s): "
                "they may be sent again",
                _labels(spooled),
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
        self._undelivered(alert, f"{reason}{kept}", error, exc_info=exc_info)

    def undelivered(
        self,
        message: Message,
        reason: str,
        error: BaseException | None,
        *,
        alert: SpooledAlert | None = None,
        exc_info: bool = False,
    ) -> None:
        """Count an alert that will not reach Telegram, and log it with its text: the one way
        every such alert is recorded, whether or not it ever got an id."""
        self._metrics.undelivered.inc()
        log_undelivered(
            message,
            reason,
            error,
            alert=alert.label if alert is not None else None,
            destination=alert.destination if alert is not None else None,
            exc_info=exc_info,
        )

    def _undelivered(
        self,
        alert: SpooledAlert,
        reason: str,
        error: BaseException | None,
        *,
        exc_info: bool = False,
    ) -> None:
        self.undelivered(alert.message, reason, error, alert=alert, exc_info=exc_info)

    def retry_later(self, alert: SpooledAlert, error: RetryableDeliveryError) -> str | None:
        """Schedule background attempts after a failed synchronous one. Returns the alert's
        label, or None when no retry is possible, in which case its text has been logged."""
        if alert.retry_refused is not None:
            self._undelivered(alert, f"no retry possible: {alert.retry_refused}", error)
            return None
        now = self._clock()
        self._failed([alert], alert.destination, error, now)
        alert.next_attempt_at = now + self._pause_after([alert], error)
        return self._wait_in_background(alert, error)

    def without_topic(self, alert: SpooledAlert, error: ThreadNotFound) -> str | None:
        """The synchronous attempt found the topic gone: log the alert, and send it once to the
        chat itself, in the background."""
        self._count_failure(alert, error)
        self._reroute([alert], error)
        alert.next_attempt_at = self._clock()
        return self._wait_in_background(alert, error)

    def send_now(self, alert: SpooledAlert) -> None:
        """The webhook's own attempt, for an alert admitted with its turn taken."""
        self._send([alert], alert.message, alert.destination, kind="sync")

    def spool_problem(self) -> str | None:
        """Why the spool is unusable, or None (also when it is switched off)."""
        return self._spool.problem() if self._spool is not None else None

    # --- dispatching and stopping --------------------------------------------------------------

    def dispatch_once(self) -> float | None:
        """Start a drain job for each destination with alerts waiting, unless this process
        has one taking its turn already. Returns when the next alert not yet due will be."""
        if self._spool is None:
            return None
        try:
            destinations, soonest = self._spool.waiting(now=self._clock())
        except SpoolError:
            return None  # logged by the spool; the next pass tries again
        for destination in destinations:
            self._start_drain(destination)
        return soonest

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

    def _wait_in_background(self, alert: SpooledAlert, error: DeliveryError) -> str | None:
        if alert.id is None:
            return self._submit_from_memory(alert, error)
        # The row waits, unleased, for the dispatcher of any worker.
        self._save([alert], lease_until=None)
        _wake_dispatcher(alert.next_attempt_at)
        return alert.label

    def _start_drain(self, destination: Destination) -> None:
        global _active
        with _lock:
            if destination in self._collecting or _refusing() or _active >= MAX_RETRY_THREADS:
                return
            _active += 1
            self._collecting.add(destination)
            future = _pool().submit(self._drain, destination)
        self._track(future, None)

    def _drain(self, destination: Destination) -> None:
        try:
            batch = self._take_turn(destination)
        finally:
            with _lock:
                self._collecting.discard(destination)
        if batch is not None:
            _wake_dispatcher()  # more may be waiting already: the next turn's job can start
            self._run(batch)

    def _take_turn(self, destination: Destination) -> Batch | None:
        """Wait for the chat's turn, then claim the oldest alerts waiting for the destination
        that fit in one message. None when there were none left (another worker took them)."""
        assert self._spool is not None
        chat = destination.chat_key
        while True:
            with _lock:
                if _refusing():
                    return None
            now = self._clock()
            try:
                turn = self._spool.reserve(chat, group=destination.is_group, now=now)
                if turn > now:
                    self._sleep(turn - now)
                    continue
                alerts = self._spool.claim(
                    destination, lease_for=self._lease_for, how_many=self._how_many
                )
                if not alerts:
                    self._spool.give_back(chat, now)
                    return None
            except SpoolError:
                return None  # logged by the spool; the rows wait for the next pass
            return Batch(destination, alerts, turn_taken=True)

    def _submit_from_memory(self, alert: SpooledAlert, error: DeliveryError | None) -> str | None:
        global _active, _memory_jobs
        with _lock:
            refusal = None
            if _refusing():
                refusal = "the relay is shutting down"
            elif _memory_jobs >= MAX_MEMORY_RETRIES:
                refusal = f"{MAX_MEMORY_RETRIES} alerts are already waiting for a retry in memory"
            else:
                batch = Batch(alert.destination, [alert])
                future = _pool().submit(self._run, batch)
                _active += 1
                _memory_jobs += 1
        if refusal is not None:
            self._undelivered(alert, f"no retry possible: {refusal}", error)
            return None
        self._track(future, batch)
        # An unusable spool is a fault (ERROR); a spool switched off is the operator's choice.
        log.log(
            logging.WARNING if self._spool is None else logging.ERROR,
            "alert %s is kept in memory only (%s): it is lost if this process stops first; %s",
            alert.label,
            "RELAY_SPOOL_PATH=off" if self._spool is None else "the spool is unusable",
            f"last error: {error}" if error is not None else "waiting for its chat's turn",
        )
        return alert.label

    def _track(self, future: Future[None], batch: Batch | None) -> None:
        with self._futures_lock:
            self._futures.add(future)
        future.add_done_callback(lambda done: self._finished(done, batch))

    def _finished(self, future: Future[None], batch: Batch | None) -> None:
        global _active, _memory_jobs
        with _lock:
            _active -= 1
            if batch is not None and not batch.spooled:
                _memory_jobs -= 1
        with self._futures_lock:
            self._futures.discard(future)
        if future.cancelled() and batch is not None:  # only memory jobs wait in the queue
            for alert in batch.alerts:
                self._undelivered(alert, "the relay shut down before retrying it", None)

    def _policy(self) -> Retrying:
        return Retrying(
            stop=self._should_stop,
            wait=self._pause_after_attempt,
            retry=retry_if_exception_type(RetryableDeliveryError),
            before_sleep=self._before_sleep,
            sleep=self._sleep,
            reraise=True,
        )

    def _run(self, batch: Batch) -> None:
        try:
            first_due = min(alert.next_attempt_at for alert in batch.alerts)
            self._sleep(max(0.0, first_due - self._clock()))
            self._policy()(self._attempt, batch)
        except _Interrupted:
            self._hand_back(batch.alerts)
        except _Emptied:
            pass  # each alert was given up, and logged, on its own
        except _LeaseLost:
            log.warning(
                "alert(s) %s were taken over by another worker after their lease here expired; "
                "leaving them to that one",
                batch.labels,
            )
        except RetryableDeliveryError as exc:
            if _stopping.is_set() and batch.spooled:
                self._hand_back(batch.alerts)
            else:
                for alert in batch.alerts:
                    self.give_up(alert, self._why_stopped(alert), exc)
        except PermanentDeliveryError as exc:
            for alert in batch.alerts:
                self.give_up(alert, "Telegram refused it permanently", exc)
        except Exception as exc:  # a bug must not swallow the alerts: log them with their text
            for alert in batch.alerts:
                self.give_up(alert, "the relay failed while sending it", exc, exc_info=True)
        else:
            self.delivered(batch.alerts)

    def _attempt(self, batch: Batch) -> None:
        if batch.spooled and _stopping.is_set():
            raise _Interrupted
        self._retire_finished(batch)
        now = self._clock()
        # In-memory alerts get one last attempt as the process stops: a 429 would cost them
        # nothing, waiting for a turn would cost them everything.
        last_chance = _stopping.is_set() and not batch.spooled
        if not batch.turn_taken and not last_chance:
            chat, group = batch.destination.chat_key, batch.destination.is_group
            turn = self._pacer_for(batch).reserve(chat, group=group, now=now)
            if turn > now:
                raise _NotYourTurn(batch.destination, turn - now)
        batch.turn_taken = False
        for alert in batch.alerts:
            alert.attempts += 1
            # Counted before sending: if the process dies mid-attempt, whoever resumes the
            # alert must assume this attempt may have reached Telegram.
            alert.unsure_attempts += 1
        if self._save(batch.alerts, lease_until=now + self._lease_for) is False:
            raise _LeaseLost
        message = compose(
            [alert.message for alert in batch.alerts],
            [alert.received_at for alert in batch.alerts],
            now=now,
            late_after=self._late_after,
        )
        try:
            self._send(batch.alerts, message, batch.destination, kind="background")
        except RetryableDeliveryError as exc:
            self._failed(batch.alerts, batch.destination, exc, now)
            raise
        except ThreadNotFound as exc:
            if batch.destination.thread is None:
                raise
            for alert in batch.alerts:
                self._count_failure(alert, exc)
            self._reroute(batch.alerts, exc)
            batch.destination = batch.destination.without_topic()
            raise _NotYourTurn(batch.destination, 0.0) from None
        except DeliveryError as exc:
            for alert in batch.alerts:
                alert.last_error = str(exc)
            raise

    def _send(
        self,
        alerts: Sequence[SpooledAlert],
        message: Message,
        destination: Destination,
        *,
        kind: AttemptKind,
    ) -> None:
        """One attempt, the webhook's or a background one: counted, and logged in one record
        that names every alert in it, so an alert's whole story greps by its label."""
        started = time.monotonic()
        error: BaseException | None = None
        try:
            self._deliver(message, destination)
        except BaseException as exc:
            error = exc
            raise
        finally:
            self._attempt_made(alerts, destination, kind, error, time.monotonic() - started)

    def _attempt_made(
        self,
        alerts: Sequence[SpooledAlert],
        destination: Destination,
        kind: AttemptKind,
        error: BaseException | None,
        seconds: float,
    ) -> None:
        error_code = getattr(error, "error_code", None)
        attempt = max(alert.attempts for alert in alerts)
        now = self._clock()
        waited = now - min(alert.received_at for alert in alerts)
        if error is None:
            self._metrics.attempt(kind, "delivered", None)
            self._metrics.delivered([alert.received_at for alert in alerts], now)
            level, outcome = logging.INFO, "delivered"
            said = f"delivered {waited:.1f} s after {'the first' if alerts[1:] else 'it'} arrived"
        elif isinstance(error, RetryableDeliveryError):
            self._metrics.attempt(kind, "retryable_error", error_code)
            # In a long outage an alert is tried hundreds of times; attempts that risk a
            # duplicate, and every doubling of the others, are worth a WARNING each. (This
            # attempt is not yet counted as one that posted nothing: that comes after.)
            never_sent = 1 + max(alert.attempts - alert.unsure_attempts for alert in alerts)
            noteworthy = error.maybe_delivered or never_sent & (never_sent - 1) == 0
            level = logging.WARNING if noteworthy else logging.INFO
            outcome, said = "retryable_error", f"failed (retryable): {error}"
        else:
            self._metrics.attempt(kind, "permanent_error", error_code)
            level, outcome, said = (
                logging.WARNING,
                "permanent_error",
                f"failed (permanent): {error}",
            )
        digest = f" (a digest of {len(alerts)})" if len(alerts) > 1 else ""
        log.log(
            level,
            "attempt %d of alert(s) %s to %s%s (%s, %.0f ms): %s",
            attempt,
            _labels(alerts),
            destination.describe(),
            digest,
            kind,
            seconds * 1000,
            said,
            extra=event(
                event="attempt",
                alerts=[alert.label for alert in alerts],
                destination=destination.describe(),
                kind=kind,
                attempt=attempt,
                outcome=outcome,
                latency_ms=round(seconds * 1000, 1),
                since_arrival_s=round(waited, 3),
                error=str(error) if error is not None else None,
                error_code=error_code,
            ),
        )

    def _retire_finished(self, batch: Batch) -> None:
        """Give up, one by one, the alerts that reached the end of their horizon (a batch
        retried, or resumed after a crash, holds alerts with different histories)."""
        for alert in list(batch.alerts):
            if (reason := self._horizon_reached(alert)) is not None:
                self.give_up(alert, reason, None)
                batch.alerts.remove(alert)
        if not batch.alerts:
            raise _Emptied

    def _reroute(self, alerts: Sequence[SpooledAlert], error: ThreadNotFound) -> None:
        for alert in alerts:
            log.error(
                "TOPIC NOT FOUND: alert %s could not be posted in %s (%s); sending it once to "
                "the chat itself instead. Fix the topic id (TELEGRAM_THREAD_ID or the webhook "
                "URL's thread_id).\n--- alert text ---\n%s\n--- end of alert ---",
                alert.label,
                alert.destination.describe(),
                error,
                alert.message.text,
            )
            # Saved by the caller, with the lease it holds or without one.
            alert.destination = alert.destination.without_topic()

    def _pacer_for(self, batch: Batch) -> Pacer:
        return self._spool if self._spool is not None and batch.spooled else self._memory_pacer

    def _failed(
        self,
        alerts: Sequence[SpooledAlert],
        destination: Destination,
        error: RetryableDeliveryError,
        now: float,
    ) -> None:
        """What a failed attempt leaves behind, the webhook's or a background one's: each
        alert's count, and after a 429 the chat's pause."""
        for alert in alerts:
            self._count_failure(alert, error)
        if isinstance(error, RateLimited):
            self._pause_chat(destination, error, now)

    def _pause_chat(self, destination: Destination, error: RateLimited, now: float) -> None:
        """Telegram's 429 holds for every worker: no one sends to the chat until it is over."""
        until = now + _telegrams_pause(error)
        log.warning(
            "Telegram asked for a pause of %.0f s in %s (429): holding every alert for it",
            until - now,
            destination.describe(),
        )
        try:
            if self._spool is not None:
                self._spool.pause(destination.chat_key, until)
                return
        except SpoolError:
            pass  # logged by the spool; this process at least keeps the pause
        self._memory_pacer.pause(destination.chat_key, until)

    def _hand_back(self, alerts: Sequence[SpooledAlert]) -> None:
        """The process is stopping: give the leases back so the next process need not wait."""
        global _given_back
        self._save(alerts, lease_until=None)
        with _lock:
            _given_back += len(alerts)

    def _count_failure(self, alert: SpooledAlert, error: DeliveryError) -> None:
        if isinstance(error, RateLimited):
            # Telegram's pause is not the alert's failure: the attempt is not spent at all.
            alert.attempts -= 1
            alert.unsure_attempts -= 1
        elif not getattr(error, "maybe_delivered", False):
            alert.unsure_attempts -= 1  # refused, or a 400 for the topic: nothing was posted
        alert.last_error = str(error)

    def _horizon_reached(self, alert: SpooledAlert) -> str | None:
        if alert.unsure_attempts > self._attempts:
            return (
                f"giving up: {alert.unsure_attempts} attempts may have reached Telegram (the "
                f"first and RELAY_RETRY_ATTEMPTS={self._attempts} more), and another could post "
                "it twice"
            )
        if self._clock() - alert.retry_from >= self._max_age:
            return (
                f"giving up after {alert.attempts} attempts: it is older than "
                f"RELAY_RETRY_MAX_AGE ({self._max_age:g} s)"
            )
        return None

    def _should_stop(self, state: RetryCallState) -> bool:
        batch: Batch = state.args[0]
        return _stopping.is_set() or all(
            self._horizon_reached(alert) is not None for alert in batch.alerts
        )

    def _why_stopped(self, alert: SpooledAlert) -> str:
        if _stopping.is_set():
            return "the relay is shutting down"
        return self._horizon_reached(alert) or "giving up"

    def _pause_after(self, alerts: Sequence[SpooledAlert], error: BaseException | None) -> float:
        """Seconds before the next attempt: exactly the wait for a turn or for Telegram's pause;
        RELAY_RETRY_WAIT after an attempt that may have reached Telegram; doubling up to it
        after ones that certainly did not; never sooner than Telegram asked; and never past the
        end of the retry horizon unless Telegram asked."""
        if isinstance(error, _NotYourTurn | RateLimited):
            return _telegrams_pause(error)
        if not isinstance(error, RetryableDeliveryError):
            return self._wait
        if error.maybe_delivered:
            pause = self._wait
        else:
            never_sent = max(1, *(alert.attempts - alert.unsure_attempts for alert in alerts))
            pause = min(self._wait, FIRST_BACKOFF * 2 ** min(never_sent - 1, 30))
        horizon_left = min(alert.retry_from for alert in alerts) + self._max_age - self._clock()
        return max(0.0, error.retry_after or 0.0, min(pause, horizon_left))

    def _pause_after_attempt(self, state: RetryCallState) -> float:
        error = state.outcome.exception() if state.outcome else None
        return self._pause_after(state.args[0].alerts, error)

    def _before_sleep(self, state: RetryCallState) -> None:
        batch: Batch = state.args[0]
        error = state.outcome.exception() if state.outcome else None
        pause = state.next_action.sleep if state.next_action else 0.0
        next_attempt_at = self._clock() + pause
        for alert in batch.alerts:
            alert.next_attempt_at = next_attempt_at
        if self._save(batch.alerts, lease_until=next_attempt_at + self._lease_for) is False:
            raise _LeaseLost
        # The attempt itself was logged as it ended (_attempt_made); this is only the plan.
        log.debug(
            "alert(s) %s: next attempt in %.1f s (%s)",
            batch.labels,
            pause,
            error,
            extra=event(event="wait", alerts=[a.label for a in batch.alerts], seconds=pause),
        )

    def _save(self, alerts: Sequence[SpooledAlert], *, lease_until: float | None) -> bool | None:
        """Persist spooled alerts' state; None when there is no spool to persist to (the error
        is logged and the alerts carry on from memory)."""
        spooled = [alert for alert in alerts if alert.id is not None]
        if self._spool is None or not spooled:
            return None
        try:
            return self._spool.save(spooled, lease_until=lease_until)
        except SpoolError as exc:
            log.error(
                "alert(s) %s: could not record their progress in the spool (%s); they carry on "
                "from memory, and may be sent again by the process that resumes them",
                _labels(spooled),
                exc,
            )
            return None
