"""Reading Telegram's updates by polling (`TELEGRAM_UPDATES=poll`): every process has a `Poller`
(one object owning its thread and stop event, created with the app), and the fleet's leader runs
it (delivery/leadership.py): it long-polls `getUpdates` from the offset kept beside the leader's
lease, which only the current term moves on (spool/leader.py), so a leader that hands over late
confirms nothing. Telegram answers a second concurrent poller with 409 Conflict, so a leader
that stops ends its poll before it lets its lease go, and the next leader takes over at once.
Each update goes to what handles the relay's updates (updates.py), as one posted to the
webhook does."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any, Protocol

from ..core.errors import DeliveryError, PermanentDeliveryError, SpoolError
from ..core.http_deadline import Deadline
from ..core.json_values import json_int
from ..core.process import OwnThread
from ..core.timing import PRODUCTION, Timing
from .client import TelegramClient
from .updates_webhook import handle_update

log = logging.getLogger(__name__)

Handle = Callable[[dict[str, Any]], None]

# After a failed poll, the next waits 1 s, doubling up to this.
MAX_BACKOFF = 30.0


class UpdatesOffset(Protocol):
    """Where the leader keeps the offset of Telegram's updates, under its term (spool/leader.py)."""

    def offset(self, token: str) -> int | None: ...

    def confirm(self, token: str, next_update: int) -> bool: ...


class Poller(OwnThread):
    """This process's poll for Telegram's updates, run while it leads the fleet
    (delivery/leadership.py): from the offset kept beside the leader's lease, moved on under
    its term (spool/leader.py)."""

    thread_name = "relay-updates"

    def __init__(
        self,
        *,
        client: TelegramClient,
        offset: UpdatesOffset,
        term: Callable[[], str | None],
        handle: Handle,
        attempt_timeout: float,
        timing: Timing = PRODUCTION,
    ) -> None:
        self._client = client
        self._offsets = offset
        self._term = term
        self._handle = handle
        self._long_poll = timing.long_poll
        self._look = timing.leader_look
        # Long enough to end the poll and handle what it brought (each within a few timeouts).
        self.join_for = timing.long_poll + 4 * attempt_timeout + timing.lease_margin
        self._attempt_timeout = attempt_timeout
        self._start_in_this_process()

    def _start_over(self) -> None:
        """Everything that belongs to one process (core/process.py)."""
        super()._start_over()
        self._current: Deadline | None = None
        self._polling = False

    def _stopping(self) -> None:
        """End the poll in flight, so Telegram sees no poller left behind when the next
        leader begins."""
        with self._lock:
            current = self._current
        if current is not None:
            current.expire()

    def _watching(self, deadline: Deadline) -> None:
        with self._lock:
            self._current = deadline
            if self._stop.is_set():
                deadline.expire()

    def _loop(self) -> None:
        failures = 0
        while not self._stop.is_set():
            token = self._term()
            offset = self._offset(token)
            if token is None or offset is None:  # not leading now, or the spool cannot say
                self._stop.wait(self._look)
                continue
            try:
                updates = self._client.poll_updates(
                    offset,
                    timeout=self._long_poll,
                    deadline=time.monotonic() + self._long_poll + self._attempt_timeout,
                    watch=self._watching,
                )
            except DeliveryError as exc:
                if self._stop.is_set():
                    break
                failures += 1
                self._stop.wait(self._after_failure(exc, failures))
                continue
            finally:
                with self._lock:
                    self._current = None
            failures = 0
            for update in updates:
                handle_update(update, self._handle)
                if not self._confirm(token, update.get("update_id")):
                    break  # another leads now, and reads on from the first unconfirmed

    def _offset(self, token: str | None) -> int | None:
        """The first update to read while `token`'s term holds; None otherwise."""
        offset = None
        if token is not None:
            try:
                offset = self._offsets.offset(token)
            except SpoolError as exc:
                log.debug("the updates' offset could not be read: %s", exc)
        if offset is not None and not self._polling:
            log.info("this process reads Telegram's updates now (button presses)")
        self._polling = offset is not None
        return offset

    def _confirm(self, token: str, update_id: object) -> bool:
        """The offset past a handled update, so whoever reads next starts after it; whether
        this process's term still holds."""
        handled = json_int(update_id)
        if handled is None:
            return True
        try:
            return self._offsets.confirm(token, handled + 1)
        except SpoolError as exc:
            log.warning("a handled update could not be confirmed: %s", exc)
            return True

    def _after_failure(self, error: DeliveryError, failures: int) -> float:
        """How long to wait after a failed poll, and the log line that says why."""
        backoff = min(MAX_BACKOFF, 2.0 ** (failures - 1))
        if isinstance(error, PermanentDeliveryError) and error.error_code == 409:
            if "webhook" in error.description.lower():
                if failures == 1:
                    log.error(
                        "Telegram has a webhook set for this bot, so button presses cannot be "
                        "polled (TELEGRAM_UPDATES=poll): run 'relay-app telegram-webhook "
                        "delete', or set TELEGRAM_UPDATES=webhook"
                    )
                return MAX_BACKOFF
            log.warning(
                "another program polls Telegram's updates for this bot (%s): only one may; "
                "this relay tries again in %.0f s",
                error,
                backoff,
            )
            return backoff
        if failures == 1 or failures & (failures - 1) == 0:
            log.warning("reading Telegram's updates failed (%s); trying again", error)
        return backoff
