"""Pacing shared through the spool: the recent sends and Telegram's pauses, kept where every
process (and every relay on a shared database) sees them, so together they keep to Telegram's
limits (pacing.py has the rules). Functions of an open unit of work: a claim or an admission
takes its chat's turn in the same transaction that leases its alerts.

A turn is taken under the chat's row lock, then the bot's, always in that order, so relays on
one PostgreSQL database never take a turn from the same sends, and never deadlock (in SQLite
the transaction holds the whole file anyway, so no row is locked: `Tx.lock`). Times are the store's.

Stored times are wall-clock, so they are guarded (clock.py): a send or a pause recorded "in the
future" (the clock stepped back since) no longer holds, so a step back never stalls a chat.
"""

from __future__ import annotations

from ..core.clock import STEP_TOLERANCE, stepped_back
from ..core.pacing import TELEGRAMS, Pace, next_send_at
from .store import Tx

# How long after its turn a message may be recorded as sent (sent_when): the longest attempt
# (RELAY_SEND_TIMEOUT, at most 9 s) and its composing, and no more than a time ahead of now
# may be without counting as a clock that stepped back (clock.py).
MAX_SEND_DELAY = STEP_TOLERANCE


def take_turn(tx: Tx, chat: str, *, group: bool, now: float, pace: Pace = TELEGRAMS) -> float:
    """Take the chat's turn if it is `now` (the store's time), recording the send, and return
    `now`; otherwise return when the turn will be. Forgets sends too old to count."""
    tx.lock("INSERT INTO chats (chat) VALUES (?) ON CONFLICT DO NOTHING", (chat,))
    tx.lock("SELECT 1 FROM chats WHERE chat = ? FOR UPDATE", (chat,))
    tx.lock("SELECT 1 FROM bot FOR UPDATE")
    tx.execute("DELETE FROM sends WHERE at < ?", (now - pace.remembered_for,))
    turn = next_turn(tx, chat, group=group, now=now, pace=pace)
    if turn <= now:
        tx.execute("INSERT INTO sends (chat, at) VALUES (?, ?)", (chat, now))
    return turn


def turn_settled(
    tx: Tx, chat: str, turn_at: float | None, *, sent_at: float | None, paused_until: float | None
) -> None:
    """What became of the write a claim took the chat's turn for (`turn_at`; None when it took
    none), all in the store's time. Refused with a pause (429): no write reached the chat, and
    the pause alone says when the next may go; counted, the refused one would hold the chat a
    whole turn past it, three seconds in a group, for each refusal. Never sent: the turn is
    given back. Sent: the chat's pace runs from when it was answered (`sent_at`), since it
    reached the chat before then, if at all; measured from the turn, a message a busy host
    sent late would crowd the next one, perhaps another relay's, into a 429. A clock that
    stepped forward meanwhile moves it at most MAX_SEND_DELAY."""
    if paused_until is not None:
        pause(tx, chat, paused_until, now=tx.at.db)
    if turn_at is None:
        return
    if paused_until is not None or sent_at is None:
        tx.execute("DELETE FROM sends WHERE chat = ? AND at = ?", (chat, turn_at))
        return
    moved = min(sent_at, turn_at + MAX_SEND_DELAY)
    if moved > turn_at:
        tx.execute("UPDATE sends SET at = ? WHERE chat = ? AND at = ?", (moved, chat, turn_at))


def next_turn(tx: Tx, chat: str, *, group: bool, now: float, pace: Pace = TELEGRAMS) -> float:
    """When the chat's next turn is, from the sends and pauses every process recorded."""
    to_chat = tx.all(
        "SELECT at FROM sends WHERE chat = ? ORDER BY at DESC LIMIT ?", (chat, pace.group_limit)
    )
    by_bot = tx.all(
        "SELECT at FROM sends WHERE at > ? ORDER BY at DESC LIMIT ?",
        (now - pace.bot_window, pace.bot_limit),
    )
    return next_send_at(
        now,
        to_chat=[row["at"] for row in to_chat],
        by_bot=[row["at"] for row in by_bot],
        paused_until=paused_until(tx, chat, now=now),
        group=group,
        pace=pace,
    )


def paused_until(tx: Tx, chat: str, *, now: float) -> float | None:
    row = tx.one("SELECT paused_until, paused_at FROM chats WHERE chat = ?", (chat,))
    if row is None or row["paused_until"] is None:
        return None
    if row["paused_at"] is not None and stepped_back(row["paused_at"], now):
        return None  # decided before the clock stepped back: over
    return float(row["paused_until"])


def pause(tx: Tx, chat: str, until: float, *, now: float) -> None:
    """Telegram asked for a pause (429): no turn for the chat before `until`."""
    tx.execute(
        "INSERT INTO chats (chat, paused_until, paused_at) VALUES (?, ?, ?)"
        " ON CONFLICT (chat) DO UPDATE SET paused_until = CASE"
        " WHEN chats.paused_until > excluded.paused_until THEN chats.paused_until"
        " ELSE excluded.paused_until END, paused_at = excluded.paused_at",
        (chat, until, now),
    )
