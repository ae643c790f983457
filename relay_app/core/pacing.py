"""Telegram's rate limits, as rules for when the next message to a chat may go.

Telegram answers a bot that sends faster than about one message a second to a chat, twenty a
minute to a group, or thirty a second overall with 429 and a pause (`retry_after`); a relay that
hits those limits in an alert storm spends its time being told to wait. So every send, the
webhook's own and every background one, first takes a turn here. The rules are pure functions
over the recent sends; the spool keeps those sends for all workers and processes that share it
(spool/pacer.py), the in-memory one included.

Each limit carries a margin: Telegram counts arrivals, and two requests that leave 1.0 s apart
can arrive closer than that. A group's twenty a minute are spread evenly, one every 3.05 s,
rather than sent in a burst: Telegram may hold a group to that (a burst then earns a 429 per
message), and a backlog's messages, fifty alerts and more each, lose nothing by the spacing. A
message Telegram refused with 429 gives its turn back: its `retry_after` alone says when the
next may go.
"""

from __future__ import annotations

from collections.abc import Sequence

from .clock import stepped_back

# About one message a second per chat. The margin covers a request that leaves on time but
# arrives late (a busy host, a slow proxy) right before one that does not.
CHAT_INTERVAL = 1.2
# At most twenty messages a minute in a group or supergroup, spread evenly over it.
GROUP_LIMIT = 20
GROUP_WINDOW = 61.0
GROUP_INTERVAL = GROUP_WINDOW / GROUP_LIMIT
# About thirty messages a second for the whole bot.
BOT_LIMIT = 30
BOT_WINDOW = 1.05
# Sends older than this can no longer hold anything back.
REMEMBERED_FOR = GROUP_WINDOW


def interval(*, group: bool) -> float:
    """The least time between two messages to a chat."""
    return GROUP_INTERVAL if group else CHAT_INTERVAL


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
    the newest GROUP_LIMIT and BOT_LIMIT of each matter. A send time well after `now` (the
    clock stepped back since it was recorded) no longer counts: a step back never stalls a
    chat."""
    to_chat = [at for at in to_chat if not stepped_back(at, now)]
    by_bot = [at for at in by_bot if not stepped_back(at, now)]
    earliest = now
    if paused_until is not None:
        earliest = max(earliest, paused_until)
    if to_chat:
        earliest = max(earliest, to_chat[0] + interval(group=group))
    if group and len(to_chat) >= GROUP_LIMIT:
        earliest = max(earliest, to_chat[GROUP_LIMIT - 1] + GROUP_WINDOW)
    if len(by_bot) >= BOT_LIMIT:
        earliest = max(earliest, by_bot[BOT_LIMIT - 1] + BOT_WINDOW)
    return earliest
