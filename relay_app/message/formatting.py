"""Turns a parsed alert into the Telegram message: pure functions, no I/O (but for the one
log record that says a payload could not be read as an alert).

A message is first built as spans of visible text, each with its markup as data. Shortening to
Telegram's 4096-character limit happens on those spans, before any HTML exists, so a cut can
never land inside a tag or an entity; the HTML and the plain text are both rendered from the
same spans and always agree. Rules: ../shared/reference/telegram-bot-api.md.
"""

from __future__ import annotations

import html
import json
import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any, NamedTuple
from urllib.parse import urlsplit

from ..glitchtip.webhook import (
    Alert,
    Issue,
    IssueAlert,
    MonitorChange,
    UnrecognizedPayload,
    UptimeAlert,
    parse_alert,
)
from .subjects import NO_SUBJECTS, Subjects, subjects_of

TELEGRAM_TEXT_LIMIT = 4096
# Kept free in every message for the lines a late delivery and a second chance add
# (`with_note`), so adding them never means shortening, that is rebuilding, a message that was
# already accepted.
NOTES_ROOM = 200
MESSAGE_LIMIT = TELEGRAM_TEXT_LIMIT - NOTES_ROOM
# The first line of a message sent again after an attempt that may have reached the chat (its
# reply was lost, it timed out mid-send, its process died mid-attempt, or its attempts ran out
# before its second chance): a reader knows what they may have seen already.
REPEAT_NOTE = "↩️ Sent again: this alert may repeat an earlier message."
REPEAT_NOTE_DIGEST = "↩️ Sent again: some of these alerts may repeat an earlier message."
# Sent when Telegram rejects our HTML or its length: well inside the limit, so a disagreement
# about how characters are counted cannot make the fallback fail too.
PLAIN_FALLBACK_LIMIT = 3000
MAX_LINK_LENGTH = 2048
ELLIPSIS = "…"
# An alert's heading is cut to this once, when it is read, and never shortened after: the
# message and its digest entries then all begin with the very same line.
HEADING_LIMIT = 100
# Between an alert's parts (heading, issues, footer), and between alerts in a digest.
PARAGRAPH = "\n\n"
# Values are not shortened below this; past that point whole issues move into "and N more".
MIN_VALUE_LENGTH = 40
# An alert's part of a digest (see digest.py) is the same message, built again within this
# when the whole is longer, so that one long alert leaves room in a digest for others...
DIGEST_ENTRY_LIMIT = 1000
# ...and its brief, for digests sent while a backlog builds up: twelve or more to a message,
# so that a storm of 200 alerts fits in the twenty messages a minute a group allows.
BRIEF_ENTRY_LIMIT = 320

SEVERITY_BY_COLOR = {"#e52b50": "🔴", "#4b60b4": "🔵"}
SEVERITY_NO_COLOR = "🟠"  # GlitchTip sends no colour for warnings (and other non-error levels)
SEVERITY_OTHER_COLOR = "⚪"
_SEVERITY_RANK = ["🔴", "🟠", "⚪", "🔵"]
MONITOR_MARKERS = {"down": ("🔴", "DOWN"), "up": ("✅", "UP"), "unknown": ("ℹ️", "UPTIME")}

_LONE_SURROGATES = re.compile(r"[\ud800-\udfff]")
_CONTROL_CHARACTERS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


@dataclass(frozen=True)
class Entry:
    """An alert as one part of a digest: HTML complete in itself, and its visible text."""

    html: str
    text: str


@dataclass(frozen=True)
class Message:
    """One alert, built once, ready for Telegram; retries send exactly this, never a rebuild."""

    html: str
    text: str  # the visible text of `html`: what Telegram shows, and what an ERROR log holds
    fallback: str  # plain text for when Telegram rejects the HTML or its length
    # Its part of a digest when shorter than the message; None when it is the message itself.
    short_entry: Entry | None = None
    # Its part of a digest in a backlog, when shorter than the entry; None: the entry itself.
    brief_entry: Entry | None = None
    # An issue alert's first line (severity and GlitchTip's heading), with which its message
    # and both entries begin: a digest of several such alerts shows it once, not per alert.
    heading: Entry | None = None
    # The issues and monitors it is about, for the buttons and threads that go with it.
    subjects: Subjects = NO_SUBJECTS

    @property
    def entry(self) -> Entry:
        return self.short_entry or Entry(self.html, self.text)

    @property
    def brief(self) -> Entry:
        return self.brief_entry or self.entry


class Span(NamedTuple):
    """A run of visible text and its markup. A tuple because a message is made of dozens, on
    the webhook's path: a frozen dataclass costs several times as much to build."""

    text: str
    bold: bool = False
    code: bool = False
    pre: bool = False
    href: str | None = None
    value: bool = False  # user data, which may be shortened to fit; labels never are


def message_for(payload: dict[str, Any]) -> Message:
    """The message for a GlitchTip payload, as the webhook builds it and `relay-app preview`
    shows it."""
    try:
        alert = parse_alert(payload)
        return replace(format_alert(alert), subjects=subjects_of(alert))
    except Exception:
        # A bug in reading one payload shape must not cost the alert: forward it raw instead.
        logging.getLogger(__name__).exception(
            "could not format this payload as a GlitchTip alert; forwarding it raw"
        )
        return format_alert(UnrecognizedPayload(payload))


def format_alert(alert: Alert) -> Message:
    """The alert's message, and its shorter parts for digests when it is long (most are not:
    one issue is about 150 characters). Its spans are built and measured once, and fitted to
    each limit."""
    parts = _Parts(*_parts(alert))
    message = render(parts.fit(MESSAGE_LIMIT))
    if isinstance(alert, IssueAlert):
        heading = render(parts.header)
        message = replace(message, heading=Entry(heading.html, heading.text))
    length = visible_length(message.text)
    if length > DIGEST_ENTRY_LIMIT:
        entry = render(parts.fit(DIGEST_ENTRY_LIMIT))
        message = replace(message, short_entry=Entry(entry.html, entry.text))
    if length > BRIEF_ENTRY_LIMIT:
        brief = render(parts.fit(BRIEF_ENTRY_LIMIT))
        message = replace(message, brief_entry=Entry(brief.html, brief.text))
    return message


Footer = Callable[[int], list[Span]]


def _parts(alert: Alert) -> tuple[list[Span], list[list[Span]], Footer]:
    """Header, items (issues or monitors) and the footer for however many items are shown."""
    if isinstance(alert, IssueAlert):
        return (
            _issue_header(alert),
            [_issue_block(issue, numbered=len(alert.issues) > 1) for issue in alert.issues],
            lambda shown: _hidden_issues(alert.total - shown),
        )
    if isinstance(alert, UptimeAlert):
        return (
            [],
            [
                _monitor_block(monitor, first=index == 0)
                for index, monitor in enumerate(alert.monitors)
            ],
            lambda shown: _hidden_monitors(alert.total - shown),
        )
    dump = json.dumps(alert.payload, ensure_ascii=False, indent=1, default=str)
    header = [Span("⚠️ "), Span("Webhook payload in a shape the relay does not know", bold=True)]
    return header, [[Span("\n"), Span(_clean(dump), pre=True, value=True)]], lambda shown: []


def render(spans: Sequence[Span]) -> Message:
    text = "".join(span.text for span in spans)
    return Message(
        html="".join(_span_html(span) for span in spans),
        text=text,
        fallback=shorten(text, PLAIN_FALLBACK_LIMIT),
    )


def with_late_note(message: Message, *, received_at: float, now: float) -> Message:
    """`message` with a last line saying when GlitchTip sent it and how late it arrives;
    `received_at` and `now` are Unix times."""
    return with_note(message, late_note(received_at, now))


def with_note(message: Message, note: str) -> Message:
    """`message` with `note` as its last line, within the room every message keeps for it."""
    return Message(
        html=f"{message.html}\n\n{html.escape(note, quote=False)}",
        text=f"{message.text}\n\n{note}",
        fallback=f"{message.fallback}\n\n{note}",
    )


def with_first_line(message: Message, line: str) -> Message:
    """`message` with `line` above it, within the room every message keeps for its notes."""
    return Message(
        html=f"{html.escape(line, quote=False)}\n\n{message.html}",
        text=f"{line}\n\n{message.text}",
        fallback=f"{line}\n\n{message.fallback}",
    )


def late_note(received_at: float, now: float) -> str:
    delay = duration(now - received_at)
    return f"⏳ Late: GlitchTip sent this at {utc_time(received_at)} UTC; delivered {delay} later."


def utc_time(timestamp: float) -> str:
    """A Unix time as people read it in the relay's messages and tools: '2026-11-30 10:52:28'."""
    return datetime.fromtimestamp(timestamp, UTC).strftime("%Y-%m-%d %H:%M:%S")


def duration(seconds: float) -> str:
    """'48 s', '3 min 12 s', '2 h 5 min', '1 d 3 h': two units are enough to judge a delay."""
    total = max(0, round(seconds))
    units = (("d", 86400), ("h", 3600), ("min", 60), ("s", 1))
    index = next(i for i, (_, size) in enumerate(units) if total >= size or size == 1)
    unit, size = units[index]
    words = f"{total // size} {unit}"
    if index + 1 < len(units):
        next_unit, next_size = units[index + 1]
        if remainder := total % size // next_size:
            words += f" {remainder} {next_unit}"
    return words


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


# --- the pieces of a message -------------------------------------------------------------


def _issue_header(alert: IssueAlert) -> list[Span]:
    markers = [_severity(issue.color) for issue in alert.issues]
    worst = min(markers, key=_SEVERITY_RANK.index)
    # Not a value span: shortened here once, so that no fitting below shortens it differently.
    heading = shorten(_clean(alert.heading or "GlitchTip Alert", single_line=True), HEADING_LIMIT)
    return [Span(f"{worst} "), Span(heading, bold=True)]


def _issue_block(issue: Issue, *, numbered: bool) -> list[Span]:
    spans = [Span("\n\n")]
    if numbered:
        spans.append(Span(f"{_severity(issue.color)} "))
    spans.append(_value(issue.title or "(untitled issue)", bold=True, href=_safe_link(issue.link)))
    if issue.culprit:
        spans += [Span("\nin "), _value(issue.culprit, code=True)]
    details: list[list[Span]] = []
    if issue.short_id:
        details.append([_value(issue.short_id, bold=True)])
    for field in issue.fields:
        if field.title:
            details.append([_value(field.title), Span(": "), _value(field.value)])
        else:
            details.append([_value(field.value)])
    for index, detail in enumerate(details):
        spans.append(Span("\n" if index == 0 else " · "))
        spans += detail
    return spans


def _hidden_issues(count: int) -> list[Span]:
    if count <= 0:
        return []
    noun = "issue" if count == 1 else "issues"
    return [Span(f"\n\n…and {count} more {noun} not shown here")]


def _monitor_block(monitor: MonitorChange, *, first: bool) -> list[Span]:
    marker, label = MONITOR_MARKERS[monitor.state]
    separator = "" if first else "\n\n"
    spans = [
        Span(f"{separator}{marker} "),
        Span(label, bold=True),
        Span(" · "),
        _value(monitor.name or "(unnamed monitor)", bold=True, href=_safe_link(monitor.link)),
    ]
    if monitor.sentence:
        spans += [Span("\n"), _value(monitor.sentence)]
    return spans


def _hidden_monitors(count: int) -> list[Span]:
    return [Span(f"\n\n…and {count} more monitors not shown here")] if count > 0 else []


def _severity(color: str | None) -> str:
    if color is None:
        return SEVERITY_NO_COLOR
    return SEVERITY_BY_COLOR.get(color, SEVERITY_OTHER_COLOR)


def _value(raw: str, *, bold: bool = False, code: bool = False, href: str | None = None) -> Span:
    return Span(_clean(raw, single_line=True), bold=bold, code=code, href=href, value=True)


def _clean(raw: str, *, single_line: bool = False) -> str:
    """User data made safe to send: no lone surrogates (unencodable), no control characters."""
    # isprintable() rules out control characters, lone surrogates and line breaks at once: the
    # common case skips both substitutions.
    text = (
        raw
        if raw.isprintable()
        else _CONTROL_CHARACTERS.sub("", _LONE_SURROGATES.sub("\ufffd", raw))
    )
    return " ".join(text.split()) if single_line else text.strip()


def _safe_link(url: str | None) -> str | None:
    if not url or len(url) > MAX_LINK_LENGTH or url != "".join(url.split()):
        return None
    try:
        parts = urlsplit(url)
    except ValueError:
        return None
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        return None
    return _clean(url)


# --- fitting into Telegram's limit ---------------------------------------------------------


class _Parts:
    """Header, items (issues or monitors) and the footer for however many items are shown,
    measured once: fitting them to a limit then costs time linear in their size, however many
    items there are (a webhook can name thousands)."""

    def __init__(self, header: list[Span], items: list[list[Span]], footer: Footer) -> None:
        self.header, self.items, self.footer = header, items, footer
        # Each part's length with every value capped at MIN_VALUE_LENGTH: the shortest it gets
        # while its values stay readable.
        self._header_least = _least_length(header)
        self._item_least = [_least_length(item) for item in items]

    def fit(self, limit: int) -> list[Span]:
        """Header, items and footer within the limit: long values shortened evenly first; only
        when that would leave values unreadably short do trailing items give way to the
        footer's count."""
        for shown in self._most_shown(limit):
            spans = [*self.header, *self._spans_of(shown), *self.footer(shown)]
            fitted = _shorten_values(spans, limit)
            if fitted is not None:
                return fitted
        items = self.items
        spans = [*self.header, *(items[0] if items else []), *self.footer(1 if items else 0)]
        if limit < MESSAGE_LIMIT:
            # A digest's part of the alert, where the whole message cannot be: its header and
            # title stay readable and the fields that do not fit are cut off the end.
            return _cut_spans(_capped_values(spans, MIN_VALUE_LENGTH), limit)
        # Even one item does not fit with readable values: accept values shorter than usual,
        # and when its labels alone are too many (thousands of fields), cut the item short.
        fitted = _shorten_values(spans, limit, min_value_length=2)
        return fitted if fitted is not None else _cut_spans(spans, limit)

    def _most_shown(self, limit: int) -> list[int]:
        """How many items to try showing, most first: the counts whose parts fit with values
        of readable length (at which `_shorten_values` succeeds), in one pass over them."""
        fitting, used = [], self._header_least
        for count, least in enumerate(self._item_least, start=1):
            used += least
            if used > limit:
                break  # longer with every item: no more can fit
            if used + _least_length(self.footer(count)) <= limit:
                fitting.append(count)
        return fitting[::-1]

    def _spans_of(self, shown: int) -> list[Span]:
        return [span for item in self.items[:shown] for span in item]


def _least_length(spans: Sequence[Span]) -> int:
    total = 0
    for span in spans:
        length = visible_length(span.text)
        total += min(length, MIN_VALUE_LENGTH) if span.value else length
    return total


def _capped_values(spans: list[Span], cap: int) -> list[Span]:
    return [span._replace(text=shorten(span.text, cap)) if span.value else span for span in spans]


def _cut_spans(spans: list[Span], limit: int) -> list[Span]:
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


def _shorten_values(
    spans: list[Span], limit: int, *, min_value_length: int = MIN_VALUE_LENGTH
) -> list[Span] | None:
    """Cap every value at one common length, as long as the whole fits: the longest values
    lose the most and short ones keep every character. None when the cap would go below
    `min_value_length`."""
    if visible_length("".join(span.text for span in spans)) <= limit:
        return spans
    lengths = [visible_length(span.text) for span in spans]
    values = [n for span, n in zip(spans, lengths, strict=True) if span.value]
    cap = _largest_cap(values, limit - (sum(lengths) - sum(values)))
    if cap < min_value_length:
        return None
    return [
        span._replace(text=shorten(span.text, cap)) if span.value and n > cap else span
        for span, n in zip(spans, lengths, strict=True)
    ]


def _largest_cap(lengths: list[int], budget: int) -> int:
    """The largest length that, capping each of `lengths`, keeps their sum within `budget`."""
    low, high = 0, max(lengths, default=0)
    while low < high:
        middle = (low + high + 1) // 2
        if sum(min(n, middle) for n in lengths) <= budget:
            low = middle
        else:
            high = middle - 1
    return low


def _span_html(span: Span) -> str:
    markup = html.escape(span.text, quote=False)
    if span.code:
        markup = f"<code>{markup}</code>"
    if span.pre:
        markup = f"<pre>{markup}</pre>"
    if span.href:
        markup = f'<a href="{html.escape(span.href, quote=True)}">{markup}</a>'
    if span.bold:
        markup = f"<b>{markup}</b>"
    return markup
