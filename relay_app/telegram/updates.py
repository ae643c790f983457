"""Each of Telegram's updates to what handles its kind, polled (poller.py) or posted to the
relay's webhook (updates_webhook.py): a press (`callback_query`) to the core's press dispatcher
(cards/presses/presses.py), and every other kind to the capability that registered it (a person's
message: the chat's commands, replies and links; `my_chat_member`: on call's). Each kind is
named in ALLOWED_UPDATES (client.py), which asks Telegram for it; an update of a kind nobody
handles is not the relay's."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .updates_webhook import Handle, Handler


def route_updates(presses: Handler, theirs: Mapping[str, Handler]) -> Handle:
    """What handles each update: the first kind it holds that has a handler."""
    kinds: dict[str, Handler] = {"callback_query": presses, **theirs}

    def route(update: dict[str, Any]) -> None:
        handler = next((handler for kind, handler in kinds.items() if kind in update), None)
        if handler is not None:
            handler.handle_update(update)

    return route
