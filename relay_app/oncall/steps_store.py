"""Escalation steps as timers in the spool (docs/oncall.md): when an alert whose route says
`escalate` is delivered, each step becomes a row, due `after` its delivery. Once a second a
dispatcher fires the due ones: in one transaction, a step whose alert nobody acted on (On it,
Resolve, Ignore or Mute on any of its issues) queues its reply under the alert, naming the
step's people, and is marked fired; one whose alert was acted on is marked stopped. A step's row
changes state once, so it fires once across every relay on the spool, restarts included.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..cards import records
from ..cards.marks import Marks, Shown
from ..core.routing import Destination, parse_chat_id
from ..routes.steps import AT_DELIVERY, Step
from ..spool import job_rows as rows
from ..spool.model import NewJob, Precedence
from ..spool.store import Row, Store, Tx, int_or_null
from ..words import Said
from .people import called_in, reachable_in

# Steps fired in one go; the rest in the next second's.
FIRE_AT_ONCE = 50

# A mention made the person it names now (`oncall:NAME`, the roster's; anyone else, as is).
Who = Callable[[str], str]


@dataclass(frozen=True)
class CallsDue:
    steps: bool
    recalls: bool


@dataclass(frozen=True)
class Fired:
    fired: int
    stopped: int


class EscalationStore:
    def __init__(self, store: Store, marks: Marks | None = None) -> None:
        """`marks`: what the capabilities mark on an issue's cards; one that quiets it (a
        mute) counts as an act, as a take does."""
        self._store = store
        self._marks = marks if marks is not None else Marks()

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
            if any(open_ for _, open_ in _issues(tx, chat, message_id, self._marks)):
                return 0  # its other issues still call
            stopped = tx.all(
                "UPDATE escalations SET state = 'stopped' WHERE chat = ? AND message_id = ?"
                " AND state = 'waiting' RETURNING step",
                (chat, message_id),
            )
            return len(stopped)

        return self._store.write(stop, now=now)

    def resume(self, chat: str, message_ids: Sequence[int], *, now: float) -> int:
        """An issue of these messages was let go: their calls go on (`resume_in`)."""
        return self._store.write(lambda tx: resume_in(tx, chat, message_ids), now=now)

    def calls_due(self, *, now: float) -> CallsDue:
        """Whether any step, or any taker's recall (oncall/recalls.py), is due: one read,
        which nearly every second finds nothing, so that no write is made."""
        row = self._store.read(
            lambda tx: tx.one(
                "SELECT EXISTS (SELECT 1 FROM escalations WHERE state = 'waiting'"
                " AND due_at <= ?) AS steps, EXISTS (SELECT 1 FROM recalls"
                " WHERE state = 'waiting' AND due_at <= ?) AS recalls",
                (tx.at.db, tx.at.db),
            ),
            now=now,
        )
        return CallsDue(bool(row["steps"]), bool(row["recalls"]))

    def fire_due(self, *, now: float, who: Who = lambda mention: mention) -> Fired:
        """Fire the steps that are due (their replies queued in the same transaction), or stop
        them where the alert was acted on meanwhile; `who` makes a mention the person it names
        now (`oncall:NAME`: the roster's), for the private calls: it reads nothing, since it
        is asked inside the transaction."""
        return self._store.write(lambda tx: _fire_due(tx, who, self._marks), now=now)


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
        " people, direct) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
        [
            (
                chat,
                message_id,
                number,
                thread,
                tx.at.to_db(sent_at + step.after),
                step.after,
                json.dumps(step.people),
                step.direct,
            )
            for number, step in enumerate(steps, 1)
        ],
    )


def _fire_due(tx: Tx, who: Who, marks: Marks) -> Fired:
    due = tx.all(
        "SELECT chat, message_id, step, thread, after_seconds, people, direct FROM escalations"
        " WHERE state = 'waiting' AND due_at <= ? ORDER BY due_at LIMIT ?",
        (tx.at.db, FIRE_AT_ONCE),
    )
    fired = stopped = 0
    for row in due:
        chat, message_id = str(row["chat"]), int(row["message_id"])
        issues = _issues(tx, chat, message_id, marks)
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
        _call(tx, row, Calling(chat, message_id, left if len(issues) > 1 else [], who))
        fired += 1
    if fired:
        tx.notify()
    return Fired(fired, stopped)


def _issues(tx: Tx, chat: str, message_id: int, marks: Marks) -> list[tuple[str, bool]]:
    """The message's issues in its order, each with whether it is still open to a call:
    nobody resolved, ignored or quieted it (a mark that quiets: someone is on it, or muted it
    in the chat). None kept (an alert
    about no issue): its steps call until they are done."""
    found = records.issues_under(tx, chat, message_id)
    rows = [Shown(str(row["key"]), str(row["issue_id"])) for row in found]
    quiet = marks.quiet_rows(tx, chat, rows)
    return [
        (
            str(row["label"]),
            row["status"] not in ("resolved", "ignored") and str(row["key"]) not in quiet,
        )
        for row in found
    ]


@dataclass(frozen=True)
class Calling:
    """A step that fires: under which message, the issues it calls for (`left`: those of a
    message about several that nobody acted on), and who a mention names now."""

    chat: str
    message_id: int
    left: Sequence[str]
    who: Who


def _call(tx: Tx, row: Row, calling: Calling) -> None:
    """The step's reply under the alert, as a job of the one path to the chat, and with
    `direct` a private call to each of its people who started a chat with the bot (the others
    named in the reply with how to start one). A step at the alert's delivery (a route's
    `direct = true`) calls only privately: the alert's own mention line called them there."""
    people = [str(person) for person in json.loads(str(row["people"]))]
    minutes = str(max(1, round(float(row["after_seconds"]) / 60)))
    values = {"minutes": minutes, "people": " ".join(people)}
    said = Said("escalation_call", values)
    if calling.left:
        said = Said("escalation_call_issues", {**values, "labels": ", ".join(calling.left)})
    thread = int_or_null(row["thread"])
    where = Destination(parse_chat_id(calling.chat) or calling.chat, thread)
    at_delivery = float(row["after_seconds"]) == AT_DELIVERY
    hint = None
    if row["direct"]:
        private = Said("direct_alert") if at_delivery else said
        hint = _privately(tx, people, where, calling, private)
    if not at_delivery:
        said = Said("with_hint", {"call": said, "hint": hint}) if hint else said
    elif hint is not None:
        said = hint  # nobody could be called privately: the chat is told how
    else:
        return
    reply_in(tx, where, calling.message_id, said)


def _privately(
    tx: Tx, people: Sequence[str], where: Destination, calling: Calling, said: Said
) -> Said | None:
    """The private calls of a step to those of its people (as they are now: `oncall:NAME`'s
    person) who started a chat with the bot; the hint for the others, if any."""
    now_called = {person: calling.who(person) for person in people}
    reached = reachable_in(tx, list(dict.fromkeys(now_called.values())))
    for user_id in dict.fromkeys(reached.values()):
        private_call_in(tx, user_id, where, calling.message_id, said)
    unreached = [person for person in people if now_called[person] not in reached]
    return Said("direct_hint", {"people": " ".join(unreached)}) if unreached else None


def reply_in(tx: Tx, where: Destination, message_id: int, said: Said) -> None:
    """A call under a message of the chat, as a job of the one path to the chat."""
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


def private_call_in(tx: Tx, user_id: int, about: Destination, message_id: int, said: Said) -> None:
    """A private message to someone who started a chat with the bot: the call, a link to the
    alert, and its card with its buttons as they stand when it is sent (oncall/direct.py)."""
    chat = str(about.chat)
    called_in(tx, user_id, chat, message_id)
    data = {
        "direct": {
            "chat": chat,
            "thread": about.thread,
            "message_id": message_id,
            "say": said.as_json(),
        }
    }
    where = Destination(user_id)
    rows.insert(tx, NewJob("alert", data, where, Precedence.CALL, lane=where.lane), home="spool")


def resume_in(tx: Tx, chat: str, message_ids: Sequence[int]) -> int:
    """The calls of these messages go on where they stopped (their issue was let go): the
    first step not fired comes due now, the later ones keep their spacing from it; a step at
    the alert's delivery (a private call) is not made again. How many."""
    resumed = 0
    for message_id in message_ids:
        stopped = tx.all(
            "SELECT step, after_seconds FROM escalations WHERE chat = ? AND message_id = ?"
            " AND state = 'stopped' AND after_seconds > ? ORDER BY step",
            (chat, message_id, AT_DELIVERY),
        )
        if not stopped:
            continue
        first = float(stopped[0]["after_seconds"])
        tx.executemany(
            "UPDATE escalations SET state = 'waiting', due_at = ? WHERE chat = ?"
            " AND message_id = ? AND step = ? AND state = 'stopped'",
            [
                (tx.at.db + float(row["after_seconds"]) - first, chat, message_id, row["step"])
                for row in stopped
            ],
        )
        resumed += len(stopped)
    return resumed
