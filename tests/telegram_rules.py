"""Telegram's rules for a sendMessage text, checked as strictly as the Bot API server applies
them (../shared/reference/telegram-bot-api.md). Shared by the formatting tests and the fake
Telegram server, so both hold the relay to the same contract."""

from __future__ import annotations

import html
import re

TEXT_LIMIT = 4096
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
    elif attrs.strip():
        raise TelegramRejection(
            f"Bad Request: can't parse entities: unexpected attribute on {name}"
        )
    open_tags.append(name)
