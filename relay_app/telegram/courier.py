"""One delivery attempt of a prebuilt message, with the two recoveries that must not lose it (and a
photo's third: refused, its text goes instead);
the question that tells whether Telegram answers at all (`probe`); and the later changes to a
sent message that acting on alerts makes (`edit`, `answer`).

Used alike by the webhook's synchronous attempt and by each background retry. Within one
attempt (one deadline): Telegram rejecting our HTML or its length gets the plain-text fallback;
a group upgraded to a supergroup gets the message at its new id. Any other error is the caller's
to handle.
"""

from __future__ import annotations

import html
import logging
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from ..core.errors import (
    ChatMigrated,
    DeliveryError,
    MarkupRejected,
    PermanentDeliveryError,
    ThreadNotFound,
    says_telegram_is_failing,
)
from ..core.json_values import json_int
from ..core.routing import ChatId, Destination, parse_chat_id
from ..message.formatting import Message
from ..message.spans import visible
from .client import NO_EXTRAS, Extras, TelegramClient

log = logging.getLogger(__name__)


# What Telegram says of an edit that changes nothing: the change is there already.
_NOT_MODIFIED = "message is not modified"


@dataclass(frozen=True)
class Sent:
    """A message Telegram accepted: where it is, and its HTML as the chat shows it (the plain
    fallback, escaped, when Telegram refused the HTML), for the edits that add to it."""

    chat: str  # the chat's id as Telegram answered it
    message_id: int
    html: str


@dataclass(frozen=True)
class Picture:
    """A picture to send (delivery/render.py's Photo): a PNG's bytes or the file_id of one
    Telegram keeps, its caption (HTML), the text that goes where Telegram refuses it (HTML),
    its buttons, the message it answers, and what a log line calls it."""

    photo: bytes | str
    caption: str
    instead: str
    keyboard: dict[str, Any] | None = None
    reply_to: int | None = None
    said: str = "a photo"


class Telegram(Protocol):
    """What the relay needs of Telegram: `Courier` over the Bot API, or a test's stand-in."""

    def deliver(
        self, message: Message, destination: Destination, extras: Extras = NO_EXTRAS
    ) -> Sent | None:
        """One attempt, within the attempt timeout; raises DeliveryError on failure. Returns
        where the message is (None: a stand-in that does not say)."""

    def probe(self) -> bool:
        """Whether Telegram answers a question that posts nothing."""

    def edit(
        self,
        chat: str,
        message_id: int,
        html_text: str,
        keyboard: dict[str, Any] | None,
        *,
        caption: bool = False,
    ) -> None:
        """Replace a sent message's text and buttons (a photo's caption, with `caption`);
        raises DeliveryError."""

    def send_photo(self, photo: Picture, destination: Destination) -> tuple[Sent, str | None]:
        """One attempt to send a picture, its text in its place where Telegram refuses the
        picture: where it went, and the file_id Telegram keeps of it (None: it went as text).
        Raises DeliveryError."""

    def answer(self, callback_query_id: str, text: str, *, alert: bool = False) -> None:
        """Answer a press on a button with a notice; raises DeliveryError."""

    def call(self, chat: str, method: str, params: Mapping[str, Any]) -> Mapping[str, Any]:
        """Another of the Bot API's methods about a chat (a forum topic made, a message
        pinned): its `result` ({} for a bare true); raises DeliveryError."""

    def react(self, chat: str, message_id: int, emoji: str) -> None:
        """Put a reaction on a message of the chat; raises DeliveryError."""

    def reply(
        self,
        chat: str,
        thread: int | None,
        message_id: int,
        text: str,
        *,
        silent: bool = False,
        html: str | None = None,
    ) -> None:
        """Answer a message of the chat with a short reply (plain text, or `html` where it
        calls people by a link), without sound when `silent`; raises DeliveryError."""


class Courier:
    def __init__(self, client: TelegramClient, *, attempt_timeout: float) -> None:
        self._client = client
        self._attempt_timeout = attempt_timeout
        self._lock = threading.Lock()
        # Groups seen upgraded to supergroups, old id to new, for this process's lifetime.
        self._migrated: dict[ChatId, ChatId] = {}

    def deliver(
        self, message: Message, destination: Destination, extras: Extras = NO_EXTRAS
    ) -> Sent:
        """One attempt, finished within the attempt timeout; raises DeliveryError on failure."""
        deadline = time.monotonic() + self._attempt_timeout
        with self._lock:
            chat_id = self._migrated.get(destination.chat, destination.chat)
        text, as_html = message.html, True
        tried_chats = {chat_id}
        while True:
            try:
                result = self._client.send_message(
                    chat_id,
                    text,
                    html=as_html,
                    thread_id=destination.thread,
                    deadline=deadline,
                    extras=extras,
                )
                shown = text if as_html else html.escape(text, quote=False)
                return _sent(result, chat_id, shown)
            except MarkupRejected as exc:
                if not as_html:
                    raise
                log.warning(
                    "Telegram rejected the alert's HTML (%s); sending it as plain text", exc
                )
                text, as_html = message.fallback, False
            except ChatMigrated as exc:
                if exc.new_chat_id in tried_chats:
                    raise
                chat_id = self._follow_migration(destination.chat, exc.new_chat_id)
                tried_chats.add(chat_id)

    def send_photo(self, photo: Picture, destination: Destination) -> tuple[Sent, str | None]:
        """One attempt to send a picture, within the attempt timeout: where it went, and the
        file_id Telegram keeps of it. A caption Telegram cannot parse goes as plain text; a
        picture it refuses (its size or kind, a chat where the bot may not send photos, a
        file_id it no longer knows) goes as its text, a message with the same buttons, in the
        time left. Raises DeliveryError."""
        deadline = time.monotonic() + self._attempt_timeout
        with self._lock:
            chat_id = self._migrated.get(destination.chat, destination.chat)
        extras = Extras(keyboard=photo.keyboard, reply_to=photo.reply_to)
        as_html = True
        while True:
            try:
                result = self._client.send_photo(
                    chat_id,
                    photo.photo,
                    photo.caption if as_html else visible(photo.caption),
                    html=as_html,
                    thread_id=destination.thread,
                    deadline=deadline,
                    extras=extras,
                )
                shown = photo.caption if as_html else html.escape(visible(photo.caption))
                return _sent(result, chat_id, shown), _largest_file(result)
            except MarkupRejected as exc:
                if not as_html:
                    break
                log.warning("Telegram rejected a photo's caption (%s); sending it plainly", exc)
                as_html = False
            except (ChatMigrated, ThreadNotFound):
                raise  # the text would meet the same: the job's own fate
            except PermanentDeliveryError as exc:
                log.warning("Telegram refused %s (%s); sending its text instead", photo.said, exc)
                break
        result = self._client.send_message(
            chat_id,
            photo.instead,
            html=True,
            thread_id=destination.thread,
            deadline=deadline,
            extras=extras,
        )
        return _sent(result, chat_id, photo.instead), None

    def probe(self) -> bool:
        """Ask Telegram something that can never post anything (getMe), within the attempt
        timeout: True when it answered, whatever it said."""
        try:
            self._client.get_me(deadline=time.monotonic() + self._attempt_timeout)
        except DeliveryError as exc:
            return not says_telegram_is_failing(exc)
        return True

    def edit(
        self,
        chat: str,
        message_id: int,
        html_text: str,
        keyboard: dict[str, Any] | None,
        *,
        caption: bool = False,
    ) -> None:
        """Replace a sent message's text and buttons (a photo's caption, with `caption`),
        within the attempt timeout; raises DeliveryError (an edit that changes nothing is no
        error)."""
        try:
            self._client.edit_message_text(
                parse_chat_id(chat) or chat,
                message_id,
                html_text,
                keyboard=keyboard,
                deadline=time.monotonic() + self._attempt_timeout,
                caption=caption,
            )
        except PermanentDeliveryError as exc:
            if _NOT_MODIFIED not in exc.description.lower():
                raise

    def answer(self, callback_query_id: str, text: str, *, alert: bool = False) -> None:
        """Answer a press with a notice; raises DeliveryError."""
        self._client.answer_callback_query(
            callback_query_id,
            text,
            alert=alert,
            deadline=time.monotonic() + self._attempt_timeout,
        )

    def call(self, chat: str, method: str, params: Mapping[str, Any]) -> Mapping[str, Any]:
        """Another method about a chat, within the attempt timeout; raises DeliveryError."""
        with self._lock:
            where = parse_chat_id(chat) or chat
            where = self._migrated.get(where, where)
        return self._client.call(
            method,
            {"chat_id": where, **params},
            deadline=time.monotonic() + self._attempt_timeout,
        )

    def react(self, chat: str, message_id: int, emoji: str) -> None:
        """Put a reaction on a message, within the attempt timeout; raises DeliveryError."""
        self._client.set_message_reaction(
            parse_chat_id(chat) or chat,
            message_id,
            emoji,
            deadline=time.monotonic() + self._attempt_timeout,
        )

    def reply(
        self,
        chat: str,
        thread: int | None,
        message_id: int,
        text: str,
        *,
        silent: bool = False,
        html: str | None = None,
    ) -> None:
        """A short reply to a message, plain text or `html` (as plain text when Telegram
        rejects that), within the attempt timeout; raises DeliveryError."""
        deadline = time.monotonic() + self._attempt_timeout
        extras = Extras(reply_to=message_id, silent=silent)
        where = parse_chat_id(chat) or chat
        if html is not None:
            try:
                self._client.send_message(
                    where, html, html=True, thread_id=thread, deadline=deadline, extras=extras
                )
                return
            except MarkupRejected as exc:
                log.warning("Telegram rejected a reply's HTML (%s); sending it as plain text", exc)
        self._client.send_message(
            where, text, html=False, thread_id=thread, deadline=deadline, extras=extras
        )

    def _follow_migration(self, old: ChatId, new: ChatId) -> ChatId:
        with self._lock:
            # Later alerts from this process go straight to the new id; after a restart the old
            # id is tried first again until the operator updates the variable.
            self._migrated[old] = new
        log.warning(
            "Telegram chat %s was upgraded to a supergroup with id %s; sending there. "
            "Set TELEGRAM_CHAT_ID (or the webhook URL's chat_id, and TELEGRAM_ALLOWED_CHAT_IDS) "
            "to %s to stop relying on this redirect.",
            old,
            new,
            new,
        )
        return new


def _largest_file(result: dict[str, Any]) -> str | None:
    """The file_id of the largest size Telegram keeps of a photo it took (its `photo` lists
    them smallest first): sent again by it, the picture is not uploaded again."""
    sizes = [size for size in result.get("photo") or () if isinstance(size, dict)]
    file_id = sizes[-1].get("file_id") if sizes else None
    return file_id if isinstance(file_id, str) and file_id else None


def _sent(result: dict[str, Any], chat_id: ChatId, shown: str) -> Sent:
    chat = result.get("chat")
    answered_chat = chat.get("id") if isinstance(chat, dict) else None
    message_id = result.get("message_id")
    return Sent(
        str(answered_chat if answered_chat is not None else chat_id),
        json_int(message_id) or 0,
        shown,
    )
