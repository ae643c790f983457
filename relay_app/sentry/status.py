"""Sentry's line of `/status`: whether its issues get buttons (SENTRY_API_TOKEN), and when its
last signed delivery was taken in, in the chat's time zone."""

from __future__ import annotations

from collections.abc import Callable
from datetime import tzinfo

from ..core.errors import SpoolError
from ..message.spans import place_moment
from ..words import Words
from .deliveries import DeliveryStore


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
