"""Digests: several alerts waiting for the same chat and topic, merged into one message.

Telegram lets a bot post about twenty messages a minute in a group, and a broken deploy fires
more alerts than that. Sent one by one they would queue for minutes; merged, the chat sees the
whole storm at once. Each alert keeps its own prebuilt part (`Message.entry`: header, linked
title and fields, built when the webhook arrived, or its shorter `Message.brief` while a
backlog builds up), whole: an alert is never split between digests, so the digest that holds
it is the one whose delivery takes it out of the spool. Issue alerts in a row with the same
heading (GlitchTip's "GlitchTip Alert", and the severity) share one heading line with their
count, rather than repeating it before each.
Pure functions, no I/O.
"""

from __future__ import annotations

import html
from collections.abc import Sequence

from .formatting import (
    PARAGRAPH,
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
SEPARATOR = PARAGRAPH
# Enough to drain a storm in a few messages; more would only make one failed send cost more.
MAX_ALERTS_PER_DIGEST = 100


def how_many_fit(messages: Sequence[Message]) -> int:
    """How many of these waiting alerts, oldest first, go into the next message: all of them
    when their entries fit in one digest; otherwise as many as fit as briefs. Always at least
    one (an alert too long to share a digest goes alone, as its own message)."""
    if _fitting(messages, briefs=False) == len(messages):
        return len(messages)
    return max(_fitting(messages, briefs=True), 1) if messages else 0


def _fitting(messages: Sequence[Message], *, briefs: bool) -> int:
    """The most of these, oldest first, whose parts fit in one digest. A digest only grows
    with each alert added, so the count is found by halving."""

    def fits(count: int) -> bool:
        parts = _parts(messages[:count], briefs=briefs)
        used = HEADER_ROOM + sum(len(SEPARATOR) + visible_length(p.text) for p in parts)
        return used <= TELEGRAM_TEXT_LIMIT

    low, high = 0, min(len(messages), MAX_ALERTS_PER_DIGEST)
    while low < high:
        middle = (low + high + 1) // 2
        if fits(middle):
            low = middle
        else:
            high = middle - 1
    return low


def _parts(messages: Sequence[Message], *, briefs: bool) -> list[Entry]:
    """The digest's parts after its first line: each alert's entry (or brief), except that
    alerts in a row with the same heading share it, shown once with their count."""
    parts: list[Entry] = []
    run: list[Entry] = []
    run_heading: Entry | None = None

    def close_run() -> None:
        if run_heading is not None and len(run) > 1:
            count = f" · {len(run)} alerts"
            parts.append(Entry(run_heading.html + count, run_heading.text + count))
            parts.extend(_without_heading(entry, run_heading) for entry in run)
        else:
            parts.extend(run)
        run.clear()

    for message in messages:
        entry = message.brief if briefs else message.entry
        heading = message.heading
        if heading is not None and _without_heading(entry, heading) is entry:
            heading = None  # not begun by its heading after all: shown whole
        if heading is None or run_heading is None or heading.text != run_heading.text:
            close_run()
            run_heading = heading
        run.append(entry)
    close_run()
    return parts


def _without_heading(entry: Entry, heading: Entry) -> Entry:
    """The entry after its heading line; the entry itself if it does not begin with it."""
    text_prefix, html_prefix = heading.text + SEPARATOR, heading.html + SEPARATOR
    if entry.text.startswith(text_prefix) and entry.html.startswith(html_prefix):
        return Entry(entry.html[len(html_prefix) :], entry.text[len(text_prefix) :])
    return entry


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
    # A backlog (how_many_fit counted briefs): every alert as its brief.
    briefs = _fitting(messages, briefs=False) < len(messages)
    parts = _parts(messages, briefs=briefs)
    text = SEPARATOR.join([heading, *(part.text for part in parts)])
    if visible_length(text) > TELEGRAM_TEXT_LIMIT:
        raise ValueError("these alerts do not fit in one digest; pack them with how_many_fit")
    bold_heading = f"<b>{html.escape(heading, quote=False)}</b>"
    return Message(
        html=SEPARATOR.join([bold_heading, *(part.html for part in parts)]),
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
