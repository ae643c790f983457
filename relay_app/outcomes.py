"""What one attempt decides for each alert in it, as values: the job computes them, a queue
records them in one go (`Queue.settle`). Nothing here does anything.

- `Delivered`: Telegram has it; it leaves the queue.
- `RetryAt(at)`: it waits, in the queue, until `at`; no thread waits with it.
- `Dead(kind, reason)`: no more attempts; kept as a dead letter and logged with its text.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Literal

from .routing import Destination

if TYPE_CHECKING:
    from .spool.model import SpooledAlert

# Why an alert died. Only "exhausted" ones (every attempt that may have reached Telegram used
# up) get a second chance: Telegram never refused them, it only failed to answer.
DeathKind = Literal["exhausted", "too_old", "refused", "internal", "shutdown"]
# What an attempt gives back of the count its claim took: nothing (it may have reached
# Telegram), the unsure part (it surely did not: refused before anything was posted, or failed
# before a byte was sent), or the whole attempt (Telegram's 429 is a pause, not a failure).
Refund = Literal["none", "unsure", "attempt"]
# What an attempt says about Telegram: it answered (even with a refusal), it is failing
# (network trouble, timeouts, 5xx), or nothing (no request was made).
TelegramVerdict = Literal["answered", "failing", "unknown"]


@dataclass(frozen=True)
class Delivered:
    pass


@dataclass(frozen=True)
class RetryAt:
    at: float  # a wall-clock time, stored in the queue
    # It waits because Telegram failed: it is due at once when Telegram answers again, or
    # when its chat accepts another message.
    after_failure: bool = True
    # It moves to another destination first (a forum topic that is gone: the chat itself).
    destination: Destination | None = None


@dataclass(frozen=True)
class Dead:
    kind: DeathKind
    reason: str


Outcome = Delivered | RetryAt | Dead


@dataclass(frozen=True)
class Settlement:
    """Everything one attempt leaves behind, recorded by the queue as one change."""

    outcomes: Sequence[tuple[SpooledAlert, Outcome]]
    telegram: TelegramVerdict = "unknown"
    # What changes in the ledger of every alert that is not delivered: the queue applies it in
    # its statements (the one writer of the counts).
    refund: Refund = "none"
    error: str | None = None
    # Telegram's 429: no message to the chat before this (a wall-clock time).
    pause_chat_until: float | None = None
    # When a message reached the chat: its dead letters whose horizon started at or after this
    # get their second chance (None: RELAY_SECOND_CHANCE=0).
    second_chance_since: float | None = None

    @property
    def delivered(self) -> bool:
        return any(isinstance(outcome, Delivered) for _, outcome in self.outcomes)


def refunded(alert: SpooledAlert, refund: Refund, error: str | None) -> SpooledAlert:
    """The alert's ledger as the queue will hold it after a settlement with this refund: what
    the retry policy decides on. (The queue makes the same change in its own statements.)"""
    attempts = 1 if refund == "attempt" else 0
    unsure = 1 if refund != "none" else 0
    return replace(
        alert,
        attempts=alert.attempts - attempts,
        unsure_attempts=alert.unsure_attempts - unsure,
        last_error=error,
    )


@dataclass(frozen=True)
class Settled:
    """What the queue did with a settlement."""

    # Another worker took the destination over (our lease was freed): only deliveries were
    # recorded, the rest is that worker's.
    lease_lost: bool = False
    # Dead letters of the chat that are pending again for their second chance.
    revived: int = 0
