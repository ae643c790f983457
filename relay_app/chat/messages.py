"""A person's message to a chat the relay serves, as the chat capability handles it (the kind
of update it registers, `message`: telegram/updates.py routes it here): a command (`/issues`)
is answered; any other message may be a reply to an alert (a comment on its issue), and any
links to a source's issues it holds get their cards.

The updates come polled (`TELEGRAM_UPDATES=poll`: telegram/poller.py, run where the fleet's
leader is) or posted (`TELEGRAM_UPDATES=webhook`): Telegram posts each update to `POST
/telegram/<secret>` (web/views.py), with a header only the relay and Telegram know
(`secret_token`, registered by `relay-app telegram-webhook set`). The path's secret is
GlitchTip's webhook secret, which everyone who can read GlitchTip's alert settings knows; the
header is derived from the bot token, which only the relay and Telegram hold.
"""

from __future__ import annotations

from typing import Any

from ..telegram.updates_webhook import Handler
from .commands import Command, Commands


class Messages:
    """The `message` kind of update: a command, else a reply and the links it holds."""

    def __init__(
        self, replies: Handler, commands: Commands | None = None, links: Handler | None = None
    ) -> None:
        self._replies = replies
        self._commands = commands
        self._links = links

    def handle_update(self, update: dict[str, Any]) -> None:
        command = Command.of(update) if self._commands is not None else None
        if command is not None and self._commands is not None and self._commands.handle(command):
            return
        self._replies.handle_update(update)
        if self._links is not None:
            self._links.handle_update(update)
