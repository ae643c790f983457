"""The `jobs` table: a job as a row and back, and the statements that change one. Every count in
a job's ledger changes here, in SQL: at a claim (one more attempt, counted before it is made),
and at a settlement (what the attempt gives back: outcomes.Refund). Times in rows are the
store's; jobs handed out carry the caller's (`Now.to_local`). What a job is about is a JSON
object (`data`), written once and read as it was, but for what `merge` adds to it before its
first attempt."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ..core.errors import SpoolError
from ..core.json_values import json_object
from ..core.outcomes import REFUNDED, Dead, Delivered, Outcome, Refund, RetryAt
from ..core.routing import Destination, parse_chat_id
from .model import Home, Job, NewJob, Precedence
from .store import Now, Row, Tx


def destination_of(
    store: str, chat: str, thread: int | None, *, default: bool = False
) -> Destination:
    parsed = parse_chat_id(chat)
    if parsed is None:  # not written by this code: a person's edit, say
        raise SpoolError(f"a job in {store} has an unreadable chat id {chat!r}")
    return Destination(parsed, thread, default=default)


def job_from_row(row: Row, at: Now, *, store: str, home: Home = "spool") -> Job:
    return Job(
        # As written: a kind this relay does not know (a newer relay's, or a person's edit)
        # stays itself, and its write fails named (delivery/render.py), never read as another.
        kind=str(row["kind"]),
        data=_data(row["data"]),
        destination=destination_of(
            store, row["chat"], row["thread"], default=bool(row["to_default"])
        ),
        lane=str(row["lane"]),
        received_at=at.to_local(row["received_at"]),
        retry_from=at.to_local(row["retry_from"]),
        id=int(row["id"]),
        precedence=_precedence(row["precedence"]),
        attempts=row["attempts"],
        unsure_attempts=row["unsure_attempts"],
        next_attempt_at=at.to_local(row["next_attempt_at"]),
        last_error=row["last_error"],
        state=row["state"],
        dead_at=at.to_local(row["dead_at"]) if row["dead_at"] is not None else None,
        second_chance=bool(row["second_chance"]),
        home=home,
        named=row["label"],
    )


def _precedence(raw: object) -> Precedence:
    """A row's precedence; a number no relay writes (a person's edit) goes with the answers."""
    try:
        return Precedence(int(str(raw)))
    except ValueError:
        return Precedence.ANSWER


def _data(raw: str | None) -> Mapping[str, Any]:
    """What the row says the job is about; anything but a JSON object (a person's edit) reads
    as nothing, which renders as a job the relay cannot read."""
    try:
        data = json.loads(raw) if raw else {}
    except ValueError:
        return {}
    return json_object(data)


def insert(tx: Tx, new: NewJob, *, home: Home) -> Job:
    """A new job, no attempt made."""
    kind, data, destination, lane = new.kind, new.data, new.destination, new.lane_key
    precedence, due_in = new.precedence, new.due_in
    now = tx.at.db
    ensure_lane(tx, lane, destination)
    row = tx.one(
        "INSERT INTO jobs (kind, precedence, data, chat, thread, lane, to_default, received_at,"
        " retry_from, attempts, unsure_attempts, next_attempt_at, scheduled_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 0, 0, ?, ?) RETURNING id",
        (
            kind,
            int(precedence),
            json.dumps(data, ensure_ascii=False),
            destination.chat_key,
            destination.thread,
            lane,
            destination.default,
            now,
            now,
            now + due_in,
            now,
        ),
    )
    local = tx.at.local
    return Job(
        kind,
        data,
        destination,
        lane=lane,
        received_at=local,
        retry_from=local,
        id=int(row["id"]),
        precedence=precedence,
        next_attempt_at=local + due_in,
        home=home,
    )


# A job's columns as a copy of it carries them to another store (spool/moving.py), and those
# of them that are times (each store keeps its own clock's).
_COPIED = (
    "state",
    "chat",
    "thread",
    "lane",
    "to_default",
    "kind",
    "precedence",
    "data",
    "received_at",
    "retry_from",
    "attempts",
    "unsure_attempts",
    "next_attempt_at",
    "scheduled_at",
    "after_failure",
    "second_chance",
    "last_error",
    "dead_at",
    "dead_kind",
)
_TIMES = ("received_at", "retry_from", "next_attempt_at", "scheduled_at", "dead_at")
# Yes-or-no columns: SQLite gives them as 0 or 1, which PostgreSQL's BOOLEAN refuses.
_FLAGS = ("to_default", "after_failure", "second_chance")


def copy_of(row: Row, at: Now, *, label: str) -> dict[str, Any]:
    """A job's row as another store can take it: its times on the wall clock, and the name
    it goes by (`label`) written down."""
    copy = {column: row[column] for column in _COPIED}
    copy.update({column: bool(row[column]) for column in _FLAGS})
    for column in _TIMES:
        if copy[column] is not None:
            copy[column] = at.to_local(copy[column])
    return {**copy, "label": label}


def insert_copy(tx: Tx, copy: Mapping[str, Any]) -> None:
    """Add a job copied from another store (copy_of), on this store's clock."""
    values = dict(copy)
    for column in _TIMES:
        if values[column] is not None:
            values[column] = tx.at.to_db(values[column])
    destination = destination_of("a copy", values["chat"], values["thread"])
    ensure_lane(tx, values["lane"], destination)
    columns = ", ".join(values)
    tx.execute(
        f"INSERT INTO jobs ({columns}) VALUES ({', '.join('?' for _ in values)})",  # noqa: S608 (fixed names)
        tuple(values.values()),
    )


def merge(tx: Tx, job_id: int, more: Mapping[str, Any], *, due_now: bool) -> bool:
    """Add `more` to what a job is about while no attempt of it was made (what an attempt sent
    is what every later attempt sends), and make it due now if `due_now`. Whether it was."""
    row = tx.one("SELECT data FROM jobs WHERE id = ? AND attempts = 0 FOR UPDATE", (job_id,))
    if row is None:
        return False
    data = {**_data(row["data"]), **more}
    tx.execute(
        "UPDATE jobs SET data = ? WHERE id = ? AND attempts = 0",
        (json.dumps(data, ensure_ascii=False), job_id),
    )
    if due_now:
        make_due_now(tx, job_id)
    return True


def make_due_now(tx: Tx, job_id: int) -> None:
    """The job due now if it was due later and no attempt of it was made: the details it
    waited for came, or its webhook, which it was held for, will not claim it."""
    tx.execute(
        "UPDATE jobs SET next_attempt_at = ?, scheduled_at = ?"
        " WHERE id = ? AND state = 'pending' AND attempts = 0 AND next_attempt_at > ?",
        (tx.at.db, tx.at.db, job_id, tx.at.db),
    )


def count_attempt(tx: Tx, job_ids: list[int]) -> None:
    """A claim's attempt, counted before it is made as one that may reach Telegram (a process
    that dies mid-attempt leaves that count behind)."""
    tx.executemany(
        "UPDATE jobs SET attempts = attempts + 1, unsure_attempts = unsure_attempts + 1,"
        " after_failure = FALSE WHERE id = ?",
        [(job_id,) for job_id in job_ids],
    )


def ensure_lane(tx: Tx, lane: str, destination: Destination) -> None:
    tx.execute(
        "INSERT INTO lanes (lane, chat, thread) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
        (lane, destination.chat_key, destination.thread),
    )


def settle(
    tx: Tx, job: Job, outcome: Outcome, *, held: bool, refund: Refund, error: str | None
) -> None:
    """The job's row after its attempt: a delivered job is deleted whoever holds its lane now
    (it must never go again); the rest change only while the attempt's claim still `held` it."""
    if isinstance(outcome, Delivered):
        tx.execute("DELETE FROM jobs WHERE id = ?", (job.id,))
    elif held and isinstance(outcome, RetryAt):
        reschedule(tx, job, outcome, refund=refund, error=error)
    elif held and isinstance(outcome, Dead):
        bury(tx, job, outcome, refund=refund, error=error)


def reschedule(tx: Tx, job: Job, retry: RetryAt, *, refund: Refund, error: str | None) -> None:
    """Due again at `retry.at`; moved to `retry.destination` first when it names one (an
    alert's topic that is gone: the chat itself)."""
    destination = retry.destination or job.destination
    lane = job.lane
    if retry.destination is not None:
        lane = destination.lane
        ensure_lane(tx, lane, destination)
    attempts, unsure = REFUNDED[refund]
    tx.execute(
        "UPDATE jobs SET attempts = attempts - ?, unsure_attempts = unsure_attempts - ?,"
        " last_error = ?, next_attempt_at = ?, scheduled_at = ?, after_failure = ?, chat = ?,"
        " thread = ?, lane = ? WHERE id = ? AND state = 'pending'",
        (
            attempts,
            unsure,
            error,
            tx.at.to_db(retry.at),
            tx.at.db,
            retry.after_failure,
            destination.chat_key,
            destination.thread,
            lane,
            job.id,
        ),
    )


def bury(
    tx: Tx, job: Job, dead: Dead, *, refund: Refund = "none", error: str | None = None
) -> None:
    """An alert's dead letter: kept, with why it died (`error` None keeps the last one
    recorded). Any other job that dies is only said (delivery/job.py), and forgotten."""
    if job.kind != "alert":
        tx.execute("DELETE FROM jobs WHERE id = ?", (job.id,))
        return
    attempts, unsure = REFUNDED[refund]
    tx.execute(
        "UPDATE jobs SET state = 'dead', dead_at = ?, dead_kind = ?,"
        " attempts = attempts - ?, unsure_attempts = unsure_attempts - ?,"
        " last_error = coalesce(?, last_error) WHERE id = ?",
        (tx.at.db, dead.kind, attempts, unsure, error, job.id),
    )


def revive(tx: Tx, chat: str, since: float) -> int:
    """The chat's dead letters that died only of their used-up attempts, young enough (`since`,
    the store's time), pending once more: their second chance."""
    now = tx.at.db
    return int(
        tx.execute(
            "UPDATE jobs SET state = 'pending', second_chance = TRUE, dead_at = NULL,"
            " dead_kind = NULL, next_attempt_at = ?, scheduled_at = ?, after_failure = FALSE"
            " WHERE chat = ? AND state = 'dead' AND dead_kind = 'exhausted'"
            " AND NOT second_chance AND retry_from >= ?",
            (now, now, chat, since),
        ).rowcount
    )


def readdress(tx: Tx, alert_id: int | None, to: Destination, *, defaults_only: bool) -> int:
    """Send dead letters elsewhere when retried: `alert_id`, or all of them; with
    `defaults_only`, only those addressed to the default chat (which follow it), else each one
    named (which then no longer does)."""
    where = " AND to_default = TRUE" if defaults_only else ""
    where += " AND id = ?" if alert_id is not None else ""
    params: tuple[object, ...] = (to.chat_key, to.thread, to.lane, defaults_only)
    return int(
        tx.execute(
            "UPDATE jobs SET chat = ?, thread = ?, lane = ?, to_default = ?"  # noqa: S608 (fixed text)
            " WHERE state = 'dead'" + where,
            params + ((alert_id,) if alert_id is not None else ()),
        ).rowcount
    )


def requeue(tx: Tx, alert_id: int | None = None) -> int:
    """Dead alerts pending again, with a fresh retry horizon: `alert_id`, or all of them."""
    now = tx.at.db
    if alert_id is None:
        tx.execute(_REQUEUE_LANES + " ON CONFLICT DO NOTHING")
        count = tx.execute(_REQUEUE, (now, now, now)).rowcount
    else:
        tx.execute(_REQUEUE_LANES + " AND id = ? ON CONFLICT DO NOTHING", (alert_id,))
        count = tx.execute(_REQUEUE + " AND id = ?", (now, now, now, alert_id)).rowcount
    if count:
        tx.notify()
    return int(count)


# Every dead letter, or (with "AND id = ?") one.
_REQUEUE_LANES = (
    "INSERT INTO lanes (lane, chat, thread) SELECT DISTINCT lane, chat, thread FROM jobs"
    " WHERE state = 'dead'"
)
_REQUEUE = (
    "UPDATE jobs SET state = 'pending', dead_at = NULL, dead_kind = NULL, attempts = 0,"
    " unsure_attempts = 0, second_chance = FALSE, after_failure = FALSE, retry_from = ?,"
    " next_attempt_at = ?, scheduled_at = ? WHERE state = 'dead'"
)
