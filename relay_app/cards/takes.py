"""Who has an issue in a chat (On it): every statement on a take. A take is kept on each card
of the chat that shows the issue, so each says who has it and none offers On it again; a card
sent later of an issue someone has takes it too; Let go, or a recall that ends it, clears it on
each; and every take is kept after it ends, for the weekly report (`takes`). A person is their
Telegram user id; the name is only what a card shows. Each function takes the caller's `Tx`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..spool.store import Tx, int_or_null
from .card import SentMessage


def take(tx: Tx, key: str, *, by: str, by_id: int | None) -> list[int]:
    """Record "On it" for the button's issue, in its chat, by the person `by_id` (Telegram's
    id: who they are) shown as `by`: on every message there that shows it, so each card
    says who has it and none offers On it again. Of presses at the same moment, one takes
    it. The messages now showing the taker (the pressed one first); none when it is not
    kept, someone has it already, or it is resolved or ignored."""
    pressed = tx.one(
        "UPDATE issue_buttons SET taken_by = ?, taker_id = ?, taken_at = ? WHERE key = ?"
        " AND taken_by IS NULL AND (status IS NULL OR status = 'unresolved')"
        " RETURNING chat, message_id, issue_id, origin",
        (by, by_id, tx.at.db, key),
    )
    if pressed is None:
        return []
    others = tx.all(
        "UPDATE issue_buttons SET taken_by = ?, taker_id = ?, taken_at = ? WHERE chat = ?"
        " AND issue_id = ? AND origin = ? AND key != ? AND taken_by IS NULL"
        " AND (status IS NULL OR status = 'unresolved') RETURNING message_id",
        (by, by_id, tx.at.db, pressed["chat"], pressed["issue_id"], pressed["origin"], key),
    )
    # Kept after a Let go: who took what, and how soon (summaries/report.py).
    tx.execute(
        "INSERT INTO takes (chat, issue_id, taken_by, taker_id, taken_at)"
        " VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
        (pressed["chat"], pressed["issue_id"], by, by_id, tx.at.db),
    )
    shown = [int(pressed["message_id"])]
    shown += sorted({int(row["message_id"]) for row in others} - set(shown))
    return shown


def let_go(tx: Tx, key: str, *, by_id: int | None) -> list[int] | None:
    """Let go of the button's issue in its chat (the person `by_id` had it): nobody has it
    on any of its messages there, each offering On it again. The messages changed; None
    when they do not have it (nobody does, or another person: compared by Telegram's id,
    never by a name, which anyone can take). A take kept with no id (before ids were kept)
    may be let go by anyone allowed to act."""
    row = tx.one(
        "SELECT chat, issue_id, origin, taken_by, taker_id FROM issue_buttons WHERE key = ?",
        (key,),
    )
    if row is None or row["taken_by"] is None or by_id is None:
        return None
    taker = int_or_null(row["taker_id"])
    if taker is not None and taker != by_id:
        return None
    changed = tx.all(
        "UPDATE issue_buttons SET taken_by = NULL, taker_id = NULL, taken_at = NULL"
        " WHERE chat = ? AND issue_id = ? AND origin = ? AND taken_by IS NOT NULL"
        " AND (taker_id = ? OR taker_id IS NULL) RETURNING message_id",
        (row["chat"], row["issue_id"], row["origin"], by_id),
    )
    return sorted({int(found["message_id"]) for found in changed})


# An issue's earlier button in the chat, taken and open since (the row updated is the new one's).
_EARLIER = (
    "FROM issue_buttons AS o WHERE o.chat = issue_buttons.chat"
    " AND o.issue_id = issue_buttons.issue_id AND o.origin = issue_buttons.origin"
    " AND o.taken_by IS NOT NULL AND (o.status IS NULL OR o.status = 'unresolved')"
)
_INHERIT_TAKER = (
    f"UPDATE issue_buttons SET taken_by = (SELECT o.taken_by {_EARLIER} ORDER BY o.taken_at"  # noqa: S608 (fixed text)
    f" LIMIT 1), taker_id = (SELECT o.taker_id {_EARLIER} ORDER BY o.taken_at LIMIT 1),"
    f" taken_at = (SELECT min(o.taken_at) {_EARLIER})"
    " WHERE chat = ? AND message_id = ? AND taken_by IS NULL"
    f" AND EXISTS (SELECT 1 {_EARLIER}) RETURNING key"
)


def inherited(tx: Tx, message: SentMessage) -> bool:
    """The message's issues that someone has in the chat, taken on another of its messages and
    open since, marked as theirs here too. Whether there were any."""
    return bool(tx.all(_INHERIT_TAKER, (message.chat, message.message_id)))


def _same_take(
    chat: str, issue_id: str, taken_at: Any, taker_id: int | None, taker: str
) -> tuple[str, tuple[object, ...]]:
    """A take as a condition on the issue's buttons: the same taker (by Telegram's id; by the
    name shown, for a take kept without one) since the same moment."""
    where = "chat = ? AND issue_id = ? AND taken_at = ?"
    values = (chat, issue_id, taken_at)
    if taker_id is None:
        return f"{where} AND taker_id IS NULL AND taken_by = ?", (*values, taker)
    return f"{where} AND taker_id = ?", (*values, taker_id)


def held_label(
    tx: Tx, chat: str, issue_id: str, taken_at: Any, taker_id: int | None, taker: str
) -> str | None:
    """The issue's label while this take stands and the issue is open in the chat; None
    otherwise."""
    take, values = _same_take(chat, issue_id, taken_at, taker_id, taker)
    found = tx.one(
        f"SELECT label FROM issue_buttons WHERE {take}"  # noqa: S608 (fixed text)
        " AND (status IS NULL OR status = 'unresolved') LIMIT 1",
        values,
    )
    return str(found["label"]) if found is not None else None


def end_take(
    tx: Tx, chat: str, issue_id: str, taken_at: Any, taker_id: int | None, taker: str
) -> list[int]:
    """This take ended on every card of the chat that shows it: their message ids."""
    take, values = _same_take(chat, issue_id, taken_at, taker_id, taker)
    cleared = "UPDATE issue_buttons SET taken_by = NULL, taker_id = NULL, taken_at = NULL"
    changed = tx.all(f"{cleared} WHERE {take} RETURNING message_id", values)
    return sorted({int(row["message_id"]) for row in changed})


def latest_takers(tx: Tx, issue_ids: Sequence[str]) -> dict[str, str]:
    """Who has each of these issues now, on its latest take (any chat)."""
    found: dict[str, str] = {}
    for issue_id in dict.fromkeys(issue_ids):
        row = tx.one(
            "SELECT taken_by FROM issue_buttons WHERE issue_id = ? AND taken_by IS NOT NULL"
            " ORDER BY taken_at DESC LIMIT 1",
            (issue_id,),
        )
        if row is not None:
            found[issue_id] = str(row["taken_by"])
    return found
