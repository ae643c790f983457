"""The scheduled queue: every accepted alert waits here, with the time it is next due, until
Telegram has it or it is a dead letter. One set of statements for every store (store.py): the
spool file (durable, shared by every process on the host), a PostgreSQL database several relays
share, or a private in-memory database when neither can be used, with the same rules.

Alerts wait per destination (a lane: chat and topic), oldest first. A job claims the oldest due
alerts of one lane, as many as fit one message, with the chat's turn and the lane's lease,
makes one attempt, and settles the outcome. A lane has at most one attempt in flight, and its
oldest alert goes first: alerts reach a chat in the order they arrived, after a retry, a 429 or
a crash alike.

Fenced leases: every claim, the webhook's own included, is leased until its attempt cannot be
running any more (`lease_for`), on the store's clock, under a token of its own; every write of
a claim's outcome presents that token, and a write whose token no longer holds the lane
records only deliveries (an alert Telegram has must never go again) and is reported. A lane's
row is claimed with `FOR UPDATE SKIP LOCKED` on PostgreSQL (a lane another relay is claiming
is skipped, not waited for); SQLite's write transaction holds the whole file.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Container
from dataclasses import replace
from typing import Any

from ..core.clock import guarded
from ..core.errors import QueueFull
from ..core.outcomes import Dead, Delivered, RetryAt
from ..core.pacing import TELEGRAMS, Pace
from ..core.routing import Destination
from ..message.formatting import Message
from . import alert_rows as rows
from .arrivals import note_arrival
from .holders import Holder, lease_is_free
from .model import (
    Admission,
    Claim,
    Lane,
    Later,
    Settled,
    Settlement,
    SpooledAlert,
    WaitReason,
)
from .pacer import give_back_turn, next_turn, pause, sent_when, take_turn
from .store import Store, Tx

# A claim never needs more rows than one digest holds.
MAX_CLAIM = 120
# How many dead letters an in-memory queue keeps: the newest.
MEMORY_DEAD_KEPT = 1000

# How many of these alerts, oldest first, go into one message (at least one).
Fit = Callable[[list[SpooledAlert]], int]
Retire = Callable[[SpooledAlert, float], Dead | None]


class Queue:
    """Alerts waiting for Telegram, scheduled by due time, leased per destination."""

    def __init__(self, store: Store, *, max_pending: int = 10000, pace: Pace = TELEGRAMS) -> None:
        """`pace`: Telegram's limits as every claim keeps them (core/timing.py)."""
        self._store = store
        self.max_pending = max_pending
        self._pace = pace

    @property
    def name(self) -> str:
        """For logs: the spool's path, its URL without password, or 'memory'."""
        return self._store.path

    @property
    def durable(self) -> bool:
        """Whether its alerts outlive this process."""
        return self._store.durable

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

        def admit(tx: Tx) -> Admission:
            found = tx.one(
                "SELECT (SELECT alerts FROM pending_count) AS pending, EXISTS"
                " (SELECT 1 FROM alerts WHERE lane = ? AND state = 'pending') AS ahead",
                (destination.lane,),
            )
            if found["pending"] >= self.max_pending:
                where = "pending" if self.durable else "waiting in memory"
                raise QueueFull(f"{self.max_pending} alerts are already {where}")
            waiting, turn = self._why_wait(
                tx, destination, bool(found["ahead"]), holder, in_flight, telegram_up, attempt_by
            )
            in_memory = not self.durable
            if waiting is not None:
                alert = rows.insert(tx, message, destination, attempts=0, in_memory=in_memory)
                self._arrived(tx, alert)
                if waiting != "behind_older":
                    tx.notify()
                wake_at = tx.at.to_local(turn) if turn is not None else None
                return Admission(alert, None, waiting, wake_at)
            # Its attempt is counted before it is made.
            alert = rows.insert(tx, message, destination, attempts=1, in_memory=in_memory)
            self._arrived(tx, alert)
            claim = self._lease(tx, Claim(destination, token, [alert]), holder, lease_for)
            return Admission(alert, replace(claim, turn_at=tx.at.db))

        return self._store.write(admit, now=now, wait_until=wait_until)

    def _arrived(self, tx: Tx, alert: SpooledAlert) -> None:
        if self.durable:  # when GlitchTip last reached the relay, and what it sent (arrivals.py)
            note_arrival(tx, alert.id, alert.message.text)

    def _why_wait(
        self,
        tx: Tx,
        destination: Destination,
        ahead: bool,
        holder: Holder,
        in_flight: Container[str],
        telegram_up: bool,
        attempt_by: float,
    ) -> tuple[WaitReason | None, float | None]:
        """Why a new alert waits instead of going with its webhook (None: it goes), and its
        chat's turn (the store's time) when the chat's pace is why. In this order: older alerts
        or a held destination, Telegram failing, no time left for an attempt (monotonic
        `attempt_by`), then the chat's turn, taken only when all else allows. In a storm nearly
        every webhook joins older alerts: that path stays short."""
        if ahead or not self._lane_free(tx, destination, holder, in_flight):
            return "behind_older", None
        if not telegram_up:
            return "telegram_down", None
        if time.monotonic() > attempt_by:
            return "spool_busy", None
        now = tx.at.db
        turn = take_turn(
            tx, destination.chat_key, group=destination.is_group, now=now, pace=self._pace
        )
        return ("paced", turn) if turn > now else (None, None)

    def _lane_free(
        self, tx: Tx, destination: Destination, holder: Holder, in_flight: Container[str]
    ) -> bool:
        """Whether the destination's lease is free, making its row when it has none yet. A lane
        another relay is claiming this moment is not."""
        rows.ensure_lane(tx, destination)
        lease = tx.one(
            "SELECT holder, token, until FROM lanes WHERE lane = ? FOR UPDATE SKIP LOCKED",
            (destination.lane,),
        )
        return lease is not None and _free(lease, tx, holder, in_flight)

    def lanes(self, *, now: float, holder: Holder, in_flight: Container[str]) -> list[Lane]:
        """Every destination with alerts pending, the one with the oldest alert first: topics
        of one chat take its turns in the order their alerts arrived."""

        def read(tx: Tx) -> list[Lane]:
            found = tx.all(
                "SELECT l.chat, l.thread, l.holder, l.token, l.until,"
                " h.next_attempt_at, h.scheduled_at FROM lanes l JOIN alerts h ON h.id ="
                " (SELECT id FROM alerts WHERE lane = l.lane AND state = 'pending'"
                " ORDER BY id LIMIT 1) ORDER BY h.id"
            )
            return [
                Lane(
                    rows.destination_of(self.name, row["chat"], row["thread"]),
                    tx.at.to_local(_due_at(row, tx)),
                    _free(row, tx, holder, in_flight),
                )
                for row in found
            ]

        return self._store.read(read, now=now)

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
        destination = lane.destination

        def claim(tx: Tx) -> Claim | Later | None:
            lease = tx.one(
                "SELECT holder, token, until FROM lanes WHERE lane = ? FOR UPDATE SKIP LOCKED",
                (destination.lane,),
            )
            if lease is None or not _free(lease, tx, holder, in_flight):
                return None  # another relay is claiming it, or someone holds it
            retired: list[tuple[SpooledAlert, Dead]] = []
            alive: list[SpooledAlert] = []
            for alert in self._due(tx, destination):
                if (dead := retire(alert, tx.at.local)) is not None:
                    rows.bury(tx, alert, dead)
                    retired.append((alert, dead))
                else:
                    alive.append(alert)
            if not send or not alive:
                return Claim(destination, "", [], retired) if retired else None
            turn = take_turn(
                tx, destination.chat_key, group=destination.is_group, now=tx.at.db, pace=self._pace
            )
            if turn > tx.at.db:
                return (
                    Claim(destination, "", [], retired) if retired else Later(tx.at.to_local(turn))
                )
            taken = alive[: max(1, fit(alive))]
            claim = self._take(tx, destination, taken, holder, token, lease_for, retired)
            return replace(claim, turn_at=tx.at.db)  # the send take_turn recorded

        return self._store.write(claim, now=now)

    def _due(self, tx: Tx, destination: Destination) -> list[SpooledAlert]:
        """The lane's due alerts, oldest first: up to the first one that is not, since a lane's
        alerts go in order."""
        due = []
        for row in tx.all(
            "SELECT * FROM alerts WHERE lane = ? AND state = 'pending' ORDER BY id LIMIT ?",
            (destination.lane, MAX_CLAIM),
        ):
            if _due_at(row, tx) > tx.at.db:
                break
            due.append(self._alert(row, tx))
        return due

    def revise(self, alert: SpooledAlert, message: Message, *, now: float) -> SpooledAlert | None:
        """`alert` with its message built again before its first attempt (its issues' details
        came meanwhile), kept so that every attempt sends the same; None, and nothing changed,
        once an attempt other than those counted in `alert` may have sent the message."""

        def revise(tx: Tx) -> SpooledAlert | None:
            if not rows.revise(tx, alert.id, message, attempts=alert.attempts):
                return None
            return replace(alert, message=message)

        return self._store.write(revise, now=now)

    def settle(
        self, claim: Claim, settlement: Settlement, *, now: float, wait_until: float | None = None
    ) -> Settled:
        """Record an attempt's outcomes and free the lane, in one change. A delivered alert
        is deleted whoever holds its lane now (it must never go again); the rest change only
        while the claim's token still holds the lane."""
        lane = claim.destination.lane
        chat = claim.destination.chat_key

        def settle(tx: Tx) -> Settled:
            lease = tx.one("SELECT token FROM lanes WHERE lane = ? FOR UPDATE", (lane,))
            ours = lease is not None and lease["token"] == claim.token
            for alert, outcome in settlement.outcomes:
                if isinstance(outcome, Delivered):
                    tx.execute("DELETE FROM alerts WHERE id = ?", (alert.id,))
                elif ours and isinstance(outcome, RetryAt):
                    rows.reschedule(
                        tx, alert, outcome, refund=settlement.refund, error=settlement.error
                    )
                elif ours and isinstance(outcome, Dead):
                    rows.bury(tx, alert, outcome, refund=settlement.refund, error=settlement.error)
            if not ours:
                return Settled(lease_lost=True)
            tx.execute(
                "UPDATE lanes SET holder = NULL, token = NULL, until = NULL WHERE lane = ?",
                (lane,),
            )
            if settlement.pause_chat_until is not None:
                pause(tx, chat, tx.at.to_db(settlement.pause_chat_until), now=tx.at.db)
            if claim.turn_at is not None:
                sent_at = settlement.sent_at
                if settlement.pause_chat_until is not None or sent_at is None:
                    # Refused with a pause, or never sent: no message took the turn.
                    give_back_turn(tx, chat, claim.turn_at)
                else:
                    sent_when(tx, chat, claim.turn_at, tx.at.to_db(sent_at))
            revived = 0
            if settlement.delivered:
                # The chat accepts messages: what waits for it because of a failure goes now.
                tx.execute(
                    "UPDATE alerts SET next_attempt_at = ?, scheduled_at = ?"
                    " WHERE chat = ? AND state = 'pending' AND after_failure",
                    (tx.at.db, tx.at.db, chat),
                )
                if settlement.second_chance_since is not None:
                    revived = rows.revive(tx, chat, tx.at.to_db(settlement.second_chance_since))
            # The lane is free, and may hold more: any relay may take it up now.
            tx.notify()
            return Settled(revived=revived)

        return self._store.write(settle, now=now, wait_until=wait_until)

    def after_recovery(self, now: float) -> int:
        """Telegram answers again: every alert waiting because of a failure is due now.
        Returns how many alerts wait in all: those, and those that arrived meanwhile and
        never had an attempt, all of which go now, oldest first."""

        def recover(tx: Tx) -> int:
            tx.execute(
                "UPDATE alerts SET next_attempt_at = CASE WHEN next_attempt_at < ?"
                " THEN next_attempt_at ELSE ? END, scheduled_at = ?"
                " WHERE state = 'pending' AND after_failure",
                (tx.at.db, tx.at.db, tx.at.db),
            )
            waiting = int(tx.one("SELECT alerts FROM pending_count")["alerts"])
            if waiting:
                tx.notify()
            return waiting

        return self._store.write(recover, now=now)

    def release(self, holder: Holder) -> int:
        """Free every lane this process holds (it is stopping); how many."""
        if not self._store.opened:
            return 0  # never opened here: nothing held
        return int(
            self._store.write(
                lambda tx: (
                    tx.execute(
                        "UPDATE lanes SET holder = NULL, token = NULL, until = NULL"
                        " WHERE holder = ?",
                        (str(holder),),
                    ).rowcount
                )
            )
        )

    def pending(self) -> int:
        return int(
            self._store.read(lambda tx: tx.one("SELECT alerts FROM pending_count")["alerts"])
        )

    def last_claim(
        self, fit: Fit, *, holder: Holder, token: str, tried: Container[int]
    ) -> Claim | None:
        """The process is stopping, and these alerts go with it (an in-memory queue): the
        oldest alerts not `tried` yet, of one destination, as many as fit one message, due or
        not, paced or not, claimed for one last attempt. None when every one was tried."""

        def claim(tx: Tx) -> Claim | None:
            found = tx.all("SELECT * FROM alerts WHERE state = 'pending' ORDER BY id")
            waiting = [self._alert(row, tx) for row in found if row["id"] not in tried]
            if not waiting:
                return None
            destination = waiting[0].destination
            lane = [alert for alert in waiting if alert.destination == destination][:MAX_CLAIM]
            taken = self._take(tx, destination, lane[: max(1, fit(lane))], holder, token, 0.0)
            # This process's own queue, and its last attempt: no one else may take it over.
            return replace(taken, leased_until=None)

        return self._store.write(claim)

    def take_all(self) -> list[SpooledAlert]:
        """Empty the queue of what is pending, returning it, oldest first."""

        def take(tx: Tx) -> list[SpooledAlert]:
            found = tx.all("SELECT * FROM alerts WHERE state = 'pending' ORDER BY id")
            tx.execute("DELETE FROM alerts WHERE state = 'pending'")
            return [self._alert(row, tx) for row in found]

        return self._store.write(take)

    def tidy(self) -> None:
        """Upkeep, off the webhooks' path: the dispatcher calls it once a second."""
        self._store.tidy()
        if not self.durable and self._store.opened:
            self._store.write(
                lambda tx: tx.execute(
                    "DELETE FROM alerts WHERE state = 'dead' AND id <= (SELECT id FROM alerts"
                    " WHERE state = 'dead' ORDER BY id DESC LIMIT 1 OFFSET ?)",
                    (MEMORY_DEAD_KEPT,),
                )
            )

    def subscribe(self, on_news: Callable[[], None]) -> None:
        """Call `on_news` when another process queues work or frees a lane, where the store
        can tell (PostgreSQL's NOTIFY); the dispatcher polls anyway."""
        self._store.listen(on_news)

    def unsubscribe(self) -> None:
        self._store.stop_listening()

    def next_turn(self, destination: Destination, *, now: float) -> float:
        """When the chat's next turn is (for tests and tools: nothing is taken)."""
        return self._store.read(
            lambda tx: tx.at.to_local(
                next_turn(
                    tx,
                    destination.chat_key,
                    group=destination.is_group,
                    now=tx.at.db,
                    pace=self._pace,
                )
            ),
            now=now,
        )

    # --- rows ------------------------------------------------------------------------------------

    def _take(
        self,
        tx: Tx,
        destination: Destination,
        taken: list[SpooledAlert],
        holder: Holder,
        token: str,
        lease_for: float,
        retired: list[tuple[SpooledAlert, Dead]] | None = None,
    ) -> Claim:
        """The claim of `taken`: their attempt counted before it is made (a process that dies
        mid-attempt leaves that count behind), and the lane leased under `token`."""
        rows.count_attempt(tx, [alert.id for alert in taken])
        counted = [_counted(alert) for alert in taken]
        return self._lease(tx, Claim(destination, token, counted, retired or []), holder, lease_for)

    def _lease(self, tx: Tx, claim: Claim, holder: Holder, lease_for: float) -> Claim:
        """The claim's lane leased to `holder` under its token for `lease_for` seconds."""
        tx.execute(
            "UPDATE lanes SET holder = ?, token = ?, until = ? WHERE lane = ?",
            (str(holder), claim.token, tx.at.db + lease_for, claim.destination.lane),
        )
        return replace(claim, leased_until=tx.at.local + lease_for)

    def _alert(self, row: Any, tx: Tx) -> SpooledAlert:
        return rows.alert_from_row(row, tx.at, store=self.name, in_memory=not self.durable)


def _free(lease: Any, tx: Tx, holder: Holder, in_flight: Container[str]) -> bool:
    return lease_is_free(
        lease["holder"],
        lease["token"],
        lease["until"],
        now=tx.at.db,
        me=holder,
        in_flight=in_flight,
    )


def _due_at(row: Any, tx: Tx) -> float:
    """When an alert is due (the store's time), guarded: after the clock stepped back, now,
    not an hour late."""
    return guarded(row["next_attempt_at"], row["scheduled_at"], tx.at.db)


def _counted(alert: SpooledAlert) -> SpooledAlert:
    """The alert as its claim left it: one more attempt, as the claim's statement counted."""
    return replace(alert, attempts=alert.attempts + 1, unsure_attempts=alert.unsure_attempts + 1)
