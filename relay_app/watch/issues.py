"""The unresolved issues a chat receives, as the watcher last read them, in lines: one an issue,
most events first ('• BACKEND-1A · seen 5000 times · ▁▁▂█ · TimeoutError in checkout · 👀 @ada'),
for `/issues` (registered here) and the daily summary (summaries/)."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..glitchtip.webhook import IssueAlert, parse_alert
from ..message.subjects import SENTRY_PREFIX
from ..message.trend import sparkline
from ..telegram.bot_commands import Asked, BotCommand
from ..words import Said, Words
from .store import WatchedIssue, WatchStore

# The issues /issues names; the rest are counted.
MOST_LISTED = 20
# A title in a line is cut to this many characters.
TITLE_SHOWN = 60


def issues_command(watched: WatchStore, *, clock: Callable[[], float] = time.time) -> BotCommand:
    """`/issues`: the unresolved issues this chat receives, most events first."""

    def answer(asked: Asked, words: Words) -> Said:
        chat = asked.chat
        issues = [
            issue_data(issue)
            for issue in watched.overview(chat, now=clock())
            if issue.status == "unresolved"
        ]
        if not issues:
            return Said("issues_none")
        lines = open_issue_lines(issues, words, most=MOST_LISTED)
        return Said("issues_answer", {"count": str(len(issues)), "lines": "\n".join(lines)})

    return BotCommand("issues", lambda words: words.command_issues, answer)


def issue_data(issue: WatchedIssue) -> dict[str, Any]:
    alert = parse_alert({"text": "", **issue.alert})
    first = alert.issues[0] if isinstance(alert, IssueAlert) and alert.issues else None
    return {
        # As a card names it: its short id, else its number at its source ('#4242', never the
        # relay's 'sentry:4242').
        "label": (first.short_id if first is not None else None)
        or f"#{issue.issue_id.removeprefix(SENTRY_PREFIX)}",
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
