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
    its lock and its stop event, starts the thread once (`start`, in each process), and stops
    it deliberately (`shutdown`). Subclasses write `_loop` (ending when `_stop` is set) and may
    extend `_start_over` with state of their own."""

    thread_name = "relay-background"
    join_for = 5.0

    def _start_over(self) -> None:
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._here()
        with self._lock:
            if self._thread is not None or self._stop.is_set():
                return
            self._thread = threading.Thread(target=self._loop, name=self.thread_name, daemon=True)
            self._thread.start()

    def shutdown(self) -> None:
        self._here()
        self._stop.set()
        with self._lock:
            thread = self._thread
        if thread is not None:
            thread.join(self.join_for)

    def _loop(self) -> None:
        raise NotImplementedError
