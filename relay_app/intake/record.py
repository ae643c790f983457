"""The last stage: what a webhook leaves once each part has its answer. Its arrival is noted
(`LastWebhook`), and what follows a webhook is started off its thread (`AfterWebhook`: the
issues its alert counted and did not attach, named: a capability's, glitchtip/hidden.py).

When GlitchTip last reached the relay. A relay that hears nothing cannot otherwise tell "no
errors happened" from "GlitchTip cannot reach me" (its container posting to 127.0.0.1, a
firewall, a wrong URL): the time of the last accepted webhook is in /readyz's body, in
`relay-app check` and in a gauge an alert rule can watch.

Each accepted webhook is noted in the spool (spool/arrivals.py: its alert's row, and the start
of its text), in the same write that queues its alert, so every worker and every relay on it
agrees, and `relay-app glitchtip connect --test` can follow its test alert; one the queue did
not take (held by a silence) is noted on its own. In this process's memory too, for a relay
without a usable spool."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Protocol

from ..core.errors import SpoolError
from ..core.services import Key
from ..spool.arrivals import SpoolArrivals
from .receive import Received
from .taken import Taken

if TYPE_CHECKING:
    from prometheus_client.core import Metric


class LastWebhook:
    def __init__(
        self, arrivals: SpoolArrivals | None, *, clock: Callable[[], float] = time.time
    ) -> None:
        self._arrivals = arrivals
        self._clock = clock
        self._lock = threading.Lock()
        self._here: float | None = None  # this process's last, wall clock

    def accepted(self, outcome: str, in_queue: bool, text: str) -> None:
        """A webhook was accepted now: what its answer said, whether the spool's queue took
        its alert in (and noted its arrival in the same write), and its message's text."""
        now = self._clock()
        with self._lock:
            self._here = now
        if self._arrivals is not None and not in_queue:
            with contextlib.suppress(SpoolError):  # memory has it; the spool's trouble is
                self._arrivals.record(outcome, text, now=now)  # reported elsewhere

    def last(self) -> float | None:
        """When a webhook was last accepted by this relay (or another on its spool), Unix
        seconds; None when none was, as far as this process can tell."""
        with self._lock:
            here = self._here
        if self._arrivals is not None:
            # The spool's, whichever worker answers: every scrape of the relay agrees.
            with contextlib.suppress(SpoolError):  # memory's, then
                shared = self._arrivals.last(now=self._clock())
                if shared is not None:
                    return shared
        return here

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


class AfterWebhook(Protocol):
    """What follows a webhook once its alerts are queued, off its thread: a capability's,
    provided under AFTER_WEBHOOK (GlitchTip's naming of the issues an alert counted and did
    not attach, glitchtip/hidden.py)."""

    # The origin whose alerts' issues left unattached it names in a message of their own: the
    # alert's own message says they will be (delivery/render.py).
    names_left_out_at: str

    def after_webhook(self, received: Received) -> bool: ...


AFTER_WEBHOOK: Key[AfterWebhook] = Key("what follows a webhook")


def record(
    received: Received,
    parts: list[Taken],
    last_webhook: LastWebhook,
    after: AfterWebhook | None,
) -> None:
    """The webhook's arrival noted, by each part's answer, and what follows it started."""
    for taken in parts:
        last_webhook.accepted(taken.outcome, taken.in_spool, taken.text)
    if after is not None:  # after its own alerts are queued, and off this thread
        after.after_webhook(received)
