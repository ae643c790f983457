"""An issue's details from GlitchTip's API (issue_api/details.py) as lines of its message: where
the error was raised and its source line, how often and since when, its level when it is not an
error, and the exception's value when the title cut it. Pure functions, no I/O.

    📍 shop/cart.py:4 in total
    return subtotal / discount
    🆕 New issue, first seen 2 min ago · seen 3 times

and, under a message of one issue, the latest event's stack folded (`stack_spans`).
"""

from __future__ import annotations

from dataclasses import replace

from ..core.issue_details import Frame, IssueDetails
from ..words import Words
from .spans import Span, clean, shorten, value
from .trend import sparkline

# First seen this recently: the issue is new, the most important thing to know about it.
NEW_WITHIN = 600.0
SOURCE_LIMIT = 120
WHERE_LIMIT = 120
VALUE_LIMIT = 300


def detail_spans(
    details: IssueDetails, words: Words, *, title: str, now: float, new: bool = True
) -> list[Span]:
    """The lines under an issue's title (each begins with a line break); `new` False: never
    '🆕 New issue' (an issue posted again, whose first message said it)."""
    spans: list[Span] = []
    if details.frame is not None:
        at = frame_where(details.frame, words)
        spans += [Span("\n📍 "), value(shorten(clean(at), WHERE_LIMIT))]
        if details.frame.source:
            source = shorten(clean(details.frame.source, single_line=True), SOURCE_LIMIT)
            spans += [Span("\n"), value(source, code=True)]
    seen = seen_words(details, words, now=now, new=new)
    if seen:
        spans += [Span(f"\n{seen}")]
    # An error's level goes without saying; a fatal one looks like any error by its colour,
    # so it says so, as a warning or an info does.
    if details.level and details.level.lower() != "error":
        spans += [Span(f"\n{words.level}"), value(details.level)]
    cut_value = _value_cut_from(title, details)
    if cut_value:
        spans += [Span(f"\n{words.value}"), value(shorten(clean(cut_value), VALUE_LIMIT))]
    return spans


def stack_spans(details: IssueDetails, words: Words) -> list[Span]:
    """The latest event's stack, the app's innermost frame first, folded under the card (one
    line until tapped): 'shop/cart.py:4 in total', a line each; none without frames."""
    if not details.stack:
        return []
    lines = [shorten(clean(frame_where(frame, words)), WHERE_LIMIT) for frame in details.stack]
    return [Span("\n"), Span("\n".join(lines), value=True, folded=True)]


def seen_words(details: IssueDetails, words: Words, *, now: float, new: bool = True) -> str:
    """'🆕 New issue, first seen 2 min ago · seen 3 times', '🔁 Seen 1204 times · first seen
    3 d ago · 24 h: ▁▁▂█' (the hours when the watcher has read them), or less when GlitchTip
    did not say."""
    seen = first = None
    if details.count is not None:
        seen = words.count(words.seen_times, details.count)
    if details.first_seen is not None:
        age = now - details.first_seen
        if new and age < NEW_WITHIN:
            fresh = words.new_issue.format(age=words.duration(age))
            return " · ".join(filter(None, [fresh, seen]))  # new: the watcher has no hours yet
        first = words.first_seen.format(age=words.duration(age))
    said = " · ".join(filter(None, [seen, first]))
    trend = words.trend_24h.format(spark=sparkline(details.hourly)) if any(details.hourly) else ""
    if not said:
        return f"📈 {trend}" if trend else ""
    return f"🔁 {said[0].upper()}{said[1:]}" + (f" · {trend}" if trend else "")


def where(details: IssueDetails | None, words: Words) -> str | None:
    """'cart.py:4 in total': the frame as a backlog's line shows it, the file's name alone."""
    if details is None or details.frame is None:
        return None
    frame = details.frame
    return frame_where(replace(frame, filename=frame.filename.rsplit("/", 1)[-1]), words)


def frame_where(frame: Frame, words: Words) -> str:
    """'shop/cart.py:4 in total'."""
    at = f"{frame.filename}:{frame.line}" if frame.line is not None else frame.filename
    return words.frame_where.format(at=at, function=frame.function) if frame.function else at


def _value_cut_from(title: str, details: IssueDetails) -> str | None:
    """The exception's value when the title does not hold it whole (GlitchTip cuts long ones)."""
    found = details.exception_value
    if not found:
        return None
    plain = " ".join(found.split())
    return None if plain in " ".join(title.split()) else found
