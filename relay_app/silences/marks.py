"""Mute's mark on an issue's cards (cards/marks.py): while a silence Mute made holds the issue
in a chat, each of its cards there says so, until when and by whom, offers Unmute, and nobody is
called about it. Read from the silences themselves, so a card shows the mute that holds when it
is read (a card sent after the press too), and the card's record keeps nothing of it."""

from __future__ import annotations

from collections.abc import Sequence

from ..cards.marks import Mark
from ..spool.store import Tx, placeholders
from .store import MUTED_FROM_THE_CHAT

MUTED = "muted"


def muted(tx: Tx, chat: str, issue_ids: Sequence[str]) -> dict[str, list[Mark]]:
    """The issues of these a Mute holds in the chat now, each with its silence's mark (the
    oldest, where presses at once of an older relay made two)."""
    sql = (
        "SELECT id, issue, created_by, starts_at, ends_at FROM silences"  # noqa: S608
        " WHERE chat = ? AND comment = ?"
        " AND project IS NULL AND environment IS NULL AND title IS NULL"
        f" AND ended_at IS NULL AND ends_at > ? AND issue IN ({placeholders(issue_ids)})"
        " ORDER BY id"
    )
    rows = tx.all(sql, (chat, MUTED_FROM_THE_CHAT, tx.at.db, *issue_ids))
    found: dict[str, list[Mark]] = {}
    for row in rows:
        found.setdefault(
            str(row["issue"]),
            [
                Mark(
                    MUTED,
                    str(row["created_by"]),
                    tx.at.to_local(float(row["starts_at"])),
                    line="muted_by",
                    line_of_several="issue_muted_by",
                    until=tx.at.to_local(float(row["ends_at"])),
                    ref=int(row["id"]),
                    quiets=True,
                )
            ],
        )
    return found
