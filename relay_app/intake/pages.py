"""A page a capability adds beside the relay's own (Sentry's webhook: sentry/webhook.py), as the
core takes it: a path that takes a POST, and what answers its body. The HTTP side (web/views.py)
reads the body within its limit, answers on the right listener, counts and logs what it says.

A feed a capability adds (on call's calendars: oncall/calendar_feed.py): the paths under a
prefix that take a GET, and what answers each; a missing one is 404, counted as any miss.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from .taken import Taken


@dataclass(frozen=True)
class PageReply:
    """An answer that is no alert's: its JSON and status. A 401 is counted and said among the
    requests refused (web/misses.py), by its page's `refusal`."""

    body: dict[str, Any] = field(default_factory=dict)
    status: int = 200


# What a page's answer is: said, or what became of each part of an alert it took in.
Answer = PageReply | list[Taken]
# A request's header, by name (any case); None when it has none.
Header = Callable[[str], str | None]


@dataclass(frozen=True)
class Refusal:
    """What a page's 401 means, as the requests refused count and say it (web/misses.py): its
    reason (a value of `relay_requests_missed_total`'s label) and what to do about it."""

    reason: str
    advice: str


class Page(Protocol):
    @property
    def path(self) -> str: ...

    @property
    def refusal(self) -> Refusal:
        """What its 401 means (a wrong signature, say)."""
        ...

    def answer(self, body: bytes, header: Header, started: float) -> Answer:
        """What the POST with this body (at most MAX_BODY_BYTES) is answered; `started`: when
        it arrived (monotonic)."""
        ...


@dataclass(frozen=True)
class FeedReply:
    """A feed's answer: its bytes and their media type; None in `body`: there is none (404)."""

    body: bytes | None
    content_type: str = "application/octet-stream"


class Feed(Protocol):
    @property
    def prefix(self) -> str:
        """Where its paths begin: '/calendar'."""
        ...

    def get(self, tail: str) -> FeedReply:
        """What a GET of `prefix/tail` is answered."""
        ...
