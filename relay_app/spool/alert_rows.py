"""The `alerts` table: an alert as a row and back, and the statements that change one. Every
count in an alert's ledger changes here, in SQL: at a claim (one more attempt, counted before
it is made), and at a settlement (what the attempt gives back: outcomes.Refund). Times in rows
are the store's; alerts handed out carry the caller's (`Now.to_local`)."""

from __future__ import annotations

from ..core.errors import SpoolError
from ..core.outcomes import REFUNDED, Dead, Refund, RetryAt
from ..core.routing import Destination, parse_chat_id
from ..message.formatting import Entry, Message
from ..message.lines import from_json as lines_from_json
from ..message.lines import to_json as lines_to_json
from ..message.subjects import Subjects
from .model import SpooledAlert
from .store import Now, Row, Tx


def destination_of(
    store: str, chat: str, thread: int | None, *, default: bool = False
) -> Destination:
    parsed = parse_chat_id(chat)
    if parsed is None:  # not written by this code: a person's edit, say
        raise SpoolError(f"an alert in {store} has an unreadable chat id {chat!r}")
    return Destination(parsed, thread, default=default)


def alert_from_row(row: Row, at: Now, *, store: str, in_memory: bool = False) -> SpooledAlert:
    entry = heading = None
    if row["entry_html"] is not None:
        entry = Entry(row["entry_html"], row["entry_text"])
    if row["heading_html"] is not None:
        heading = Entry(row["heading_html"], row["heading_text"])
    subjects = Subjects.from_json(row["subjects"])
    lines = lines_from_json(row["lines"])
    return SpooledAlert(
        Message(row["html"], row["text"], row["fallback"], entry, heading, subjects, lines),
        destination_of(store, row["chat"], row["thread"], default=bool(row["to_default"])),
        received_at=at.to_local(row["received_at"]),
        retry_from=at.to_local(row["retry_from"]),
        id=int(row["id"]),
        attempts=row["attempts"],
        unsure_attempts=row["unsure_attempts"],
        next_attempt_at=at.to_local(row["next_attempt_at"]),
        last_error=row["last_error"],
        state=row["state"],
        dead_at=at.to_local(row["dead_at"]) if row["dead_at"] is not None else None,
        second_chance=bool(row["second_chance"]),
        in_memory=in_memory,
    )


def insert(
    tx: Tx, message: Message, destination: Destination, *, attempts: int, in_memory: bool
) -> SpooledAlert:
    """A new alert, due now, with `attempts` already counted (1: the webhook attempts it)."""
    now = tx.at.db
    row = tx.one(
        "INSERT INTO alerts (chat, thread, lane, to_default, received_at, retry_from, html, text,"
        " fallback, entry_html, entry_text, heading_html, heading_text, subjects, lines,"
        " attempts, unsure_attempts, next_attempt_at, scheduled_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
        (
            destination.chat_key,
            destination.thread,
            destination.lane,
            destination.default,
            now,
            now,
            *_message_values(message),
            attempts,
            attempts,
            now,
            now,
        ),
    )
    local = tx.at.local
    return SpooledAlert(
        message,
        destination,
        received_at=local,
        retry_from=local,
        id=int(row["id"]),
        attempts=attempts,
        unsure_attempts=attempts,
        next_attempt_at=local,
        in_memory=in_memory,
    )


def revise(tx: Tx, alert_id: int, message: Message, *, attempts: int) -> bool:
    """Its message built again, while its ledger still counts `attempts` (what the caller knows
    of): no attempt counted since may have sent the old one. Whether it was."""
    row = tx.one(
        "UPDATE alerts SET html = ?, text = ?, fallback = ?, entry_html = ?, entry_text = ?,"
        " heading_html = ?, heading_text = ?, subjects = ?, lines = ?"
        " WHERE id = ? AND state = 'pending' AND attempts = ? RETURNING id",
        (*_message_values(message), alert_id, attempts),
    )
    return row is not None


def _message_values(message: Message) -> tuple[str | None, ...]:
    """The message as the row's columns hold it, in their order in `insert` and `revise`."""
    entry, heading = message.short_entry, message.heading
    return (
        message.html,
        message.text,
        message.fallback,
        entry.html if entry else None,
        entry.text if entry else None,
        heading.html if heading else None,
        heading.text if heading else None,
        message.subjects.to_json(),
        lines_to_json(message.lines),
    )


def count_attempt(tx: Tx, alert_ids: list[int]) -> None:
    """A claim's attempt, counted before it is made as one that may reach Telegram (a process
    that dies mid-attempt leaves that count behind)."""
    tx.executemany(
        "UPDATE alerts SET attempts = attempts + 1, unsure_attempts = unsure_attempts + 1,"
        " after_failure = FALSE WHERE id = ?",
        [(alert_id,) for alert_id in alert_ids],
    )


def ensure_lane(tx: Tx, destination: Destination) -> None:
    tx.execute(
        "INSERT INTO lanes (lane, chat, thread) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
        (destination.lane, destination.chat_key, destination.thread),
    )


def reschedule(
    tx: Tx, alert: SpooledAlert, retry: RetryAt, *, refund: Refund, error: str | None
) -> None:
    destination = retry.destination or alert.destination
    if retry.destination is not None:
        ensure_lane(tx, destination)
    attempts, unsure = REFUNDED[refund]
    tx.execute(
        "UPDATE alerts SET attempts = attempts - ?, unsure_attempts = unsure_attempts - ?,"
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
            destination.lane,
            alert.id,
        ),
    )


def bury(
    tx: Tx, alert: SpooledAlert, dead: Dead, *, refund: Refund = "none", error: str | None = None
) -> None:
    """A dead letter: kept, with why it died. `error` None keeps the last one recorded."""
    attempts, unsure = REFUNDED[refund]
    tx.execute(
        "UPDATE alerts SET state = 'dead', dead_at = ?, dead_kind = ?,"
        " attempts = attempts - ?, unsure_attempts = unsure_attempts - ?,"
        " last_error = coalesce(?, last_error) WHERE id = ?",
        (tx.at.db, dead.kind, attempts, unsure, error, alert.id),
    )


def revive(tx: Tx, chat: str, since: float) -> int:
    """The chat's dead letters that died only of their used-up attempts, young enough (`since`,
    the store's time), pending once more: their second chance."""
    now = tx.at.db
    return int(
        tx.execute(
            "UPDATE alerts SET state = 'pending', second_chance = TRUE, dead_at = NULL,"
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
            "UPDATE alerts SET chat = ?, thread = ?, lane = ?, to_default = ?"  # noqa: S608 (fixed text)
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
    "INSERT INTO lanes (lane, chat, thread) SELECT DISTINCT lane, chat, thread FROM alerts"
    " WHERE state = 'dead'"
)
_REQUEUE = (
    "UPDATE alerts SET state = 'pending', dead_at = NULL, dead_kind = NULL, attempts = 0,"
    " unsure_attempts = 0, second_chance = FALSE, after_failure = FALSE, retry_from = ?,"
    " next_attempt_at = ?, scheduled_at = ? WHERE state = 'dead'"
)
