"""Telegram's rate limits, as rules for when the next message to a chat may go.

Telegram answers a bot that sends faster than about one message a second to a chat, twenty a
minute to a group, or thirty a second overall with 429 and a pause (`retry_after`); a relay that
hits those limits in an alert storm spends its time being told to wait. So every send, the
webhook's own and every background one, first takes a turn here. The rules are pure functions
over the recent sends; the spool keeps those sends for all workers and processes that share it
(`Spool.reserve`), and `MemoryPacer` keeps them for a process without a usable spool.

Each limit carries a margin: Telegram counts arrivals, and two requests that leave 1.0 s apart
can arrive closer than that.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Sequence
from contextlib import suppress
from typing import Protocol

# About one message a second per chat. The margin covers a request that leaves on time but
# arrives late (a busy host, a slow proxy) right before one that does not.
CHAT_INTERVAL = 1.2
# At most twenty messages a minute in a group or supergroup.
GROUP_LIMIT = 20
GROUP_WINDOW = 61.0
# About thirty messages a second for the whole bot.
BOT_LIMIT = 30
BOT_WINDOW = 1.05
# Sends older than this can no longer hold anything back.
REMEMBERED_FOR = GROUP_WINDOW


def next_send_at(
    now: float,
    *,
    to_chat: Sequence[float],
    by_bot: Sequence[float],
    paused_until: float | None,
    group: bool,
) -> float:
    """The earliest time, `now` or later, when one more message may go to the chat.
    `to_chat` holds the chat's recent send times and `by_bot` the bot's, newest first; only
    the newest GROUP_LIMIT and BOT_LIMIT of each matter."""
    earliest = now
    if paused_until is not None:
        earliest = max(earliest, paused_until)
    if to_chat:
        earliest = max(earliest, to_chat[0] + CHAT_INTERVAL)
    if group and len(to_chat) >= GROUP_LIMIT:
        earliest = max(earliest, to_chat[GROUP_LIMIT - 1] + GROUP_WINDOW)
    if len(by_bot) >= BOT_LIMIT:
        earliest = max(earliest, by_bot[BOT_LIMIT - 1] + BOT_WINDOW)
    return earliest


class Pacer(Protocol):
    """Turns for sending, shared by everyone who sends as this bot."""

    def reserve(self, chat: str, *, group: bool, now: float) -> float:
        """Take the chat's next turn if it is `now` and return `now`; otherwise take nothing
        and return when the turn will be."""

    def give_back(self, chat: str, at: float) -> None:
        """Return a turn taken at `at` that was not used."""

    def pause(self, chat: str, until: float) -> None:
        """Telegram asked for a pause (429): no turn for the chat before `until`."""


class MemoryPacer:
    """Pacing for one process: used while the spool is switched off or unusable, when there
    is nowhere to share it. Several workers then each pace on their own."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sends: deque[tuple[float, str]] = deque()  # oldest first
        self._pauses: dict[str, float] = {}

    def reserve(self, chat: str, *, group: bool, now: float) -> float:
        with self._lock:
            while self._sends and self._sends[0][0] < now - REMEMBERED_FOR:
                self._sends.popleft()
            to_chat = [at for at, to in reversed(self._sends) if to == chat][:GROUP_LIMIT]
            by_bot = [at for at, _ in reversed(self._sends) if at > now - BOT_WINDOW]
            earliest = next_send_at(
                now,
                to_chat=to_chat,
                by_bot=by_bot[:BOT_LIMIT],
                paused_until=self._pauses.get(chat),
                group=group,
            )
            if earliest <= now:
                self._sends.append((now, chat))
            return earliest

    def give_back(self, chat: str, at: float) -> None:
        with self._lock, suppress(ValueError):  # already forgotten
            self._sends.remove((at, chat))

    def pause(self, chat: str, until: float) -> None:
        with self._lock:
            self._pauses[chat] = max(until, self._pauses.get(chat, 0.0))
