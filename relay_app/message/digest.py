"""Digests: several alerts waiting for the same chat and topic, merged into one message.

Telegram lets a bot post about twenty messages a minute in a group, and a broken deploy fires
more alerts than that. Sent one by one they would queue for minutes; merged, the chat sees the
whole storm at once. When every waiting alert's prebuilt part (`Message.entry`: header, linked
title, details and fields, built when the webhook arrived) fits in one message, the digest holds
them all, whole. Issue alerts in a row with the same heading (GlitchTip's "GlitchTip Alert", and
the severity) share one heading line with their count, rather than repeating it before each.

A backlog, more than that, goes as lines (lines.py): what its alerts share once, then one short
line per issue, each linked to GlitchTip, so that sixty and more alerts fit in a message and a
thousand reach a group's chat within a minute. An alert is never split between digests, so the
digest that holds it is the one whose delivery takes it out of the spool.
Pure functions, no I/O.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Sequence
from datetime import UTC, tzinfo
from itertools import takewhile

from ..words import Words
from .formatting import PARAGRAPH, TELEGRAM_TEXT_LIMIT, Entry, Message, with_late_note
from .lines import Line, backlog_least_length, backlog_spans
from .spans import (
    Span,
    cut_spans,
    place_moment,
    shorten_values,
    span_html,
    visible_length,
)

# Kept free for the first line, whatever its numbers say.
HEADER_ROOM = 200
SEPARATOR = PARAGRAPH
# More than a message's sixty-odd lines, for the same issue waiting several times (one line);
# more would only make one failed send cost more, and its claim hold the spool longer.
MAX_ALERTS_PER_DIGEST = 120
# A backlog's lines are not cut below this (a title, where it was raised) to fit more alerts.
LINE_MIN_VALUE = 28
# Kept free for the note that says a backlog's lines were cut (Words.cut_note), in any language.
CUT_NOTE_ROOM = 100
# What a backlog's lines may take: the rest is the first line's, and the note's when needed.
LINES_LIMIT = TELEGRAM_TEXT_LIMIT - HEADER_ROOM - CUT_NOTE_ROOM - 2 * len(SEPARATOR)


def how_many_fit(messages: Sequence[Message], words: Words) -> int:
    """How many of these waiting alerts, oldest first, go into the next message: all of them
    when their entries fit in one digest; otherwise as many as fit as lines. Always at least
    one (an alert without lines, or too long to share a digest, goes alone, as its own
    message)."""
    if not messages:
        return 0
    if _entries_fit(messages, words):
        return len(messages)
    lined = list(takewhile(lambda message: bool(message.lines), messages))
    if not lined:  # an unknown payload's, or from before lines: as many entries as fit
        return max(_most(messages, lambda some: _entries_fit(some, words)), 1)
    return max(_most(lined, lambda some: _lines_fit(some, words)), 1)


def _entries_fit(messages: Sequence[Message], words: Words) -> bool:
    """Whether all of these fit in one digest as their whole entries."""
    if len(messages) > MAX_ALERTS_PER_DIGEST:
        return False
    parts = _parts(messages, words)
    used = HEADER_ROOM + sum(len(SEPARATOR) + visible_length(p.text) for p in parts)
    return used <= TELEGRAM_TEXT_LIMIT


def _lines_fit(messages: Sequence[Message], words: Words) -> bool:
    lines = [message.lines for message in messages]
    return backlog_least_length(lines, LINE_MIN_VALUE, words) <= LINES_LIMIT


def _most(messages: Sequence[Message], fit: Callable[[Sequence[Message]], bool]) -> int:
    """The most of these, oldest first, that `fit` one digest. A digest only grows with each
    alert added, so the count is found by halving."""

    def fits(count: int) -> bool:
        return fit(messages[:count])

    low, high = 0, min(len(messages), MAX_ALERTS_PER_DIGEST)
    while low < high:
        middle = (low + high + 1) // 2
        if fits(middle):
            low = middle
        else:
            high = middle - 1
    return low


def _parts(messages: Sequence[Message], words: Words) -> list[Entry]:
    """The digest's parts after its first line: each alert's entry, except that
    alerts in a row with the same heading share it, shown once with their count."""
    parts: list[Entry] = []
    run: list[Entry] = []
    run_heading: Entry | None = None

    def close_run() -> None:
        if run_heading is not None and len(run) > 1:
            count = f" · {words.count(words.alerts, len(run))}"
            parts.append(Entry(run_heading.html + count, run_heading.text + count))
            parts.extend(_without_heading(entry, run_heading) for entry in run)
        else:
            parts.extend(run)
        run.clear()

    for message in messages:
        entry = message.entry
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
    words: Words,
    *,
    now: float,
    late_after: float,
    zone: tzinfo = UTC,
) -> Message:
    """The one message to send for these alerts, oldest first: an alert alone as it was built
    (with a line saying how late it is, when it is), several as a digest; its times in `zone`,
    the place's."""
    if not messages:
        raise ValueError("a message needs at least one alert")
    first, last = min(received_at), max(received_at)
    if len(messages) == 1:
        if now - first > late_after:
            return with_late_note(messages[0], words, received_at=first, now=now, zone=zone)
        return messages[0]
    heading = header(len(messages), (first, last), words, now=now, late_after=late_after, zone=zone)
    parts = _backlog_or_parts(messages, words)
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


def _backlog_or_parts(messages: Sequence[Message], words: Words) -> list[Entry]:
    """The alerts' whole entries when they fit; otherwise, when every alert has them, their
    lines."""
    if _entries_fit(messages, words) or not all(m.lines for m in messages):
        return _parts(messages, words)
    return [backlog([m.lines for m in messages], words)]


def backlog(lines: Sequence[Sequence[Line]], words: Words) -> Entry:
    """Alerts as a backlog's lines, their values cut evenly to fit; when anything was cut, a
    last line says where to read it whole."""
    spans = backlog_spans(lines, words)
    fitted = shorten_values(spans, LINES_LIMIT, min_value_length=2) or cut_spans(spans, LINES_LIMIT)
    if fitted != spans:
        fitted = [*fitted, Span(SEPARATOR + words.cut_note)]
    return Entry("".join(span_html(span) for span in fitted), "".join(s.text for s in fitted))


def header(
    count: int,
    received: tuple[float, float],
    words: Words,
    *,
    now: float,
    late_after: float,
    zone: tzinfo = UTC,
) -> str:
    """'🗂 12 alerts, received 2026-11-30 10:52:03 to 10:52:14 UTC (over 11 s)': `received`,
    when the first and the last of them came."""
    first, last = received
    start, end = time_span(first, last, zone)
    line = words.digest_head.format(
        alerts=words.count(words.alerts, count),
        start=start,
        end=end,
        span=words.duration(last - first),
    )
    if now - first > late_after:
        line += words.digest_sent_after.format(delay=words.duration(now - first))
    return line


def time_span(first: float, last: float, zone: tzinfo = UTC) -> tuple[str, str]:
    """'2026-11-30 10:52:03' and '10:52:14 UTC' in `zone`: the end's date only when it is
    another day, its zone's name after it."""
    start, end = place_moment(first, zone), place_moment(last, zone)
    start = start.rsplit(" ", 1)[0]
    return start, end[11:] if end[:10] == start[:10] else end
