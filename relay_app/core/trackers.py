"""What the core asks of an issue's tracker, whichever source's it is: its statuses, what a press
and a reply change (`IssueActions`), what a chart reads (`IssueHistories`), what the watcher
asks (`IssueWatch`) and what a link's card reads, each named by a key the wiring provides from
the sources' tokens. Each source's API implements them (`TrackerApi`: GlitchTip's
glitchtip/api.py and Sentry's sentry/api.py, each extending issue_api/client.py). One
`Trackers` asks each issue's own source's API: an issue of a source with a prefix, such as
Sentry's `sentry:<id>`, is sent as the source's own id. A source without a token has no API
here: an issue of it has no buttons, so no press reaches this for it, and a call that did fails
as any refused call does, naming the token to set."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, Protocol, TypeVar

from .errors import TrackerError
from .services import Key
from .sources import Source

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
    API, or, for Sentry's issues too, core/trackers.py's `Trackers`)."""

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
    issues: core/trackers.py's `Trackers`), by the relay's id of the issue and its organization."""

    def issue_history(self, org: str, issue_id: str) -> IssueHistory: ...


# What a chart asks the sources about an issue's events, as the wiring makes it from their
# tokens.
ISSUE_HISTORY: Key[IssueHistories] = Key("issue history")


# Issues asked about in one request, at most, of any source (the watcher batches by them; a
# source's API refuses more): GlitchTip's issue list takes 100 a page, its issues-stats 200
# groups, and Sentry's as many.
STATES_AT_ONCE = 100
STATS_AT_ONCE = 200


class IssueWatch(Protocol):
    """What the watcher asks of the issues it watches: their states (STATES_AT_ONCE at most),
    their last 24 hours (STATS_AT_ONCE at most), of each source (`Trackers`)."""

    def issue_states(self, org: str, ids: Sequence[str]) -> Answered[IssueState]: ...

    def issue_counts(self, org: str, ids: Sequence[str]) -> Answered[list[list[int]]]: ...


# What the watcher asks the sources (GlitchTip's, Sentry's) about the issues it watches, as the
# wiring makes it from their tokens.
ISSUE_WATCH: Key[IssueWatch] = Key("issue watch")


class TrackerApi(IssueActions, IssueWatch, IssueHistories, Protocol):
    """A source's API, as the core asks it: what a press, a reply, the watcher and a chart ask
    (above), and the issue a pasted link names, with the tags of its latest event the routes
    read (a link's card)."""

    def issue_in(self, org: str, issue_id: str) -> tuple[dict[str, Any], dict[str, str]]: ...


@dataclass(frozen=True)
class Tracker:
    """A source's API, made from its token (None: it has none), and the variable that token
    is, which a call refused for want of it names."""

    source: Source
    api: TrackerApi | None
    token_name: str


class Trackers:
    def __init__(self, trackers: Sequence[Tracker]) -> None:
        self._trackers = tuple(trackers)

    @property
    def any(self) -> bool:
        """Whether any source has an API here (a token)."""
        return any(tracker.api is not None for tracker in self._trackers)

    def api_of(self, source: Source) -> TrackerApi | None:
        """The source's API; None when it has no token."""
        return next((t.api for t in self._trackers if t.source.name == source.name), None)

    def set_status(
        self,
        issue_id: str,
        status: IssueStatus,
        details: Mapping[str, int] | None = None,
        *,
        org: str | None = None,
    ) -> dict[str, Any]:
        tracker, api = self._for(issue_id)
        own_id = tracker.source.own_id(issue_id)
        return api.set_status(own_id, status, details, org=_org(tracker, org))

    def comment(self, issue_id: str, text: str, *, org: str | None = None) -> dict[str, Any]:
        tracker, api = self._for(issue_id)
        return api.comment(tracker.source.own_id(issue_id), text, org=_org(tracker, org))

    def issue_states(self, org: str, ids: Sequence[str]) -> Answered[IssueState]:
        """Each issue's state, asked of its source: the watcher's question."""
        return self._asked(ids, lambda api, own: api.issue_states(org, own))

    def issue_counts(self, org: str, ids: Sequence[str]) -> Answered[list[list[int]]]:
        """Each issue's last 24 hours, asked of its source."""
        return self._asked(ids, lambda api, own: api.issue_counts(org, own))

    def issue_history(self, org: str, issue_id: str) -> IssueHistory:
        """One issue's events over a day and two weeks, asked of its source: a chart's."""
        tracker, api = self._for(issue_id)
        return api.issue_history(org, tracker.source.own_id(issue_id))

    def _asked(
        self, ids: Sequence[str], ask: Callable[[TrackerApi, list[str]], Answered[T]]
    ) -> Answered[T]:
        """One question about many issues, asked of each source for its own, the answers
        named by the relay's ids. A source without a token is not asked."""
        merged: Answered[T] = Answered()
        for tracker in self._trackers:
            source = tracker.source
            own = [source.own_id(i) for i in ids if source.holds(i)]
            if tracker.api is None or not own:
                continue
            answered = ask(tracker.api, own)
            merged.found.update(
                {source.relay_id(key): value for key, value in answered.found.items()}
            )
            merged.unreadable.update(
                {source.relay_id(key): why for key, why in answered.unreadable.items()}
            )
        return merged

    def _for(self, issue_id: str) -> tuple[Tracker, TrackerApi]:
        """The source that owns the issue, and its API."""
        tracker = next((t for t in self._trackers if t.source.holds(issue_id)), None)
        if tracker is None:
            raise TrackerError(f"issue {issue_id}: no source of this relay's holds it")
        if tracker.api is None:
            name = tracker.token_name
            raise TrackerError(f"issue {issue_id}: {name} is not set", detail=f"no {name}")
        return tracker, tracker.api


def _org(tracker: Tracker, org: str | None) -> str | None:
    """The organization an issue is acted on in, where its source's links name one (its
    alert's, which an unsigned webhook names); another source's issue is asked for by its id
    alone."""
    return org if tracker.source.org_in_link else None


# Every source's API, as the wiring makes them from their tokens: what reads a pasted link's
# issue (the chat's links' cards) asks for its source's.
TRACKERS: Key[Trackers] = Key("trackers")
