"""The scheduled queue: every accepted alert waits here, with the time it is next due, until
Telegram has it or it is a dead letter. `Queue` is what the intake, the jobs and the dispatcher
use; `sqlite_queue.SqliteQueue` keeps it in the spool file (durable, shared by every process on
the host), `postgres.PgQueue` in a database several relays share, `memory.MemoryQueue` in one
process's memory. This module holds the contract and what the backends share.

Alerts wait per destination (a lane: chat and topic), oldest first. A job claims the oldest due
alerts of one lane, as many as fit one message, with the chat's turn and the lane's lease,
makes one attempt, and settles the outcome. A lane has at most one attempt in flight, and its
oldest alert goes first: alerts reach a chat in the order they arrived, after a retry, a 429 or
a crash alike.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Container, Iterable
from typing import Any, Protocol, TypeVar

from ..clock import guarded
from ..errors import SpoolError
from ..formatting import Entry, Message
from ..outcomes import Dead, Delivered, RetryAt, Settled, Settlement
from ..routing import Destination, parse_chat_id
from ..subjects import Subjects
from .holders import Holder
from .model import Admission, Claim, Lane, Later, SpooledAlert, WaitReason

T = TypeVar("T")

# A claim never needs more rows than one digest holds.
MAX_CLAIM = 100

# How many of these alerts, oldest first, go into one message (at least one).
Fit = Callable[[list[SpooledAlert]], int]
Retire = Callable[[SpooledAlert, float], Dead | None]


class Queue(Protocol):
    """Alerts waiting for Telegram, scheduled by due time, leased per destination."""

    @property
    def name(self) -> str:
        """For logs: the spool's path, or 'memory'."""

    @property
    def durable(self) -> bool:
        """Whether its alerts outlive this process."""

    def admit(
        self,
        message: Message,
        destination: Destination,
        *,
        now: float,
        holder: Holder,
        token: str,
        in_flight: Container[str],
        telegram_up: bool,
        attempt_by: float,
        lease_for: float,
        wait_until: float | None = None,
    ) -> Admission:
        """Write the alert ahead of its first attempt, and claim it for the webhook when it
        may go now: nothing older waits for its destination, Telegram is up, its chat's turn
        has come, and (monotonic) it is not yet `attempt_by`. `token` is the claim's, already
        in `in_flight`, so no pass of this process's dispatcher takes it over; the lease lasts
        `lease_for`, past the end of any attempt the webhook can make, so that no relay on
        another host takes the lane over while it runs. Raises QueueFull."""

    def lanes(self, *, now: float, holder: Holder, in_flight: Container[str]) -> list[Lane]:
        """Every destination with alerts pending, the one with the oldest alert first: topics
        of one chat take its turns in the order their alerts arrived."""

    def claim(
        self,
        lane: Lane,
        *,
        now: float,
        holder: Holder,
        token: str,
        in_flight: Container[str],
        fit: Fit,
        retire: Retire,
        send: bool,
        lease_for: float,
    ) -> Claim | Later | None:
        """Claim the lane's oldest due alerts that fit one message, taking the chat's turn:
        a Claim, Later when the turn has not come, None when there is nothing to claim.
        Alerts `retire` rules out die on the way (Claim.retired); with `send` False only that
        happens."""

    def settle(
        self, claim: Claim, settlement: Settlement, *, now: float, wait_until: float | None = None
    ) -> Settled:
        """Record an attempt's outcomes and free the lane, in one change."""

    def after_recovery(self, now: float) -> int:
        """Telegram answers again: every alert waiting because of a failure is due now."""

    def release(self, holder: Holder) -> int:
        """Free every lane this process holds (it is stopping); how many."""

    def pending(self) -> int: ...

    def tidy(self) -> None:
        """Upkeep, off the webhooks' path: the dispatcher calls it once a second."""

    def subscribe(self, on_news: Callable[[], None]) -> None:
        """Call `on_news` when another process queues work or frees a lane, where the queue
        can tell (PostgreSQL's NOTIFY); the dispatcher polls anyway."""

    def unsubscribe(self) -> None: ...


def why_wait(
    *,
    behind: Callable[[], bool],
    telegram_up: bool,
    attempt_by: float,
    take_turn: Callable[[], float],
    now: float,
) -> tuple[WaitReason | None, float | None]:
    """Why a new alert waits instead of going with its webhook (None: it goes), and its chat's
    turn when the chat's pace is why. In this order, as every backend decides: older alerts or
    a held destination (`behind`), Telegram failing, no time left for an attempt (monotonic
    `attempt_by`), then the chat's turn, which `take_turn` takes only when all else allows."""
    if behind():
        return "behind_older", None
    if not telegram_up:
        return "telegram_down", None
    if time.monotonic() > attempt_by:
        return "spool_busy", None
    turn = take_turn()
    return ("paced", turn) if turn > now else (None, None)


def due_now(candidates: Iterable[tuple[T, float]], now: float) -> list[T]:
    """Of a destination's waiting alerts (each with its due time), oldest first, those due:
    up to the first one that is not, since a lane's alerts go in order."""
    due = []
    for candidate, at in candidates:
        if at > now:
            break
        due.append(candidate)
    return due


def claim_due(
    destination: Destination,
    token: str,
    due: Iterable[SpooledAlert],
    *,
    now: float,
    retire: Retire,
    bury: Callable[[SpooledAlert, Dead], None],
    send: bool,
    turn_later: Callable[[], float | None],
    fit: Fit,
    take: Callable[[list[SpooledAlert]], None],
) -> Claim | Later | None:
    """A lane's claim, as every backend makes it from its due alerts (oldest first): those
    `retire` rules out die on the way (`bury`); the rest go when `send` allows and the chat's
    turn has come (`turn_later` takes it, or says when it comes), as many as fit one message,
    counted as attempts here and recorded by `take` (the backend's attempts and lease)."""
    retired: list[tuple[SpooledAlert, Dead]] = []
    alive: list[SpooledAlert] = []
    for alert in due:
        if (dead := retire(alert, now)) is not None:
            bury(alert, dead)
            retired.append((alert, dead))
        else:
            alive.append(alert)
    if not send or not alive:
        return Claim(destination, "", [], retired) if retired else None
    later = turn_later()
    if later is not None:
        return Claim(destination, "", [], retired) if retired else Later(later)
    taken = alive[: max(1, fit(alive))]
    take(taken)
    for alert in taken:
        alert.attempts += 1
        alert.unsure_attempts += 1
    return Claim(destination, token, taken, retired)


def record_outcomes(
    settlement: Settlement,
    *,
    ours: bool,
    delete: Callable[[SpooledAlert], object],
    reschedule: Callable[[SpooledAlert, RetryAt], None],
    bury: Callable[[SpooledAlert, Dead], None],
) -> None:
    """An attempt's outcomes, as the stored queues record them: a delivered alert is deleted
    whoever holds its lane now (it must never go again); the others change only while the
    claim still holds the lane (`ours`)."""
    for alert, outcome in settlement.outcomes:
        if isinstance(outcome, Delivered):
            delete(alert)
        elif ours and isinstance(outcome, RetryAt):
            reschedule(alert, outcome)
        elif ours and isinstance(outcome, Dead):
            bury(alert, outcome)


def destination_of(path: str, chat: str, thread: int | None) -> Destination:
    parsed = parse_chat_id(chat)
    if parsed is None:  # not written by this code: a person's edit, say
        raise SpoolError(f"an alert in {path} has an unreadable chat id {chat!r}")
    return Destination(parsed, thread)


class Row(Protocol):
    """A row by column name: sqlite3.Row, or psycopg's dict rows."""

    def __getitem__(self, column: str, /) -> Any: ...


def alert_from_row(row: Row, destination: Destination) -> SpooledAlert:
    entry = brief = heading = None
    if row["entry_html"] is not None:
        entry = Entry(row["entry_html"], row["entry_text"])
    if row["brief_html"] is not None:
        brief = Entry(row["brief_html"], row["brief_text"])
    if row["heading_html"] is not None:
        heading = Entry(row["heading_html"], row["heading_text"])
    subjects = Subjects.from_json(row["subjects"])
    return SpooledAlert(
        Message(row["html"], row["text"], row["fallback"], entry, brief, heading, subjects),
        destination,
        received_at=row["received_at"],
        retry_from=row["retry_from"],
        id=row["id"],
        attempts=row["attempts"],
        unsure_attempts=row["unsure_attempts"],
        next_attempt_at=row["next_attempt_at"],
        last_error=row["last_error"],
        state=row["state"],
        dead_at=row["dead_at"],
        second_chance=bool(row["second_chance"]),
    )


def due_at(next_attempt_at: float, scheduled_at: float, now: float) -> float:
    """When an alert is due, guarded: after the clock stepped back, now, not an hour late."""
    return guarded(next_attempt_at, scheduled_at, now)
