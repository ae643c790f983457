"""An alert as the short lines of a backlog's digest: one per issue or monitor it names.

When more alerts wait for a chat than their full entries fit in one message (an outage, a
storm), each message shows what its alerts share once (project, environment, release, server:
the webhook's fields with the same value in every line) and each alert in one short line:

    🔴 ALERT-TEST-3 ZeroDivisionError: division by zero · cart.py:4 in total

that is, its short id linked to the issue in GlitchTip, where the whole alert can be read, its
title cut to fit, and where it was raised. The same issue waiting several times shows once,
with its count. Built from the alert when its webhook arrives, kept with it in the spool (as
JSON), and laid out when the digest is sent. Pure functions, no I/O.
"""

from __future__ import annotations

import itertools
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache

from ..core.alerts import Alert, Issue, IssueAlert, UptimeAlert
from ..core.issue_details import IssueDetails
from ..words import Words
from .details import where
from .spans import Span, clean, least_length, safe_link, shorten, value
from .subjects import number_in_link

# Longer titles never fit a line; kept shorter so the spool's copy stays small.
KEPT_LENGTH = 200
# The facts a digest shows once when every line shares them (the webhook's field titles).
SHAREABLE = ("Project", "Environment", "Release", "Server Name")
# The key of an alert's line that counts its issues GlitchTip did not send (it sends three of
# many): a digest adds them up in one last line, since none can be linked.
MORE = "+more"


@dataclass(frozen=True)
class Line:
    key: str  # the issue's or monitor's link: lines with the same key show once, counted
    marker: str  # severity, or the monitor's state
    label: str  # 'ALERT-TEST-3', 'DOWN': bold, and linked when there is a link
    link: str | None
    title: str
    where: str | None = None
    facts: tuple[tuple[str, str], ...] = ()


def lines_of(
    alert: Alert,
    markers: Sequence[str],
    details: Mapping[str, IssueDetails | None],
    words: Words,
) -> tuple[Line, ...]:
    """The alert's lines; `markers` are its items' severity markers (or monitors' states) and
    `details` are by issue link. Empty for a payload the relay does not know: such an alert
    goes in a message of its own."""
    if isinstance(alert, IssueAlert):
        lines = [
            _issue_line(issue, marker, details.get(issue.link or ""), words)
            for issue, marker in zip(alert.issues, markers, strict=True)
        ]
        if alert.total > len(alert.issues):
            hidden = alert.total - len(alert.issues)
            lines.append(Line(MORE, "➕", str(hidden), None, ""))
        return tuple(lines)
    if isinstance(alert, UptimeAlert):
        return tuple(
            Line(
                key=monitor.link or "",
                marker=marker,
                label=monitor_state(monitor.state, words),
                link=safe_link(monitor.link),
                title=_kept(monitor.name or words.unnamed_monitor),
            )
            for monitor, marker in zip(alert.monitors, markers, strict=True)
        )
    return ()


def monitor_state(state: str, words: Words) -> str:
    """'DOWN', 'WARNING', 'UP', or 'UPTIME' when GlitchTip's sentence said neither."""
    said = {"down": words.monitor_down, "warning": words.monitor_warning, "up": words.monitor_up}
    return said.get(state, words.monitor_unknown)


def field_name(title: str, words: Words) -> str:
    """A GlitchTip field's title in the chat's language, when it is one GlitchTip sends."""
    known = {
        "Project": words.field_project,
        "Environment": words.field_environment,
        "Release": words.field_release,
        "Server Name": words.field_server,
    }
    return known.get(title, title)


def _issue_line(issue: Issue, marker: str, details: IssueDetails | None, words: Words) -> Line:
    return Line(
        key=issue.link or "",
        marker=marker,
        label=issue.short_id or words.issue_label,
        link=safe_link(issue.link),
        title=_kept(issue.title or words.untitled_issue),
        where=where(details, words) or (_kept(issue.culprit) if issue.culprit else None),
        facts=tuple(
            (field.title, _kept(field.value))
            for field in issue.fields
            if field.title in SHAREABLE and field.value
        ),
    )


def backlog_spans(alerts: Sequence[Sequence[Line]], words: Words) -> list[Span]:
    """The digest's body for these alerts' lines, oldest first: the facts all lines share, then
    one line per issue or monitor (repeats shown once, with their count)."""
    return [span for part in _backlog_parts(alerts, words) for span in part]


def backlog_least_length(alerts: Sequence[Sequence[Line]], floor: int, words: Words) -> int:
    """What `backlog_spans` takes with every value cut to `floor`, each line measured once
    however often it is asked (finding how many alerts fit asks again and again)."""
    return sum(_least(part, floor) for part in _backlog_parts(alerts, words))


def _backlog_parts(alerts: Sequence[Sequence[Line]], words: Words) -> list[tuple[Span, ...]]:
    counted, hidden = _counted(alerts)
    shared = _shared_facts([line for line, _ in counted])
    shown, said_once = _told_apart(counted, shared)
    head = _head_spans(shared, said_once, words)
    parts = [head]
    for index, (line, times) in enumerate(shown):
        before = "\n" if index else ("\n\n" if head else "")
        parts.append(_line_spans(before, line, times, shared))
    if hidden:
        parts.append((Span(f"\n{words.count(words.more_in_backlog, hidden)}"),))
    return parts


def _head_spans(
    shared: tuple[tuple[str, str], ...], said_once: _SaidOnce, words: Words
) -> tuple[Span, ...]:
    """The backlog's first line: the facts every alert shares, then those said once."""
    head = [
        span
        for index, (title, fact) in enumerate(shared)
        for span in (
            Span(" · " if index else ""),
            Span(f"{field_name(title, words)}: "),
            value(fact),
        )
    ]
    if said_once:
        head += _said_once_spans(said_once, words, after_facts=bool(shared))
    return tuple(head)


@lru_cache(maxsize=4096)
def _least(spans: tuple[Span, ...], floor: int) -> int:
    return least_length(spans, floor)


def _counted(alerts: Sequence[Sequence[Line]]) -> tuple[list[tuple[Line, int]], int]:
    """Each distinct line, at its first place, with how many times it came; and how many
    issues the alerts hold that GlitchTip did not send."""
    counted: dict[str, tuple[Line, int]] = {}
    hidden = 0
    for index, lines in enumerate(alerts):
        for position, line in enumerate(lines):
            if line.key == MORE:
                hidden += int(line.label) if line.label.isdigit() else 0
                continue
            key = line.key or f"#{index}.{position}"  # no link: never the same as another
            first, times = counted.get(key, (line, 0))
            counted[key] = (first, times + 1)
    return list(counted.values()), hidden


# Finding how many alerts fit lays the same lines out several times over.
@lru_cache(maxsize=4096)
def _line_spans(
    before: str, line: Line, times: int, shared: tuple[tuple[str, str], ...]
) -> tuple[Span, ...]:
    spans = [Span(f"{before}{line.marker} "), Span(line.label, bold=True, href=line.link)]
    spans += [Span(" "), value(line.title)]
    if line.where:
        spans += [Span(" · "), value(line.where, code=True)]
    spans += [
        span for fact in line.facts if fact not in shared for span in (Span(" · "), value(fact[1]))
    ]
    if times > 1:
        spans.append(Span(f" ×{times}"))
    return tuple(spans)


# A beginning the titles share is said once in the head only when it is at least this long:
# shorter, the lines read as well with it.
SHARED_TITLE_LEAST = 16


@dataclass(frozen=True)
class _SaidOnce:
    """What every issue line of a backlog message shares beyond the fields: said in its head."""

    title_start: str | None = None  # the titles' common beginning, each line showing the rest
    where: str | None = None  # the one place they were all raised

    def __bool__(self) -> bool:
        return bool(self.title_start or self.where)


def _told_apart(
    counted: list[tuple[Line, int]], shared: tuple[tuple[str, str], ...]
) -> tuple[list[tuple[Line, int]], _SaidOnce]:
    """The lines as the message shows them, so that distinct issues never read alike: what
    all issue lines share (a common beginning of their titles, the place they were raised) is
    said once, in the head, and each line keeps what differs; lines of distinct issues that
    still read the same are told apart by GlitchTip's number for the issue."""
    issues = [line for line, _ in counted if number_in_link(line.key) is not None]
    said = _SaidOnce()
    if len(issues) >= 2:
        said = _SaidOnce(_common_start([line.title for line in issues]), _common_where(issues))
    lines = [(_without(line, said) if line in issues else line, times) for line, times in counted]
    return _numbered_where_alike(_abridged(lines), shared), said


def _numbered_where_alike(
    lines: list[tuple[Line, int]], shared: tuple[tuple[str, str], ...]
) -> list[tuple[Line, int]]:
    """Lines of distinct issues that read alike, each with GlitchTip's number for its issue."""
    readings: dict[tuple[object, ...], list[int]] = {}
    for index, (line, _) in enumerate(lines):
        facts = tuple(fact for fact in line.facts if fact not in shared)
        readings.setdefault((line.marker, line.title, line.where, facts), []).append(index)
    for alike in (indices for indices in readings.values() if len(indices) > 1):
        for index in alike:
            line, times = lines[index]
            if (number := number_in_link(line.key)) is not None:  # its tracker's number for it
                lines[index] = (replace(line, title=f"{line.title} (#{number})"), times)
    return lines


def _common_start(titles: Sequence[str]) -> str | None:
    start = _word_start(_common_prefix(titles), min(len(title) for title in titles))
    return start if len(start.rstrip()) >= SHARED_TITLE_LEAST else None


# Of a beginning some titles share, what a line keeps before the part that tells it apart.
KEPT_OF_SHARED_START = 20


def _abridged(lines: list[tuple[Line, int]]) -> list[tuple[Line, int]]:
    """Titles that share a long beginning with another line's, but not with every line's: the
    shared middle left out ('TypeError: cannot…customer 919'), so that what tells them apart
    survives the cut every line's title takes to fit."""
    titles = sorted({line.title for line, _ in lines})
    shared: dict[str, int] = {}
    for first, second in itertools.pairwise(titles):
        common = _word_start(_common_prefix([first, second]), min(len(first), len(second)))
        for title in (first, second):
            shared[title] = max(shared.get(title, 0), len(common))
    abridged = []
    for line, times in lines:
        cut = shared.get(line.title, 0)
        if cut >= SHARED_TITLE_LEAST and cut > KEPT_OF_SHARED_START + 1:
            kept = _word_start(line.title[:KEPT_OF_SHARED_START], KEPT_OF_SHARED_START + 1)
            line = replace(line, title=f"{kept.rstrip()}…{line.title[cut:].lstrip()}")
        abridged.append((line, times))
    return abridged


def _common_prefix(titles: Sequence[str]) -> str:
    """The characters every title begins with (os.path.commonprefix works on any strings)."""
    return os.path.commonprefix(list(titles))  # noqa: RUF071 (strings, not paths)


def _word_start(start: str, shortest: int) -> str:
    """`start` cut back to a word's end, and never the whole of a title."""
    if len(start) >= shortest:
        start = start[: start.rfind(" ") + 1] if " " in start else ""
    cut = max(start.rfind(" "), start.rfind("."), start.rfind(":"))
    return start[: cut + 1] if cut >= 0 and not start.endswith(" ") else start


def _common_where(lines: Sequence[Line]) -> str | None:
    places = {line.where for line in lines}
    return places.pop() if len(places) == 1 else None


def _without(line: Line, said: _SaidOnce) -> Line:
    title = line.title
    if said.title_start and title.startswith(said.title_start):
        title = "…" + title[len(said.title_start) :]
    return replace(line, title=title, where=None if said.where else line.where)


def _said_once_spans(said: _SaidOnce, words: Words, *, after_facts: bool) -> list[Span]:
    """The head's part beyond the fields: the titles' shared beginning on a line of its own,
    with where they were raised; or, alone, where they were raised, after the fields."""
    if not said.title_start:
        before = " · " if after_facts else ""
        return [Span(f"{before}{words.raised_in}"), value(said.where or "", code=True)]
    # As it stands in the titles, a space before the ellipsis included: read back, the head's
    # beginning and a line's rest make the title again.
    spans = [Span("\n" if after_facts else ""), value(said.title_start + "…")]
    if said.where:
        spans += [Span(" · "), value(said.where, code=True)]
    return spans


def _shared_facts(lines: Sequence[Line]) -> tuple[tuple[str, str], ...]:
    """The facts every line that has any (an issue's) has with the same value, in the webhook's
    order; none for a single such line, whose facts stay on it."""
    lines = [line for line in lines if line.facts]
    if len(lines) < 2:
        return ()
    first = lines[0].facts
    return tuple(fact for fact in first if all(fact in line.facts for line in lines[1:]))


def to_json(lines: Sequence[Line]) -> str | None:
    """As the spool stores them; None when there are none."""
    if not lines:
        return None
    return json.dumps(
        [[ln.key, ln.marker, ln.label, ln.link, ln.title, ln.where, ln.facts] for ln in lines],
        ensure_ascii=False,
    )


def from_json(raw: str | None) -> tuple[Line, ...]:
    """Read back what `to_json` wrote; anything else reads as no lines (the alert goes alone)."""
    if not raw:
        return ()
    try:
        return from_data(json.loads(raw))
    except ValueError:
        return ()


def from_data(data: object) -> tuple[Line, ...]:
    """The lines in `to_json`'s JSON once read (a job's data holds them so); anything else
    reads as no lines."""
    try:
        return tuple(
            Line(
                str(key),
                str(marker),
                str(label),
                str(link) if link is not None else None,
                str(title),
                str(at) if at is not None else None,
                tuple((str(name), str(fact)) for name, fact in facts),
            )
            for key, marker, label, link, title, at, facts in data  # type: ignore[attr-defined]
        )
    except (ValueError, TypeError):
        return ()


def _kept(raw: str) -> str:
    return shorten(clean(raw, single_line=True), KEPT_LENGTH)
