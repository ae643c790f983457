"""A local stand-in for the Telegram Bot API on 127.0.0.1, that can misbehave: sendMessage (with
inline keyboards and replies), the calls `relay-app check` makes (getMe, getChat,
getChatMember, sendChatAction), and what acting on alerts from the chat needs: getUpdates (a
long poll with offsets, and 409 Conflict for the earlier of two concurrent pollers, as Telegram
answers), sendPhoto (multipart or a file_id), answerCallbackQuery, editMessageText,
editMessageCaption, editMessageReplyMarkup, setWebhook,
deleteWebhook and getWebhookInfo. A test presses a button with `press`.

It applies Telegram's text rules (tests/telegram_rules.py) to what it receives, records every
request and every accepted message, and fails on demand the ways the real service and the
network do: errors, 429 with retry_after, hangs, bodies dripped a byte at a time, requests
lost before Telegram saw them, and replies lost after it posted the message. With
`limits=True` it enforces Telegram's rate limits as a 429 with retry_after: one message a
second per chat, twenty a minute per group (negative ids and @names), and any flood wait a
test imposes on a chat. Used by the end-to-end tests and by bench/.
"""

from __future__ import annotations

import email.policy
import itertools
import json
import random
import re
import select
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from email.parser import BytesParser
from typing import Any, Literal

import requests

from tests.fake_http import Handler, LocalService
from tests.telegram_rules import RateLimits, TelegramRejection, visible_text

TOKEN = "123456789:TEST-fake-token-abcdefghijklmnopqrstuv"
# Every misbehaviour ends by itself within this, so no test can hang on the fake.
MAX_STALL_SECONDS = 30.0
TOO_MANY = "Too Many Requests: retry after"

Mode = Literal["ok", "result", "error", "hang", "drip", "drop", "lose_reply", "html_error_page"]
REACTION_INVALID = "Bad Request: REACTION_INVALID"
# The relay's start-up check names itself so (operating/setup_watch.py).
START_UP_CHECK = "start-up check"
BOT = {
    "id": int(TOKEN.split(":")[0]),
    "is_bot": True,
    "first_name": "Relay",
    "username": "relay_bot",
}
CHAT_NOT_FOUND = "Bad Request: chat not found"
UPGRADED = "Bad Request: group chat was upgraded to a supergroup chat"
WEBHOOK_ACTIVE = (
    "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete "
    "the webhook first"
)
TERMINATED = (
    "Conflict: terminated by other getUpdates request; make sure that only one bot instance is "
    "running"
)
NOT_MODIFIED = (
    "Bad Request: message is not modified: specified new message content and reply markup are "
    "exactly the same as a current content and reply markup of the message"
)
QUERY_TOO_OLD = "Bad Request: query is too old and response timeout expired or query ID is invalid"
# Telegram's limits on inline keyboards.
MAX_BUTTONS = 100
MAX_BUTTONS_PER_ROW = 8
MAX_MARKUP_BYTES = 10 * 1024
_SECRET_TOKEN = re.compile(r"[A-Za-z0-9_-]{1,256}")


@dataclass
class Posted:
    """A message in a chat, as the fake holds it (and edits change it)."""

    chat: str
    message_id: int
    text: str
    parse_mode: str | None
    keyboard: dict[str, Any] | None
    thread: int | None
    reply_to: int | None
    # A photo's bytes (its text is then its caption), as it was uploaded.
    photo: bytes | None = None

    def visible(self) -> str:
        return visible_text(self.text, parse_mode=self.parse_mode)

    def buttons(self) -> list[dict[str, str]]:
        rows = (self.keyboard or {}).get("inline_keyboard", [])
        return [button for row in rows for button in row]


@dataclass
class Topic:
    """A forum topic, as the fake holds it (the bot's writes change it)."""

    chat: str
    thread: int
    name: str
    icon_color: int | None
    closed: bool = False


FORUM_METHODS = (
    "createForumTopic",
    "editForumTopic",
    "closeForumTopic",
    "reopenForumTopic",
    "pinChatMessage",
    "unpinChatMessage",
)
TOPIC_NOT_MODIFIED = "Bad Request: TOPIC_NOT_MODIFIED"
NOT_A_FORUM = "Bad Request: the chat is not a forum"
NO_TOPIC_RIGHTS = "Bad Request: not enough rights to create a topic"
NO_PIN_RIGHTS = "Bad Request: not enough rights to manage pinned messages in the chat"
THREAD_NOT_FOUND = "Bad Request: message thread not found"
# Telegram's refusals of a photo, and of an edit of the wrong kind of message.
IMAGE_PROCESS_FAILED = "Bad Request: IMAGE_PROCESS_FAILED"
WRONG_FILE_ID = "Bad Request: wrong file identifier/HTTP URL specified"
CAPTION_TOO_LONG = "Bad Request: message caption is too long"
NO_PHOTO_RIGHTS = "Bad Request: not enough rights to send photos to the chat"
NO_TEXT_TO_EDIT = "Bad Request: there is no text in the message to edit"
NO_CAPTION_TO_EDIT = "Bad Request: there is no caption in the message to edit"
MAX_CAPTION = 1024
MAX_PHOTO_BYTES = 10 * 1024 * 1024
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


@dataclass(frozen=True)
class Received:
    at: float  # time.monotonic()
    body: dict[str, Any]
    outcome: str  # "accepted", "dropped", "hung", "dripped" or the error description
    method: str = "sendMessage"
    reply_lost: bool = False  # accepted (posted), but the relay never heard so


@dataclass
class Behaviour:
    mode: Mode = "ok"
    status: int = 500
    description: str = "Internal Server Error"
    parameters: dict[str, Any] = field(default_factory=dict)
    drop_rate: float = 0.0  # in "ok" mode, this share of requests is dropped unanswered
    # In "ok" mode, this share of messages is posted, and the reply lost on its way back: the
    # relay cannot tell it from a dropped request, and a retry posts it twice.
    lost_reply_rate: float = 0.0
    result: dict[str, Any] | list[dict[str, Any]] | bool = True  # what a "result" answer carries
    # In "ok" mode, seconds Telegram takes over each request before it posts and answers.
    delay: float = 0.0
    # The Bot API methods this behaviour applies to (None: all); the others answer as usual,
    # as when sendMessage fails while getMe works.
    methods: frozenset[str] | None = None


class FakeTelegram(LocalService):
    name = "the fake Telegram"

    def __init__(
        self,
        *,
        token: str = TOKEN,
        seed: int = 1,
        limits: bool = False,
        group_interval: float | None = None,
    ) -> None:
        self.token = token
        self.limits = limits
        # Applied to messages while `limits` is on (group_interval: telegram_rules.py).
        self.rate_limits = RateLimits(group_interval=group_interval)
        # Forum topics that do not exist: 400 "message thread not found".
        self.missing_threads: set[int] = set()
        # Chats that do not exist (a wrong id): sendMessage there is 400 "chat not found".
        self.missing_chats: set[str] = set()
        # The chats the bot is in, as getChat describes them; any other chat is "not found".
        # The bot's membership status in each (getChatMember) is in `bot_status`.
        self.chats: dict[str, dict[str, Any]] = {}
        self.bot_status: dict[str, str] = {}
        # Groups upgraded to supergroups: old id to new; every call naming the old id fails.
        self.migrated: dict[str, int] = {}
        # What getUpdates answers (each update as Telegram sends it), unless a webhook is set:
        # then getUpdates answers 409, and getWebhookInfo names this URL.
        self.updates: list[dict[str, Any]] = []
        self.webhook_url = ""
        self.webhook_secret_token = ""
        self.webhook_allowed_updates: list[str] | None = None
        # What the relay posted, by chat and message id; edits change it.
        self.posted: dict[tuple[str, int], Posted] = {}
        # Photos: by file_id, the pictures Telegram keeps; each sendPhoto accepted, in order.
        self.files: dict[str, bytes] = {}
        self.photos_sent: list[dict[str, Any]] = []
        self._message_ids = itertools.count(1)
        self._update_ids = itertools.count(1)
        # Presses not yet answered, and the answers (answerCallbackQuery) by press.
        self._unanswered: set[str] = set()
        self.press_answers: dict[str, dict[str, Any]] = {}
        # Accepted edits (editMessageText, editMessageReplyMarkup), in order.
        self.edits: list[dict[str, Any]] = []
        # Reactions the bot set (setMessageReaction), in order; with `reactions_off`, the chat
        # allows none and Telegram refuses them, as it does where an admin turned them off.
        self.reactions: list[dict[str, Any]] = []
        # The commands the bot registered (setMyCommands), as it sent them.
        self.my_commands: list[dict[str, Any]] = []
        self.reactions_off = False
        # People's messages in the chats (`reply`), which the bot may reply to.
        self._people_said: set[tuple[str, int]] = set()
        # Forum topics by chat and thread (createForumTopic and the rest change them), every
        # accepted forum write in order (with its method), and the messages pinned in each
        # chat, the latest last. A chat's `rights` (the bot an administrator with them:
        # can_manage_topics, can_pin_messages) are in `add_chat`'s; a chat not added takes
        # every forum write, as a forum where the bot may do anything.
        self.topics: dict[tuple[str, int], Topic] = {}
        self.forum_writes: list[dict[str, Any]] = []
        self.pinned: dict[str, list[int]] = {}
        self.rights: dict[str, dict[str, bool]] = {}
        self._thread_ids = itertools.count(500)
        # Long polls cut short by a later one (Telegram's 409 to the earlier poller), and the
        # statuses the relay's webhook answered the updates `press` posted to it.
        self.conflicts = 0
        self.webhook_statuses: list[int] = []
        # Each press's update as it was delivered, for `deliver_again`.
        self._pressed: dict[str, dict[str, Any]] = {}
        self._updates_changed = threading.Condition(threading.Lock())
        self._waiting_poll: threading.Event | None = None
        self.behaviour = Behaviour()
        self.received: list[Received] = []
        self.start_up_requests: list[Received] = []
        # Connections over which a relay's start-up check asked, and that it has closed:
        # each is one round of its questions, answered whole.
        self.start_up_rounds = 0
        self._random = random.Random(seed)
        self._lock = threading.Lock()
        self._release = threading.Event()
        super().__init__()

    @property
    def time_scale(self) -> float:
        """Telegram's limits in time compressed by this (a relay under RELAY_TIME_SCALE)."""
        return self.rate_limits.time_scale

    @time_scale.setter
    def time_scale(self, scale: float) -> None:
        self.rate_limits.time_scale = scale

    def stop(self) -> None:
        """Stop listening: from now on connections are refused, as when Telegram is blocked
        or down, and hung requests are let go. `start()` listens again on the same port."""
        with self._lock:
            self._release.set()
            self._release = threading.Event()
        super().stop()

    def set(self, mode: Mode = "ok", *, methods: set[str] | None = None, **kwargs: Any) -> None:
        """Change how the next requests are answered (those to `methods` only, when given);
        hung requests are let go."""
        only = frozenset(methods) if methods is not None else None
        with self._lock:
            self.behaviour = Behaviour(mode, methods=only, **kwargs)
            self._release.set()
            self._release = threading.Event()

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The bodies of accepted messages, in order."""
        with self._lock:
            return [r.body for r in self.received if r.outcome == "accepted"]

    def messages_to(self, chat: int | str) -> list[Received]:
        """Accepted messages for one chat, in order."""
        with self._lock:
            return [
                r
                for r in self.received
                if r.outcome == "accepted" and str(r.body.get("chat_id")) == str(chat)
            ]

    def too_many_requests(self) -> list[Received]:
        with self._lock:
            return [r for r in self.received if r.outcome.startswith(TOO_MANY)]

    def flood(self, chat: int | str, seconds: float) -> None:
        """Answer every message to `chat` with 429 until `seconds` from now (a flood wait)."""
        with self._lock:
            self.rate_limits.flood(str(chat), seconds)

    def add_chat(
        self,
        chat: int | str,
        *,
        forum: bool = True,
        kind: str = "supergroup",
        status: str = "member",
        rights: dict[str, bool] | None = None,
    ) -> None:
        """Put the bot in a chat, so that getChat and getChatMember know it; `rights`: an
        administrator's (can_manage_topics, can_pin_messages), which make the bot one."""
        with self._lock:
            self.chats[str(chat)] = {
                "id": chat,
                "type": kind,
                "title": f"Chat {chat}",
                "is_forum": forum,
            }
            self.bot_status[str(chat)] = "administrator" if rights is not None else status
            self.rights[str(chat)] = dict(rights or {})

    def delete_topic(self, chat: int | str, thread: int) -> None:
        """A person deletes a topic by hand: writes there are 'message thread not found'."""
        with self._lock:
            self.topics.pop((str(chat), thread), None)
            self.missing_threads.add(thread)

    def unpin(self, chat: int | str, message_id: int) -> None:
        """A person unpins a message by hand."""
        with self._lock:
            pins = self.pinned.get(str(chat), [])
            if message_id in pins:
                pins.remove(message_id)

    def delete_message(self, chat: int | str, message_id: int) -> None:
        """A person deletes a message by hand."""
        with self._lock:
            self.posted.pop((str(chat), message_id), None)
            pins = self.pinned.get(str(chat), [])
            if message_id in pins:
                pins.remove(message_id)

    def topics_of(self, chat: int | str) -> list[Topic]:
        with self._lock:
            return [topic for (where, _), topic in self.topics.items() if where == str(chat)]

    def press(
        self,
        posted: Posted,
        label: str,
        *,
        user_id: int = 4242,
        username: str | None = "ada",
        first_name: str = "Ada",
    ) -> str:
        """Press the button labelled `label` (its text, or the start of it) under a posted
        message, as a person in the chat would: a callback query goes to the bot, by its webhook
        when one is set (the relay's answer is in `webhook_statuses`), else to its next
        getUpdates. Returns the press's id, under which `press_answers` will hold the answer."""
        button = next(
            (b for b in posted.buttons() if b["text"] == label or b["text"].startswith(label)),
            None,
        )
        if button is None:
            raise AssertionError(f"no button {label!r} under the message: {posted.buttons()}")
        press_id = f"press-{random.randrange(10**12)}"
        sender: dict[str, Any] = {"id": user_id, "is_bot": False, "first_name": first_name}
        if username is not None:
            sender["username"] = username
        query = {
            "id": press_id,
            "from": sender,
            "message": {
                "message_id": posted.message_id,
                "chat": {"id": _chat_number(posted.chat), "type": _kind(posted.chat)},
                "date": int(time.time()),
                "text": posted.visible(),
            },
            "chat_instance": "-123",
            "data": button["callback_data"],
        }
        with self._lock:
            self._unanswered.add(press_id)
        update = {"update_id": next(self._update_ids), "callback_query": query}
        self._pressed[press_id] = update
        if not self._post_to_webhook(update):
            with self._updates_changed:
                self.updates.append(update)
                self._updates_changed.notify_all()
        return press_id

    def reply(
        self,
        posted: Posted,
        text: str,
        *,
        user_id: int = 4242,
        username: str | None = "ada",
        to_bot: bool = True,
    ) -> int:
        """Reply to a posted message in the chat, as a person would (Ada Lovelace, @ada): the
        message goes to the bot as `press` sends a press. `to_bot` False: a reply to someone
        else's message that happens to have the same id. Returns the reply's message id."""
        sender: dict[str, Any] = {
            "id": user_id,
            "is_bot": False,
            "first_name": "Ada",
            "last_name": "Lovelace",
        }
        if username is not None:
            sender["username"] = username
        chat = {"id": _chat_number(posted.chat), "type": "supergroup"}
        with self._lock:
            message_id = next(self._message_ids)
            self._people_said.add((posted.chat, message_id))
        message: dict[str, Any] = {
            "message_id": message_id,
            "from": sender,
            "chat": chat,
            "date": int(time.time()),
            "text": text,
            "reply_to_message": {
                "message_id": posted.message_id,
                "from": BOT if to_bot else {"id": 99, "is_bot": False, "first_name": "Bob"},
                "chat": chat,
                "date": int(time.time()),
                "text": posted.visible(),
            },
        }
        if posted.thread is not None:
            message.update(message_thread_id=posted.thread, is_topic_message=True)
        self._person_wrote(message)
        return message_id

    def say(
        self,
        chat: int | str,
        text: str,
        *,
        thread: int | None = None,
        user_id: int = 4242,
        username: str | None = "ada",
    ) -> int:
        """A message a person writes in the chat (not a reply): a command when it starts with
        '/', marked as Telegram marks one. Returns its message id."""
        sender: dict[str, Any] = {"id": user_id, "is_bot": False, "first_name": "Ada"}
        if username is not None:
            sender["username"] = username
        with self._lock:
            message_id = next(self._message_ids)
            self._people_said.add((str(chat), message_id))
        message: dict[str, Any] = {
            "message_id": message_id,
            "from": sender,
            "chat": {"id": _chat_number(str(chat)), "type": _kind(str(chat))},
            "date": int(time.time()),
            "text": text,
        }
        if text.startswith("/"):
            length = len(text.split(maxsplit=1)[0])
            message["entities"] = [{"type": "bot_command", "offset": 0, "length": length}]
        if thread is not None:
            message.update(message_thread_id=thread, is_topic_message=True)
            with self._lock:
                topic = self.topics.get((str(chat), thread))
            if topic is not None:  # as Telegram: it answers the message that made the topic
                message["reply_to_message"] = {
                    "message_id": thread,
                    "from": BOT,
                    "chat": message["chat"],
                    "date": int(time.time()),
                    "forum_topic_created": {"name": topic.name},
                    "message_thread_id": thread,
                    "is_topic_message": True,
                }
        self._person_wrote(message)
        return message_id

    def _person_wrote(self, message: dict[str, Any]) -> None:
        """A person's message as an update: posted to the relay's webhook when it set one, else
        kept for getUpdates."""
        update = {"update_id": next(self._update_ids), "message": message}
        if not self._post_to_webhook(update):
            with self._updates_changed:
                self.updates.append(update)
                self._updates_changed.notify_all()

    def replies_to(self, chat: int | str, message_id: int) -> list[Posted]:
        """What the relay posted in reply to a message of the chat."""
        return [posted for posted in self.posted_to(chat) if posted.reply_to == message_id]

    def deliver_again(self, press_id: str) -> int:
        """Post a press's update to the webhook once more, as Telegram does when the relay's
        answer to it was slow or lost; the relay's answer's status."""
        if not self._post_to_webhook(self._pressed[press_id]):
            raise AssertionError("no webhook is set: Telegram redelivers only to a webhook")
        with self._lock:
            return self.webhook_statuses[-1]

    def _post_to_webhook(self, update: dict[str, Any]) -> bool:
        with self._lock:
            webhook, token = self.webhook_url, self.webhook_secret_token
        if not webhook:
            return False
        reply = requests.post(
            webhook,
            json=update,
            headers={"X-Telegram-Bot-Api-Secret-Token": token} if token else {},
            timeout=30,
        )
        with self._lock:
            self.webhook_statuses.append(reply.status_code)
        return True

    def wait_for_answer(self, press_id: str, timeout: float) -> dict[str, Any] | None:
        """The answer to a press, once the relay has given it (None if not within `timeout`)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                if press_id in self.press_answers:
                    return self.press_answers[press_id]
            time.sleep(0.02)
        return None

    def message(self, chat: int | str, message_id: int) -> Posted:
        with self._lock:
            return self.posted[(str(chat), message_id)]

    def posted_to(self, chat: int | str) -> list[Posted]:
        """The messages in a chat, oldest first, as they stand now."""
        with self._lock:
            return sorted(
                (p for p in self.posted.values() if p.chat == str(chat)),
                key=lambda p: p.message_id,
            )

    def polls(self) -> list[Received]:
        """Every getUpdates request."""
        with self._lock:
            return [r for r in self.received if r.method == "getUpdates"]

    def sends(self) -> list[Received]:
        """Every sendMessage request, whatever became of it."""
        with self._lock:
            return [r for r in self.received if r.method == "sendMessage"]

    def questions(self) -> list[Received]:
        """Every getMe request: the relay asking whether Telegram answers at all."""
        with self._lock:
            return [r for r in self.received if r.method == "getMe"]

    def requests_for(self, method: str) -> list[dict[str, Any]]:
        """The bodies of every request of `method`, in order, whatever became of each (a
        multipart form's fields as the Bot API reads them, a file as its bytes)."""
        with self._lock:
            return [r.body for r in self.received if r.method == method]

    def texts(self) -> list[str]:
        return [visible_text(m["text"], parse_mode=m.get("parse_mode")) for m in self.messages]

    def wait_for_messages(self, count: int, timeout: float) -> list[dict[str, Any]]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and len(self.messages) < count:
            time.sleep(0.05)
        return self.messages

    # --- called from the handler's thread ---

    def _decide(
        self, body: dict[str, Any], path: str, connection: socket.socket | None = None
    ) -> tuple[Behaviour, threading.Event]:
        """How to answer this request, and the event that lets a stalled answer go."""
        method = path.removeprefix(f"/bot{self.token}/")
        with self._lock:
            behaviour, release = self.behaviour, self._release
            if behaviour.methods is not None and method not in behaviour.methods:
                behaviour = Behaviour()
            chance = self._random.random() if behaviour.mode == "ok" else 1.0
            dropped = chance < behaviour.drop_rate
            reply_lost = (
                method == "sendMessage"
                and not dropped
                and (chance < behaviour.drop_rate + behaviour.lost_reply_rate)
            )
        if method == path:
            return Behaviour("error", status=401, description="Unauthorized"), release
        if dropped:
            return Behaviour("drop"), release
        if reply_lost:
            return Behaviour("lose_reply"), release
        if behaviour.mode != "ok":
            return behaviour, release
        chat = str(body.get("chat_id"))
        if chat in self.migrated:
            new_id = self.migrated[chat]
            return (
                Behaviour(
                    "error",
                    status=400,
                    description=UPGRADED,
                    parameters={"migrate_to_chat_id": new_id},
                ),
                release,
            )
        if method != "sendMessage":
            return self._answer(method, body, connection), release
        try:
            visible_text(str(body.get("text", "")), parse_mode=body.get("parse_mode"))
            _check_keyboard(body.get("reply_markup"))
        except TelegramRejection as exc:
            return Behaviour("error", status=400, description=str(exc)), release
        replied = _object(body.get("reply_parameters")).get("message_id")
        with self._lock:
            missing = replied is not None and not self._exists(chat, replied)
        if missing and not _object(body.get("reply_parameters")).get("allow_sending_without_reply"):
            return (
                Behaviour(
                    "error", status=400, description="Bad Request: message to be replied not found"
                ),
                release,
            )
        if chat in self.missing_chats:
            return Behaviour("error", status=400, description=CHAT_NOT_FOUND), release
        if body.get("message_thread_id") in self.missing_threads:
            return (
                Behaviour("error", status=400, description="Bad Request: message thread not found"),
                release,
            )
        if self.limits and (wait := self._rate_limited(str(body.get("chat_id")))) is not None:
            return (
                Behaviour(
                    "error",
                    status=429,
                    description=f"{TOO_MANY} {wait}",
                    parameters={"retry_after": wait},
                ),
                release,
            )
        return behaviour, release

    def _answer(
        self, method: str, body: dict[str, Any], connection: socket.socket | None = None
    ) -> Behaviour:
        """Every method but sendMessage, answered from what the test set up."""
        chat = str(body.get("chat_id"))
        with self._lock:
            known = self.chats.get(chat)
            status = self.bot_status.get(chat, "left")
        if method == "getMe":
            return Behaviour("result", result=BOT)
        if method == "getUpdates":
            return self._updates(body, connection)
        if method == "getWebhookInfo":
            with self._lock:
                return Behaviour("result", result={"url": self.webhook_url})
        if method in ("setWebhook", "deleteWebhook"):
            return self._set_webhook(body if method == "setWebhook" else {})
        if method in ("editMessageText", "editMessageReplyMarkup", "editMessageCaption"):
            return self._edit(method, body)
        if method == "sendPhoto":
            return self._photo(chat, body)
        if method == "answerCallbackQuery":
            return self._answer_press(body)
        if method == "setMyCommands":
            with self._lock:
                self.my_commands = list(body.get("commands") or [])
            return Behaviour("result", result=True)
        if method in FORUM_METHODS:
            return self._forum(method, body)
        if method == "setMessageReaction":
            with self._lock:
                if self.reactions_off:
                    return Behaviour("error", status=400, description=REACTION_INVALID)
                self.reactions.append(body)
            return Behaviour("result", result=True)
        if method not in ("getChat", "getChatMember", "sendChatAction"):
            return Behaviour("error", status=404, description="Not Found")
        if known is None:
            return Behaviour("error", status=400, description=CHAT_NOT_FOUND)
        if method == "getChat":
            with self._lock:
                pins = self.pinned.get(chat)
                found = {**known, "pinned_message": {"message_id": pins[-1]}} if pins else known
            return Behaviour("result", result=found)
        if method == "getChatMember":
            with self._lock:
                rights = self.rights.get(chat, {})
            return Behaviour("result", result={"user": BOT, "status": status, **rights})
        if status in ("left", "kicked"):
            return Behaviour(
                "error",
                status=403,
                description="Forbidden: bot is not a member of the supergroup chat",
            )
        if body.get("message_thread_id") in self.missing_threads:
            return Behaviour(
                "error", status=400, description="Bad Request: message thread not found"
            )
        return Behaviour("result", result=True)

    def _forum(self, method: str, body: dict[str, Any]) -> Behaviour:
        """Forum topics and pins, with Telegram's refusals: a chat that is not a forum, a bot
        without the right, a topic deleted, a change that changes nothing."""
        chat = str(body.get("chat_id"))
        thread = body.get("message_thread_id")
        with self._lock:
            known = self.chats.get(chat)
            rights = self.rights.get(chat)
            pins = method in ("pinChatMessage", "unpinChatMessage")
            if not pins and known is not None and not known.get("is_forum"):
                return Behaviour("error", status=400, description=NOT_A_FORUM)
            right = "can_pin_messages" if pins else "can_manage_topics"
            if rights is not None and not rights.get(right):
                refusal = NO_PIN_RIGHTS if pins else NO_TOPIC_RIGHTS
                return Behaviour("error", status=400, description=refusal)
            if self.limits and not pins and (wait := self.rate_limits.wait(chat)) is not None:
                return Behaviour(
                    "error",
                    status=429,
                    description=f"{TOO_MANY} {wait}",
                    parameters={"retry_after": wait},
                )
            if method == "createForumTopic":
                made = Topic(
                    chat, next(self._thread_ids), str(body["name"]), body.get("icon_color")
                )
                self.topics[(chat, made.thread)] = made
                self.forum_writes.append({"method": method, **body, "thread": made.thread})
                result = {"message_thread_id": made.thread, "name": made.name}
                return Behaviour("result", result=result)
            if pins:
                return self._pin(method, chat, body)
            topic = self.topics.get((chat, thread)) if isinstance(thread, int) else None
            if topic is None:
                return Behaviour("error", status=400, description=THREAD_NOT_FOUND)
            changed = {
                "closeForumTopic": lambda: not topic.closed,
                "reopenForumTopic": lambda: topic.closed,
                "editForumTopic": lambda: body.get("name") not in (None, topic.name),
            }[method]()
            if not changed:
                return Behaviour("error", status=400, description=TOPIC_NOT_MODIFIED)
            if method == "editForumTopic":
                topic.name = str(body["name"])
            else:
                topic.closed = method == "closeForumTopic"
            self.forum_writes.append({"method": method, **body})
        return Behaviour("result", result=True)

    def _pin(self, method: str, chat: str, body: dict[str, Any]) -> Behaviour:
        """(The lock is held.)"""
        message_id = body.get("message_id")
        if (chat, message_id) not in self.posted:
            return Behaviour(
                "error", status=400, description="Bad Request: message to pin not found"
            )
        pins = self.pinned.setdefault(chat, [])
        if message_id in pins:
            pins.remove(message_id)
        if method == "pinChatMessage":
            pins.append(int(message_id))  # type: ignore[arg-type]
        self.forum_writes.append({"method": method, **body})
        return Behaviour("result", result=True)

    def _updates(self, body: dict[str, Any], connection: socket.socket | None) -> Behaviour:
        """As Telegram: an offset confirms (and forgets) every update before it; with a timeout
        the answer waits until an update comes; a second poll cuts the waiting one short with
        409 Conflict; a poller that hangs up stops waiting."""
        with self._lock:
            if self.webhook_url:
                return Behaviour("error", status=409, description=WEBHOOK_ACTIVE)
        offset = int(body.get("offset") or 0)
        limit = int(body.get("limit") or 100)
        wait = min(float(body.get("timeout") or 0), MAX_STALL_SECONDS)
        cut_short = threading.Event()
        hung_up = False
        with self._updates_changed:
            if self._waiting_poll is not None:
                self._waiting_poll.set()
            self._waiting_poll = cut_short
            give_up_at = time.monotonic() + wait
            while True:
                if offset:
                    self.updates = [u for u in self.updates if u["update_id"] >= offset]
                if self.updates or cut_short.is_set() or time.monotonic() >= give_up_at:
                    break
                self._updates_changed.wait(0.05)
                if connection is not None and _hung_up(connection):
                    hung_up = True
                    break
            if self._waiting_poll is cut_short:
                self._waiting_poll = None
            found = self.updates[:limit]
        if hung_up:
            return Behaviour("drop")  # nobody is left to answer
        if cut_short.is_set():
            with self._lock:
                self.conflicts += 1
            return Behaviour("error", status=409, description=TERMINATED)
        return Behaviour("result", result=found)

    def _set_webhook(self, body: dict[str, Any]) -> Behaviour:
        token = str(body.get("secret_token") or "")
        if token and not _SECRET_TOKEN.fullmatch(token):
            return Behaviour(
                "error",
                status=400,
                description="Bad Request: secret token contains unallowed characters",
            )
        with self._lock:
            self.webhook_url = str(body.get("url") or "")
            self.webhook_secret_token = token
            self.webhook_allowed_updates = body.get("allowed_updates")
        return Behaviour("result", result=True)

    def _edit(self, method: str, body: dict[str, Any]) -> Behaviour:
        key = (str(body.get("chat_id")), int(body.get("message_id") or 0))
        field = {"editMessageText": "text", "editMessageCaption": "caption"}.get(method)
        try:
            if field is not None:
                shown = visible_text(str(body.get(field, "")), parse_mode=body.get("parse_mode"))
                if field == "caption" and len(shown) > MAX_CAPTION:
                    raise TelegramRejection(CAPTION_TOO_LONG)
            _check_keyboard(body.get("reply_markup"))
        except TelegramRejection as exc:
            return Behaviour("error", status=400, description=str(exc))
        with self._lock:
            posted = self.posted.get(key)
            if posted is None:
                return Behaviour(
                    "error", status=400, description="Bad Request: message to edit not found"
                )
            if field == "text" and posted.photo is not None:
                return Behaviour("error", status=400, description=NO_TEXT_TO_EDIT)
            if field == "caption" and posted.photo is None:
                return Behaviour("error", status=400, description=NO_CAPTION_TO_EDIT)
            text = str(body[field]) if field is not None else posted.text
            mode = body.get("parse_mode") if field is not None else posted.parse_mode
            keyboard = body.get("reply_markup")
            if (text, mode, keyboard) == (posted.text, posted.parse_mode, posted.keyboard):
                return Behaviour("error", status=400, description=NOT_MODIFIED)
            posted.text, posted.parse_mode, posted.keyboard = text, mode, keyboard
            self.edits.append({"method": method, "at": time.monotonic(), **body})
        return Behaviour("result", result=True)

    def _photo(self, chat: str, body: dict[str, Any]) -> Behaviour:
        """A photo, uploaded as multipart form data (`photo` its bytes) or named by the file_id
        of one sent before: posted as a message whose text is its caption; refused as Telegram
        refuses one (not a picture, too large, an unknown file_id, a caption past 1,024
        characters, a chat whose rights forbid photos)."""
        photo = body.get("photo")
        with self._lock:
            rights = self.rights.get(chat, {})
            kept = self.files.get(photo) if isinstance(photo, str) else None
        try:
            shown = visible_text(str(body.get("caption", "")), parse_mode=body.get("parse_mode"))
            _check_keyboard(body.get("reply_markup"))
        except TelegramRejection as exc:
            return Behaviour("error", status=400, description=str(exc))
        refusal = None
        if rights.get("can_send_photos") is False:
            refusal = NO_PHOTO_RIGHTS
        elif isinstance(photo, str) and kept is None:
            refusal = WRONG_FILE_ID
        elif isinstance(photo, bytes) and len(photo) > MAX_PHOTO_BYTES:
            return Behaviour("error", status=413, description="Request Entity Too Large")
        elif isinstance(photo, bytes) and not photo.startswith(PNG_SIGNATURE):
            refusal = IMAGE_PROCESS_FAILED
        elif photo is None:
            refusal = "Bad Request: there is no photo in the request"
        elif len(shown) > MAX_CAPTION:
            refusal = CAPTION_TOO_LONG
        if refusal is not None:
            return Behaviour("error", status=400, description=refusal)
        picture = kept if kept is not None else photo
        assert isinstance(picture, bytes)
        message = self._post({**body, "text": body.get("caption", "")}, photo=picture)
        file_id = f"photo-{message['message_id']}"
        with self._lock:
            self.files[file_id] = picture
            self.photos_sent.append({"at": time.monotonic(), **body, "photo": picture})
        sizes = [{"file_id": f"{file_id}-small", "width": 90, "height": 51}]
        sizes.append({"file_id": file_id, "width": 800, "height": 450, "file_size": len(picture)})
        return Behaviour("result", result={**message, "photo": sizes})

    def _answer_press(self, body: dict[str, Any]) -> Behaviour:
        press_id = str(body.get("callback_query_id"))
        text = str(body.get("text") or "")
        with self._lock:
            if press_id not in self._unanswered:
                return Behaviour("error", status=400, description=QUERY_TOO_OLD)
            if len(text) > 200:
                return Behaviour("error", status=400, description="Bad Request: MESSAGE_TOO_LONG")
            self._unanswered.discard(press_id)
            self.press_answers[press_id] = {"at": time.monotonic(), **body}
        return Behaviour("result", result=True)

    def _post(self, body: dict[str, Any], *, photo: bytes | None = None) -> dict[str, Any]:
        """Hold a message the relay posted (a photo's, its caption its text); Telegram's
        Message for it."""
        chat = str(body.get("chat_id"))
        reply_to = _object(body.get("reply_parameters")).get("message_id")
        with self._lock:
            message_id = next(self._message_ids)
            if not self._exists(chat, reply_to):
                reply_to = None  # allow_sending_without_reply: sent plainly
            self.posted[(chat, message_id)] = Posted(
                chat,
                message_id,
                str(body.get("text", "")),
                body.get("parse_mode"),
                body.get("reply_markup"),
                body.get("message_thread_id"),
                reply_to,
                photo,
            )
        return {
            "message_id": message_id,
            "chat": {"id": _chat_number(chat), "type": "supergroup"},
            "date": int(time.time()),
        }

    def _start_up_answer(self, body: dict[str, Any], path: str) -> tuple[int, dict[str, Any]]:
        """A relay's start-up questions (getMe, getChat, ...), kept apart from the rest in
        `start_up_requests`, so a test's counts see only what the relay does for its alerts.
        Answered from what the test set up; while Telegram is set to fail, with a 502."""
        method = path.removeprefix(f"/bot{self.token}/")
        with self._lock:
            self.start_up_requests.append(Received(time.monotonic(), body, "", method, False))
            failing = self.behaviour.mode != "ok"
        if method == path:
            return 401, {"ok": False, "error_code": 401, "description": "Unauthorized"}
        if failing:
            return 502, {"ok": False, "error_code": 502, "description": "Bad Gateway"}
        answer = self._answer(method, body)
        if answer.mode == "result":
            return 200, {"ok": True, "result": answer.result}
        return answer.status, {
            "ok": False,
            "error_code": answer.status,
            "description": answer.description,
        }

    def _exists(self, chat: str, message_id: object) -> bool:
        """Whether a message is in the chat (the lock is held)."""
        key = (chat, message_id)
        return key in self.posted or key in self._people_said

    def _rate_limited(self, chat: str) -> int | None:
        with self._lock:
            return self.rate_limits.wait(chat)

    def _record(
        self, body: dict[str, Any], outcome: str, path: str, *, reply_lost: bool = False
    ) -> Received:
        method = path.rsplit("/", 1)[-1]
        received = Received(time.monotonic(), body, outcome, method, reply_lost)
        with self._lock:
            self.received.append(received)
        return received

    def _reply_was_lost(self, received: Received) -> None:
        """A posted message whose answer never reached the relay: it had given up on it (its
        deadline passed while the fake was slow to answer) or was gone (killed)."""
        with self._lock:
            at = next(n for n, r in enumerate(self.received) if r is received)
            self.received[at] = replace(received, reply_lost=True)


def _object(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _kind(chat: str) -> str:
    """A chat's type as Telegram says it: a person's private chat with the bot has their id."""
    return "private" if chat.isdigit() else "supergroup"


def _chat_number(chat: str) -> int | str:
    """The chat's id as Telegram's replies give it: a number (an @name stays as it is here)."""
    return int(chat) if chat.lstrip("-").isdigit() else chat


def _check_keyboard(markup: object) -> None:
    """Telegram's rules for an inline keyboard: at most 100 buttons, 8 to a row, about 10 KB in
    all, and each button's callback data 1 to 64 bytes."""
    if markup is None:
        return
    rows = _object(markup).get("inline_keyboard")
    if not isinstance(rows, list) or not all(isinstance(row, list) for row in rows):
        raise TelegramRejection(
            "Bad Request: can't parse inline keyboard: inline_keyboard must be an array of arrays"
        )
    if len(json.dumps(markup).encode()) > MAX_MARKUP_BYTES:
        raise TelegramRejection("Bad Request: reply markup is too long")
    buttons = [button for row in rows for button in row]
    if len(buttons) > MAX_BUTTONS or any(len(row) > MAX_BUTTONS_PER_ROW for row in rows):
        raise TelegramRejection("Bad Request: reply markup is too long")
    for button in buttons:
        data = _object(button).get("callback_data")
        if not _object(button).get("text"):
            raise TelegramRejection(
                "Bad Request: text buttons are unallowed in the inline keyboard"
            )
        if not isinstance(data, str) or not 1 <= len(data.encode()) <= 64:
            raise TelegramRejection("Bad Request: BUTTON_DATA_INVALID")


def _hung_up(connection: socket.socket) -> bool:
    """Whether the client closed its end (a poller that gave up, or a relay stopping)."""
    try:
        readable, _, _ = select.select([connection], [], [], 0)
        return bool(readable) and connection.recv(1, socket.MSG_PEEK) == b""
    except OSError:
        return True


@contextmanager
def running_fake_telegram(**kwargs: Any) -> Iterator[FakeTelegram]:
    fake = FakeTelegram(**kwargs).start()
    try:
        yield fake
    finally:
        fake.stop()


class _Handler(Handler):
    def finish(self) -> None:
        fake: FakeTelegram = self.service
        if getattr(self, "asked_at_start_up", False):
            with fake._lock:
                fake.start_up_rounds += 1
        super().finish()

    def do_POST(self) -> None:
        fake: FakeTelegram = self.service
        found = self.form_body() if self._multipart() else self.json_body()
        body: dict[str, Any] = found if isinstance(found, dict) else {}
        if START_UP_CHECK in self.headers.get("User-Agent", ""):
            self.asked_at_start_up = True
            self.reply(*fake._start_up_answer(body, self.path))
            return
        behaviour, release = fake._decide(body, self.path, self.connection)
        mode = behaviour.mode
        if mode == "ok":
            received = fake._record(body, "accepted", self.path)  # as it arrives, before any delay
            time.sleep(min(behaviour.delay, MAX_STALL_SECONDS))
            posted = fake._post(body)
            # Posted either way, as Telegram would: a request it has whole is acted on.
            if _hung_up(self.connection):
                fake._reply_was_lost(received)
                self.close_connection = True
                return
            try:
                self.reply(200, {"ok": True, "result": posted})
            except OSError:
                fake._reply_was_lost(received)
                self.close_connection = True
        elif mode == "lose_reply":
            fake._record(body, "accepted", self.path, reply_lost=True)
            fake._post(body)
            self.abort()
        elif mode == "result":
            fake._record(body, f"answered {self.path.rsplit('/', 1)[-1]}", self.path)
            self.reply(200, {"ok": True, "result": behaviour.result})
        elif mode == "error":
            fake._record(body, behaviour.description, self.path)
            reply: dict[str, Any] = {
                "ok": False,
                "error_code": behaviour.status,
                "description": behaviour.description,
            }
            if behaviour.parameters:
                reply["parameters"] = behaviour.parameters
            self.reply(behaviour.status, reply)
        elif mode == "html_error_page":
            fake._record(body, "html_error_page", self.path)
            self.send(502, b"<html><body>502 Bad Gateway</body></html>", "text/html")
        elif mode == "hang":
            fake._record(body, "hung", self.path)
            release.wait(MAX_STALL_SECONDS)
            self.abort()
        elif mode == "drip":
            fake._record(body, "dripped", self.path)
            self._drip(release)
        else:
            fake._record(body, "dropped", self.path)
            self.abort()

    def _multipart(self) -> bool:
        return self.headers.get_content_type() == "multipart/form-data"

    def form_body(self) -> dict[str, Any]:
        """A multipart form's fields as the Bot API reads them: a file's bytes, and each other
        field as JSON where it is (the buttons), else as text."""
        length = int(self.headers.get("Content-Length", "0"))
        raw = self.rfile.read(length) if length else b""
        head = f"Content-Type: {self.headers.get('Content-Type')}\r\n\r\n".encode()
        form = BytesParser(policy=email.policy.HTTP).parsebytes(head + raw)
        fields: dict[str, Any] = {}
        for part in form.iter_parts():
            name = part.get_param("name", header="content-disposition")
            payload = part.get_payload(decode=True)
            value = payload if isinstance(payload, bytes) else b""
            if not isinstance(name, str):
                continue
            if part.get_filename() is not None:
                fields[name] = value
                continue
            text = value.decode("utf-8", "replace")
            if name in ("caption", "parse_mode", "photo"):
                fields[name] = text
                continue
            try:
                fields[name] = json.loads(text)
            except ValueError:
                fields[name] = text
        return fields

    def _drip(self, release: threading.Event) -> None:
        """Headers at once, then the body one byte every half second: no single read times out."""
        self.close_connection = True
        payload = json.dumps({"ok": True, "result": {"message_id": 1}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload) * 100))
        self.end_headers()
        stop_at = time.monotonic() + MAX_STALL_SECONDS
        try:
            while time.monotonic() < stop_at and not release.wait(0.5):
                self.wfile.write(b" ")
                self.wfile.flush()
        except OSError:
            return  # the client gave up, as it should
        self.abort()


FakeTelegram.handler = _Handler
