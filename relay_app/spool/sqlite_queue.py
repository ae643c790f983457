"""The scheduled queue (queue.py's contract) in the spool file: durable, and shared by every
process on the host through SQLite's locking. An admission, a claim and a settlement are each
one IMMEDIATE transaction, so no other process slips in between their reads and writes."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Container

from ..errors import QueueFull
from ..formatting import Message
from ..outcomes import Dead, RetryAt, Settled, Settlement
from ..routing import Destination
from .database import Database
from .holders import Holder, lease_is_free
from .model import Admission, Claim, Lane, Later, SpooledAlert
from .pacer import next_turn, pause, take_turn
from .queue import (
    MAX_CLAIM,
    Fit,
    Retire,
    alert_from_row,
    claim_due,
    destination_of,
    due_at,
    due_now,
    record_outcomes,
    why_wait,
)


class SqliteQueue:
    """The queue in the spool file."""

    durable = True

    def __init__(self, database: Database, *, max_pending: int = 10000) -> None:
        self.database = database
        self.max_pending = max_pending

    @property
    def name(self) -> str:
        return self.database.path

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
        lane = destination.lane

        def admit(db: sqlite3.Connection) -> Admission:
            if db.execute("SELECT alerts FROM pending_count").fetchone()[0] >= self.max_pending:
                raise QueueFull(f"{self.max_pending} alerts are already pending")
            ahead = db.execute(
                "SELECT 1 FROM alerts WHERE lane = ? AND state = 'pending' LIMIT 1", (lane,)
            ).fetchone()
            # In a storm nearly every webhook joins older alerts: that path stays short.
            waiting, turn = why_wait(
                behind=lambda: (
                    ahead is not None
                    or not self._lane_free(db, destination, now, holder, in_flight)
                ),
                telegram_up=telegram_up,
                attempt_by=attempt_by,
                take_turn=lambda: take_turn(
                    db, destination.chat_key, group=destination.is_group, now=now
                ),
                now=now,
            )
            alert = SpooledAlert(
                message, destination, received_at=now, retry_from=now, next_attempt_at=now
            )
            if waiting is not None:
                alert.id = _insert(db, alert)
                return Admission(alert, None, waiting, turn)
            alert.attempts = alert.unsure_attempts = 1  # counted before it is made
            alert.id = _insert(db, alert)
            _lease(db, lane, holder, token, until=now + lease_for)
            return Admission(alert, Claim(destination, token, [alert]))

        return self.database.write(admit, wait_until=wait_until)

    def _lane_free(
        self,
        db: sqlite3.Connection,
        destination: Destination,
        now: float,
        holder: Holder,
        in_flight: Container[str],
    ) -> bool:
        """Whether the destination's lease is free, making its row when it has none yet."""
        lease = db.execute(
            "SELECT holder, token, until FROM lanes WHERE lane = ?", (destination.lane,)
        ).fetchone()
        if lease is None:
            db.execute(
                "INSERT INTO lanes (lane, chat, thread) VALUES (?, ?, ?)",
                (destination.lane, destination.chat_key, destination.thread),
            )
            return True
        return lease_is_free(*lease, now=now, me=holder, in_flight=in_flight)

    def lanes(self, *, now: float, holder: Holder, in_flight: Container[str]) -> list[Lane]:
        def read(db: sqlite3.Connection) -> list[Lane]:
            rows = db.execute(
                "SELECT l.chat, l.thread, l.holder, l.token, l.until,"
                " h.next_attempt_at, h.scheduled_at FROM lanes l JOIN alerts h ON h.id ="
                " (SELECT id FROM alerts WHERE lane = l.lane AND state = 'pending'"
                " ORDER BY id LIMIT 1) ORDER BY h.id"
            ).fetchall()
            return [
                Lane(
                    self._destination(row["chat"], row["thread"]),
                    due_at(row["next_attempt_at"], row["scheduled_at"], now),
                    lease_is_free(
                        row["holder"],
                        row["token"],
                        row["until"],
                        now=now,
                        me=holder,
                        in_flight=in_flight,
                    ),
                )
                for row in rows
            ]

        return self.database.read(read)

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
        destination = lane.destination

        def claim(db: sqlite3.Connection) -> Claim | Later | None:
            lease = db.execute(
                "SELECT holder, token, until FROM lanes WHERE lane = ?", (destination.lane,)
            ).fetchone()
            if lease is None or not lease_is_free(*lease, now=now, me=holder, in_flight=in_flight):
                return None
            rows = db.execute(
                "SELECT * FROM alerts WHERE lane = ? AND state = 'pending' ORDER BY id LIMIT ?",
                (destination.lane, MAX_CLAIM),
            ).fetchall()
            due = due_now(
                ((row, due_at(row["next_attempt_at"], row["scheduled_at"], now)) for row in rows),
                now,
            )

            def turn_later() -> float | None:
                turn = take_turn(db, destination.chat_key, group=destination.is_group, now=now)
                return turn if turn > now else None

            def take(taken: list[SpooledAlert]) -> None:
                db.executemany(
                    "UPDATE alerts SET attempts = attempts + 1,"
                    " unsure_attempts = unsure_attempts + 1, after_failure = 0 WHERE id = ?",
                    [(alert.id,) for alert in taken],
                )
                _lease(db, destination.lane, holder, token, until=now + lease_for)

            return claim_due(
                destination,
                token,
                map(self._alert, due),
                now=now,
                retire=retire,
                bury=lambda alert, dead: bury(db, alert, dead, now=now),
                send=send,
                turn_later=turn_later,
                fit=fit,
                take=take,
            )

        return self.database.write(claim)

    def settle(
        self, claim: Claim, settlement: Settlement, *, now: float, wait_until: float | None = None
    ) -> Settled:
        lane = claim.destination.lane
        chat = claim.destination.chat_key

        def settle(db: sqlite3.Connection) -> Settled:
            lease = db.execute("SELECT token FROM lanes WHERE lane = ?", (lane,)).fetchone()
            ours = lease is not None and lease["token"] == claim.token
            record_outcomes(
                settlement,
                ours=ours,
                delete=lambda alert: db.execute("DELETE FROM alerts WHERE id = ?", (alert.id,)),
                reschedule=lambda alert, retry: _reschedule(db, alert, retry, now=now),
                bury=lambda alert, dead: bury(db, alert, dead, now=now),
            )
            if not ours:
                return Settled(lease_lost=True)
            db.execute(
                "UPDATE lanes SET holder = NULL, token = NULL, until = NULL WHERE lane = ?",
                (lane,),
            )
            if settlement.pause_chat_until is not None:
                pause(db, chat, settlement.pause_chat_until, now=now)
            revived = 0
            if settlement.delivered:
                # The chat accepts messages: what waits for it because of a failure goes now.
                db.execute(
                    "UPDATE alerts SET next_attempt_at = ?, scheduled_at = ?"
                    " WHERE chat = ? AND state = 'pending' AND after_failure = 1",
                    (now, now, chat),
                )
                if settlement.second_chance_since is not None:
                    revived = _revive(db, chat, settlement.second_chance_since, now=now)
            return Settled(revived=revived)

        return self.database.write(settle, wait_until=wait_until)

    def after_recovery(self, now: float) -> int:
        return self.database.write(
            lambda db: (
                db.execute(
                    "UPDATE alerts SET next_attempt_at = min(next_attempt_at, ?),"
                    " scheduled_at = ? WHERE state = 'pending' AND after_failure = 1",
                    (now, now),
                ).rowcount
            )
        )

    def release(self, holder: Holder) -> int:
        if not self.database.opened:
            return 0  # never opened here: nothing held
        return self.database.write(
            lambda db: (
                db.execute(
                    "UPDATE lanes SET holder = NULL, token = NULL, until = NULL WHERE holder = ?",
                    (str(holder),),
                ).rowcount
            )
        )

    def pending(self) -> int:
        return int(
            self.database.read(
                lambda db: db.execute("SELECT alerts FROM pending_count").fetchone()[0]
            )
        )

    def tidy(self) -> None:
        self.database.checkpoint()

    def subscribe(self, on_news: Callable[[], None]) -> None:
        """Nothing to hear: the processes sharing the file find its work by polling."""

    def unsubscribe(self) -> None:
        """Nothing to stop."""

    def next_turn(self, destination: Destination, *, now: float) -> float:
        """When the chat's next turn is (for tests and tools: nothing is taken)."""
        return self.database.read(
            lambda db: next_turn(db, destination.chat_key, group=destination.is_group, now=now)
        )

    def _alert(self, row: sqlite3.Row) -> SpooledAlert:
        return alert_from_row(row, self._destination(row["chat"], row["thread"]))

    def _destination(self, chat: str, thread: int | None) -> Destination:
        return destination_of(self.database.path, chat, thread)


def _insert(db: sqlite3.Connection, alert: SpooledAlert) -> int:
    message, destination = alert.message, alert.destination
    entry, brief, heading = message.short_entry, message.brief_entry, message.heading
    cursor = db.execute(
        "INSERT INTO alerts (chat, thread, lane, received_at, retry_from, html, text, fallback,"
        " entry_html, entry_text, brief_html, brief_text, heading_html, heading_text, subjects,"
        " attempts, unsure_attempts, next_attempt_at, scheduled_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            destination.chat_key,
            destination.thread,
            destination.lane,
            alert.received_at,
            alert.retry_from,
            message.html,
            message.text,
            message.fallback,
            entry.html if entry else None,
            entry.text if entry else None,
            brief.html if brief else None,
            brief.text if brief else None,
            heading.html if heading else None,
            heading.text if heading else None,
            message.subjects.to_json(),
            alert.attempts,
            alert.unsure_attempts,
            alert.next_attempt_at,
            alert.received_at,
        ),
    )
    assert cursor.lastrowid is not None
    return cursor.lastrowid


def _lease(db: sqlite3.Connection, lane: str, holder: Holder, token: str, *, until: float) -> None:
    db.execute(
        "UPDATE lanes SET holder = ?, token = ?, until = ? WHERE lane = ?",
        (str(holder), token, until, lane),
    )


def _reschedule(db: sqlite3.Connection, alert: SpooledAlert, retry: RetryAt, *, now: float) -> None:
    destination = retry.destination or alert.destination
    if retry.destination is not None:
        db.execute(
            "INSERT OR IGNORE INTO lanes (lane, chat, thread) VALUES (?, ?, ?)",
            (destination.lane, destination.chat_key, destination.thread),
        )
    db.execute(
        "UPDATE alerts SET attempts = ?, unsure_attempts = ?, last_error = ?,"
        " next_attempt_at = ?, scheduled_at = ?, after_failure = ?, chat = ?, thread = ?,"
        " lane = ? WHERE id = ? AND state = 'pending'",
        (
            alert.attempts,
            alert.unsure_attempts,
            alert.last_error,
            retry.at,
            now,
            int(retry.after_failure),
            destination.chat_key,
            destination.thread,
            destination.lane,
            alert.id,
        ),
    )


def bury(db: sqlite3.Connection, alert: SpooledAlert, dead: Dead, *, now: float) -> None:
    db.execute(
        "UPDATE alerts SET state = 'dead', dead_at = ?, dead_kind = ?, attempts = ?,"
        " unsure_attempts = ?, last_error = ? WHERE id = ?",
        (now, dead.kind, alert.attempts, alert.unsure_attempts, alert.last_error, alert.id),
    )
    alert.state, alert.dead_at = "dead", now


def _revive(db: sqlite3.Connection, chat: str, since: float, *, now: float) -> int:
    """The chat's dead letters that died only of their used-up attempts, young enough, pending
    once more: their second chance."""
    return int(
        db.execute(
            "UPDATE alerts SET state = 'pending', second_chance = 1, dead_at = NULL,"
            " dead_kind = NULL, next_attempt_at = ?, scheduled_at = ?, after_failure = 0"
            " WHERE chat = ? AND state = 'dead' AND dead_kind = 'exhausted'"
            " AND second_chance = 0 AND retry_from >= ?",
            (now, now, chat, since),
        ).rowcount
    )


def requeue(db: sqlite3.Connection, now: float, alert_id: int | None = None) -> int:
    """Dead alerts pending again, with a fresh retry horizon: `alert_id`, or all of them."""
    which = {"now": now, "id": alert_id}
    db.execute(
        "INSERT OR IGNORE INTO lanes (lane, chat, thread) SELECT DISTINCT lane, chat, thread"
        " FROM alerts WHERE state = 'dead' AND (:id IS NULL OR id = :id)",
        which,
    )
    return int(
        db.execute(
            "UPDATE alerts SET state = 'pending', dead_at = NULL, dead_kind = NULL, attempts = 0,"
            " unsure_attempts = 0, second_chance = 0, after_failure = 0, retry_from = :now,"
            " next_attempt_at = :now, scheduled_at = :now"
            " WHERE state = 'dead' AND (:id IS NULL OR id = :id)",
            which,
        ).rowcount
    )
