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


def issues_command(
    watched: WatchStore, *, every: float = 60.0, clock: Callable[[], float] = time.time
) -> BotCommand:
    """`/issues`: the unresolved issues this chat receives, most events first (one alerted on
    and not yet read is listed, as open), and how old the list is: past two of the watcher's
    rounds (`every`), or not yet read, the next round is asked for at once."""

    def answer(asked: Asked, words: Words) -> Said:
        chat, now = asked.chat, clock()
        listed = [i for i in watched.overview(chat, now=now) if i.status in ("unresolved", None)]
        if not listed:
            return Said("issues_none")
        lines = open_issue_lines([issue_data(i) for i in listed], words, most=MOST_LISTED)
        values: dict[str, str | Said] = {
            "count": str(len(listed)),
            "lines": "\n".join(lines),
            "read": _how_old(listed, watched, words, now=now, every=every),
        }
        return Said("issues_answer", values)

    return BotCommand("issues", lambda words: words.command_issues, answer)


def _how_old(
    listed: Sequence[WatchedIssue], watched: WatchStore, words: Words, *, now: float, every: float
) -> Said:
    """How old the list is (its oldest read); past two rounds, or with an issue not yet read,
    the next round asked for at once."""
    oldest = min((i.read_at for i in listed if i.read_at is not None), default=None)
    stale = any(i.read_at is None for i in listed) or (
        oldest is not None and now - oldest > 2 * every
    )
    if stale:
        watched.round_now(now=now)
    if oldest is None:
        return Said("issues_not_read")
    ago = words.duration(max(0.0, now - oldest))
    return Said("issues_read_asking" if stale else "issues_read", {"ago": ago})


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
