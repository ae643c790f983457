"""Who hears that another relay (or another process) queued work: one connection per process
that LISTENs on a thread of its own, and reconnects until stopped, so nobody waits for the next
poll."""

from __future__ import annotations

import threading
from collections.abc import Callable

import psycopg

# The channel a relay notifies when it queues work.
CHANNEL = "relay_queue"
# How long the listener waits for a notification before looking at its stop event.
LISTEN_SLICE = 1.0


class Listener:
    """One connection that LISTENs, on a thread of its own; reconnects until stopped."""

    def __init__(self, url: str, on_news: Callable[[], None], *, connect_timeout: int) -> None:
        self._url = url
        self._connect_timeout = connect_timeout
        self._on_news = on_news
        self._stop = threading.Event()
        # Set while a connection LISTENs: news reaches `on_news` then, and only then.
        self._listening = threading.Event()
        self._thread = threading.Thread(target=self._run, name="relay-spool-listener", daemon=True)
        self._thread.start()

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    @property
    def listening(self) -> bool:
        return self._listening.is_set()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(LISTEN_SLICE + self._connect_timeout + 1)

    def _run(self) -> None:
        pause = 0.5
        while not self._stop.is_set():
            try:
                with psycopg.connect(
                    self._url, autocommit=True, connect_timeout=self._connect_timeout
                ) as connection:
                    connection.execute(f"LISTEN {CHANNEL}")
                    pause = 0.5
                    self._listening.set()
                    self._on_news()  # anything queued while not listening
                    while not self._stop.is_set():
                        if any(True for _ in connection.notifies(timeout=LISTEN_SLICE)):
                            self._on_news()
            except psycopg.Error:
                self._listening.clear()
                # The poll goes on meanwhile; the next connection catches up.
                self._stop.wait(pause)
                pause = min(pause * 2, 5.0)
