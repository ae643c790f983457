"""Background retries for alerts whose synchronous attempt failed.

GlitchTip never resends, so these retries are the only ones an alert gets. Each alert is one job
on a module-level thread pool, created lazily in each process (gunicorn forks its workers after
import) and retried by a tenacity policy declared once, in `Retrier._policy`. A job that ends
without delivering logs its full text at ERROR, whatever the reason: attempts exhausted, a
permanent refusal, the queue full, the process shutting down, or a bug in the relay.
"""

from __future__ import annotations

import logging
import os
import threading
import uuid
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import wait as wait_for_futures

from tenacity import (
    RetryCallState,
    Retrying,
    retry_if_exception_type,
    stop_after_attempt,
    stop_when_event_set,
)

from .delivery import log_undelivered
from .errors import DeliveryError, PermanentDeliveryError, RetryableDeliveryError
from .formatting import Message

log = logging.getLogger(__name__)

Sleep = Callable[[float], None]
Deliver = Callable[[Message], None]

# One thread per alert being retried, so a hundred alerts failing together each keep their own
# schedule instead of queueing behind each other's sleeps. Past the threads, jobs wait in the
# pool's queue; past MAX_PENDING_RETRIES, new ones are refused (and logged with their text).
MAX_RETRY_THREADS = 128
MAX_PENDING_RETRIES = 1000

_lock = threading.Lock()
_executor: ThreadPoolExecutor | None = None
_pending = 0
_stopping = threading.Event()


def _reset_after_fork() -> None:
    # A forked child inherits the parent's pool object but none of its threads, and possibly a
    # lock some other thread held at fork time: start from nothing.
    global _lock, _executor, _pending, _stopping
    _lock = threading.Lock()
    _executor = None
    _pending = 0
    _stopping = threading.Event()


os.register_at_fork(after_in_child=_reset_after_fork)


def _sleep_unless_stopping(seconds: float) -> None:
    # Shutdown wakes every sleeping job at once, for one last attempt instead of a lost wait.
    _stopping.wait(seconds)


def shutdown() -> None:
    """Stop deliberately (gunicorn's worker_exit hook): refuse new jobs, wake sleeping ones for
    a last attempt, cancel queued ones with their text logged, and wait for the running ones,
    each of which ends within one attempt's timeout."""
    global _executor
    with _lock:
        executor, _executor = _executor, None
        _stopping.set()
    try:
        if executor is not None:
            executor.shutdown(wait=True, cancel_futures=True)
    finally:
        _stopping.clear()


class Retrier:
    def __init__(
        self,
        deliver: Deliver,
        *,
        attempts: int,
        wait: float,
        sleep: Sleep | None = None,
    ) -> None:
        self._deliver = deliver
        self._attempts = attempts
        self._wait = wait
        self._sleep: Sleep = sleep or _sleep_unless_stopping
        self._futures: set[Future[None]] = set()
        self._futures_lock = threading.Lock()

    def submit(self, message: Message, first_error: RetryableDeliveryError) -> str | None:
        """Queue background attempts for `message`. Returns the job's id for the logs, or None
        when the job was refused, in which case the alert's text has been logged at ERROR."""
        global _executor, _pending
        job_id = uuid.uuid4().hex[:8]
        with _lock:
            refusal = None
            if _stopping.is_set():
                refusal = "the relay is shutting down"
            elif _pending >= MAX_PENDING_RETRIES:
                refusal = f"{MAX_PENDING_RETRIES} alerts are already waiting for a retry"
            else:
                if _executor is None:
                    _executor = ThreadPoolExecutor(
                        max_workers=MAX_RETRY_THREADS, thread_name_prefix="relay-retry"
                    )
                future = _executor.submit(self._run, job_id, message, first_error)
                _pending += 1
        if refusal is not None:
            log_undelivered(message, f"no retry possible: {refusal}", first_error)
            return None
        with self._futures_lock:
            self._futures.add(future)
        future.add_done_callback(lambda done: self._finished(done, job_id, message))
        log.info("retry %s queued after: %s", job_id, first_error)
        return job_id

    def wait_idle(self, timeout: float) -> bool:
        """Wait until every job of this retrier has ended; True if they all did in time."""
        with self._futures_lock:
            futures = list(self._futures)
        _, not_done = wait_for_futures(futures, timeout=timeout)
        return not not_done

    def _finished(self, future: Future[None], job_id: str, message: Message) -> None:
        global _pending
        with _lock:
            _pending -= 1
        with self._futures_lock:
            self._futures.discard(future)
        if future.cancelled():
            log_undelivered(
                message, f"retry {job_id}: the relay shut down before it could start", None
            )

    def _policy(self) -> Retrying:
        return Retrying(
            stop=stop_after_attempt(self._attempts) | stop_when_event_set(_stopping),
            wait=self._pause_after_attempt,
            retry=retry_if_exception_type(RetryableDeliveryError),
            before_sleep=self._log_before_sleep,
            sleep=self._sleep,
            reraise=True,
        )

    def _pause_after(self, error: BaseException | None) -> float:
        """Seconds before the next attempt: the configured wait, or longer if Telegram asked."""
        retry_after = error.retry_after if isinstance(error, RetryableDeliveryError) else None
        return max(self._wait, retry_after or 0.0)

    def _pause_after_attempt(self, state: RetryCallState) -> float:
        return self._pause_after(state.outcome.exception() if state.outcome else None)

    def _run(self, job_id: str, message: Message, first_error: RetryableDeliveryError) -> None:
        policy = self._policy()
        try:
            self._sleep(self._pause_after(first_error))
            policy(self._deliver, message)
        except DeliveryError as exc:
            attempts = policy.statistics.get("attempt_number", 0)
            if isinstance(exc, PermanentDeliveryError):
                reason = "Telegram refused it permanently"
            elif _stopping.is_set():
                reason = "the relay is shutting down"
            else:
                reason = "giving up"
            log_undelivered(
                message, f"retry {job_id}: {reason} after {attempts} background attempt(s)", exc
            )
        except Exception as exc:  # a bug must not swallow the alert: log it with its text
            log_undelivered(message, f"retry {job_id} crashed", exc, exc_info=True)
        else:
            attempts = policy.statistics.get("attempt_number", 0)
            log.info("retry %s delivered the alert on background attempt %d", job_id, attempts)

    def _log_before_sleep(self, state: RetryCallState) -> None:
        error = state.outcome.exception() if state.outcome else None
        pause = state.next_action.sleep if state.next_action else 0.0
        log.warning(
            "background attempt %d of %d failed: %s; next attempt in %.1f s",
            state.attempt_number,
            self._attempts,
            error,
            pause,
        )
