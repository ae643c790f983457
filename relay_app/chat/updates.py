"""Telegram's updates, each routed to its handler (`route_updates`): the presses on alerts'
buttons (cards/presses.py), the commands, the replies to the relay's messages (replies.py) and
the links in them (links.py), and the kinds of update the capabilities register. They come
polled (`TELEGRAM_UPDATES=poll`: telegram/poller.py, run where the fleet's leader is) or posted:

`TELEGRAM_UPDATES=webhook`: Telegram posts each update to `POST /telegram/<secret>` (views.py),
with a header only the relay and Telegram know (`secret_token`, registered by `relay-app
telegram-webhook set`). The path's secret is GlitchTip's webhook secret, which everyone who can
read GlitchTip's alert settings knows; the header is derived from the bot token, which only the
relay and Telegram hold.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..telegram.poller import Handle
from ..telegram.updates_webhook import Handler
from .commands import Command, Commands


def route_updates(
    presses: Handler,
    replies: Handler,
    commands: Commands | None = None,
    links: Handler | None = None,
    by_kind: Mapping[str, Handler] | None = None,
) -> Handle:
    """What handles each update: a press (`callback_query`), a command (`/issues`), or another
    message: a reply to an alert (a comment), and any links to GlitchTip's issues it holds.
    `by_kind`: the handlers other capabilities register for kinds of update of their own (the
    on-call capability's `my_chat_member`: a person blocked the bot); each kind is named in
    ALLOWED_UPDATES (telegram/client.py), which asks Telegram for it."""
    # The kinds handled whole by one handler; a message goes on below.
    kinds: dict[str, Handler] = {"callback_query": presses, **(by_kind or {})}

    def route(update: dict[str, Any]) -> None:
        whole = next((handler for kind, handler in kinds.items() if kind in update), None)
        if whole is not None:
            whole.handle_update(update)
            return
        if "message" not in update:
            return
        command = Command.of(update) if commands is not None else None
        if command is not None and commands is not None and commands.handle(command):
            return
        replies.handle_update(update)
        if links is not None:
            links.handle_update(update)

    return route
