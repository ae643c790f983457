"""What the queue hands out: jobs with their ledger, and the claims and lanes that the job
runner and the dispatcher work with. Plain, immutable data: the ledger changes in the queue's
statements only, from what an attempt's settlement says (outcomes.py)."""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import IntEnum
from typing import Any, Literal

from ..core.outcomes import REFUNDED, Dead, Delivered, Outcome, Refund, TelegramVerdict
from ..core.routing import Destination

State = Literal["pending", "dead"]
# What a job writes to its chat (delivery/outbox.py says what each holds): an alert, alone or
# in a digest; a card edited to show what was done to its issues; a reply under a message; a
# reaction on one.
JobKind = Literal["alert", "card", "reply", "reaction"]
JOB_KINDS: tuple[JobKind, ...] = ("alert", "card", "reply", "reaction")


class Precedence(IntEnum):
    """Which of a chat's waiting writes take its turns first, the lowest first, and within one
    the oldest first (docs/delivery.md): nothing a person types, and nothing the relay says of
    its own accord, ever goes before an alert owed to the chat."""

    ALERT = 0  # an alert, alone or in a digest; an escalating issue posted again
    CALL = 1  # people called under an alert, a handoff, a summary, a snoozed issue come back
    EDIT = 2  # a card edited to show what was done to its issues
    ANSWER = 3  # what people typed answered: a command, a link's card, a reply's confirmation


@dataclass(frozen=True)
class NewJob:
    """A write to a chat as it is queued: its kind, what it is about (never its text), where it
    goes, its precedence among its chat's writes, its lane (an alert's: its destination's; a
    card's edits: its message's), due `due_in` seconds from now."""

    kind: JobKind | str  # the core's, or a capability's (delivery/render.py's Writer)
    data: Mapping[str, Any]
    destination: Destination
    precedence: Precedence
    lane: str | None = None
    due_in: float = 0.0

    @property
    def lane_key(self) -> str:
        return self.lane or self.destination.lane


# Where a job waits: the spool; this host's own file, while the spool in PostgreSQL could not
# take it in time (spool/moving.py takes it there later); or this process's memory, the last
# resort when no disk would.
Home = Literal["spool", "local", "memory"]


def label_for(home: Home, job_id: int) -> str:
    """How logs and answers name a job, never twice: '#12' in the spool (the id `relay-app
    spool` takes), 'local-3@web-1' in a host's own file, 'mem-4211-2' in one process's memory
    (its pid)."""
    if home == "spool":
        return f"#{job_id}"
    if home == "local":
        return f"local-{job_id}@{socket.gethostname()}"
    return f"mem-{os.getpid()}-{job_id}"


@dataclass(frozen=True)
class Job:
    """A write to a chat on its way: a queue row as it was read (what it is about, `data`,
    rendered when it is sent), and the ledger `policy` reads. Its kind is the row's as written:
    one of JOB_KINDS, or one this relay does not know, which renders as unreadable."""

    kind: str
    data: Mapping[str, Any]
    destination: Destination
    received_at: float
    retry_from: float
    id: int
    precedence: Precedence = Precedence.ALERT
    # Its lane: the destination's for alerts (chat and topic), a message's for the writes that
    # concern one (its edits, the replies and reactions under it).
    lane: str = ""
    attempts: int = 0
    unsure_attempts: int = 0
    next_attempt_at: float = 0.0
    last_error: str | None = None
    state: State = "pending"
    dead_at: float | None = None
    # Dead once for its used-up attempts, and sent once more when its chat accepted a message.
    second_chance: bool = False
    home: Home = "spool"
    # The name it arrived with, where that was not here: an alert a host's own file held
    # while the spool could not take it keeps its 'local-3@web-1' in the spool.
    named: str | None = None

    @property
    def label(self) -> str:
        """How logs and the webhook's answer name the job (label_for), all its life."""
        return self.named or label_for(self.home, self.id)


@dataclass(frozen=True)
class Claim:
    """A job's lease on one lane: the oldest due jobs that go in one write (alerts that fit one
    message; a card's edits, of which the last state is sent), each with this attempt already
    counted as one that may reach Telegram (a process that dies mid-attempt leaves that count
    behind), and the chat's turn taken. `retired` are jobs found past their horizon when
    claimed: already dead, to be reported."""

    lane: str
    destination: Destination
    token: str
    jobs: list[Job]
    retired: list[tuple[Job, Dead]] = field(default_factory=list)
    # The send recorded for the chat's turn (the store's time); None when none was taken.
    turn_at: float | None = None
    # When the lease runs out, on the claimant's clock: past it, another relay may claim the
    # lane and send, so this claim's attempt must have ended by then. None: not leased.
    leased_until: float | None = None


@dataclass(frozen=True)
class Later:
    """The lane has due jobs, but its chat's next turn is at `at`."""

    at: float


@dataclass(frozen=True)
class Lane:
    """One lane of the queue as the dispatcher sees it: when its oldest job is due (the clock
    guard applied), and whether its lease is free for this process to take."""

    key: str
    destination: Destination
    due_at: float
    free: bool
    # When the lease another holds ends (None: free, or held by this process's own work).
    held_until: float | None = None


@dataclass(frozen=True)
class Settlement:
    """Everything one attempt leaves behind, recorded by the queue as one change."""

    outcomes: Sequence[tuple[Job, Outcome]]
    telegram: TelegramVerdict = "unknown"
    # What changes in the ledger of every job that is not delivered: the queue applies it in
    # its statements (the one writer of the counts).
    refund: Refund = "none"
    error: str | None = None
    # Telegram's 429: no write to the chat before this (a wall-clock time).
    pause_chat_until: float | None = None
    # When a message reached the chat: its dead letters whose horizon started at or after this
    # get their second chance (None: RELAY_SECOND_CHANCE=0).
    second_chance_since: float | None = None
    # When Telegram's answer to the write came, or its failure did (a wall-clock time): it
    # reached the chat before then, if at all, and the chat's pace runs from then, not from
    # when its turn was taken (None: no request was made).
    sent_at: float | None = None

    @property
    def delivered(self) -> bool:
        return any(isinstance(outcome, Delivered) for _, outcome in self.outcomes)

    def outcome_of(self, job: Job) -> Outcome:
        return next(outcome for each, outcome in self.outcomes if each.id == job.id)


def refunded(job: Job, refund: Refund, error: str | None) -> Job:
    """The job's ledger as the queue will hold it after a settlement with this refund: what
    the retry policy decides on. (The queue makes the same change in its own statements.)"""
    attempts, unsure = REFUNDED[refund]
    return replace(
        job,
        attempts=job.attempts - attempts,
        unsure_attempts=job.unsure_attempts - unsure,
        last_error=error,
    )


@dataclass(frozen=True)
class Settled:
    """What the queue did with a settlement."""

    # Another worker took the lane over (our lease was freed): only deliveries were recorded,
    # the rest is that worker's.
    lease_lost: bool = False
    # Dead letters of the chat that are pending again for their second chance.
    revived: int = 0
    # False when the queue could not take the settlement at all (the spool failed).
    recorded: bool = True
    # Why what follows the delivery could not be recorded with it (Queue.settle's `also`).
    also_failed: Exception | None = None


NOT_RECORDED = Settled(recorded=False)
