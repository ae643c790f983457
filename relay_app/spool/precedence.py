"""Alerts first (docs/delivery.md): which of a chat's waiting writes takes its next turn, as
the queue's claims decide it in their unit of work (queue.py), whichever process or relay
claims. Every job has a precedence (model.Precedence); a lane whose first job goes after a due
write of another lane of the same chat leaves the turn to that lane."""

from __future__ import annotations

from ..core.clock import STEP_TOLERANCE
from .model import Precedence
from .store import Tx

# A fresh alert is held for its webhook (intake/queue.py) or for its issues' details a few seconds
# at most; until then, nothing that goes after it takes its chat's turn.
FRESH_ALERT_DUE_WITHIN = 15.0


def owed_first(tx: Tx, chat: str, lane: str, precedence: Precedence) -> bool:
    """Whether another lane of the chat has, as its first job, a write that goes before
    `precedence` and is due (or is a fresh alert about to be: held for its webhook, or for its
    details): the chat's turn is that lane's then."""
    if precedence == Precedence.ALERT:
        return False
    now = tx.at.db
    found = tx.one(
        "SELECT 1 AS owed FROM jobs j WHERE j.chat = ? AND j.state = 'pending'"
        " AND j.precedence < ? AND j.lane <> ?"
        " AND (j.next_attempt_at <= ? OR j.scheduled_at > ?"
        "  OR (j.precedence = 0 AND j.attempts = 0 AND j.next_attempt_at <= ?))"
        " AND NOT EXISTS (SELECT 1 FROM jobs e WHERE e.lane = j.lane AND e.state = 'pending'"
        "  AND (e.precedence < j.precedence OR (e.precedence = j.precedence AND e.id < j.id)))"
        " LIMIT 1",
        (chat, int(precedence), lane, now, now + STEP_TOLERANCE, now + FRESH_ALERT_DUE_WITHIN),
    )
    return found is not None
