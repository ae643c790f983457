"""What a board says: its open issues, the most urgent first (by level, then nobody on it, then
the most events in the last hour, then the oldest), at most MOST of them and the rest counted;
each with its level, its short id linking to it, its title, who has it (On it), since when it
is open here, and its events in the last hour where the watcher read them; "all clear since"
when none is open. Pure."""

from __future__ import annotations

import hashlib
import html
from collections.abc import Mapping, Sequence
from datetime import datetime, tzinfo

from ..words import Words
from .store import Listed

MOST = 10
MAX_TITLE = 80
RANKS = {"fatal": 0, "error": 1, "warning": 2, "info": 3, "debug": 4}
MARKS = {"fatal": "💀", "error": "🔴", "warning": "🟡", "info": "🔵", "debug": "⚪"}


def board_text(
    issues: Sequence[Listed],
    events: Mapping[str, int],
    *,
    clear_since: float | None,
    now: float,
    zone: tzinfo,
    words: Words,
) -> str:
    """The board's HTML."""
    if not issues:
        if clear_since is None:
            return words.word("board_clear")
        return words.word("board_clear_since").format(time=_when(clear_since, now, zone))
    ordered = sorted(
        issues,
        key=lambda i: (
            RANKS.get(i.level, 5),
            i.taken_by is not None,
            -events.get(i.issue_id, 0),
            i.first_at,
        ),
    )
    lines = [words.word("board_heading").format(count=len(issues))]
    for issue in ordered[:MOST]:
        lines.append(_line(issue, events.get(issue.issue_id), now, zone, words))
    if len(ordered) > MOST:
        lines.append(words.word("board_more").format(count=len(ordered) - MOST))
    return "\n".join(lines)


def digest_of(text: str) -> str:
    """What the board keeps of a text it showed: enough to tell a change."""
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _line(issue: Listed, events: int | None, now: float, zone: tzinfo, words: Words) -> str:
    title = " ".join(issue.title.split())
    if len(title) > MAX_TITLE:
        title = title[: MAX_TITLE - 1] + "…"
    who = (
        words.word("board_taken").format(person=html.escape(issue.taken_by, quote=False))
        if issue.taken_by
        else words.word("board_nobody")
    )
    parts = [
        f'{MARKS.get(issue.level, "🟣")} <a href="{html.escape(issue.link)}">'
        f"{html.escape(issue.label, quote=False)}</a> {html.escape(title, quote=False)}",
        who,
        words.word("board_since").format(time=_when(issue.first_at, now, zone)),
    ]
    if events:
        parts.append(words.word("board_events").format(count=events))
    return " · ".join(parts)


def _when(at: float, now: float, zone: tzinfo) -> str:
    """'14:05' today, '05.12 14:05' another day, in the chat's zone."""
    moment = datetime.fromtimestamp(at, zone)
    same_day = moment.date() == datetime.fromtimestamp(now, zone).date()
    return f"{moment:%H:%M}" if same_day else f"{moment:%d.%m %H:%M}"
