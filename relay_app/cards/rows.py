"""A card's row of an issue, read whole: its record (`issue_buttons`) with Ignore's state on it,
kept in a table of its own keyed by the row (`issue_ignores`, ignore_state.py). What reads a row
whole selects `ROW` from `ROWS`; what forgets old messages forgets their rows' state with them.
What a capability keeps of a row (who has its issue: takes/) it reads itself, as the row's
marks (marks.py's `RowMarks`)."""

from __future__ import annotations

from typing import Any

from ..spool.store import Tx

ROWS = "issue_buttons b LEFT JOIN issue_ignores i ON i.key = b.key"
ROW = "b.*, i.choosing, i.snooze"


def of_messages_before(tx: Tx, cutoff: Any) -> list[str]:
    """The rows of messages sent before `cutoff` (the store's time): their keys."""
    found = tx.all(
        "SELECT b.key FROM issue_buttons b JOIN sent_messages s ON s.chat = b.chat"
        " AND s.message_id = b.message_id WHERE s.sent_at < ?",
        (cutoff,),
    )
    return [str(row["key"]) for row in found]


def forget_state_of_messages(tx: Tx, cutoff: Any) -> None:
    """The state kept of the rows of messages sent before `cutoff` (the store's time), which
    are forgotten with them."""
    tx.execute(
        "DELETE FROM issue_ignores WHERE key IN (SELECT b.key FROM issue_buttons b"
        " JOIN sent_messages s ON s.chat = b.chat AND s.message_id = b.message_id"
        " WHERE s.sent_at < ?)",
        (cutoff,),
    )
