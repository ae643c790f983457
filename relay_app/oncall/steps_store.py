"""Escalation steps as timers in the spool (docs/oncall.md): when an alert whose route says
`escalate` is delivered, each step becomes a row, due `after` its delivery. Once a second a
dispatcher fires the due ones: in one transaction, a step whose alert nobody acted on (On it,
Resolve, Ignore or Mute on any of its issues) queues its reply under the alert, naming the
step's people, and is marked fired; one whose alert was acted on is marked stopped. A step's row
changes state once, so it fires once across every relay on the spool, restarts included.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from ..core.routing import Destination, parse_chat_id
from ..routes.steps import Step
from ..spool import job_rows as rows
from ..spool.model import NewJob, Precedence
from ..spool.store import Row, Store, Tx, int_or_null
from ..words import Said

# Steps fired in one go; the rest in the next second's.
FIRE_AT_ONCE = 50


@dataclass(frozen=True)
class Fired:
    fired: int
    stopped: int


class EscalationStore:
    def __init__(self, store: Store) -> None:
        self._store = store

    def plan(
        self, chat: str, thread: int | None, message_id: int, sent_at: float, steps: Sequence[Step]
    ) -> None:
        """A delivered alert's steps, each due `after` from `sent_at` (the caller's clock)."""
        self._store.write(
            lambda tx: plan_in(tx, chat, thread, message_id, sent_at, steps), now=sent_at
        )

    def stop(self, chat: str, message_id: int, *, now: float) -> int:
        """Someone acted on one of the alert's issues: once each of them is taken, resolved,
        ignored or muted, its steps still waiting will not fire. How many were stopped."""

        def stop(tx: Tx) -> int:
            if any(open_ for _, open_ in _issues(tx, chat, message_id)):
                return 0  # its other issues still call
            stopped = tx.all(
                "UPDATE escalations SET state = 'stopped' WHERE chat = ? AND message_id = ?"
                " AND state = 'waiting' RETURNING step",
                (chat, message_id),
            )
            return len(stopped)

        return self._store.write(stop, now=now)

    def fire_due(self, *, now: float) -> Fired:
        """Fire the steps that are due (their replies queued in the same transaction), or stop
        them where the alert was acted on meanwhile. A read first: nearly every second,
        nothing is due, and no write is made."""
        due = self._store.read(
            lambda tx: tx.one(
                "SELECT step FROM escalations WHERE state = 'waiting' AND due_at <= ? LIMIT 1",
                (tx.at.db,),
            ),
            now=now,
        )
        if due is None:
            return Fired(0, 0)
        return self._store.write(_fire_due, now=now)


def plan_in(
    tx: Tx,
    chat: str,
    thread: int | None,
    message_id: int,
    sent_at: float,
    steps: Sequence[Step],
) -> None:
    """`EscalationStore.plan`, in a unit of work under way (a delivery's)."""
    tx.executemany(
        "INSERT INTO escalations (chat, message_id, step, thread, due_at, after_seconds,"
        " people) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
        [
            (
                chat,
                message_id,
                number,
                thread,
                tx.at.to_db(sent_at + step.after),
                step.after,
                json.dumps(step.people),
            )
            for number, step in enumerate(steps, 1)
        ],
    )


def _fire_due(tx: Tx) -> Fired:
    due = tx.all(
        "SELECT chat, message_id, step, thread, after_seconds, people FROM escalations"
        " WHERE state = 'waiting' AND due_at <= ? ORDER BY due_at LIMIT ?",
        (tx.at.db, FIRE_AT_ONCE),
    )
    fired = stopped = 0
    for row in due:
        chat, message_id = str(row["chat"]), int(row["message_id"])
        issues = _issues(tx, chat, message_id)
        left = [label for label, open_ in issues if open_]
        acted = bool(issues) and not left
        changed = tx.one(
            "UPDATE escalations SET state = ? WHERE chat = ? AND message_id = ? AND step = ?"
            " AND state = 'waiting' RETURNING step",
            ("stopped" if acted else "fired", chat, message_id, row["step"]),
        )
        if changed is None:
            continue  # another relay took it meanwhile
        if acted:
            stopped += 1
            continue
        _reply(tx, row, chat, message_id, left if len(issues) > 1 else [])
        fired += 1
    if fired:
        tx.notify()
    return Fired(fired, stopped)


def _issues(tx: Tx, chat: str, message_id: int) -> list[tuple[str, bool]]:
    """The message's issues in its order, each with whether it is still open to a call:
    nobody took, resolved, ignored or muted it. None kept (an alert about no issue): its steps
    call until they are done."""
    found = tx.all(
        "SELECT label, taken_at, status, silence_id FROM issue_buttons"
        " WHERE chat = ? AND message_id = ? ORDER BY position",
        (chat, message_id),
    )
    return [
        (
            str(row["label"]),
            row["taken_at"] is None
            and row["status"] not in ("resolved", "ignored")
            and row["silence_id"] is None,
        )
        for row in found
    ]


def _reply(tx: Tx, row: Row, chat: str, message_id: int, left: Sequence[str]) -> None:
    """The step's reply under the alert, as a job of the one path to the chat: naming the
    issues it calls for (`left`: those of a message about several that nobody acted on)."""
    people = " ".join(str(person) for person in json.loads(str(row["people"])))
    minutes = str(max(1, round(float(row["after_seconds"]) / 60)))
    values = {"minutes": minutes, "people": people}
    said = Said("escalation_call", values)
    if left:
        said = Said("escalation_call_issues", {**values, "labels": ", ".join(left)})
    thread = int_or_null(row["thread"])
    where = Destination(parse_chat_id(chat) or chat, thread)
    rows.insert(
        tx,
        NewJob(
            "reply",
            {"say": said.as_json(), "message_id": message_id},
            where,
            Precedence.CALL,
            lane=where.message_lane(message_id),
        ),
        home="spool",
    )
