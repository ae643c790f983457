"""What the queue hands out: alerts with their ledger, and the claims, admissions and lanes
that jobs and the dispatcher work with. Plain, immutable data: the ledger changes in the
queue's statements only, from what an attempt's settlement says (outcomes.py)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

from ..core.outcomes import REFUNDED, Dead, Delivered, Outcome, Refund, TelegramVerdict
from ..core.routing import Destination
from ..message.formatting import Message

State = Literal["pending", "dead"]
# Why a new alert was not sent by its webhook at once: older alerts for its destination wait
# (it joins them), its chat's turn has not come (pacing), Telegram is failing, or the webhook's
# time went on waiting for the spool's lock.
WaitReason = Literal["behind_older", "paced", "telegram_down", "spool_busy"]


@dataclass(frozen=True)
class SpooledAlert:
    """An alert on its way: a queue row as it was read, and the ledger `policy` reads."""

    message: Message
    destination: Destination
    received_at: float
    retry_from: float
    id: int
    attempts: int = 0
    unsure_attempts: int = 0
    next_attempt_at: float = 0.0
    last_error: str | None = None
    state: State = "pending"
    dead_at: float | None = None
    # Dead once for its used-up attempts, and sent once more when its chat accepted a message.
    second_chance: bool = False
    # Kept in this process's memory only (the spool could not take it).
    in_memory: bool = False

    @property
    def label(self) -> str:
        """How logs name the alert: '#12', the spool id that `relay-app spool` takes too, or
        'mem-3' for one held in memory only (numbered per process; the log line has the pid)."""
        return f"mem-{self.id}" if self.in_memory else f"#{self.id}"


@dataclass(frozen=True)
class Claim:
    """A job's lease on one destination: the oldest due alerts that fit in one message, each
    with this attempt already counted as one that may reach Telegram (a process that dies
    mid-attempt leaves that count behind), and the chat's turn taken. `retired` are alerts
    found past their horizon when claimed: already dead letters, to be reported."""

    destination: Destination
    token: str
    alerts: list[SpooledAlert]
    retired: list[tuple[SpooledAlert, Dead]] = field(default_factory=list)
    # The send recorded for the chat's turn (the store's time); None when none was taken.
    turn_at: float | None = None
    # When the lease runs out, on the claimant's clock: past it, another relay may claim the
    # lane and send, so this claim's attempt must have ended by then. None: not leased.
    leased_until: float | None = None


@dataclass(frozen=True)
class Later:
    """The destination has due alerts, but its chat's next turn is at `at`."""

    at: float


@dataclass(frozen=True)
class Admission:
    """A new alert in a queue, and what happens to it now: `claim` when the webhook may send it
    at once (the lease and the chat's turn are taken), or why it waits. `wake_at`: when the
    dispatcher should look (the chat's turn), when that is for this alert to say."""

    alert: SpooledAlert
    claim: Claim | None
    waiting: WaitReason | None = None
    wake_at: float | None = None


@dataclass(frozen=True)
class Lane:
    """One destination's queue as the dispatcher sees it: when its oldest alert is due (the
    clock guard applied), and whether its lease is free for this process to take."""

    destination: Destination
    due_at: float
    free: bool


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
    # When Telegram's answer to the message came, or its failure did (a wall-clock time): it
    # reached the chat before then, if at all, and the chat's pace runs from then, not from
    # when its turn was taken (None: no request was made).
    sent_at: float | None = None

    @property
    def delivered(self) -> bool:
        return any(isinstance(outcome, Delivered) for _, outcome in self.outcomes)


def refunded(alert: SpooledAlert, refund: Refund, error: str | None) -> SpooledAlert:
    """The alert's ledger as the queue will hold it after a settlement with this refund: what
    the retry policy decides on. (The queue makes the same change in its own statements.)"""
    attempts, unsure = REFUNDED[refund]
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
