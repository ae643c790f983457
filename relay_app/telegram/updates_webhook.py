"""Telegram's webhook for the relay's updates (TELEGRAM_UPDATES=webhook): where Telegram posts
them (`POST /telegram/<secret>`), the header only the relay and Telegram know, and a webhook URL
as a person may see it. Set by `relay-app telegram-webhook set`, checked by `relay-app check`,
served by web/views.py."""

from __future__ import annotations

import hashlib
import hmac
import logging
from collections.abc import Callable
from typing import Any, Protocol

log = logging.getLogger(__name__)

# Telegram's header on the updates it posts to a webhook.
SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"  # noqa: S105 (a header's name)


def webhook_path(webhook_secret: str) -> str:
    """Where Telegram posts updates on the relay's webhook listener (views.py serves it)."""
    return f"/telegram/{webhook_secret}"


def shown_webhook_url(url: str) -> str:
    """A webhook URL as a person may see it: the secret after /telegram/ (or /webhook/) replaced
    by a short fingerprint of it, enough to tell two apart ('…/telegram/[secret 3f9c2a1b]')."""
    for marker in ("/telegram/", "/webhook/"):
        head, found, tail = url.partition(marker)
        if found:
            secret, slash, rest = tail.partition("/")
            return f"{head}{marker}[secret {fingerprint(secret)}]{slash}{rest}"
    return url


def fingerprint(secret: str) -> str:
    """Eight hex characters of the secret's SHA-256: tells secrets apart, reveals nothing."""
    return hashlib.sha256(secret.encode()).hexdigest()[:8]


def telegram_secret_token(bot_token: str) -> str:
    """The header value Telegram sends with every update to the relay's webhook. Derived from
    the bot token, which only the relay and Telegram hold (Telegram takes only letters, digits,
    '_' and '-' there); not from RELAY_WEBHOOK_SECRET, which GlitchTip's webhook URL shows to
    everyone who can read its alert settings."""
    key = bot_token.encode()
    return hmac.new(key, b"relay_app telegram-updates secret_token", hashlib.sha256).hexdigest()


class Handler(Protocol):
    """What handles one kind of Telegram's updates (a press, a reply, a capability's own)."""

    def handle_update(self, update: dict[str, Any]) -> None: ...


# What handles each of Telegram's updates, polled or posted (updates.py's `route_updates`, made
# by the wiring): the webhook's view hands it what Telegram posts.
Handle = Callable[[dict[str, Any]], None]


def handle_update(update: dict[str, Any], handle: Handle) -> None:
    """One update, whichever way it came (posted to the webhook, or polled): handed to what
    handles it, and one bad update never stops the others."""
    try:
        handle(update)
    except Exception:  # one bad update must not stop the others
        log.exception("handling an update failed")
