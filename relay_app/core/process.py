"""The one fork rule: an object that owns threads, locks or connections belongs to the process
that made it. gunicorn makes the app before it forks its workers, and a forked child has none of
the parent's threads and maybe a copy of a lock one of them held; so the first use of such an
object in another process starts it over there."""

from __future__ import annotations

import os
import threading


class PerProcess:
    """A base for such objects: `_here()` before touching what the process owns;
    `_start_over()` makes it afresh (from `__init__` too, via `_start_in_this_process`)."""

    _pid: int

    def _start_in_this_process(self) -> None:
        self._pid = os.getpid()
        self._start_over()

    def _here(self) -> None:
        if self._pid != os.getpid():
            self._start_in_this_process()

    def _start_over(self) -> None:
        raise NotImplementedError


class OwnThread(PerProcess):
    """Per-process background work that is one loop on one thread: the object owns its thread,
    its lock and its stop event, starts the thread (`start`, in each process), and stops it
    deliberately: for a while (`stop`: the fleet's leader's chores, which another process takes
    over and this one may take back) or for good (`shutdown`). Subclasses write `_loop` (ending
    when `_stop` is set) and may extend `_start_over` with state of their own, and `_stopping`
    with what ends a wait of the loop's sooner."""

    thread_name = "relay-background"
    join_for = 5.0

    def _start_over(self) -> None:
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._closed = False

    def start(self) -> None:
        """Start the loop, or start it again after `stop`; not after `shutdown`, nor while the
        loop of the last start has not ended yet."""
        self._here()
        with self._lock:
            if self._closed or (self._thread is not None and self._thread.is_alive()):
                return
            self._stop = threading.Event()
            self._thread = threading.Thread(target=self._loop, name=self.thread_name, daemon=True)
            self._thread.start()

    def stop(self) -> None:
        """End the loop, waiting for it `join_for` at most; `start` begins it again."""
        self._here()
        with self._lock:
            thread, stop = self._thread, self._stop
        stop.set()
        self._stopping()
        if thread is not None:
            thread.join(self.join_for)

    def shutdown(self) -> None:
        """End the loop for good (the worker stops)."""
        self._here()
        with self._lock:
            self._closed = True
        self.stop()

    def _stopping(self) -> None:
        """What ends the loop's current wait at once (an HTTP request's deadline), if any."""

    def _loop(self) -> None:
        raise NotImplementedError
