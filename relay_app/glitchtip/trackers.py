"""The issue API a press, a reply, a snooze, the watcher and a chart act through, for every
source: each source's own API for its issues (an issue of a source with a prefix, such as
Sentry's `sentry:<id>`, sent as the source's own id). A source without a token has no API
here: an issue of it has no buttons, so no press reaches this for it, and a call that did
fails as any refused call does, naming the token to set."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from ..core.errors import GlitchTipError
from ..core.services import Key
from ..core.sources import Source
from ..core.trackers import Answered, IssueHistory, IssueState, IssueStatus
from .api import GlitchTipApi

T = TypeVar("T")


@dataclass(frozen=True)
class Tracker:
    """A source's API, made from its token (None: it has none), and the variable that token
    is, which a call refused for want of it names."""

    source: Source
    api: GlitchTipApi | None
    token_name: str


class Trackers:
    def __init__(self, trackers: Sequence[Tracker]) -> None:
        self._trackers = tuple(trackers)

    @property
    def any(self) -> bool:
        """Whether any source has an API here (a token)."""
        return any(tracker.api is not None for tracker in self._trackers)

    def api_of(self, source: Source) -> GlitchTipApi | None:
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
        self, ids: Sequence[str], ask: Callable[[GlitchTipApi, list[str]], Answered[T]]
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

    def _for(self, issue_id: str) -> tuple[Tracker, GlitchTipApi]:
        """The source that owns the issue, and its API."""
        tracker = next((t for t in self._trackers if t.source.holds(issue_id)), None)
        if tracker is None:
            raise GlitchTipError(f"issue {issue_id}: no source of this relay's holds it")
        if tracker.api is None:
            name = tracker.token_name
            raise GlitchTipError(f"issue {issue_id}: {name} is not set", detail=f"no {name}")
        return tracker, tracker.api


def _org(tracker: Tracker, org: str | None) -> str | None:
    """The organization an issue is acted on in, where its source's links name one (its
    alert's, which an unsigned webhook names); another source's issue is asked for by its id
    alone."""
    return org if tracker.source.org_in_link else None


# Every source's API, as the wiring makes them from their tokens: what reads a pasted link's
# issue (the chat's links' cards) asks for its source's.
TRACKERS: Key[Trackers] = Key("trackers")
