"""What one attempt decides for each alert in it, as values: the job computes them, the queue
records them in one go (`Queue.settle`, with the rest of the attempt's `Settlement`: see
spool/model.py). Nothing here does anything.

- `Delivered`: Telegram has it; it leaves the queue.
- `RetryAt(at)`: it waits, in the queue, until `at`; no thread waits with it.
- `Dead(kind, reason)`: no more attempts; kept as a dead letter and logged with its text.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from .routing import Destination

# Why an alert died. Only "exhausted" ones (every attempt that may have reached Telegram used
# up) get a second chance: Telegram never refused them, it only failed to answer.
DeathKind = Literal["exhausted", "too_old", "refused", "internal", "shutdown"]
# What an attempt gives back of the count its claim took: nothing (it may have reached
# Telegram), the unsure part (it surely did not: refused before anything was posted, or failed
# before a byte was sent), or the whole attempt (Telegram's 429 is a pause, not a failure).
Refund = Literal["none", "unsure", "attempt"]
# What each gives back: (attempts, attempts that may have reached Telegram).
REFUNDED: dict[Refund, tuple[int, int]] = {"none": (0, 0), "unsure": (0, 1), "attempt": (1, 1)}
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
