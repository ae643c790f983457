"""Pacing shared through the spool file: the recent sends and Telegram's pauses, kept where every
process that shares the file sees them, so together they keep to Telegram's limits (pacing.py
has the rules). Functions of an open transaction: a claim or an admission takes its chat's turn
in the same transaction that leases its alerts.

Stored times are wall-clock, so they are guarded (clock.py): a send or a pause recorded "in the
future" (the clock stepped back since) no longer holds, so a step back never stalls a chat.
"""

from __future__ import annotations

import sqlite3

from ..clock import stepped_back
from ..pacing import BOT_LIMIT, BOT_WINDOW, GROUP_LIMIT, REMEMBERED_FOR, next_send_at


def take_turn(db: sqlite3.Connection, chat: str, *, group: bool, now: float) -> float:
    """Take the chat's turn if it is `now`, recording the send, and return `now`; otherwise
    return when the turn will be. Forgets sends too old to count."""
    db.execute("DELETE FROM sends WHERE at < ?", (now - REMEMBERED_FOR,))
    turn = next_turn(db, chat, group=group, now=now)
    if turn <= now:
        db.execute("INSERT INTO sends (chat, at) VALUES (?, ?)", (chat, now))
    return turn


def next_turn(db: sqlite3.Connection, chat: str, *, group: bool, now: float) -> float:
    """When the chat's next turn is, from the sends and pauses every process recorded."""
    to_chat = db.execute(
        "SELECT at FROM sends WHERE chat = ? ORDER BY at DESC LIMIT ?", (chat, GROUP_LIMIT)
    ).fetchall()
    by_bot = db.execute(
        "SELECT at FROM sends WHERE at > ? ORDER BY at DESC LIMIT ?", (now - BOT_WINDOW, BOT_LIMIT)
    ).fetchall()
    return next_send_at(
        now,
        to_chat=[at for (at,) in to_chat],
        by_bot=[at for (at,) in by_bot],
        paused_until=paused_until(db, chat, now=now),
        group=group,
    )


def paused_until(db: sqlite3.Connection, chat: str, *, now: float) -> float | None:
    row = db.execute("SELECT until, paused_at FROM pauses WHERE chat = ?", (chat,)).fetchone()
    if row is None:
        return None
    until, paused_at = row
    if paused_at is not None and stepped_back(paused_at, now):
        return None  # decided before the clock stepped back: over
    return float(until)


def pause(db: sqlite3.Connection, chat: str, until: float, *, now: float) -> None:
    """Telegram asked for a pause (429): no turn for the chat before `until`."""
    db.execute(
        "INSERT INTO pauses (chat, until, paused_at) VALUES (?, ?, ?) ON CONFLICT (chat)"
        " DO UPDATE SET until = max(until, excluded.until), paused_at = excluded.paused_at",
        (chat, until, now),
    )
