"""A card's row of an issue, read whole: its record (`issue_buttons`) with the state kept of it
in tables of their own, each keyed by the row: who has the issue (`issue_takes`, takes.py) and
Ignore's state on it (`issue_ignores`, ignore_state.py). What reads a row whole selects `ROW`
from `ROWS`; what forgets old messages forgets their rows' state with them."""

from __future__ import annotations

from typing import Any

from ..spool.store import Tx

ROWS = (
    "issue_buttons b LEFT JOIN issue_takes t ON t.key = b.key"
    " LEFT JOIN issue_ignores i ON i.key = b.key"
)
ROW = "b.*, t.taken_by, t.taker_id, t.taken_at, i.choosing, i.snooze"


def forget_state_of_messages(tx: Tx, cutoff: Any) -> None:
    """The state kept of the rows of messages sent before `cutoff` (the store's time), which
    are forgotten with them."""
    for table in ("issue_takes", "issue_ignores"):
        tx.execute(
            f"DELETE FROM {table} WHERE key IN (SELECT b.key FROM issue_buttons b"  # noqa: S608 (fixed names)
            " JOIN sent_messages s ON s.chat = b.chat AND s.message_id = b.message_id"
            " WHERE s.sent_at < ?)",
            (cutoff,),
        )
