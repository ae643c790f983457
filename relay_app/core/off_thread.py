"""Work that must not hold up the thread that found it: a link's look-up in GlitchTip, which may
take its whole deadline, off the one thread that reads Telegram's updates (whose presses must be
answered within seconds) or a request's. A few threads per process, a bounded backlog (work
past it is refused, for the caller to count), made lazily in the process that uses them (the
one fork rule, process.py) and stopped deliberately with the worker."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

from .process import PerProcess

log = logging.getLogger(__name__)


class OffThread(PerProcess):
    def __init__(self, name: str, *, threads: int, most_waiting: int) -> None:
        """`most_waiting`: work queued or running at once, at most."""
        self._name = name
        self._threads = threads
        self._most_waiting = most_waiting
        self._start_in_this_process()

    def _start_over(self) -> None:
        self._lock = threading.Condition()
        self._pool: ThreadPoolExecutor | None = None
        self._waiting = 0
        self._stopped = False

    def submit(self, work: Callable[[], None]) -> bool:
        """Run `work` on one of the threads; False (not run) when as much waits already, or
        the worker is stopping. What `work` raises is logged, never lost in a future."""
        self._here()
        with self._lock:
            if self._stopped or self._waiting >= self._most_waiting:
                return False
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self._threads, thread_name_prefix=self._name)
            self._waiting += 1
            future = self._pool.submit(work)
        future.add_done_callback(self._ended)
        return True

    def _ended(self, future: Future[None]) -> None:
        with self._lock:
            self._waiting -= 1
            self._lock.notify_all()
        if not future.cancelled() and (error := future.exception()) is not None:
            log.error("%s: work off the thread that found it failed", self._name, exc_info=error)

    def wait_idle(self, timeout: float) -> bool:
        """Whether everything submitted has ended, waiting `timeout` at most (tests)."""
        with self._lock:
            return self._lock.wait_for(lambda: self._waiting == 0, timeout)

    def shutdown(self) -> None:
        """Stop with the worker: nothing more is taken; what runs ends by its own deadline."""
        with self._lock:
            self._stopped = True
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)
