"""Sentry's state, as the relay says it: its line of `/status` (whether its issues get buttons,
SENTRY_API_TOKEN, and when its last signed delivery was taken in, in the chat's time zone), and
its part of the start-up line and of `relay-app check` (what its variables enable)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import tzinfo

from ..core.errors import SpoolError
from ..message.spans import place_moment
from ..operating.config import Settings
from ..words import Words
from .deliveries import DeliveryStore
from .settings import SENTRY_SETTINGS


def sentry_status(
    deliveries: DeliveryStore,
    *,
    buttons: bool,
    zone_of: Callable[[str], tzinfo],
    clock: Callable[[], float],
) -> Callable[[str, Words], str | None]:
    """`buttons`: SENTRY_API_TOKEN is set."""

    def line(chat: str, words: Words) -> str | None:
        state = words.word("status_sentry_buttons" if buttons else "status_sentry_alerts_only")
        try:
            last = deliveries.last(now=clock())
        except SpoolError:
            last = None
        when = (
            words.word("status_sentry_last").format(when=place_moment(last, zone_of(chat)))
            if last is not None
            else words.word("status_sentry_none")
        )
        return words.word("status_sentry").format(state=state, last=when)

    return line


def sentry_state(settings: Settings) -> str:
    """What Sentry's variables enable, off included: 'Sentry: signed alerts, buttons and details
    (https://sentry.io)'."""
    config = settings.of(SENTRY_SETTINGS)
    if config is None:
        return "Sentry off (no SENTRY_CLIENT_SECRET)"
    if config.api_token is not None:
        return f"Sentry: signed alerts, buttons and details ({config.url})"
    return f"Sentry: signed alerts only ({config.url}; no SENTRY_API_TOKEN: no buttons)"
