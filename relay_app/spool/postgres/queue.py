"""The scheduled queue (spool/queue.py's contract) in PostgreSQL, shared by every relay pointed at
the database.

As in the SQLite spool, alerts wait per lane (chat and topic), oldest first, and a job claims a
lane's oldest due alerts with the chat's turn and the lane's lease. Here the lane's row is
claimed with `FOR UPDATE SKIP LOCKED` (a lane another relay is claiming is skipped, not waited
for), the chat's turn under the chat's row lock, and every lease, turn and due time is on the
database's clock: the queue hands its callers their own clock's times (`Now`), so replicas
whose clocks disagree never both hold a lane. Queuing work notifies the other relays.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Mapping
from dataclasses import replace
from typing import Any

from ...errors import QueueFull
from ...formatting import Message
from ...outcomes import Dead, RetryAt, Settled, Settlement
from ...routing import Destination
from ..holders import Holder, lease_is_free
from ..model import Admission, Claim, Lane, Later, SpooledAlert
from ..queue import (
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
from .database import Cursor, Now, PgDatabase
from .pacer import next_turn, pause, take_turn


class PgQueue:
    """The queue in PostgreSQL."""

    durable = True

    def __init__(self, database: PgDatabase, *, max_pending: int = 10000) -> None:
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

        def admit(cursor: Cursor, at: Now) -> Admission:
            found = cursor.execute(
                "SELECT (SELECT count(*) FROM alerts WHERE state = 'pending') AS pending,"
                " EXISTS (SELECT 1 FROM alerts WHERE lane = %s AND state = 'pending') AS ahead",
                (lane,),
            ).fetchone()
            assert found is not None
            if found["pending"] >= self.max_pending:
                raise QueueFull(f"{self.max_pending} alerts are already pending")
            ahead = found["ahead"] or None
            waiting, turn = why_wait(
                behind=lambda: (
                    ahead is not None or not _lane_free(cursor, destination, at, holder, in_flight)
                ),
                telegram_up=telegram_up,
                attempt_by=attempt_by,
                take_turn=lambda: take_turn(
                    cursor, destination.chat_key, group=destination.is_group, now=at.db
                ),
                now=at.db,
            )
            alert = SpooledAlert(
                message, destination, received_at=at.db, retry_from=at.db, next_attempt_at=at.db
            )
            if waiting is not None:
                alert.id = _insert(cursor, alert, at)
                if waiting != "behind_older":
                    self.database.notify(cursor)
                wake_at = at.to_local(turn) if turn is not None else None
                return Admission(on_caller_clock(alert, at), None, waiting, wake_at)
            alert.attempts = alert.unsure_attempts = 1  # counted before it is made
            alert.id = _insert(cursor, alert, at)
            _lease(cursor, lane, holder, token, until=at.db + lease_for)
            local = on_caller_clock(alert, at)
            return Admission(local, Claim(destination, token, [local]))

        return self.database.write(admit, now=now, wait_until=wait_until)

    def lanes(self, *, now: float, holder: Holder, in_flight: Container[str]) -> list[Lane]:
        def read(cursor: Cursor, at: Now) -> list[Lane]:
            rows = cursor.execute(
                "SELECT l.chat, l.thread, l.holder, l.token, l.until,"
                " h.next_attempt_at, h.scheduled_at FROM lanes l JOIN LATERAL"
                " (SELECT id, next_attempt_at, scheduled_at FROM alerts"
                "  WHERE lane = l.lane AND state = 'pending' ORDER BY id LIMIT 1) h ON TRUE"
                " ORDER BY h.id"
            ).fetchall()
            return [
                Lane(
                    self._destination(row["chat"], row["thread"]),
                    at.to_local(due_at(row["next_attempt_at"], row["scheduled_at"], at.db)),
                    lease_is_free(
                        row["holder"],
                        row["token"],
                        row["until"],
                        now=at.db,
                        me=holder,
                        in_flight=in_flight,
                    ),
                )
                for row in rows
            ]

        return self.database.read(read, now=now)

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

        def claim(cursor: Cursor, at: Now) -> Claim | Later | None:
            lease = cursor.execute(
                "SELECT holder, token, until FROM lanes WHERE lane = %s FOR UPDATE SKIP LOCKED",
                (destination.lane,),
            ).fetchone()
            if lease is None or not lease_is_free(
                lease["holder"],
                lease["token"],
                lease["until"],
                now=at.db,
                me=holder,
                in_flight=in_flight,
            ):
                return None  # another relay is claiming it, or holds it
            rows = cursor.execute(
                "SELECT * FROM alerts WHERE lane = %s AND state = 'pending' ORDER BY id LIMIT %s",
                (destination.lane, MAX_CLAIM),
            ).fetchall()
            due = due_now(
                ((row, due_at(row["next_attempt_at"], row["scheduled_at"], at.db)) for row in rows),
                at.db,
            )

            def turn_later() -> float | None:
                turn = take_turn(
                    cursor, destination.chat_key, group=destination.is_group, now=at.db
                )
                return at.to_local(turn) if turn > at.db else None

            def take(taken: list[SpooledAlert]) -> None:
                cursor.execute(
                    "UPDATE alerts SET attempts = attempts + 1,"
                    " unsure_attempts = unsure_attempts + 1, after_failure = FALSE"
                    " WHERE id = ANY(%s)",
                    ([alert.id for alert in taken],),
                )
                _lease(cursor, destination.lane, holder, token, until=at.db + lease_for)

            return claim_due(
                destination,
                token,
                (self._alert(row, at) for row in due),
                now=at.local,
                retire=retire,
                bury=lambda alert, dead: bury(cursor, alert, dead, at),
                send=send,
                turn_later=turn_later,
                fit=fit,
                take=take,
            )

        return self.database.write(claim, now=now)

    def settle(
        self, claim: Claim, settlement: Settlement, *, now: float, wait_until: float | None = None
    ) -> Settled:
        lane = claim.destination.lane
        chat = claim.destination.chat_key

        def settle(cursor: Cursor, at: Now) -> Settled:
            lease = cursor.execute(
                "SELECT token FROM lanes WHERE lane = %s FOR UPDATE", (lane,)
            ).fetchone()
            ours = lease is not None and lease["token"] == claim.token
            record_outcomes(
                settlement,
                ours=ours,
                delete=lambda alert: cursor.execute(
                    "DELETE FROM alerts WHERE id = %s", (alert.id,)
                ),
                reschedule=lambda alert, retry: _reschedule(cursor, alert, retry, at),
                bury=lambda alert, dead: bury(cursor, alert, dead, at),
            )
            if not ours:
                return Settled(lease_lost=True)
            cursor.execute(
                "UPDATE lanes SET holder = NULL, token = NULL, until = NULL WHERE lane = %s",
                (lane,),
            )
            if settlement.pause_chat_until is not None:
                pause(cursor, chat, at.to_db(settlement.pause_chat_until), now=at.db)
            revived = 0
            if settlement.delivered:
                # The chat accepts messages: what waits for it because of a failure goes now.
                cursor.execute(
                    "UPDATE alerts SET next_attempt_at = %s, scheduled_at = %s"
                    " WHERE chat = %s AND state = 'pending' AND after_failure",
                    (at.db, at.db, chat),
                )
                if settlement.second_chance_since is not None:
                    revived = _revive(cursor, chat, at.to_db(settlement.second_chance_since), at)
            # The lane is free, and may hold more: any relay may take it up now.
            self.database.notify(cursor)
            return Settled(revived=revived)

        return self.database.write(settle, now=now, wait_until=wait_until)

    def after_recovery(self, now: float) -> int:
        def recover(cursor: Cursor, at: Now) -> int:
            count = cursor.execute(
                "UPDATE alerts SET next_attempt_at = least(next_attempt_at, %s),"
                " scheduled_at = %s WHERE state = 'pending' AND after_failure",
                (at.db, at.db),
            ).rowcount
            if count:
                self.database.notify(cursor)
            return count

        return self.database.write(recover, now=now)

    def release(self, holder: Holder) -> int:
        if not self.database.opened:
            return 0  # never opened here: nothing held
        return self.database.write(
            lambda cursor, at: (
                cursor.execute(
                    "UPDATE lanes SET holder = NULL, token = NULL, until = NULL WHERE holder = %s",
                    (str(holder),),
                ).rowcount
            )
        )

    def pending(self) -> int:
        def count(cursor: Cursor, at: Now) -> int:
            row = cursor.execute("SELECT count(*) AS n FROM alerts WHERE state = 'pending'")
            found = row.fetchone()
            return int(found["n"]) if found is not None else 0

        return self.database.read(count)

    def tidy(self) -> None:
        """Nothing to tidy: PostgreSQL vacuums on its own."""

    def subscribe(self, on_news: Callable[[], None]) -> None:
        """Hear when any relay queues work or frees a lane (LISTEN/NOTIFY)."""
        self.database.listen(on_news)

    def unsubscribe(self) -> None:
        self.database.stop_listening()

    def next_turn(self, destination: Destination, *, now: float) -> float:
        """When the chat's next turn is (for tests and tools: nothing is taken)."""
        return self.database.read(
            lambda cursor, at: at.to_local(
                next_turn(cursor, destination.chat_key, group=destination.is_group, now=at.db)
            ),
            now=now,
        )

    def _alert(self, row: Mapping[str, Any], at: Now) -> SpooledAlert:
        alert = alert_from_row(row, self._destination(row["chat"], row["thread"]))
        return on_caller_clock(alert, at)

    def _destination(self, chat: str, thread: int | None) -> Destination:
        return destination_of(self.database.path, chat, thread)


def on_caller_clock(alert: SpooledAlert, at: Now) -> SpooledAlert:
    """The alert with its times on the caller's clock (the same id and ledger)."""
    return replace(
        alert,
        received_at=at.to_local(alert.received_at),
        retry_from=at.to_local(alert.retry_from),
        next_attempt_at=at.to_local(alert.next_attempt_at),
        dead_at=at.to_local(alert.dead_at) if alert.dead_at is not None else None,
    )


def _lane_free(
    cursor: Cursor, destination: Destination, at: Now, holder: Holder, in_flight: Container[str]
) -> bool:
    """Whether the destination's lease is free, making its row when it has none yet. A lane
    another relay is claiming this moment is not."""
    cursor.execute(
        "INSERT INTO lanes (lane, chat, thread) VALUES (%s, %s, %s) ON CONFLICT DO NOTHING",
        (destination.lane, destination.chat_key, destination.thread),
    )
    lease = cursor.execute(
        "SELECT holder, token, until FROM lanes WHERE lane = %s FOR UPDATE SKIP LOCKED",
        (destination.lane,),
    ).fetchone()
    if lease is None:
        return False
    return lease_is_free(
        lease["holder"], lease["token"], lease["until"], now=at.db, me=holder, in_flight=in_flight
    )


def _insert(cursor: Cursor, alert: SpooledAlert, at: Now) -> int:
    message, destination = alert.message, alert.destination
    entry, brief, heading = message.short_entry, message.brief_entry, message.heading
    row = cursor.execute(
        "INSERT INTO alerts (chat, thread, lane, received_at, retry_from, html, text, fallback,"
        " entry_html, entry_text, brief_html, brief_text, heading_html, heading_text, subjects,"
        " attempts, unsure_attempts, next_attempt_at, scheduled_at)"
        " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"
        " RETURNING id",
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
            at.db,
        ),
    ).fetchone()
    assert row is not None
    return int(row["id"])


def _lease(cursor: Cursor, lane: str, holder: Holder, token: str, *, until: float) -> None:
    cursor.execute(
        "UPDATE lanes SET holder = %s, token = %s, until = %s WHERE lane = %s",
        (str(holder), token, until, lane),
    )


def _reschedule(cursor: Cursor, alert: SpooledAlert, retry: RetryAt, at: Now) -> None:
    destination = retry.destination or alert.destination
    if retry.destination is not None:
        cursor.execute(
            "INSERT INTO lanes (lane, chat, thread) VALUES (%s, %s, %s) ON CONFLICT DO NOTHING",
            (destination.lane, destination.chat_key, destination.thread),
        )
    cursor.execute(
        "UPDATE alerts SET attempts = %s, unsure_attempts = %s, last_error = %s,"
        " next_attempt_at = %s, scheduled_at = %s, after_failure = %s, chat = %s, thread = %s,"
        " lane = %s WHERE id = %s AND state = 'pending'",
        (
            alert.attempts,
            alert.unsure_attempts,
            alert.last_error,
            at.to_db(retry.at),
            at.db,
            retry.after_failure,
            destination.chat_key,
            destination.thread,
            destination.lane,
            alert.id,
        ),
    )


def bury(cursor: Cursor, alert: SpooledAlert, dead: Dead, at: Now) -> None:
    cursor.execute(
        "UPDATE alerts SET state = 'dead', dead_at = %s, dead_kind = %s, attempts = %s,"
        " unsure_attempts = %s, last_error = %s WHERE id = %s",
        (at.db, dead.kind, alert.attempts, alert.unsure_attempts, alert.last_error, alert.id),
    )
    alert.state, alert.dead_at = "dead", at.local


def _revive(cursor: Cursor, chat: str, since: float, at: Now) -> int:
    """The chat's dead letters that died only of their used-up attempts, young enough, pending
    once more: their second chance."""
    return int(
        cursor.execute(
            "UPDATE alerts SET state = 'pending', second_chance = TRUE, dead_at = NULL,"
            " dead_kind = NULL, next_attempt_at = %s, scheduled_at = %s, after_failure = FALSE"
            " WHERE chat = %s AND state = 'dead' AND dead_kind = 'exhausted'"
            " AND NOT second_chance AND retry_from >= %s",
            (at.db, at.db, chat, since),
        ).rowcount
    )


def requeue(cursor: Cursor, now: float, alert_id: int | None = None) -> int:
    """Dead alerts pending again, with a fresh retry horizon: `alert_id`, or all of them.
    `now` is the database's time."""
    which = {"now": now, "id": alert_id}
    cursor.execute(
        "INSERT INTO lanes (lane, chat, thread) SELECT DISTINCT lane, chat, thread FROM alerts"
        " WHERE state = 'dead' AND (%(id)s::bigint IS NULL OR id = %(id)s) ON CONFLICT DO NOTHING",
        which,
    )
    return int(
        cursor.execute(
            "UPDATE alerts SET state = 'pending', dead_at = NULL, dead_kind = NULL, attempts = 0,"
            " unsure_attempts = 0, second_chance = FALSE, after_failure = FALSE,"
            " retry_from = %(now)s, next_attempt_at = %(now)s, scheduled_at = %(now)s"
            " WHERE state = 'dead' AND (%(id)s::bigint IS NULL OR id = %(id)s)",
            which,
        ).rowcount
    )
