"""The rotations as calendar feeds a calendar app subscribes to: `GET
/calendar/<RELAY_CALENDAR_SECRET>/<rotation>.ics`, the next DAYS of shifts with the covers kept
in the spool, read afresh at each GET. Off without RELAY_CALENDAR_SECRET; the secret is compared
in constant time, and a wrong one, or a rotation not in the routes file, is a 404 like any path
the relay does not serve (counted, and said once a minute: web/misses.py). The secret is one of
the relay's: no log line shows it, the access log's included."""

from __future__ import annotations

import hmac
import re
from collections.abc import Callable

from ..intake.pages import FeedReply
from ..routes.rotation import Roster
from .calendar import DAYS, calendar_of

PREFIX = "/calendar"
CONTENT_TYPE = "text/calendar"  # Flask adds its charset, utf-8
_TAIL = re.compile(r"^([^/]{1,256})/([A-Za-z0-9_.-]{1,40})\.ics$")
_NOTHING = FeedReply(None)


class CalendarFeed:
    def __init__(
        self, secret: str, roster: Callable[[], Roster], *, clock: Callable[[], float]
    ) -> None:
        """`roster`: the rotations with the covers in force, read when asked."""
        self._secret = secret.encode()
        self._roster = roster
        self._clock = clock

    @property
    def prefix(self) -> str:
        return PREFIX

    def get(self, tail: str) -> FeedReply:
        found = _TAIL.fullmatch(tail)
        if found is None or not hmac.compare_digest(found.group(1).encode(), self._secret):
            return _NOTHING
        roster = self._roster()
        if found.group(2) not in roster.rotations:
            return _NOTHING
        body = calendar_of(roster, found.group(2), now=self._clock(), days=DAYS)
        return FeedReply(body, CONTENT_TYPE)
