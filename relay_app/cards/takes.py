"""Who has an issue in a chat (On it): every statement on a take. A take is kept on each card
of the chat that shows the issue, so each says who has it and none offers On it again; a card
sent later of an issue someone has takes it too; Let go, or a recall that ends it, clears it on
each; and every take is kept after it ends, for the weekly report (`takes`). A take is a row of
its own (`issue_takes`), keyed by the card's row of the issue, never a column of the card's
record. A person is their Telegram user id; the name is only what a card shows. Each function
takes the caller's `Tx`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..spool.store import Tx, int_or_null, placeholders
from .card import SentMessage

_OPEN = "(b.status IS NULL OR b.status = 'unresolved')"


def take(tx: Tx, key: str, *, by: str, by_id: int | None) -> list[int]:
    """Record "On it" for the button's issue, in its chat, by the person `by_id` (Telegram's
    id: who they are) shown as `by`: on every message there that shows it, so each card
    says who has it and none offers On it again. Of presses at the same moment, one takes
    it. The messages now showing the taker (the pressed one first); none when it is not
    kept, someone has it already, or it is resolved or ignored."""
    # The pressed row first, then the others, each locked before it is read (PostgreSQL): a
    # press that closes the issue meanwhile waits, or is waited for.
    pressed = tx.one(
        f"SELECT b.chat, b.message_id, b.issue_id, b.origin FROM issue_buttons b"  # noqa: S608 (fixed text)
        f" WHERE b.key = ? AND {_OPEN} FOR UPDATE",
        (key,),
    )
    if pressed is None or not _taken(tx, [key], by, by_id):
        return []
    others = tx.all(
        f"SELECT b.key, b.message_id FROM issue_buttons b WHERE b.chat = ?"  # noqa: S608 (fixed text)
        f" AND b.issue_id = ? AND b.origin = ? AND b.key != ? AND {_OPEN} FOR UPDATE",
        (pressed["chat"], pressed["issue_id"], pressed["origin"], key),
    )
    taken_too = _taken(tx, [str(row["key"]) for row in others], by, by_id)
    # Kept after a Let go: who took what, and how soon (summaries/report.py).
    tx.execute(
        "INSERT INTO takes (chat, issue_id, taken_by, taker_id, taken_at)"
        " VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
        (pressed["chat"], pressed["issue_id"], by, by_id, tx.at.db),
    )
    shown = [int(pressed["message_id"])]
    also = {int(row["message_id"]) for row in others if str(row["key"]) in taken_too}
    return shown + sorted(also - set(shown))


def _taken(tx: Tx, keys: list[str], by: str, by_id: int | None) -> set[str]:
    """The take recorded on each of these rows that nobody has yet: the keys it was."""
    taken: set[str] = set()
    for key in keys:
        row = tx.one(
            "INSERT INTO issue_takes (key, taken_by, taker_id, taken_at) VALUES (?, ?, ?, ?)"
            " ON CONFLICT (key) DO NOTHING RETURNING key",
            (key, by, by_id, tx.at.db),
        )
        if row is not None:
            taken.add(key)
    return taken


def let_go(tx: Tx, key: str, *, by_id: int | None) -> list[int] | None:
    """Let go of the button's issue in its chat (the person `by_id` had it): nobody has it
    on any of its messages there, each offering On it again. The messages changed; None
    when they do not have it (nobody does, or another person: compared by Telegram's id,
    never by a name, which anyone can take). A take kept with no id (before ids were kept)
    may be let go by anyone allowed to act."""
    row = tx.one(
        "SELECT b.chat, b.issue_id, b.origin, t.taken_by, t.taker_id FROM issue_buttons b"
        " LEFT JOIN issue_takes t ON t.key = b.key WHERE b.key = ?",
        (key,),
    )
    if row is None or row["taken_by"] is None or by_id is None:
        return None
    taker = int_or_null(row["taker_id"])
    if taker is not None and taker != by_id:
        return None
    held = tx.all(
        "SELECT b.key, b.message_id FROM issue_buttons b JOIN issue_takes t ON t.key = b.key"
        " WHERE b.chat = ? AND b.issue_id = ? AND b.origin = ?"
        " AND (t.taker_id = ? OR t.taker_id IS NULL)",
        (row["chat"], row["issue_id"], row["origin"], by_id),
    )
    return _ended(tx, held)


def _ended(tx: Tx, held: list[Any]) -> list[int]:
    """These rows' takes ended: their messages' ids."""
    keys = [str(found["key"]) for found in held]
    if keys:
        tx.execute(f"DELETE FROM issue_takes WHERE key IN ({placeholders(keys)})", keys)  # noqa: S608 (placeholders)
    return sorted({int(found["message_id"]) for found in held})


# An issue's earlier row in the chat, taken and open since (`b` is the new row).
_EARLIER = (
    "FROM issue_buttons o JOIN issue_takes ot ON ot.key = o.key WHERE o.chat = b.chat"
    " AND o.issue_id = b.issue_id AND o.origin = b.origin AND o.key != b.key"
    " AND (o.status IS NULL OR o.status = 'unresolved')"
)
_INHERIT_TAKER = (
    "INSERT INTO issue_takes (key, taken_by, taker_id, taken_at) SELECT b.key,"  # noqa: S608 (fixed text)
    f" (SELECT ot.taken_by {_EARLIER} ORDER BY ot.taken_at LIMIT 1),"
    f" (SELECT ot.taker_id {_EARLIER} ORDER BY ot.taken_at LIMIT 1),"
    f" (SELECT min(ot.taken_at) {_EARLIER})"
    " FROM issue_buttons b WHERE b.chat = ? AND b.message_id = ?"
    f" AND EXISTS (SELECT 1 {_EARLIER}) ON CONFLICT (key) DO NOTHING RETURNING key"
)


def inherited(tx: Tx, message: SentMessage) -> bool:
    """The message's issues that someone has in the chat, taken on another of its messages and
    open since, marked as theirs here too. Whether there were any."""
    return bool(tx.all(_INHERIT_TAKER, (message.chat, message.message_id)))


def _same_take(
    chat: str, issue_id: str, taken_at: Any, taker_id: int | None, taker: str
) -> tuple[str, tuple[object, ...]]:
    """A take as a condition on the issue's rows and their takes (`b`, `t`): the same taker
    (by Telegram's id; by the name shown, for a take kept without one) since the same
    moment."""
    where = "b.chat = ? AND b.issue_id = ? AND t.taken_at = ?"
    values = (chat, issue_id, taken_at)
    if taker_id is None:
        return f"{where} AND t.taker_id IS NULL AND t.taken_by = ?", (*values, taker)
    return f"{where} AND t.taker_id = ?", (*values, taker_id)


def held_label(
    tx: Tx, chat: str, issue_id: str, taken_at: Any, taker_id: int | None, taker: str
) -> str | None:
    """The issue's label while this take stands and the issue is open in the chat; None
    otherwise."""
    take, values = _same_take(chat, issue_id, taken_at, taker_id, taker)
    found = tx.one(
        "SELECT b.label FROM issue_buttons b JOIN issue_takes t ON t.key = b.key"  # noqa: S608 (fixed text)
        f" WHERE {take} AND {_OPEN} LIMIT 1",
        values,
    )
    return str(found["label"]) if found is not None else None


def end_take(
    tx: Tx, chat: str, issue_id: str, taken_at: Any, taker_id: int | None, taker: str
) -> list[int]:
    """This take ended on every card of the chat that shows it: their message ids."""
    take, values = _same_take(chat, issue_id, taken_at, taker_id, taker)
    held = tx.all(
        "SELECT b.key, b.message_id FROM issue_buttons b JOIN issue_takes t ON t.key = b.key"  # noqa: S608 (fixed text)
        f" WHERE {take}",
        values,
    )
    return _ended(tx, held)


def latest_takers(tx: Tx, issue_ids: Sequence[str]) -> dict[str, str]:
    """Who has each of these issues now, on its latest take (any chat)."""
    found: dict[str, str] = {}
    for issue_id in dict.fromkeys(issue_ids):
        row = tx.one(
            "SELECT t.taken_by FROM issue_buttons b JOIN issue_takes t ON t.key = b.key"
            " WHERE b.issue_id = ? ORDER BY t.taken_at DESC LIMIT 1",
            (issue_id,),
        )
        if row is not None:
            found[issue_id] = str(row["taken_by"])
    return found
