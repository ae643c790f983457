"""What Telegram's refusal of a topic's write means for the room: pure."""

from __future__ import annotations

from typing import Literal

from ..core.errors import PermanentDeliveryError

Meaning = Literal["done", "gone", "rights", "forum", "other"]


def meaning_of(error: PermanentDeliveryError) -> Meaning:
    """`done`: the topic is as asked already (TOPIC_NOT_MODIFIED); `gone`: deleted by hand;
    `rights`: the bot may not manage topics there; `forum`: the chat has no topics."""
    said = error.description.lower()
    if "topic_not_modified" in said:
        return "done"
    if "thread not found" in said or "topic_id_invalid" in said or "topic_deleted" in said:
        return "gone"
    if "not enough rights" in said or "chat_admin_required" in said:
        return "rights"
    if "not a forum" in said or "chat_not_forum" in said:
        return "forum"
    return "other"
