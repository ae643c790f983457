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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, tzinfo
from typing import Any

from ..core.alerts import (
    Alert,
    Issue,
    IssueAlert,
    Level,
    MonitorChange,
    UnrecognizedPayload,
    UptimeAlert,
    alert_as_json,
)
from ..core.issue_details import IssueDetails
from ..core.sources import Source, Sources
from ..core.typed import shown_name, tg_users_in
from ..words import Plural, Words
from ..words.catalogue import in_source
from .details import detail_spans, stack_spans
from .lines import Line, field_name, lines_of, monitor_state
from .spans import (
    MIN_VALUE_LENGTH,
    Span,
    capped_values,
    clean,
    cut_spans,
    least_length,
    place_moment,
    safe_link,
    shorten,
    shorten_values,
    span_html,
    value,
    visible_length,
)
from .subjects import NO_SUBJECTS, Subjects, issue_ref, subjects_of

TELEGRAM_TEXT_LIMIT = 4096
# A photo's caption: Telegram's limit, in the same visible characters.
CAPTION_LIMIT = 1024
# A person's name as a mention shows it, at most: six people called by name stay within the
# room every message keeps for its notes (NOTES_ROOM).
MAX_NAME = 32
# A `tg:<user id>` in a text, whole: one past Telegram's range (core/typed.py) stays text.
_TG_MENTION = re.compile(r"(tg:[1-9][0-9]{0,15})(?![0-9])")
# Kept free in every message for the lines a late delivery and a second chance add
# (`with_note`), so adding them never means shortening, that is rebuilding, a message that was
# already accepted.
NOTES_ROOM = 450
MESSAGE_LIMIT = TELEGRAM_TEXT_LIMIT - NOTES_ROOM
# Sent when Telegram rejects our HTML or its length: well inside the limit, so a disagreement
# about how characters are counted cannot make the fallback fail too.
PLAIN_FALLBACK_LIMIT = 3000
# An alert's heading is cut to this once, when it is read, and never shortened after: the
# message and its digest entries then all begin with the very same line.
HEADING_LIMIT = 100
# Between an alert's parts (heading, issues, footer), and between alerts in a digest.
PARAGRAPH = "\n\n"
# An alert's part of a digest (see digest.py) is the same message, built again within this
# when the whole is longer, so that one long alert leaves room in a digest for others. In a
# backlog, where not even those fit, an alert is its lines (lines.py).
DIGEST_ENTRY_LIMIT = 1000

SITE_DOWN = "The monitored site has gone down."
SITE_UP = "The monitored site is back up."

SEVERITY_BY_LEVEL: dict[Level, str] = {"error": "🔴", "warning": "🟠", "other": "⚪", "info": "🔵"}
_SEVERITY_RANK = list(SEVERITY_BY_LEVEL.values())  # the worst first
MONITOR_MARKERS = {"down": "🔴", "warning": "🟡", "up": "✅", "unknown": "ℹ️"}


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
    # An issue alert's first line (severity and GlitchTip's heading), with which its message
    # and its entry begin: a digest of several such alerts shows it once, not per alert.
    heading: Entry | None = None
    # The issues and monitors it is about, for the buttons and threads that go with it.
    subjects: Subjects = NO_SUBJECTS
    # Its lines in a backlog's digest; none: it goes in a message of its own there.
    lines: tuple[Line, ...] = ()
    # The message of the chat it answers (a link's card: chat/links.py); None: none.
    reply_to: int | None = None
    # Buttons of its own (a private call carries its alert's: oncall/direct.py); None: an
    # alert's buttons are made for its issues when it is sent (cards/outgoing.py).
    keyboard: Mapping[str, Any] | None = None

    @property
    def entry(self) -> Entry:
        return self.short_entry or Entry(self.html, self.text)


def message_for(
    alert: Alert,
    words: Words,
    *,
    sources: Sources,
    details: Mapping[str, IssueDetails] | None = None,
    now: float = 0.0,
    names_hidden_at: str | None = None,
    again: bool = False,
    names_source: bool = False,
) -> Message:
    """The message for an alert, in `words`' language, as a job renders it when it
    is sent and `relay-app preview` shows it: with its issues' details from GlitchTip's API
    (by issue id) when `details` gives them (`now` then says how long ago an issue was first
    seen). `names_hidden_at`: GlitchTip's origin when the relay names the issues an alert of
    its issues there counts and does not attach (glitchtip/hidden.py); `again`: its issues posted
    again (an escalating issue: watch/watcher.py), never said to be new; `names_source`: the
    relay serves GlitchTip and Sentry both, so a heading that does not name its source does."""
    read = alert
    try:
        subjects = subjects_of(alert, sources)
        issues, source = (
            (alert.issues, sources.named(alert.source))
            if isinstance(alert, IssueAlert)
            else ((), None)
        )
        by_link = {
            issue.link: details[ref.id]
            for issue in issues
            if details
            and issue.link
            and (ref := issue_ref(issue.link, issue.short_id, source=source))
            and ref.id in details
        }
        named = any(ref.origin == names_hidden_at for ref in subjects.issues)
        if isinstance(alert, IssueAlert):
            alert = replace(alert, heading=_sourced(alert, words, names_source, source))
        formatted = format_alert(alert, words, by_link, now=now, hidden_named=named, again=again)
        return replace(formatted, subjects=subjects)
    except Exception:
        # A bug in formatting one alert's shape must not cost it: forward it raw instead.
        logging.getLogger(__name__).exception("could not format this alert; forwarding it raw")
        return format_alert(UnrecognizedPayload(alert_as_json(read), read.source), words)


def format_alert(
    alert: Alert,
    words: Words,
    details: Mapping[str, IssueDetails] | None = None,
    *,
    now: float = 0.0,
    hidden_named: bool = False,
    again: bool = False,
) -> Message:
    """The alert's message, its shorter entry for digests when it is long (most are not: one
    issue is about 150 characters), and its lines for a backlog. `details` are its issues' from
    GlitchTip's API, by issue link; `hidden_named`: the issues it counts and does not attach
    are named in a message of their own. Its spans are built and measured once, and fitted to
    each limit."""
    details = details or {}
    parts = _Parts(*_parts(alert, details, now, words, hidden_named, again))
    message = render(parts.fit(MESSAGE_LIMIT))
    if isinstance(alert, IssueAlert):
        heading = render(parts.header)
        markers = [SEVERITY_BY_LEVEL[issue.shade] for issue in alert.issues]
        message = replace(
            message,
            heading=Entry(heading.html, heading.text),
            lines=lines_of(alert, markers, details, words),
        )
    elif isinstance(alert, UptimeAlert):
        markers = [MONITOR_MARKERS[monitor.state] for monitor in alert.monitors]
        message = replace(message, lines=lines_of(alert, markers, details, words))
    if visible_length(message.text) > DIGEST_ENTRY_LIMIT:
        entry = render(parts.fit(DIGEST_ENTRY_LIMIT))
        message = replace(message, short_entry=Entry(entry.html, entry.text))
    return message


Footer = Callable[[int], list[Span]]


def _parts(
    alert: Alert,
    details: Mapping[str, IssueDetails],
    now: float,
    words: Words,
    hidden_named: bool = False,
    again: bool = False,
) -> tuple[list[Span], list[list[Span]], Footer]:
    """Header, items (issues or monitors) and the footer for however many items are shown:
    `hidden_named`, the issues it does not attach are named elsewhere; `again`, its issues are
    posted again."""
    if isinstance(alert, IssueAlert):
        numbered = len(alert.issues) > 1
        more = words.more_issues_named if hidden_named else words.more_issues
        return (
            _issue_header(alert, words),
            [
                _issue_block(issue, words, numbered, details.get(issue.link or ""), now, again)
                for issue in alert.issues
            ],
            lambda shown: _hidden(more, alert.total - shown, words),
        )
    if isinstance(alert, UptimeAlert):
        return (
            [],
            [
                _monitor_block(monitor, words, first=index == 0)
                for index, monitor in enumerate(alert.monitors)
            ],
            lambda shown: _hidden(words.more_monitors, alert.total - shown, words),
        )
    dump = json.dumps(alert.payload, ensure_ascii=False, indent=1, default=str)
    header = [Span("⚠️ "), Span(words.unknown_payload, bold=True)]
    return header, [[Span("\n"), Span(clean(dump), pre=True, value=True)]], lambda shown: []


def render(spans: Sequence[Span]) -> Message:
    text = "".join(span.text for span in spans)
    return Message(
        html="".join(span_html(span) for span in spans),
        text=text,
        fallback=shorten(text, PLAIN_FALLBACK_LIMIT),
    )


def with_late_note(
    message: Message,
    words: Words,
    *,
    received_at: float,
    now: float,
    zone: tzinfo = UTC,
) -> Message:
    """`message` with a last line saying when GlitchTip sent it (in `zone`, the place's) and
    how late it arrives; `received_at` and `now` are Unix times."""
    return with_note(message, late_note(received_at, now, words, zone))


def with_note(message: Message, note: str) -> Message:
    """`message` with `note` as its last line, within the room every message keeps for it."""
    return Message(
        html=f"{message.html}\n\n{html.escape(note, quote=False)}",
        text=f"{message.text}\n\n{note}",
        fallback=f"{message.fallback}\n\n{note}",
    )


def with_mentions(
    message: Message,
    mentions: Sequence[str],
    words: Words,
    names: Mapping[str, str] | None = None,
) -> Message:
    """`message` with a last line calling `mentions` ('@username', or 'tg:<user id>' as a link
    to that user, for people without a username, named as `names` gives them), within the
    room kept for notes."""
    if not mentions:
        return message
    shown = [shown_mention(mention, words, (names or {}).get(mention)) for mention in mentions]
    shown_html, shown_text = [h for h, _ in shown], [t for _, t in shown]
    line_html = html.escape(words.mention_line.format(people="\x00"), quote=False)
    line_html = line_html.replace("\x00", ", ".join(shown_html))
    line_text = words.mention_line.format(people=", ".join(shown_text))
    return Message(
        html=f"{message.html}\n\n{line_html}",
        text=f"{message.text}\n\n{line_text}",
        fallback=f"{message.fallback}\n\n{line_text}",
    )


def shown_mention(mention: str, words: Words, name: str | None = None) -> tuple[str, str]:
    """A person as a message calls them, in HTML and as text: '@username', or 'tg:<user id>'
    as a link to that user (which notifies them), for people without a username: with the
    `name` Telegram gave them, when the relay knows it."""
    if not mention.startswith("tg:"):
        return html.escape(mention), mention
    user = mention.removeprefix("tg:")
    name = shown_name(name or "")[:MAX_NAME] or words.mention_user.format(id=user)
    return f'<a href="tg://user?id={user}">{html.escape(name)}</a>', name


def linked_people(
    text: str, names: Callable[[Sequence[str]], Mapping[str, str]], words: Words
) -> tuple[str, str]:
    """A plain text that calls people (an escalation's reply), as text and as HTML: each
    `tg:<user id>` in it made a link Telegram notifies, named as `shown_mention` names it."""
    found = tg_users_in(text)
    known = names(found) if found else {}
    shown = {mention: shown_mention(mention, words, known.get(mention)) for mention in found}
    # split() with a group alternates text and candidates: text at even places. A candidate
    # out of Telegram's range is not in `shown`, and stays text.
    pieces = [
        shown.get(piece) or (html.escape(piece, quote=False), piece)
        for piece in _TG_MENTION.split(text)
    ]
    return "".join(said for _, said in pieces), "".join(marked for marked, _ in pieces)


def with_first_line(message: Message, line: str) -> Message:
    """`message` with `line` above it, within the room every message keeps for its notes."""
    return Message(
        html=f"{html.escape(line, quote=False)}\n\n{message.html}",
        text=f"{line}\n\n{message.text}",
        fallback=f"{line}\n\n{message.fallback}",
    )


def late_note(received_at: float, now: float, words: Words, zone: tzinfo = UTC) -> str:
    delay = words.duration(now - received_at)
    return words.late_note.format(time=place_moment(received_at, zone), delay=delay)


# --- the pieces of a message -------------------------------------------------------------


def _issue_header(alert: IssueAlert, words: Words) -> list[Span]:
    markers = [SEVERITY_BY_LEVEL[issue.shade] for issue in alert.issues]
    worst = min(markers, key=_SEVERITY_RANK.index)
    # Not a value span: shortened here once, so that no fitting below shortens it differently.
    heading = shorten(clean(_heading(alert.heading, words), single_line=True), HEADING_LIMIT)
    return [Span(f"{worst} "), Span(heading, bold=True)]


def _sourced(alert: IssueAlert, words: Words, names_source: bool, source: Source | None) -> str:
    """The alert's heading in the chat's words where its source wrote it in its own (as the
    source reads its headings: 'GlitchTip Alert (12 issues)'), or wrote none (Sentry's new
    issue: 'Sentry Alert'). Any other as it came, with its source's name before it where the
    relay serves two sources and it does not say it; the first source's (core/sources.py)
    are its payloads' own."""
    if source is None:
        return alert.heading
    counted = source.reads_heading(alert.heading) if source.reads_heading else None
    if not alert.heading or counted is not None:
        said = in_source(words, source.shown)
        if not counted:
            return said.glitchtip_alert
        return said.count(said.glitchtip_alert_issues, counted)
    if not source.prefix or not names_source:
        return alert.heading
    return words.source_heading.format(source=source.shown, heading=alert.heading)


def _heading(heading: str, words: Words) -> str:
    """The heading as `message_for` said it; with none, an alert's, in the chat's words."""
    return heading or words.glitchtip_alert


def _issue_block(
    issue: Issue,
    words: Words,
    numbered: bool,
    details: IssueDetails | None,
    now: float,
    again: bool = False,
) -> list[Span]:
    """`again`: the issue is posted again, and never said to be new then."""
    spans = [Span("\n\n")]
    if numbered:
        spans.append(Span(f"{SEVERITY_BY_LEVEL[issue.shade]} "))
    title = issue.title or words.untitled_issue
    spans.append(value(title, bold=True, href=safe_link(issue.link)))
    spans += _where_it_broke(issue, details, words, title=title, now=now, again=again)
    for index, fact in enumerate(_facts(issue, words)):
        spans.append(Span("\n" if index == 0 else " · "))
        spans += fact
    if details is not None and not numbered:  # a message of one issue: its stack, folded
        spans += stack_spans(details, words)
    return spans


def _where_it_broke(
    issue: Issue,
    details: IssueDetails | None,
    words: Words,
    *,
    title: str,
    now: float,
    again: bool,
) -> list[Span]:
    """The issue's details from its source, or without them the webhook's culprit."""
    if details is None:
        return (
            [Span(f"\n{words.raised_in}"), value(issue.culprit, code=True)] if issue.culprit else []
        )
    culprit = []
    if issue.culprit and details.frame is None:
        culprit = [Span(f"\n{words.raised_in}"), value(issue.culprit, code=True)]
    return culprit + detail_spans(details, words, title=title, now=now, new=not again)


def _facts(issue: Issue, words: Words) -> list[list[Span]]:
    """Its short id and GlitchTip's fields (project, environment, ...), for one line."""
    facts: list[list[Span]] = []
    if issue.short_id:
        facts.append([value(issue.short_id, bold=True)])
    for field in issue.fields:
        if field.title:
            facts.append([value(field_name(field.title, words)), Span(": "), value(field.value)])
        else:
            facts.append([value(field.value)])
    return facts


def _hidden(word: Plural, count: int, words: Words) -> list[Span]:
    return [Span(f"\n\n{words.count(word, count)}")] if count > 0 else []


def _monitor_block(monitor: MonitorChange, words: Words, *, first: bool) -> list[Span]:
    marker = MONITOR_MARKERS[monitor.state]
    separator = "" if first else "\n\n"
    spans = [
        Span(f"{separator}{marker} "),
        Span(monitor_state(monitor.state, words), bold=True),
        Span(" · "),
        value(monitor.name or words.unnamed_monitor, bold=True, href=safe_link(monitor.link)),
    ]
    if monitor.sentence:
        sentence = {SITE_DOWN: words.site_down, SITE_UP: words.site_up}.get(
            monitor.sentence, monitor.sentence
        )
        spans += [Span("\n"), value(sentence)]
    return spans


# --- fitting into Telegram's limit ---------------------------------------------------------


class _Parts:
    """Header, items (issues or monitors) and the footer for however many items are shown,
    measured once: fitting them to a limit then costs time linear in their size, however many
    items there are (a webhook can name thousands)."""

    def __init__(self, header: list[Span], items: list[list[Span]], footer: Footer) -> None:
        self.header, self.items, self.footer = header, items, footer
        # Each part's length with every value capped at MIN_VALUE_LENGTH: the shortest it gets
        # while its values stay readable.
        self._header_least = least_length(header)
        self._item_least = [least_length(item) for item in items]

    def fit(self, limit: int) -> list[Span]:
        """Header, items and footer within the limit: long values shortened evenly first; only
        when that would leave values unreadably short do trailing items give way to the
        footer's count."""
        for shown in self._most_shown(limit):
            spans = [*self.header, *self._spans_of(shown), *self.footer(shown)]
            fitted = shorten_values(spans, limit)
            if fitted is not None:
                return fitted
        items = self.items
        spans = [*self.header, *(items[0] if items else []), *self.footer(1 if items else 0)]
        if limit < MESSAGE_LIMIT:
            # A digest's part of the alert, where the whole message cannot be: its header and
            # title stay readable and the fields that do not fit are cut off the end.
            return cut_spans(capped_values(spans, MIN_VALUE_LENGTH), limit)
        # Even one item does not fit with readable values: accept values shorter than usual,
        # and when its labels alone are too many (thousands of fields), cut the item short.
        fitted = shorten_values(spans, limit, min_value_length=2)
        return fitted if fitted is not None else cut_spans(spans, limit)

    def _most_shown(self, limit: int) -> list[int]:
        """How many items to try showing, most first: the counts whose parts fit with values
        of readable length (at which `_shorten_values` succeeds), in one pass over them."""
        fitting, used = [], self._header_least
        for count, least in enumerate(self._item_least, start=1):
            used += least
            if used > limit:
                break  # longer with every item: no more can fit
            if used + least_length(self.footer(count)) <= limit:
                fitting.append(count)
        return fitting[::-1]

    def _spans_of(self, shown: int) -> list[Span]:
        return [span for item in self.items[:shown] for span in item]
