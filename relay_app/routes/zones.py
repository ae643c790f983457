"""The time zone each chat reads times in: every time the relay writes for people (when an issue
was taken, resolved or muted, until when, when GlitchTip sent a late alert) is in its place's
zone, as the handoffs, `/oncall` and the daily summary are. A place's zone is the `timezone` of
the first route that sends there and names one, else RELAY_TIMEZONE; a time shows its zone's
name beside it ('12:04 MSK'), so that nobody takes it for another."""

from __future__ import annotations

from datetime import UTC, tzinfo
from zoneinfo import ZoneInfo

from ..core.routing import ChatId, Destination, chat_key
from .table import RouteTable


class Zones:
    def __init__(
        self,
        routes: RouteTable = RouteTable(),  # noqa: B008 (frozen: safe to share)
        *,
        default_destination: Destination | None = None,
        default: tzinfo = UTC,
    ) -> None:
        self.default = default
        self._by_chat: dict[str, tzinfo] = {}
        for route in routes.routes:
            if route.drop or route.sound.timezone is None:
                continue
            chat = route.chat
            if chat is None and default_destination is not None:
                chat = default_destination.chat
            if chat is not None:
                self._by_chat.setdefault(chat_key(chat), ZoneInfo(route.sound.timezone))

    def of(self, chat: ChatId) -> tzinfo:
        """The zone people in `chat` read times in."""
        return self._by_chat.get(chat_key(chat), self.default)
