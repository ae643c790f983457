"""What the core asks of an issue's tracker, whichever source's it is: its statuses, what a press
and a reply change (`IssueActions`), what a chart reads (`IssueHistories`) and what the watcher
asks (`IssueWatch`), each named by a key the wiring provides from the sources' tokens. Each
source's API implements them (GlitchTip's: glitchtip/api.py; Sentry's on it: sentry/api.py);
one `Trackers` asks each issue's own (glitchtip/trackers.py)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, Protocol, TypeVar

from .services import Key

T = TypeVar("T")

# What a button sets an issue to in its tracker (GlitchTip's statuses; Sentry's are read as
# these).
IssueStatus = Literal["resolved", "ignored", "unresolved"]
ISSUE_STATUSES: tuple[IssueStatus, ...] = ("resolved", "ignored", "unresolved")


@dataclass(frozen=True)
class IssueState:
    """What the issues list says of an issue now."""

    status: IssueStatus
    events: int | None  # its `count` (a string in the answer); None when it has none


@dataclass(frozen=True)
class Answered(Generic[T]):
    """What one answer about many issues said of each (`found`, by issue id), and the issues it
    said something of that cannot be its source's own (`unreadable`, by id, with why): one bad
    number spoils its issue, never the others."""

    found: dict[str, T] = field(default_factory=dict)
    unreadable: dict[str, str] = field(default_factory=dict)


class IssueActions(Protocol):
    """What a press and a reply change of an issue: its status, a comment on it (GlitchTip's
    API, or, for Sentry's issues too, glitchtip/trackers.py)."""

    def set_status(
        self,
        issue_id: str,
        status: IssueStatus,
        details: Mapping[str, int] | None = None,
        *,
        org: str | None = None,
    ) -> dict[str, Any]: ...

    def comment(self, issue_id: str, text: str, *, org: str | None = None) -> dict[str, Any]: ...


# What changes the sources' issues (GlitchTip's, Sentry's), as the wiring makes it from their
# tokens: acting from the chat asks for it.
ISSUE_ACTIONS: Key[IssueActions] = Key("issue actions")


@dataclass(frozen=True)
class IssueHistory:
    """What an issue's chart is drawn from, as its source answered: `[unix_time, count]` pairs
    for the hours (24 h) and days (14 days) that had events, when it was first seen (Unix
    time), and its latest event's release."""

    hours: list[list[int]]
    days: list[list[int]]
    first_seen: float | None = None
    release: str | None = None


class IssueHistories(Protocol):
    """What a chart asks of an issue's source (GlitchTip's API, or Sentry's for Sentry's
    issues: glitchtip/trackers.py), by the relay's id of the issue and its organization."""

    def issue_history(self, org: str, issue_id: str) -> IssueHistory: ...


# What a chart asks the sources about an issue's events, as the wiring makes it from their
# tokens.
ISSUE_HISTORY: Key[IssueHistories] = Key("issue history")


class IssueWatch(Protocol):
    """What the watcher asks of the issues it watches: their states, their last 24 hours
    (GlitchTip's API, or both sources': glitchtip/trackers.py)."""

    def issue_states(self, org: str, ids: Sequence[str]) -> Answered[IssueState]: ...

    def issue_counts(self, org: str, ids: Sequence[str]) -> Answered[list[list[int]]]: ...


# What the watcher asks the sources (GlitchTip's, Sentry's) about the issues it watches, as the
# wiring makes it from their tokens.
ISSUE_WATCH: Key[IssueWatch] = Key("issue watch")
