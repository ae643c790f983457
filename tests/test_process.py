"""The one fork rule (core/process.py): what a process owns (threads, locks, connections) is
its own; a forked child that uses an object made before the fork starts it over, and leaves the
parent's as they were."""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable
from pathlib import Path

from relay_app.core.process import PerProcess
from relay_app.spool import on_store, open_memory
from relay_app.spool.database import Database
from tests.conftest import queue_alert
from tests.payloads import issue, issue_alert

NOW = 1_800_000_000.0


def in_a_child(check: Callable[[], bool]) -> int:
    """Run `check` in a forked child: its exit code (0 when it held, 1 when not, 2 on error)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # forking with threads about
        pid = os.fork()
    if pid == 0:
        code = 2
        try:
            code = 0 if check() else 1
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


class Counted(PerProcess):
    def __init__(self) -> None:
        self.starts: list[int] = []
        self._start_in_this_process()

    def _start_over(self) -> None:
        self.starts.append(os.getpid())

    def use(self) -> list[int]:
        self._here()
        return self.starts


def test_an_object_starts_over_once_in_a_child_and_not_in_its_parent() -> None:
    counted = Counted()
    parent = os.getpid()
    assert counted.use() == [parent]
    assert in_a_child(lambda: counted.use() == [parent, os.getpid()] == counted.use()) == 0
    assert counted.use() == [parent]


def test_a_child_reads_the_spool_file_on_its_own_connection_and_has_an_empty_memory(
    tmp_path: Path,
) -> None:
    spool = on_store(Database(str(tmp_path / "spool.sqlite3")))
    memory = open_memory()
    for queue in (spool.queue, memory.queue):
        queue_alert(queue, issue_alert(issue(1)), now=NOW)

    def child() -> bool:
        queue_alert(spool.queue, issue_alert(issue(2)), now=NOW)
        return spool.queue.pending() == 2 and memory.queue.pending() == 0

    assert in_a_child(child) == 0
    # The parent's connections were left alone, and see the child's write.
    assert (spool.queue.pending(), memory.queue.pending()) == (2, 1)
    spool.close()
