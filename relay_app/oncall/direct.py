"""A private call (docs/oncall.md): a step or a route with `direct = true` calls each of its
people who started a private chat with the bot there too (oncall/people.py keeps who has), as a
message from the bot: the call, a link to the alert in its chat, and the alert's card with its
buttons as they stand when the call is sent. The buttons act on the alert in its chat (the
presses accept them from the private chat of someone called for it: cards/presses/presses.py); the
private message itself keeps the card as it was sent.

Queued with the step's reply, in its transaction (oncall/steps_store.py); its job holds where
the alert is and the call's words, and its text is made when it is sent."""

from __future__ import annotations

import html
from collections.abc import Mapping
from typing import Any

from ..cards.card import SNOOZE_VERBS, parse_callback
from ..core.json_values import json_int
from ..core.routing import parse_chat_id
from ..delivery.render import Renderer, Shape
from ..message.formatting import TELEGRAM_TEXT_LIMIT, Message
from ..message.spans import visible_length
from ..spool.model import Job
from ..words import Said

# Room kept beside the card for the call and the link.
_CALL_ROOM = 600


def direct_message(job: Job, renderer: Renderer) -> Message:
    about: Mapping[str, Any] = job.data["direct"]
    words = renderer.words
    chat, message_id = str(about["chat"]), int(about["message_id"])
    said = renderer.mentioned.named_in(
        Said.from_json(about.get("say")).text(words), job.received_at
    )
    call = words.direct_call.format(said=said)
    link = message_link(chat, json_int(about.get("thread")), message_id)
    head_html = html.escape(call, quote=False)
    head_text = call
    if link is not None:
        head_html += f'\n<a href="{html.escape(link)}">{html.escape(words.direct_open)}</a>'
        head_text += f"\n{words.direct_open}: {link}"
    card = renderer.card(chat, message_id)
    if card is None or visible_length(card.html) > TELEGRAM_TEXT_LIMIT - _CALL_ROOM:
        return Message(html=head_html, text=head_text, fallback=head_text)
    return Message(
        html=f"{head_html}\n\n{card.html}",
        text=f"{head_text}\n\n{card.text}",
        fallback=f"{head_text}\n\n{card.text}",
        keyboard=_acting_at_once(card.keyboard),
    )


def _acting_at_once(keyboard: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The card's buttons that act at once (On it, Resolve, Mute, Reopen, Let go): Ignore's
    choices open on the card in its chat, which the private message does not show as it
    changes, so they are left to the chat."""
    if keyboard is None:
        return None
    rows = [
        [button for button in row if _verb(button) not in SNOOZE_VERBS]
        for row in keyboard.get("inline_keyboard", [])
    ]
    kept = [row for row in rows if row]
    return {"inline_keyboard": kept} if kept else None


def _verb(button: Mapping[str, Any]) -> str | None:
    parsed = parse_callback(button.get("callback_data"))
    return parsed[0] if parsed is not None else None


def message_link(chat: str, thread: int | None, message_id: int) -> str | None:
    """A link to a message of a chat, for its members: a supergroup's (`-100…`) by its number,
    a public chat's by its name; None for a basic group, which has no links."""
    parsed = parse_chat_id(chat)
    if isinstance(parsed, str):
        return f"https://t.me/{parsed.lstrip('@')}/{message_id}"
    if parsed is None or not str(parsed).startswith("-100"):
        return None
    number = str(parsed).removeprefix("-100")
    topic = f"/{thread}" if thread is not None else ""
    return f"https://t.me/c/{number}{topic}/{message_id}"


# A private call, as its job holds it: goes alone, to the person's private chat.
SHAPE = Shape("direct", direct_message, alone=True)
