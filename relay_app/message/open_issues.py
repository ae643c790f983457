"""The issues a chat receives, as the watcher last read them (watch/ lends its table as
CHAT_ISSUES: what a chat was alerted on, and the organisations the trackers showed, which say
what else it follows: chat/scope.py), and the unresolved ones in lines: one an issue, most
events first ('• BACKEND-1A · seen 5000 times · ▁▁▂█ · TimeoutError in checkout · 👀 @ada'),
for `/issues` (chat/issues.py) and the daily summary (summaries/). And those still open in a
place, with who has each (STILL_OPEN, lent by the summaries), in the lines of the weekly report
and of an on-call handoff."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from ..core.alerts import IssueAlert
from ..core.errors import Unreadable
from ..core.routing import Destination
from ..core.services import Key
from ..core.sources import Sources, number_of
from ..words import Words
from .trend import sparkline

# A title in a line is cut to this many characters.
TITLE_SHOWN = 60


@dataclass(frozen=True)
class WatchedIssue:
    """An issue alerted on in a chat, as the watcher last read it (status None: not yet)."""

    issue_id: str
    # The issue alone, as its alert is kept (core/alerts.py; a row before: its source's body).
    alert: dict[str, Any]
    thread: int | None
    status: str | None
    events: int | None
    hourly: tuple[int, ...]
    alerted_at: float  # last (the caller's clock)
    first_alerted_at: float
    escalated_at: float | None
    taken_by: str | None
    read_at: float | None = None  # when the watcher last read it (None: not yet)


class ChatIssues(Protocol):
    def overview(self, chat: str, *, now: float) -> list[WatchedIssue]:
        """The issues alerted on in `chat` lately, as the watcher last read them, most events
        first. Raises SpoolError."""
        ...

    def round_now(self, *, now: float) -> None:
        """The watcher's next round due at once (someone asked what it read long ago). Raises
        SpoolError."""
        ...

    def alerted_in(self, chat: str, issue_id: str) -> bool:
        """Whether the issue's last alert, lately, went to `chat`. Raises SpoolError."""
        ...

    def organizations(self) -> set[str]:
        """The organisations whose issues the relay was alerted on, as the trackers' own
        answers showed them (never as a webhook's link says). Raises SpoolError."""
        ...


CHAT_ISSUES: Key[ChatIssues] = Key("a chat's issues")


@dataclass(frozen=True)
class OpenIssue:
    """An issue shown in a place and still open, with who has it: the weekly report's list, and
    what an on-call handoff leaves the person taking over."""

    label: str
    title: str
    taken_by: str | None


class StillOpen(Protocol):
    def still_open(
        self, place: Destination, *, since: float, now: float
    ) -> tuple[int, list[OpenIssue]]:
        """The issues shown in `place` since `since` that are still open: how many, and the
        first of them. Raises SpoolError."""
        ...


# Lent by the summaries (summaries/report.py), which keep what on call cost.
STILL_OPEN: Key[StillOpen] = Key("issues still open")


def issue_data(issue: WatchedIssue, sources: Sources) -> dict[str, Any]:
    """The issue as a summary's job and `/issues` keep it: labelled by its number alone when
    its alert cannot be read."""
    try:
        alert = sources.alert_kept_as(issue.alert)
    except Unreadable:
        alert = None
    first = alert.issues[0] if isinstance(alert, IssueAlert) and alert.issues else None
    return {
        # As a card names it: its short id, else its number at its source ('#4242', never the
        # relay's id with its source's prefix).
        "label": (first.short_id if first is not None else None) or f"#{number_of(issue.issue_id)}",
        "title": first.title if first is not None else "",
        "events": issue.events,
        "hourly": list(issue.hourly),
        "taken_by": issue.taken_by,
    }


def open_issue_lines(issues: Sequence[Mapping[str, Any]], words: Words, *, most: int) -> list[str]:
    """One line an unresolved issue, the first `most` of them, then how many more: '• BACKEND-1A
    · seen 5000 times · ▁▁▂█ · TimeoutError in checkout · 👀 @ada' (the summary, /issues)."""
    lines = []
    for issue in issues[:most]:
        events = issue.get("events")
        line = words.summary_open_line.format(
            label=issue["label"],
            events=words.count(words.seen_times, int(events)) if events is not None else "?",
            spark=sparkline([int(n) for n in issue.get("hourly") or [0]]),
            title=_cut(str(issue.get("title") or "")),
        )
        if issue.get("taken_by"):
            line += words.summary_taken.format(user=issue["taken_by"])
        lines.append(line)
    if len(issues) > most:
        lines.append(words.summary_more.format(count=len(issues) - most))
    return lines


def _cut(title: str) -> str:
    return title if len(title) <= TITLE_SHOWN else title[: TITLE_SHOWN - 1] + "…"


def open_lines(count: int, issues: Sequence[OpenIssue], words: Words) -> list[str]:
    """The issues still open, each with who has it (at most those given; the rest counted)."""
    if not count:
        return [words.report_open_none]
    lines = [words.report_open.format(count=count)]
    for issue in issues:
        lines.append(
            words.report_open_line.format(
                label=issue.label,
                title=_cut(issue.title),
                who=f"👀 {issue.taken_by}" if issue.taken_by else "-",
            )
        )
    if count > len(issues):
        lines.append(words.report_more.format(count=count - len(issues)))
    return lines
