"""The text of a message as spans: runs of visible text, each with its markup as data. Shortening
to Telegram's limit happens on spans, before any HTML exists, so a cut can never land inside a
tag or an entity (../shared/reference/telegram-bot-api.md). Pure functions, no I/O.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from datetime import UTC, datetime, tzinfo
from typing import NamedTuple
from urllib.parse import urlsplit

MAX_LINK_LENGTH = 2048
ELLIPSIS = "…"
# Values are not shortened below this; past that point whole items give way instead.
MIN_VALUE_LENGTH = 40

_LONE_SURROGATES = re.compile(r"[\ud800-\udfff]")
_CONTROL_CHARACTERS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


class Span(NamedTuple):
    """A run of visible text and its markup. A tuple because a message is made of dozens, on
    the webhook's path: a frozen dataclass costs several times as much to build."""

    text: str
    bold: bool = False
    code: bool = False
    pre: bool = False
    href: str | None = None
    value: bool = False  # user data, which may be shortened to fit; labels never are
    # Folded under the message: a quote shown as a line or two until tapped (Bot API 7.4's
    # <blockquote expandable>); its lines are one span.
    folded: bool = False


def visible_length(text: str) -> int:
    """Length as Telegram may count it: UTF-16 code units, never less than code points."""
    return len(text.encode("utf-16-le")) // 2


def shorten(text: str, limit: int) -> str:
    """`text` within `limit` visible units, ending in an ellipsis where it was cut."""
    if visible_length(text) <= limit:
        return text
    kept, used = [], visible_length(ELLIPSIS)
    for char in text[:limit]:  # a character is at least one unit: no more can be kept
        used += visible_length(char)
        if used > limit:
            break
        kept.append(char)
    return "".join(kept).rstrip() + ELLIPSIS


def value(raw: str, *, bold: bool = False, code: bool = False, href: str | None = None) -> Span:
    return Span(clean(raw, single_line=True), bold=bold, code=code, href=href, value=True)


def clean(raw: str, *, single_line: bool = False) -> str:
    """User data made safe to send: no lone surrogates (unencodable), no control characters."""
    # isprintable() rules out control characters, lone surrogates and line breaks at once: the
    # common case skips both substitutions.
    text = (
        raw
        if raw.isprintable()
        else _CONTROL_CHARACTERS.sub("", _LONE_SURROGATES.sub("\ufffd", raw))
    )
    return " ".join(text.split()) if single_line else text.strip()


def safe_link(url: str | None) -> str | None:
    if not url or len(url) > MAX_LINK_LENGTH or url != "".join(url.split()):
        return None
    try:
        parts = urlsplit(url)
    except ValueError:
        return None
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        return None
    return clean(url)


def least_length(spans: Sequence[Span], floor: int = MIN_VALUE_LENGTH) -> int:
    """The spans' length with every value cut to `floor`: the least they take readably."""
    total = 0
    for span in spans:
        length = visible_length(span.text)
        total += min(length, floor) if span.value else length
    return total


def capped_values(spans: list[Span], cap: int) -> list[Span]:
    return [span._replace(text=shorten(span.text, cap)) if span.value else span for span in spans]


def cut_spans(spans: list[Span], limit: int) -> list[Span]:
    """The spans that fit whole, the next one shortened, and an ellipsis: a cut between spans,
    never inside markup."""
    kept: list[Span] = []
    room = limit - visible_length(ELLIPSIS)
    for span in spans:
        length = visible_length(span.text)
        if length > room:
            cut = shorten(span.text, room) if room > 1 else ELLIPSIS
            if cut != ELLIPSIS:
                kept.append(span._replace(text=cut))
            elif not (kept and kept[-1].text.endswith(ELLIPSIS)):  # one ellipsis is enough
                kept.append(Span(ELLIPSIS))
            break
        kept.append(span)
        room -= length
    return kept


def shorten_values(
    spans: list[Span], limit: int, *, min_value_length: int = MIN_VALUE_LENGTH
) -> list[Span] | None:
    """Cap every value at one common length, as long as the whole fits: the longest values
    lose the most and short ones keep every character. None when the cap would go below
    `min_value_length`."""
    if visible_length("".join(span.text for span in spans)) <= limit:
        return spans
    lengths = [visible_length(span.text) for span in spans]
    values = [n for span, n in zip(spans, lengths, strict=True) if span.value]
    cap = largest_cap(values, limit - (sum(lengths) - sum(values)))
    if cap < min_value_length:
        return None
    return [
        span._replace(text=shorten(span.text, cap)) if span.value and n > cap else span
        for span, n in zip(spans, lengths, strict=True)
    ]


def largest_cap(lengths: list[int], budget: int) -> int:
    """The largest length that, capping each of `lengths`, keeps their sum within `budget`."""
    low, high = 0, max(lengths, default=0)
    while low < high:
        middle = (low + high + 1) // 2
        if sum(min(n, middle) for n in lengths) <= budget:
            low = middle
        else:
            high = middle - 1
    return low


def span_html(span: Span) -> str:
    markup = html.escape(span.text, quote=False)
    if span.code:
        markup = f"<code>{markup}</code>"
    if span.pre:
        markup = f"<pre>{markup}</pre>"
    if span.href:
        markup = f'<a href="{html.escape(span.href, quote=True)}">{markup}</a>'
    if span.bold:
        markup = f"<b>{markup}</b>"
    if span.folded:
        markup = f"<blockquote expandable>{markup}</blockquote>"
    return markup


def utc_time(timestamp: float) -> str:
    """A Unix time as people read it in the relay's messages and tools: '2026-11-30 10:52:28'."""
    return datetime.fromtimestamp(timestamp, UTC).strftime("%Y-%m-%d %H:%M:%S")


def place_time(at: float, zone: tzinfo) -> str:
    """'12:04 MSK': a time of today as a card or a notice says it, with its zone's name."""
    moment = datetime.fromtimestamp(at, zone)
    return f"{moment:%H:%M} {_name(moment, zone)}"


def place_moment(at: float, zone: tzinfo) -> str:
    """'2026-11-30 10:52:28 MSK': a moment as a message says when something came."""
    moment = datetime.fromtimestamp(at, zone)
    return f"{moment:%Y-%m-%d %H:%M:%S} {_name(moment, zone)}"


def _name(moment: datetime, zone: tzinfo) -> str:
    """The zone's abbreviation at that moment ('MSK', 'CET'); where it has only an offset
    ('+05'), its IANA name, which says more."""
    key = str(getattr(zone, "key", "") or "UTC")
    name = moment.tzname() or key
    return key if name[:1] in "+-" else name


def visible(markup: str) -> str:
    """The visible text of HTML the relay itself wrote: tags dropped, entities read."""
    out, inside = [], False
    for char in markup:
        if char == "<":
            inside = True
        elif char == ">":
            inside = False
        elif not inside:
            out.append(char)
    return html.unescape("".join(out))
