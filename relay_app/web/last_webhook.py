"""When GlitchTip last reached the relay. A relay that hears nothing cannot otherwise tell "no
errors happened" from "GlitchTip cannot reach me" (its container posting to 127.0.0.1, a
firewall, a wrong URL): the time of the last accepted webhook is in /readyz's body, in
`relay-app check` and in a gauge an alert rule can watch.

Kept in the spool, so every worker and every relay on it agrees (at most one write a second per
process: a storm's webhooks do not each pay for it); in this process's memory too, for a relay
without a usable spool."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from ..core.errors import SpoolError
from ..spool.arrivals import SpoolArrivals

if TYPE_CHECKING:
    from prometheus_client.core import Metric

# The gauge's resolution: a webhook within a second of the last one recorded is not written.
WRITE_EVERY = 1.0


class LastWebhook:
    def __init__(
        self,
        arrivals: SpoolArrivals | None,
        *,
        clock: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.monotonic,
        write_every: float = WRITE_EVERY,
    ) -> None:
        self._arrivals = arrivals
        self._clock = clock
        self._monotonic = monotonic
        self._write_every = write_every
        self._lock = threading.Lock()
        self._here: float | None = None  # this process's last, wall clock
        self._written: float | None = None  # when this process last wrote it, monotonic

    def accepted(self) -> None:
        """A webhook was accepted now (an alert taken, sent or kept)."""
        now = self._monotonic()
        with self._lock:
            self._here = self._clock()
            due = self._written is None or now - self._written >= self._write_every
            if due:
                self._written = now
        if due and self._arrivals is not None:
            try:
                self._arrivals.record(now=self._clock())
            except SpoolError:
                with self._lock:
                    self._written = None  # the next one tries again; memory has it meanwhile

    def last(self) -> float | None:
        """When a webhook was last accepted by this relay (or another on its spool), Unix
        seconds; None when none was, as far as this process can tell."""
        with self._lock:
            here = self._here
        shared = None
        if self._arrivals is not None:
            with contextlib.suppress(SpoolError):  # memory's, then
                shared = self._arrivals.last(now=self._clock())
        known = [at for at in (here, shared) if at is not None]
        return max(known) if known else None

    def collect(self) -> Iterator[Metric]:
        from prometheus_client.core import GaugeMetricFamily

        gauge = GaugeMetricFamily(
            "relay_webhook_last_accepted_timestamp_seconds",
            "When a webhook was last accepted (Unix time; from the spool, so every worker "
            "agrees): alert on time() minus it to learn that GlitchTip cannot reach the relay",
        )
        last = self.last()
        if last is not None:  # none yet: no sample, rather than 1970
            gauge.add_metric([], last)
        yield gauge
