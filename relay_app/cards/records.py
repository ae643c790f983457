"""A card's record read and changed inside another's unit of work: the statements on the cards'
tables (`sent_messages`, `issue_buttons` and its rows' state) that capabilities need in their
own transactions, so that only the cards name those tables (tests/test_tables.py). Each takes
the caller's `Tx`; none commits."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..core.routing import Destination
from ..spool.store import Row, Tx, placeholders
from .rows import ROW, ROWS


def button(tx: Tx, key: str) -> Row | None:
    """An issue's button by its key, as kept."""
    found: Row | None = tx.one(
        f"SELECT {ROW} FROM {ROWS} WHERE b.key = ?",  # noqa: S608 (fixed text)
        (key,),
    )
    return found


def latest_shown(tx: Tx, issue_id: str) -> Row | None:
    """The label and title the latest card of the issue showed."""
    found: Row | None = tx.one(
        "SELECT label, title FROM issue_buttons WHERE issue_id = ?"
        " ORDER BY message_id DESC LIMIT 1",
        (issue_id,),
    )
    return found


def _open(row: str) -> str:
    """The condition that the row `row` (its alias) stands open: as alerted, or reopened."""
    return f"({row}.status IS NULL OR {row}.status = 'unresolved')"


def rows_of_issue(
    tx: Tx, chat: str, issue_id: str, origin: str | None = None, *, open_only: bool = False
) -> list[Row]:
    """The issue's rows in the chat (of its source at `origin`, if given; only those open, if
    asked), each locked before it is read, in one order (presses at once wait for each other,
    never deadlock): key, message id, label, status."""
    where = "b.chat = ? AND b.issue_id = ?" + (" AND b.origin = ?" if origin is not None else "")
    values = (chat, issue_id) + ((origin,) if origin is not None else ())
    return tx.all(
        "SELECT b.key, b.message_id, b.label, b.status FROM issue_buttons b"  # noqa: S608 (fixed text)
        f" WHERE {where}{' AND ' + _open('b') if open_only else ''} ORDER BY b.key FOR UPDATE",
        values,
    )


def open_others(tx: Tx, chat: str, keys: Sequence[str]) -> dict[str, list[str]]:
    """For each of these rows of the chat, the other rows there of its issue (at the same
    source) that stand open: their keys, by the row's key (a row with none left out)."""
    if not keys:
        return {}
    rows = tx.all(
        "SELECT b.key AS key, o.key AS other FROM issue_buttons b JOIN issue_buttons o"  # noqa: S608 (placeholders)
        " ON o.chat = b.chat AND o.issue_id = b.issue_id AND o.origin = b.origin"
        f" AND o.key != b.key WHERE b.chat = ? AND b.key IN ({placeholders(keys)})"
        f" AND {_open('o')}",
        (chat, *keys),
    )
    found: dict[str, list[str]] = {}
    for row in rows:
        found.setdefault(str(row["key"]), []).append(str(row["other"]))
    return found


def rows_anywhere(tx: Tx, issue_ids: Sequence[str]) -> list[Row]:
    """Every row of these issues, in every chat: key, issue id."""
    found: list[Row] = []
    for issue_id in dict.fromkeys(issue_ids):
        found += tx.all("SELECT key, issue_id FROM issue_buttons WHERE issue_id = ?", (issue_id,))
    return found


def shown_in(tx: Tx, place: Destination, issue_id: str) -> bool:
    """Whether an alert's message kept in the place (its chat, and its topic: a chat's main
    thread is its messages without one) shows the issue."""
    found = tx.one(
        "SELECT 1 AS shown FROM issue_buttons b JOIN sent_messages s ON s.chat = b.chat"
        " AND s.message_id = b.message_id WHERE b.chat = ? AND b.issue_id = ?"
        " AND COALESCE(s.thread, 0) = ? LIMIT 1",
        (place.chat_key, issue_id, place.thread or 0),
    )
    return found is not None


def lock_issue(tx: Tx, chat: str, issue_id: str) -> None:
    """Every button of the issue in the chat locked, in one order (presses at once wait for
    each other, never deadlock)."""
    tx.all(
        "SELECT key FROM issue_buttons WHERE chat = ? AND issue_id = ? ORDER BY key FOR UPDATE",
        (chat, issue_id),
    )


def messages_showing(tx: Tx, chat: str, issue_id: str) -> tuple[int, ...]:
    """The kept messages of the chat that show the issue: their ids, oldest first."""
    shown = tx.all(
        "SELECT DISTINCT message_id FROM issue_buttons WHERE chat = ? AND issue_id = ?"
        " ORDER BY message_id",
        (chat, issue_id),
    )
    return tuple(int(row["message_id"]) for row in shown)


def issues_under(tx: Tx, chat: str, message_id: int) -> list[Row]:
    """A message's issues in its order: its row's key, id, label, status."""
    return tx.all(
        "SELECT b.key, b.issue_id, b.label, b.status FROM issue_buttons b"
        " WHERE b.chat = ? AND b.message_id = ? ORDER BY b.position",
        (chat, message_id),
    )


def shortest_take_for(tx: Tx, chat: str, issue_id: str) -> float | None:
    """The shortest `take_for` of the chat's messages that show the issue; None when none
    has one."""
    found = tx.one(
        "SELECT MIN(s.take_for) AS take_for FROM sent_messages s JOIN issue_buttons b"
        " ON s.chat = b.chat AND s.message_id = b.message_id"
        " WHERE b.chat = ? AND b.issue_id = ? AND s.take_for IS NOT NULL",
        (chat, issue_id),
    )
    return float(found["take_for"]) if found is not None and found["take_for"] is not None else None


def _place(place: Destination | None) -> tuple[Any, ...]:
    """The parameters of `? = 0 OR (s.chat = ? AND COALESCE(s.thread, 0) = ?)`: messages `s`
    of one place (its chat, and its topic: a chat's main thread is its messages without one),
    or of every chat."""
    if place is None:
        return (0, "", 0)
    return (1, place.chat_key, place.thread or 0)


def shown_since(tx: Tx, place: Destination | None, since_db: float) -> list[Row]:
    """Each issue shown in the place since then, on each of its alerts' messages (not a copy of
    a card's row: a chart), oldest first: the card's record of it, its level, and when its
    message was sent."""
    return tx.all(
        "SELECT b.key, b.chat, b.issue_id, b.label, b.title, b.status,"
        " b.acted_at, b.level, s.sent_at FROM issue_buttons b JOIN sent_messages s"
        " ON s.chat = b.chat AND s.message_id = b.message_id WHERE s.sent_at >= ?"
        " AND s.copies IS NULL AND (? = 0 OR (s.chat = ? AND COALESCE(s.thread, 0) = ?))"
        " ORDER BY s.sent_at, s.message_id",
        (since_db, *_place(place)),
    )


def messages_since(tx: Tx, place: Destination | None, since: float) -> list[tuple[str, int]]:
    """The alerts' messages sent to the place since then (not a copy of a card's row: a
    chart): chat and message id."""
    rows = tx.all(
        "SELECT s.chat, s.message_id FROM sent_messages s WHERE s.sent_at >= ?"
        " AND s.copies IS NULL AND (? = 0 OR (s.chat = ? AND COALESCE(s.thread, 0) = ?))",
        (since, *_place(place)),
    )
    return [(str(row["chat"]), int(row["message_id"])) for row in rows]


def alerts_since(tx: Tx, place: Destination | None, since: float) -> list[Row]:
    """The alerts' messages sent to the place since then (no copy of a card's row), each once
    for each issue it showed (once, with no level, for one that showed none): chat, thread,
    message id, when it was sent, and the issue's level as its alert said it."""
    return tx.all(
        "SELECT s.chat, s.thread, s.message_id, s.sent_at, b.level FROM sent_messages s"
        " LEFT JOIN issue_buttons b ON b.chat = s.chat AND b.message_id = s.message_id"
        " WHERE s.sent_at >= ? AND s.copies IS NULL"
        " AND (? = 0 OR (s.chat = ? AND COALESCE(s.thread, 0) = ?))"
        " ORDER BY s.sent_at",
        (since, *_place(place)),
    )


def latest_in_chat(tx: Tx, chat: str, issue_ids: Sequence[str]) -> dict[str, Row]:
    """Each of these issues as its latest card in the chat shows it: its row's key, its status
    (None: open, as alerted) and its message; an issue without a card there is left out."""
    found: dict[str, Row] = {}
    for issue_id in dict.fromkeys(issue_ids):
        row = tx.one(
            "SELECT b.key, b.status, b.message_id FROM issue_buttons b"
            " WHERE b.chat = ? AND b.issue_id = ? ORDER BY b.message_id DESC LIMIT 1",
            (chat, issue_id),
        )
        if row is not None:
            found[issue_id] = row
    return found
