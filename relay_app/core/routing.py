"""Where an alert goes: a chat and, in a forum supergroup, a topic.

GlitchTip's webhook URL is the only thing a user can vary per alert rule, so the destination is
chosen there: `?thread_id=12` for a topic of the default chat, `?chat_id=-100...&thread_id=3` for
another chat, which must be on TELEGRAM_ALLOWED_CHAT_IDS (anyone who has the URL could otherwise
make the bot post anywhere it is a member).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

ChatId = int | str

_CHANNEL_USERNAME = re.compile(r"@[A-Za-z][A-Za-z0-9_]{3,31}")
_INTEGER = re.compile(r"-?[0-9]{1,20}")
QUERY_PARAMETERS = ("chat_id", "thread_id")


class RouteError(ValueError):
    """The webhook URL's query string names no destination the relay may send to."""


@dataclass(frozen=True)
class Destination:
    chat: ChatId
    thread: int | None = None
    # The webhook URL named neither chat nor topic: the alert goes where TELEGRAM_CHAT_ID and
    # TELEGRAM_THREAD_ID say, as they are when it is retried (`relay-app spool retry`). Not part
    # of the destination's identity.
    default: bool = field(default=False, compare=False)

    @property
    def chat_key(self) -> str:
        """The chat as pacing and the spool know it: one spelling per chat."""
        return chat_key(self.chat)

    @property
    def is_group(self) -> bool:
        """Whether Telegram's 20-messages-a-minute group limit applies: groups and supergroups
        have negative ids. A public chat named by @username may be a supergroup too, so it is
        paced as one; channels pay only in a storm, where digests absorb it."""
        return isinstance(self.chat, str) or self.chat < 0

    @property
    def lane(self) -> str:
        """Chat and topic in one key: the destination's own queue, whose alerts go in order."""
        return f"{self.chat_key}/{'' if self.thread is None else self.thread}"

    def message_lane(self, message_id: int) -> str:
        """The lane of the writes about one message of the chat (its card's edits, a reply
        under it): they go in order, apart from the chat's alerts but at its pace."""
        return f"{self.chat_key}/#{message_id}"

    def without_topic(self) -> Destination:
        return Destination(self.chat)

    def describe(self) -> str:
        return f"chat {self.chat}" + (f" topic {self.thread}" if self.thread is not None else "")


def chat_key(chat: ChatId) -> str:
    # Telegram usernames are case-insensitive.
    return chat.lower() if isinstance(chat, str) else str(chat)


def parse_chat_id(raw: str) -> ChatId | None:
    """An integer chat id or an @channelname, or None when `raw` is neither."""
    raw = raw.strip()
    if _CHANNEL_USERNAME.fullmatch(raw):
        return raw
    if _INTEGER.fullmatch(raw) and int(raw) != 0:
        return int(raw)
    return None


def parse_thread_id(raw: str) -> int | None:
    """A forum topic's id (a positive integer), or None when `raw` is not one."""
    raw = raw.strip()
    if not raw.isascii() or not raw.isdigit() or len(raw) > 20 or int(raw) <= 0:
        return None
    return int(raw)


def destination_from_query(
    query: Mapping[str, str] | Iterable[tuple[str, str]],
    *,
    default: Destination,
    allowed_chats: frozenset[str],
) -> Destination:
    """The destination a webhook URL's query string asks for. Raises RouteError naming the
    problem: an unknown, repeated or malformed parameter, or a chat that is not allowed."""
    values = _parameters(query)
    if not values:
        return Destination(default.chat, default.thread, default=True)
    chat: ChatId = default.chat
    thread = default.thread
    if "chat_id" in values:
        asked = _allowed_chat(values["chat_id"], default=default, allowed_chats=allowed_chats)
        if chat_key(asked) != default.chat_key:
            # The default topic belongs to the default chat; another chat has its own.
            chat, thread = asked, None
    if "thread_id" in values:
        thread = parse_thread_id(values["thread_id"])
        if thread is None:
            raise RouteError(
                f"thread_id={values['thread_id']!r} is not a positive integer (a forum topic's id)"
            )
    return Destination(chat, thread)


def _parameters(query: Mapping[str, str] | Iterable[tuple[str, str]]) -> dict[str, str]:
    values: dict[str, str] = {}
    for name, value in query.items() if isinstance(query, Mapping) else query:
        if name not in QUERY_PARAMETERS:
            raise RouteError(
                f"unknown query parameter {name!r}; the webhook URL takes only chat_id and "
                "thread_id"
            )
        if name in values:
            raise RouteError(f"the query parameter {name} is given more than once")
        values[name] = value
    return values


def _allowed_chat(text: str, *, default: Destination, allowed_chats: frozenset[str]) -> ChatId:
    chat = parse_chat_id(text)
    if chat is None:
        raise RouteError(
            f"chat_id={text!r} is neither an integer chat id (like -1001234567890) nor an "
            "@channelname"
        )
    if chat_key(chat) != default.chat_key and chat_key(chat) not in allowed_chats:
        raise RouteError(
            f"chat_id={chat} is not in TELEGRAM_ALLOWED_CHAT_IDS; add it there to let webhooks "
            "send to it"
        )
    return chat
