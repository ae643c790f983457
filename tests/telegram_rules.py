"""Telegram's rules for a sendMessage text, checked as strictly as the Bot API server applies
them (../shared/reference/telegram-bot-api.md), and its rate limits on messages. Shared by the
formatting tests, the in-process storms and the fake Telegram server, so all hold the relay to
the same contract."""

from __future__ import annotations

import collections
import html
import math
import re
import time
from collections.abc import Callable

TEXT_LIMIT = 4096
# Telegram's rate limits (and as its FAQ states them, without margin).
CHAT_INTERVAL = 1.0
GROUP_LIMIT = 20
GROUP_WINDOW = 60.0
ALLOWED_TAGS = {
    "b",
    "strong",
    "i",
    "em",
    "u",
    "ins",
    "s",
    "strike",
    "del",
    "span",
    "tg-spoiler",
    "a",
    "code",
    "pre",
    "blockquote",
    "tg-emoji",
}
_TOKEN = re.compile(
    r"(?P<tag><(?P<close>/?)(?P<name>[a-zA-Z][a-zA-Z0-9-]*)(?P<attrs>\s[^<>]*)?>)"
    r"|(?P<entity>&(?:lt|gt|amp|quot|#[0-9]+|#x[0-9a-fA-F]+);)"
    r"|(?P<text>[^<>&]+)"
)
_HREF = re.compile(r'\s*href="([^"]*)"\s*')
_USER_MENTION = re.compile(r"tg://user\?id=[1-9][0-9]{0,19}")


class TelegramRejection(ValueError):
    """What the Bot API answers with a 400 for this text."""


def visible_text(text: str, *, parse_mode: str | None) -> str:
    """The text a chat would show; raises TelegramRejection where Telegram would refuse it."""
    visible = _parse_html(text) if parse_mode == "HTML" else text
    if not visible.strip():
        raise TelegramRejection("Bad Request: message text is empty")
    if len(visible) > TEXT_LIMIT:
        raise TelegramRejection("Bad Request: message is too long")
    return visible


def _parse_html(text: str) -> str:
    out: list[str] = []
    open_tags: list[str] = []
    position = 0
    while position < len(text):
        match = _TOKEN.match(text, position)
        if match is None:
            raise TelegramRejection(
                "Bad Request: can't parse entities: unexpected "
                f"{text[position]!r} at byte offset {len(text[:position].encode())}"
            )
        position = match.end()
        if match.group("text") is not None:
            out.append(match.group("text"))
        elif match.group("entity") is not None:
            out.append(html.unescape(match.group("entity")))
        else:
            _tag(match, open_tags)
    if open_tags:
        raise TelegramRejection(
            f"Bad Request: can't parse entities: can't find end tag corresponding to start tag "
            f"{open_tags[-1]}"
        )
    return "".join(out)


def _tag(match: re.Match[str], open_tags: list[str]) -> None:
    name = match.group("name").lower()
    if name not in ALLOWED_TAGS:
        raise TelegramRejection(
            f'Bad Request: can\'t parse entities: unsupported start tag "{name}"'
        )
    if match.group("close"):
        if not open_tags or open_tags[-1] != name:
            raise TelegramRejection(
                f'Bad Request: can\'t parse entities: unmatched end tag "{name}"'
            )
        open_tags.pop()
        return
    attrs = match.group("attrs") or ""
    if name == "a":
        href = _HREF.fullmatch(attrs)
        target = html.unescape(href.group(1)) if href is not None else ""
        # Links, and the Bot API's inline mention of a user (its formatting options:
        # <a href="tg://user?id=123456789">inline mention of a user</a>).
        if not target.startswith(("http://", "https://")) and not _USER_MENTION.fullmatch(target):
            raise TelegramRejection("Bad Request: can't parse entities: bad link")
    elif attrs.strip() and not (name == "blockquote" and attrs.strip() == "expandable"):
        raise TelegramRejection(
            f"Bad Request: can't parse entities: unexpected attribute on {name}"
        )
    open_tags.append(name)


class RateLimits:
    """Telegram's rate limits on messages, as a 429's retry_after: one message a second per
    chat, twenty a minute per group (negative ids and @names), and any flood wait imposed on a
    chat. On the clock it is given: the fake Telegram's real one, or an in-process test's fake
    one. Not locked: its owner serialises the calls."""

    def __init__(
        self,
        clock: Callable[[], float] = time.monotonic,
        *,
        time_scale: float = 1.0,
        group_interval: float | None = None,
    ) -> None:
        self.clock = clock
        # The limits in time compressed by this (a relay under RELAY_TIME_SCALE).
        self.time_scale = time_scale
        # A group takes one message per this many seconds at most, evenly spread, rather than
        # any twenty in a minute (a stricter reading of the same limit).
        self.group_interval = group_interval
        self._accepted_at: dict[str, collections.deque[float]] = collections.defaultdict(
            collections.deque
        )
        self._flood_until: dict[str, float] = {}

    def flood(self, chat: str, seconds: float) -> None:
        """Every message to `chat` refused until `seconds` from now (a flood wait)."""
        self._flood_until[chat] = self.clock() + seconds

    def wait(self, chat: str) -> int | None:
        """Seconds to wait (as Telegram rounds them, up) if a message now would break a limit;
        None, and the message counted, if not."""
        now = self.clock()
        sent = self._accepted_at[chat]
        window = GROUP_WINDOW * self.time_scale
        while sent and sent[0] <= now - window:
            sent.popleft()
        earliest = self._flood_until.get(chat, now)
        if sent:
            earliest = max(earliest, sent[-1] + CHAT_INTERVAL * self.time_scale)
        group = chat.startswith(("-", "@"))
        if group and len(sent) >= GROUP_LIMIT:
            earliest = max(earliest, sent[-GROUP_LIMIT] + window)
        if group and sent and self.group_interval is not None:
            earliest = max(earliest, sent[-1] + self.group_interval)
        if earliest > now:
            return max(1, math.ceil(earliest - now))
        sent.append(now)
        return None
