"""Digests: several alerts waiting for the same chat and topic, merged into one message.

Telegram lets a bot post about twenty messages a minute in a group, and a broken deploy fires
more alerts than that. Sent one by one they would queue for minutes; merged, the chat sees the
whole storm at once. Each alert keeps its own prebuilt part (`Message.entry`: header, linked
title and fields, built when the webhook arrived, or its shorter `Message.brief` while a
backlog builds up), whole: an alert is never split between digests, so the digest that holds
it is the one whose delivery takes it out of the spool.
Pure functions, no I/O.
"""

from __future__ import annotations

import html
from collections.abc import Sequence

from .formatting import (
    TELEGRAM_TEXT_LIMIT,
    Entry,
    Message,
    duration,
    utc_time,
    visible_length,
    with_late_note,
)

# Kept free for the first line, whatever its numbers say.
HEADER_ROOM = 200
SEPARATOR = "\n\n"
# Enough to drain a storm in a few messages; more would only make one failed send cost more.
MAX_ALERTS_PER_DIGEST = 100


def how_many_fit(messages: Sequence[Message]) -> int:
    """How many of these waiting alerts, oldest first, go into the next message: all of them
    when their entries fit in one digest; otherwise as many as fit as briefs. Always at least
    one (an alert too long to share a digest goes alone, as its own message)."""
    if _fitting([m.entry for m in messages]) == len(messages):
        return len(messages)
    return max(_fitting([m.brief for m in messages]), 1) if messages else 0


def _fitting(entries: Sequence[Entry]) -> int:
    used = HEADER_ROOM
    count = 0
    for entry in entries[:MAX_ALERTS_PER_DIGEST]:
        used += len(SEPARATOR) + visible_length(entry.text)
        if used > TELEGRAM_TEXT_LIMIT:
            break
        count += 1
    return count


def compose(
    messages: Sequence[Message],
    received_at: Sequence[float],
    *,
    now: float,
    late_after: float,
) -> Message:
    """The one message to send for these alerts, oldest first: an alert alone as it was built
    (with a line saying how late it is, when it is), several as a digest."""
    if not messages:
        raise ValueError("a message needs at least one alert")
    first, last = min(received_at), max(received_at)
    if len(messages) == 1:
        if now - first > late_after:
            return with_late_note(messages[0], received_at=first, now=now)
        return messages[0]
    heading = header(len(messages), first, last, now=now, late_after=late_after)
    entries = [message.entry for message in messages]
    if _fitting(entries) < len(entries):  # a backlog: how_many_fit counted briefs
        entries = [message.brief for message in messages]
    text = SEPARATOR.join([heading, *(entry.text for entry in entries)])
    if visible_length(text) > TELEGRAM_TEXT_LIMIT:
        raise ValueError("these alerts do not fit in one digest; pack them with how_many_fit")
    bold_heading = f"<b>{html.escape(heading, quote=False)}</b>"
    return Message(
        html=SEPARATOR.join([bold_heading, *(entry.html for entry in entries)]),
        text=text,
        # Within the limit by construction, in UTF-16 units (never fewer than code points), so
        # the plain text needs no shortening: shortening it would drop alerts.
        fallback=text,
    )


def header(count: int, first: float, last: float, *, now: float, late_after: float) -> str:
    """'🗂 12 alerts, received 2026-11-30 10:52:03 to 10:52:14 UTC (over 11 s)'."""
    start, end = utc_time(first), utc_time(last)
    if end[:10] == start[:10]:
        end = end[11:]  # same day: the time is enough
    line = f"🗂 {count} alerts, received {start} to {end} UTC (over {duration(last - first)})"
    if now - first > late_after:
        line += f"; sent {duration(now - first)} after the first"
    return line
