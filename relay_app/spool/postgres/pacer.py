"""Pacing shared through PostgreSQL: the sends and Telegram's pauses every relay recorded, so
the fleet together keeps to Telegram's limits (pacing.py has the rules). A turn is taken under
the chat's row lock, then the bot's, always in that order; times are the database's."""

from __future__ import annotations

from ...clock import stepped_back
from ...pacing import BOT_LIMIT, BOT_WINDOW, GROUP_LIMIT, REMEMBERED_FOR, next_send_at
from .database import Cursor


def take_turn(cursor: Cursor, chat: str, *, group: bool, now: float) -> float:
    """Take the chat's turn if it is `now` (database time), recording the send, and return
    `now`; otherwise return when the turn will be. Holds the chat's and the bot's row locks
    until the transaction ends, so no other relay takes a turn from the same sends."""
    cursor.execute("INSERT INTO chats (chat) VALUES (%s) ON CONFLICT DO NOTHING", (chat,))
    cursor.execute("SELECT 1 FROM chats WHERE chat = %s FOR UPDATE", (chat,))
    cursor.execute("SELECT 1 FROM bot FOR UPDATE")
    cursor.execute("DELETE FROM sends WHERE at < %s", (now - REMEMBERED_FOR,))
    turn = next_turn(cursor, chat, group=group, now=now)
    if turn <= now:
        cursor.execute("INSERT INTO sends (chat, at) VALUES (%s, %s)", (chat, now))
    return turn


def next_turn(cursor: Cursor, chat: str, *, group: bool, now: float) -> float:
    to_chat = cursor.execute(
        "SELECT at FROM sends WHERE chat = %s ORDER BY at DESC LIMIT %s", (chat, GROUP_LIMIT)
    ).fetchall()
    by_bot = cursor.execute(
        "SELECT at FROM sends WHERE at > %s ORDER BY at DESC LIMIT %s",
        (now - BOT_WINDOW, BOT_LIMIT),
    ).fetchall()
    return next_send_at(
        now,
        to_chat=[row["at"] for row in to_chat],
        by_bot=[row["at"] for row in by_bot],
        paused_until=paused_until(cursor, chat, now=now),
        group=group,
    )


def paused_until(cursor: Cursor, chat: str, *, now: float) -> float | None:
    row = cursor.execute(
        "SELECT paused_until, paused_at FROM chats WHERE chat = %s", (chat,)
    ).fetchone()
    if row is None or row["paused_until"] is None:
        return None
    if row["paused_at"] is not None and stepped_back(row["paused_at"], now):
        return None  # decided before the database's clock stepped back: over
    return float(row["paused_until"])


def pause(cursor: Cursor, chat: str, until: float, *, now: float) -> None:
    """Telegram asked for a pause (429): no relay takes a turn for the chat before `until`."""
    cursor.execute(
        "INSERT INTO chats (chat, paused_until, paused_at) VALUES (%s, %s, %s)"
        " ON CONFLICT (chat) DO UPDATE SET"
        " paused_until = greatest(chats.paused_until, excluded.paused_until),"
        " paused_at = excluded.paused_at",
        (chat, until, now),
    )
