"""`relay-app chats`: which chats and forum topics has the bot seen, and their ids.

Finding a group's id (and a topic's) is the hardest step of a first setup: Telegram shows
neither. The bot itself knows them from its updates, which Telegram keeps for 24 hours until
someone confirms them: adding the bot to a group is one (`my_chat_member`), and so is every
message it may see. This reads them (`getUpdates`, confirming none, so it takes nothing from
anyone) and turns them into the lines to set. Reading the updates is pure (`seen_chats`); the
one network exchange is `find_chats`.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, TextIO
from urllib.parse import urlsplit

from ..core.errors import DeliveryError
from ..core.json_values import json_int
from ..telegram.client import TelegramClient
from .console import print_table

# The kinds of update that carry a message, and so a chat and perhaps a topic.
_MESSAGE_KEYS = ("message", "edited_message", "channel_post", "edited_channel_post")
# The kinds that carry a chat without a message.
_CHAT_KEYS = ("my_chat_member", "chat_member", "chat_join_request", "message_reaction")
_GONE = {"left", "kicked"}
# Telegram's 409 when a webhook is set: getUpdates then answers nothing but this.
_WEBHOOK_ACTIVE = "webhook is active"


@dataclass
class SeenChat:
    id: int
    type: str  # private, group, supergroup, channel
    title: str
    is_forum: bool = False
    # Topic id to its name, or "" when no update named it.
    topics: dict[int, str] = field(default_factory=dict)
    # The bot's latest standing there, when an update said (my_chat_member).
    bot_status: str | None = None
    # A group that became a supergroup: the id that replaced this one.
    migrated_to: int | None = None

    @property
    def bot_is_gone(self) -> bool:
        return self.bot_status in _GONE


def seen_chats(updates: Iterable[dict[str, Any]]) -> list[SeenChat]:
    """Every chat these updates show, oldest first, each with the topics seen in it. The latest
    update wins where they disagree (a renamed group, a bot removed and added again)."""
    chats: dict[int, SeenChat] = {}
    for update in sorted(updates, key=lambda u: int(u.get("update_id", 0))):
        for message in _messages(update):
            _note_message(chats, message)
        for key in _CHAT_KEYS:
            change = update.get(key)
            if isinstance(change, dict):
                _note_membership(chats, key, change)
    return list(chats.values())


def _note_message(chats: dict[int, SeenChat], message: dict[str, Any]) -> None:
    chat = _note_chat(chats, message.get("chat"))
    if chat is None:
        return
    _note_topic(chat, message)
    migrated_to = json_int(message.get("migrate_to_chat_id"))
    if migrated_to is not None:
        chat.migrated_to = migrated_to


def _note_membership(chats: dict[int, SeenChat], key: str, change: dict[str, Any]) -> None:
    chat = _note_chat(chats, change.get("chat"))
    if chat is not None and key == "my_chat_member":
        member = change.get("new_chat_member")
        if isinstance(member, dict) and isinstance(member.get("status"), str):
            chat.bot_status = member["status"]


def _messages(update: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for key in _MESSAGE_KEYS:
        if isinstance(message := update.get(key), dict):
            yield message
    query = update.get("callback_query")
    if isinstance(query, dict) and isinstance(message := query.get("message"), dict):
        yield message


def _note_chat(chats: dict[int, SeenChat], raw: object) -> SeenChat | None:
    if not isinstance(raw, dict) or not isinstance(raw.get("id"), int):
        return None
    chat_id = raw["id"]
    title = _title_of(raw)
    seen = chats.get(chat_id)
    if seen is None:
        seen = chats[chat_id] = SeenChat(chat_id, str(raw.get("type", "chat")), title)
    else:
        seen.type, seen.title = str(raw.get("type", seen.type)), title or seen.title
    if raw.get("is_forum"):
        seen.is_forum = True
    return seen


def _title_of(raw: dict[str, Any]) -> str:
    """A group's title, a person's name, or a username."""
    name = " ".join(str(raw[k]) for k in ("first_name", "last_name") if raw.get(k))
    username = f"@{raw['username']}" if raw.get("username") else ""
    return str(raw.get("title") or name or username)


def _note_topic(chat: SeenChat, message: dict[str, Any]) -> None:
    """A message in a forum topic names the topic by id; its name comes from the message that
    created it (or renamed it), which a topic's messages carry as the one they reply to."""
    thread = json_int(message.get("message_thread_id"))
    if not message.get("is_topic_message") or thread is None:
        return
    chat.is_forum = True
    name = chat.topics.get(thread, "")
    for source in (message.get("reply_to_message"), message):
        if not isinstance(source, dict):
            continue
        for key in ("forum_topic_created", "forum_topic_edited"):
            named = source.get(key)
            if isinstance(named, dict) and isinstance(named.get("name"), str) and named["name"]:
                name = named["name"]
    chat.topics[thread] = name


@dataclass(frozen=True)
class Found:
    """What `relay-app chats` found: the bot's username and the chats; or why it could not look."""

    bot_username: str = ""
    chats: list[SeenChat] = field(default_factory=list)
    problem: str | None = None
    hint: str | None = None


def find_chats(client: TelegramClient, *, timeout: float) -> Found:
    def deadline() -> float:
        return time.monotonic() + timeout

    try:
        me = client.get_me(deadline=deadline())
    except DeliveryError as exc:
        if exc.error_code in (401, 404):
            hint = (
                "the token is wrong or revoked: copy it again from @BotFather (/mybots → API Token)"
            )
        elif exc.error_code is None:
            hint = (
                "Telegram cannot be reached from this host: set HTTPS_PROXY (http:// or "
                "socks5h://), or point TELEGRAM_API_URL at a Bot API server or reverse proxy it "
                "can reach"
            )
        else:
            hint = None
        return Found(problem=str(exc), hint=hint)
    username = str(me.get("username") or "")
    try:
        updates = client.get_updates(deadline=deadline())
    except DeliveryError as exc:
        if exc.error_code == 409 and _WEBHOOK_ACTIVE in str(exc).lower():
            return Found(username, problem=str(exc), hint=_webhook_hint(client, deadline()))
        if exc.error_code == 409:
            return Found(
                username,
                problem=str(exc),
                hint="another program is reading this bot's updates right now (only one may): "
                "stop it for a moment and run this again, or find the chat id in that program",
            )
        return Found(username, problem=str(exc))
    return Found(username, seen_chats(updates))


def _webhook_hint(client: TelegramClient, deadline: float) -> str:
    where = ""
    try:
        url = str(client.get_webhook_info(deadline=deadline).get("url") or "")
    except DeliveryError:
        url = ""
    if url:
        # Only the host: a webhook's path often holds a secret of its own.
        where = f" (to {urlsplit(url).netloc})"
    return (
        f"this bot has a Telegram webhook set{where}, so Telegram gives its updates to that "
        "URL and not to getUpdates. If nothing needs that webhook (or it is this relay's own, "
        "for its buttons), delete it: relay-app telegram-webhook delete, then run this again. "
        "If something "
        "does, give the relay a bot of its own (@BotFather → /newbot): a bot can have one "
        "webhook or be polled, not both"
    )


def report(found: Found, out: TextIO) -> bool:
    """Print what was found for a person: each chat and topic, then the lines to set; False
    when there is nothing the bot can post in."""
    bot = f"@{found.bot_username}" if found.bot_username else "the bot"
    if not found.chats:
        print(_NOTHING_SEEN.format(bot=bot), file=out)
        return False
    print(f"Chats {bot} has seen (Telegram keeps a bot's updates for 24 hours):\n", file=out)
    _print_table(found.chats, out)
    usable = [chat for chat in found.chats if not chat.bot_is_gone and chat.migrated_to is None]
    if not usable:
        print(f"\n{bot} can post in none of them now.", file=out)
        return False
    print(
        "\nTo send GlitchTip's alerts to one of them, paste one of these blocks into the shell "
        "that starts the relay (in a service's environment file, leave out 'export '):",
        file=out,
    )
    for chat in usable:
        _print_settings(chat, out)
    return True


def _print_table(chats: list[SeenChat], out: TextIO) -> None:
    rows = [("ID", "TYPE", "TITLE")]
    for chat in chats:
        rows.append((str(chat.id), chat.type, _chat_title(chat) + _chat_note(chat)))
        rows += [
            ("", f"topic {thread}", name or "(name not seen)")
            for thread, name in sorted(chat.topics.items())
        ]
    print_table(rows, out, indent="  ")


def _print_settings(chat: SeenChat, out: TextIO) -> None:
    """The lines that send alerts to the chat, and to each of its topics."""
    title = _chat_title(chat)
    for thread, name in sorted(chat.topics.items()):
        print(f"\n  # {title}, topic {name or thread}", file=out)
        print(f"  export TELEGRAM_CHAT_ID='{chat.id}'", file=out)
        print(f"  export TELEGRAM_THREAD_ID='{thread}'", file=out)
    general = " (its General topic)" if chat.is_forum else ""
    print(f"\n  # {title}{general}{_KIND_NOTES.get(chat.type, '')}", file=out)
    print(f"  export TELEGRAM_CHAT_ID='{chat.id}'", file=out)


_NOTHING_SEEN = """\
{bot} has seen no chat in the last 24 hours, so there is no id to show yet. Make it see yours:
  - a group: add the bot (group info → Add members → {bot}); if it is already in, send a
    message in the group that mentions {bot} (a bot in a group sees only what is addressed
    to it);
  - a forum topic: send a message mentioning {bot} in that topic;
  - a channel: make the bot an administrator allowed to post, then post something there.
Then run this again. A relay running with GLITCHTIP_API_TOKEN reads (and so takes) the bot's
updates itself: stop it, or run it with TELEGRAM_UPDATES=off, while you look."""
_KIND_NOTES = {
    "channel": " (a channel: the bot must be an administrator allowed to post)",
    "private": " (a private chat with the bot)",
}


def _chat_title(chat: SeenChat) -> str:
    return chat.title or f"chat {chat.id}"


def _chat_note(chat: SeenChat) -> str:
    if chat.migrated_to is not None:
        return f" (became a supergroup: its id is now {chat.migrated_to})"
    if chat.bot_is_gone:
        return " (the bot is no longer in it: add it again)"
    return " (forum)" if chat.is_forum else ""
