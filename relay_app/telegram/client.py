"""The Telegram Bot API client: `sendMessage` for the relay (and `sendPhoto`, a picture as
multipart form data, for a chart), and for acting on alerts from the chat `editMessageText`
(`editMessageCaption` for a photo's caption), `answerCallbackQuery`, a long-polling `getUpdates`,
`setWebhook` and `deleteWebhook`; `getMe`, `getChat`, `getChatMember` and `sendChatAction`
for `relay-app check`, `getUpdates` and `getWebhookInfo` for `relay-app chats`; and the one
place where requests' exceptions and Telegram's replies become the relay's delivery errors.
"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import requests
import urllib3

from ..core.client_text import cleaned
from ..core.errors import (
    ChatMigrated,
    DeliveryError,
    MarkupRejected,
    PermanentDeliveryError,
    RateLimited,
    RetryableDeliveryError,
    ThreadNotFound,
)
from ..core.http_deadline import Deadline, DeadlineAdapter
from ..core.json_values import json_int, json_object
from ..core.logs import redact, register_secret
from ..core.routing import ChatId

# Descriptions (lower-cased) of 400s that plain text cures: our markup or our length.
_MARKUP_PROBLEMS = (
    "can't parse entities",
    "message is too long",
    "text is too long",
    "caption is too long",
)
# Enough for gunicorn's request threads plus the background retrier's, so connections to
# Telegram are reused rather than discarded with a "pool is full" warning.
CONNECTION_POOL_SIZE = 160


# What the relay reads of Telegram's updates: presses on its buttons, replies to its messages,
# and a person blocking the bot in their private chat with it (no more private calls there).
# Telegram keeps this list for later calls, so every call that reads updates names it.
ALLOWED_UPDATES = ["message", "callback_query", "my_chat_member"]

# The methods a repeat of which can post a second message (or topic): a failed one that may
# have reached Telegram is retried sparingly (delivery/policy.py). Any other method (an edit,
# a reaction, a question) done twice leaves what once does, so it is retried on the quick
# backoff whatever became of it. A forum topic made twice is two topics.
POSTING_METHODS = frozenset({"sendMessage", "sendPhoto", "createForumTopic"})


@dataclass(frozen=True)
class Extras:
    """What a message carries besides its text: inline buttons, the message it replies to,
    and whether it arrives without sound (a route's quiet hours or `silent`)."""

    keyboard: dict[str, Any] | None = None
    reply_to: int | None = None
    silent: bool = False


NO_EXTRAS = Extras()


class TelegramClient:
    def __init__(self, api_url: str, token: str, *, user_agent: str | None = None) -> None:
        """`user_agent` names what asks, where a proxy's log shows it (the start-up check)."""
        # The token travels in the URL, so every requests error carries it: from here on, no
        # message or log line in this process can show it.
        register_secret(token)
        self._method_url = f"{api_url}/bot{token}/"
        self._session = requests.Session()
        if user_agent is not None:
            self._session.headers["User-Agent"] = user_agent
        adapter = DeadlineAdapter(
            pool_connections=4, pool_maxsize=CONNECTION_POOL_SIZE, max_retries=0
        )
        self._session.mount("http://", adapter)
        self._session.mount("https://", adapter)

    def send_message(
        self,
        chat_id: ChatId,
        text: str,
        *,
        html: bool,
        thread_id: int | None,
        deadline: float,
        extras: Extras = NO_EXTRAS,
    ) -> dict[str, Any]:
        """Send `text`, finishing by `deadline` (a time.monotonic() value) whatever the network
        does, with its `extras`: inline buttons, and as a reply to a message of the chat (sent
        plainly when that message is gone), without sound. Returns Telegram's `result` (the
        Message); raises a DeliveryError subclass otherwise."""
        body: dict[str, Any] = {
            "chat_id": chat_id,
            "text": text,
            "link_preview_options": {"is_disabled": True},
        }
        return self.call("sendMessage", _placed(body, html, thread_id, extras), deadline=deadline)

    def send_photo(
        self,
        chat_id: ChatId,
        photo: bytes | str,
        caption: str,
        *,
        html: bool,
        thread_id: int | None,
        deadline: float,
        extras: Extras = NO_EXTRAS,
    ) -> dict[str, Any]:
        """Send a picture (`photo`: a PNG's bytes, uploaded as multipart form data; or the
        file_id of one Telegram keeps) with `caption` (at most 1,024 characters), as
        `send_message` sends text. Returns Telegram's `result` (the Message, whose `photo` lists
        the sizes it keeps, each with its file_id); raises a DeliveryError subclass."""
        body = _placed({"chat_id": chat_id, "caption": caption}, html, thread_id, extras)
        if isinstance(photo, str):
            return self.call("sendPhoto", {**body, "photo": photo}, deadline=deadline)
        files = {"photo": ("chart.png", photo, "image/png")}
        return json_object(self.call_for_any("sendPhoto", body, deadline=deadline, files=files))

    def edit_message_text(
        self,
        chat_id: ChatId,
        message_id: int,
        html: str,
        *,
        keyboard: dict[str, Any] | None,
        deadline: float,
        caption: bool = False,
    ) -> None:
        """Replace a message's text (HTML) and its buttons: without `keyboard`, it has none.
        With `caption`, a photo's caption (editMessageCaption: Telegram refuses
        editMessageText on a message that has no text)."""
        body: dict[str, Any] = {"chat_id": chat_id, "message_id": message_id}
        if caption:
            body["caption"] = html
        else:
            body["text"] = html
            body["link_preview_options"] = {"is_disabled": True}
        body["parse_mode"] = "HTML"
        if keyboard is not None:
            body["reply_markup"] = keyboard
        method = "editMessageCaption" if caption else "editMessageText"
        self.call_for_any(method, body, deadline=deadline)

    def answer_callback_query(
        self, callback_query_id: str, text: str, *, alert: bool, deadline: float
    ) -> None:
        """Answer a press: `text` (at most 200 characters) as a brief notice, or with `alert`
        as a box the person closes."""
        body = {"callback_query_id": callback_query_id, "text": text[:200], "show_alert": alert}
        self.call_for_any("answerCallbackQuery", body, deadline=deadline)

    def poll_updates(
        self,
        offset: int,
        *,
        timeout: int,
        deadline: float,
        watch: Callable[[Deadline], None] | None = None,
    ) -> list[dict[str, Any]]:
        """Updates from `offset` on (confirming every one before it), waiting up to `timeout`
        seconds for one to come. `watch` is handed the request's Deadline, so another thread can
        end the wait at once (a stopping relay must not leave a poll behind it)."""
        body = {"offset": offset, "timeout": timeout, "allowed_updates": ALLOWED_UPDATES}
        result = self.call_for_any("getUpdates", body, deadline=deadline, watch=watch)
        if not isinstance(result, list):
            return []
        # Cleaned as a posted update is (glitchtip/webhook.py): names and texts are anyone's.
        return [cleaned(update) for update in result if isinstance(update, dict)]

    def set_webhook(self, url: str, *, secret_token: str, deadline: float) -> None:
        body = {"url": url, "secret_token": secret_token, "allowed_updates": ALLOWED_UPDATES}
        self.call_for_any("setWebhook", body, deadline=deadline)

    def set_message_reaction(
        self, chat_id: ChatId, message_id: int, emoji: str, *, deadline: float
    ) -> None:
        """React to a message with one emoji (one of the few Telegram offers to bots)."""
        body = {
            "chat_id": chat_id,
            "message_id": message_id,
            "reaction": [{"type": "emoji", "emoji": emoji}],
        }
        self.call_for_any("setMessageReaction", body, deadline=deadline)

    def delete_webhook(self, *, deadline: float) -> None:
        self.call_for_any("deleteWebhook", {}, deadline=deadline)

    def get_me(self, *, deadline: float) -> dict[str, Any]:
        return self.call("getMe", {}, deadline=deadline)

    def get_chat(self, chat_id: ChatId, *, deadline: float) -> dict[str, Any]:
        return self.call("getChat", {"chat_id": chat_id}, deadline=deadline)

    def get_chat_member(self, chat_id: ChatId, user_id: int, *, deadline: float) -> dict[str, Any]:
        body = {"chat_id": chat_id, "user_id": user_id}
        return self.call("getChatMember", body, deadline=deadline)

    def send_chat_action(
        self, chat_id: ChatId, *, thread_id: int | None, deadline: float
    ) -> dict[str, Any]:
        """'typing…' for a few seconds: the one way to ask whether a forum topic exists
        without posting in it."""
        body: dict[str, Any] = {"chat_id": chat_id, "action": "typing"}
        if thread_id is not None:
            body["message_thread_id"] = thread_id
        return self.call("sendChatAction", body, deadline=deadline)

    def get_updates(self, *, deadline: float) -> list[dict[str, Any]]:
        """The updates Telegram holds for the bot (up to 24 h of them), without confirming any:
        with no offset, the next caller sees them all again. No allowed_updates either: Telegram
        would keep that filter for every later call, the relay's own included."""
        result = self.call_for_any("getUpdates", {"timeout": 0, "limit": 100}, deadline=deadline)
        if not isinstance(result, list):
            return []
        # Cleaned as a posted update is (glitchtip/webhook.py): names and texts are anyone's.
        return [cleaned(update) for update in result if isinstance(update, dict)]

    def get_webhook_info(self, *, deadline: float) -> dict[str, Any]:
        return self.call("getWebhookInfo", {}, deadline=deadline)

    def call(self, method: str, body: dict[str, Any], *, deadline: float) -> dict[str, Any]:
        """One Bot API call, finished by `deadline`. Returns Telegram's `result` (an object;
        {} for a bare `true`); raises a DeliveryError subclass otherwise."""
        result = self.call_for_any(method, body, deadline=deadline)
        return json_object(result)

    def call_for_any(
        self,
        method: str,
        body: dict[str, Any],
        *,
        deadline: float,
        watch: Callable[[Deadline], None] | None = None,
        files: dict[str, tuple[str, bytes, str]] | None = None,
    ) -> object:
        """`call` for the methods whose `result` is not an object (getUpdates: a list). With
        `files`, the body goes as multipart form data: each field as text (JSON for one that
        is not a string or number), beside the files."""
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise RetryableDeliveryError(
                "no time left for another request to Telegram", maybe_delivered=False
            )
        with Deadline(remaining) as watchdog:
            if watch is not None:
                watch(watchdog)
            try:
                response = (
                    self._session.post(
                        self._method_url + method, json=body, timeout=(remaining, remaining)
                    )
                    if files is None
                    else self._session.post(
                        self._method_url + method,
                        data=_form_fields(body),
                        files=files,
                        timeout=(remaining, remaining),
                    )
                )
            except requests.RequestException as exc:
                raise _network_error(exc, watchdog.expired, remaining, method) from None
        return _result_or_error(response, watchdog.expired, remaining, method)

    def close(self) -> None:
        self._session.close()


def _placed(
    body: dict[str, Any], html: bool, thread_id: int | None, extras: Extras
) -> dict[str, Any]:
    """A message's or a photo's body with where it goes and what it carries: HTML, the forum
    topic, inline buttons, the message it answers (sent plainly when that message is gone), no
    sound."""
    if html:
        body["parse_mode"] = "HTML"
    if thread_id is not None:
        body["message_thread_id"] = thread_id
    if extras.keyboard is not None:
        body["reply_markup"] = extras.keyboard
    if extras.reply_to is not None:
        body["reply_parameters"] = {
            "message_id": extras.reply_to,
            "allow_sending_without_reply": True,
        }
    if extras.silent:
        body["disable_notification"] = True
    return body


def _form_fields(body: dict[str, Any]) -> dict[str, str]:
    """A JSON body as multipart form fields: Telegram reads a field that is an object (the
    buttons, the reply's parameters) as JSON text."""
    return {
        name: value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        for name, value in body.items()
    }


def _network_error(
    exc: requests.RequestException, expired: bool, seconds: float, method: str
) -> DeliveryError:
    # `from None` above and redact() here: requests' messages and chained exceptions carry the
    # URL, and with it the bot token.
    maybe = method in POSTING_METHODS and not _never_connected(exc)
    if expired or isinstance(exc, requests.Timeout):
        return RetryableDeliveryError(
            f"Telegram did not answer within {seconds:.1f} s", maybe_delivered=maybe
        )
    if isinstance(exc, requests.ConnectionError):
        return RetryableDeliveryError(
            f"connection to Telegram failed: {_root_cause(exc)}", maybe_delivered=maybe
        )
    return RetryableDeliveryError(
        f"request to Telegram failed: {_root_cause(exc)}", maybe_delivered=maybe
    )


def _never_connected(exc: requests.RequestException) -> bool:
    """True when the request failed before a connection existed (refused, DNS, unreachable,
    connect timeout), so not one byte of it can have reached Telegram."""
    if isinstance(exc, requests.ConnectTimeout):
        return True
    return any(
        isinstance(cause, _BEFORE_CONNECTING | ConnectionRefusedError | socket.gaierror)
        for cause in _causes(exc)
    )


# urllib3's NewConnectionError (refused, unreachable) and NameResolutionError derive from it.
_BEFORE_CONNECTING = urllib3.exceptions.ConnectTimeoutError


def _causes(exc: BaseException) -> list[BaseException]:
    """The exception and everything it wraps: urllib3's MaxRetryError keeps its cause in
    `reason`, a ProxyError in `original_error`, requests in `args[0]`."""
    found: list[BaseException] = []
    pending: list[object] = [exc]
    while pending and len(found) < 20:
        cause = pending.pop()
        if not isinstance(cause, BaseException) or any(cause is seen for seen in found):
            continue
        found.append(cause)
        pending.extend(
            (
                cause.__cause__,
                cause.__context__,
                getattr(cause, "reason", None),
                getattr(cause, "original_error", None),
                cause.args[0] if cause.args else None,
            )
        )
    return found


def _root_cause(exc: requests.RequestException) -> str:
    """'Connection refused' rather than three layers of urllib3's pool and retry wrappers."""
    cause: BaseException = exc
    wrapped = exc.args[0] if exc.args else None
    if isinstance(wrapped, BaseException):
        cause = getattr(wrapped, "reason", None) or wrapped  # urllib3's MaxRetryError
    while cause.__cause__ is not None:
        cause = cause.__cause__
    if isinstance(cause, OSError) and cause.strerror:
        return cause.strerror
    return _short(redact(str(cause)))


def _result_or_error(
    response: requests.Response, expired: bool, seconds: float, method: str
) -> object:
    try:
        reply = response.json()
    except ValueError:
        reply = None
    maybe = method in POSTING_METHODS
    if not isinstance(reply, dict):
        # A proxy's HTML error page, or a body cut off by the deadline: nothing says the
        # message was refused, so it is worth another attempt.
        if expired:
            raise RetryableDeliveryError(
                f"Telegram did not finish answering within {seconds:.1f} s", maybe_delivered=maybe
            )
        raise RetryableDeliveryError(
            f"Telegram answered HTTP {response.status_code} without a Bot API reply",
            maybe_delivered=maybe,
        )
    if reply.get("ok") is True and response.status_code < 300:
        return reply.get("result")
    raise _refusal(response, reply, method)


def _refusal(response: requests.Response, reply: dict[str, Any], method: str) -> DeliveryError:
    status = response.status_code
    # Telegram documents error_code as subject to change: the HTTP status and the description
    # are read too.
    error_code = json_int(reply.get("error_code"))
    if error_code is None:
        error_code = status
    description = redact(str(reply.get("description") or f"HTTP {status}"))
    parameters = json_object(reply.get("parameters"))
    refused = "the message" if method == "sendMessage" else method
    summary = f"Telegram refused {refused} ({error_code}): {_short(description)}"
    if 429 in (error_code, status):
        retry_after = _seconds(parameters.get("retry_after"))
        if retry_after is None:
            retry_after = _seconds(response.headers.get("Retry-After"))
        # Telegram turned the request away: it certainly posted nothing.
        return RateLimited(summary, retry_after=retry_after)
    if error_code >= 500 or status >= 500:
        return RetryableDeliveryError(
            summary, error_code=error_code, maybe_delivered=method in POSTING_METHODS
        )
    return _permanent(summary, error_code, description, parameters)


def _permanent(
    summary: str, error_code: int, description: str, parameters: dict[str, Any]
) -> PermanentDeliveryError:
    """Which of Telegram's permanent refusals this is: each has a remedy of its own."""
    new_chat_id = json_int(parameters.get("migrate_to_chat_id"))
    if new_chat_id is not None:
        return ChatMigrated(
            summary, error_code=error_code, description=description, new_chat_id=new_chat_id
        )
    if any(problem in description.lower() for problem in _MARKUP_PROBLEMS):
        return MarkupRejected(summary, error_code=error_code, description=description)
    if "message thread not found" in description.lower():
        return ThreadNotFound(summary, error_code=error_code, description=description)
    return PermanentDeliveryError(summary, error_code=error_code, description=description)


def _seconds(value: object) -> float | None:
    if not isinstance(value, int | float | str) or isinstance(value, bool):
        return None
    try:
        seconds = float(value)
    except ValueError:
        return None
    return seconds if 0 < seconds < 86400 else None


def _short(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[:limit] + "…"
