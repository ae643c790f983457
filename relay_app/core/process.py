"""The one fork rule: an object that owns threads, locks or connections belongs to the process
that made it. gunicorn makes the app before it forks its workers, and a forked child has none of
the parent's threads and maybe a copy of a lock one of them held; so the first use of such an
object in another process starts it over there."""

from __future__ import annotations

import os


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
