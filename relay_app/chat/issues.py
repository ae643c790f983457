"""`/issues`: the unresolved issues a chat receives, as the watcher last read them (its lent
CHAT_ISSUES; without a watcher, none), in lines (message/open_issues.py), and how old the list
is."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from ..core.sources import Sources
from ..message.open_issues import ChatIssues, WatchedIssue, issue_data, open_issue_lines
from ..telegram.bot_commands import Asked, BotCommand
from ..words import Said, Words

# The issues /issues names; the rest are counted.
MOST_LISTED = 20


def issues_command(
    watched: ChatIssues | None,
    sources: Sources,
    *,
    every: float = 60.0,
    clock: Callable[[], float] = time.time,
) -> BotCommand:
    """`/issues`: the unresolved issues this chat receives, most events first (one alerted on
    and not yet read is listed, as open), and how old the list is: past two of the watcher's
    rounds (`every`), or not yet read, the next round is asked for at once."""

    def answer(asked: Asked, words: Words) -> Said:
        chat, now = asked.chat, clock()
        if watched is None:  # no watcher: nothing was read
            return Said("issues_none")
        listed = [i for i in watched.overview(chat, now=now) if i.status in ("unresolved", None)]
        if not listed:
            return Said("issues_none")
        lines = open_issue_lines([issue_data(i, sources) for i in listed], words, most=MOST_LISTED)
        values: dict[str, str | Said] = {
            "count": str(len(listed)),
            "lines": "\n".join(lines),
            "read": _how_old(listed, watched, words, now=now, every=every),
        }
        return Said("issues_answer", values)

    return BotCommand("issues", lambda words: words.command_issues, answer)


def _how_old(
    listed: Sequence[WatchedIssue], watched: ChatIssues, words: Words, *, now: float, every: float
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
