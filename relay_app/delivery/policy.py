"""The retry policy, declared once with tenacity: an alert's ledger and the error of its last
attempt in, the time its next attempt is due (or that it has none) out. Pure: nothing sleeps
here; the wait tenacity computes becomes a due time in the queue.

`sendMessage` is not idempotent, so attempts that may have reached Telegram (timeouts, lost
connections, 5xx) are limited to RELAY_RETRY_ATTEMPTS after the first; the first of those
retries is due a second later (a reply lost once is the common case, and the job only makes it
when Telegram answers again), the next ones RELAY_RETRY_WAIT apart. Attempts that certainly did
not reach Telegram (refused, DNS, connect timeout) risk no duplicate: they back off 1, 2, 4, ...
s up to RELAY_RETRY_WAIT, until the alert is RELAY_RETRY_MAX_AGE old. A 429 is not an attempt:
the alert waits exactly the pause Telegram named. No wait runs past the end of the horizon
unless Telegram asked for it.
"""

from __future__ import annotations

import contextlib
from typing import NoReturn, Protocol

from tenacity import (
    RetryCallState,
    Retrying,
    retry_if_exception_type,
    stop_after_attempt,
    wait_chain,
    wait_exponential,
    wait_fixed,
)
from tenacity.wait import wait_base

from ..core.errors import RateLimited, RetryableDeliveryError
from ..core.outcomes import Dead, RetryAt

# The first wait after a failure, and the pause after a 429 that names none.
FIRST_BACKOFF = 1.0
# Waits that chain or double reach their ceiling within this many failures of a kind: the
# wait after more failures is the wait after this many.
WAITS_SETTLE_WITHIN = 32


class Ledger(Protocol):
    """An alert's attempt history, as the queue keeps it."""

    @property
    def attempts(self) -> int:
        """Attempts made (counted before each is made, as one that may have arrived)."""

    @property
    def unsure_attempts(self) -> int:
        """Those of them that may have reached Telegram."""

    @property
    def retry_from(self) -> float:
        """Start of the retry horizon: its arrival, or a person's `relay-app spool retry`."""

    @property
    def second_chance(self) -> bool:
        """It died of its used-up attempts once and was revived to be sent once more."""


class RetryPolicy:
    def __init__(self, *, attempts: int, wait: float, max_age: float) -> None:
        self.attempts = attempts
        self.max_age = max_age
        # The declaration: which failures are retried, and the waits between them.
        self.retrying = Retrying(
            retry=retry_if_exception_type(RetryableDeliveryError),
            wait=_wait_by_error(
                maybe_sent=wait_chain(wait_fixed(FIRST_BACKOFF), wait_fixed(wait)),
                never_sent=wait_exponential(multiplier=FIRST_BACKOFF, max=wait),
            ),
            reraise=True,
        )

    def before_attempt(self, ledger: Ledger, now: float) -> Dead | None:
        """Dead when the alert may not be attempted again (an alert resumed after a crash, or
        one that waited past its horizon); None when it may."""
        return self._why_stop(ledger, now)

    def after_failure(
        self, ledger: Ledger, error: RetryableDeliveryError, now: float
    ) -> RetryAt | Dead:
        """When the next attempt is due after this failure, or Dead when there is none. The
        ledger already holds this attempt as Telegram's error says it went (a 429 is not
        counted at all, a refusal not as one that may have arrived)."""
        if isinstance(error, RateLimited):
            pause = error.retry_after if error.retry_after is not None else FIRST_BACKOFF
            return RetryAt(now + pause, after_failure=False)
        if (dead := self._why_stop(ledger, now)) is not None:
            return dead
        pause = self.wait_after(error, _failures_of_this_kind(ledger, error))
        horizon_left = ledger.retry_from + self.max_age - now
        return RetryAt(now + max(error.retry_after or 0.0, min(pause, horizon_left)))

    def wait_after(self, error: RetryableDeliveryError, failures: int) -> float:
        """The wait the declaration gives after `failures` failures like `error` in a row,
        read the way tenacity documents: its own loop, retrying a call that fails so, with a
        `sleep` that only notes each wait it is asked for."""
        waits: list[float] = []
        replay = self.retrying.copy(
            stop=stop_after_attempt(min(failures, WAITS_SETTLE_WITHIN) + 1), sleep=waits.append
        )

        def fails() -> NoReturn:
            raise error

        with contextlib.suppress(RetryableDeliveryError):  # the replay's end: its last failure
            replay(fails)
        return waits[-1]

    def _why_stop(self, ledger: Ledger, now: float) -> Dead | None:
        allowed = 1 + self.attempts + (1 if ledger.second_chance else 0)
        if ledger.unsure_attempts >= allowed:
            # At most 1 + RELAY_RETRY_ATTEMPTS attempts that may have reached Telegram (one
            # more on a second chance): that many copies at worst.
            limit = "the first and RELAY_RETRY_ATTEMPTS={} more{}".format(
                self.attempts, ", and its second chance" if ledger.second_chance else ""
            )
            return Dead(
                "exhausted",
                f"giving up: {ledger.unsure_attempts} attempts may have reached Telegram "
                f"({limit}), and another could post it twice",
            )
        if now - ledger.retry_from >= self.max_age:
            return Dead(
                "too_old",
                f"giving up after {ledger.attempts} attempts: it is older than "
                f"RELAY_RETRY_MAX_AGE ({self.max_age:g} s)",
            )
        return None


class _wait_by_error(wait_base):
    """One wait for attempts that may have reached Telegram, another for those that did not."""

    def __init__(self, *, maybe_sent: wait_base, never_sent: wait_base) -> None:
        self.maybe_sent = maybe_sent
        self.never_sent = never_sent

    def __call__(self, retry_state: RetryCallState) -> float:
        error = retry_state.outcome.exception() if retry_state.outcome else None
        maybe_sent = getattr(error, "maybe_delivered", True)
        return (self.maybe_sent if maybe_sent else self.never_sent)(retry_state)


def _failures_of_this_kind(ledger: Ledger, error: RetryableDeliveryError) -> int:
    """The count this failure's wait chains or doubles on, this failure included."""
    if error.maybe_delivered:
        return max(1, ledger.unsure_attempts)
    return max(1, ledger.attempts - ledger.unsure_attempts)
