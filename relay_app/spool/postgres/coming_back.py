"""While the spool's database cannot be reached and alerts have somewhere else to wait (this
host's own file, RELAY_LOCAL_SPOOL_PATH), one thread of the process asks it, every so often,
whether it answers again; until it does, every unit of work fails at once. No webhook then
waits to learn again what the relay knows (a paused server costs a connection's timeout each
time it is asked), and the dispatcher keeps sending from the file at its pace."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

log = logging.getLogger("relay_app.spool")


class ComingBack:
    """This process's watch for the database's return: its thread and its stop event, made
    again in each process (a thread does not survive fork), stopped with the store."""

    def __init__(self, answers: Callable[[], bool], on_back: Callable[[], None], every: float):
        self._answers = answers
        self._on_back = on_back
        self._every = every
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def watch(self) -> None:
        """Ask until the database answers (once: a watch under way goes on)."""
        with self._lock:
            if self._stop.is_set() or (self._thread is not None and self._thread.is_alive()):
                return
            self._thread = threading.Thread(
                target=self._run, name="relay-spool-coming-back", daemon=True
            )
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        with self._lock:
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(self._every + 5)

    def _run(self) -> None:
        while not self._stop.wait(self._every):
            try:
                if self._answers():
                    self._on_back()
                    return
            except Exception:  # the watch must outlive any one bad question
                log.exception("asking the spool's database whether it answers again failed")
