"""A person's message with text, as the commands and the links read it, and whom an answer to it
is for."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..core.json_values import json_int, json_object
from .answers import Asker


@dataclass(frozen=True)
class Written:
    """A person's message with text, as the commands and the links read it."""

    chat: str
    thread: int | None  # the forum topic it was written in
    message_id: int
    text: str
    # Who wrote it, as Telegram numbers them: a person's id, or 'chat <id>' for a message sent
    # on behalf of a chat (an anonymous admin, a linked channel).
    person: str = "someone"

    @classmethod
    def of(cls, message: object) -> Written | None:
        """The update's message; None for one without text, chat or id."""
        if not isinstance(message, dict):
            return None
        chat, text = message.get("chat"), message.get("text")
        message_id = json_int(message.get("message_id"))
        if not isinstance(chat, dict) or chat.get("id") is None:
            return None
        if not isinstance(text, str) or message_id is None:
            return None
        thread = message.get("message_thread_id") if message.get("is_topic_message") else None
        return cls(str(chat["id"]), json_int(thread), message_id, text, _writer(message))

    @property
    def asker(self) -> Asker:
        """Whom an answer to it is for."""
        return Asker(self.chat, self.thread, self.message_id, self.person)


def _writer(message: dict[str, Any]) -> str:
    person = json_int(json_object(message.get("from")).get("id"))
    on_behalf = json_int(json_object(message.get("sender_chat")).get("id"))
    if on_behalf is not None:
        return f"chat {on_behalf}"
    return str(person) if person is not None else "someone"
