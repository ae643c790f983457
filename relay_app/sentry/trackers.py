"""The issue API a press, a reply and a snooze act through, for both sources: GlitchTip's for
its issues, Sentry's for Sentry's (the relay's `sentry:<id>`, sent as Sentry's own id). A source
without a token has no API here: an issue of it has no buttons, so no press reaches this for
it, and a call that did would fail as any refused call does."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from ..core.errors import GlitchTipError
from ..core.sources import Source
from ..glitchtip.api import Answered, GlitchTipApi, IssueHistory, IssueState, IssueStatus
from ..glitchtip.source import GLITCHTIP
from .api import SentryApi
from .source import SENTRY

T = TypeVar("T")


class Trackers:
    def __init__(self, glitchtip: GlitchTipApi | None, sentry: SentryApi | None) -> None:
        self._glitchtip = glitchtip
        self._sentry = sentry

    def set_status(
        self,
        issue_id: str,
        status: IssueStatus,
        details: Mapping[str, int] | None = None,
        *,
        org: str | None = None,
    ) -> dict[str, Any]:
        api, own_id = self._for(issue_id)
        return api.set_status(own_id, status, details, org=self._org(issue_id, org))

    def comment(self, issue_id: str, text: str, *, org: str | None = None) -> dict[str, Any]:
        api, own_id = self._for(issue_id)
        return api.comment(own_id, text, org=self._org(issue_id, org))

    @staticmethod
    def _org(issue_id: str, org: str | None) -> str | None:
        """The organization a GlitchTip issue is acted on in (its alert's, which an unsigned
        webhook names); a Sentry issue's alert came signed, so its id alone is asked for."""
        return None if SENTRY.holds(issue_id) else org

    def issue_states(self, org: str, ids: Sequence[str]) -> Answered[IssueState]:
        """Each issue's state, asked of its source: the watcher's question."""
        return self._asked(ids, lambda api, own: api.issue_states(org, own))

    def issue_counts(self, org: str, ids: Sequence[str]) -> Answered[list[list[int]]]:
        """Each issue's last 24 hours, asked of its source."""
        return self._asked(ids, lambda api, own: api.issue_counts(org, own))

    def issue_history(self, org: str, issue_id: str) -> IssueHistory:
        """One issue's events over a day and two weeks, asked of its source: a chart's."""
        api, own_id = self._for(issue_id)
        return api.issue_history(org, own_id)

    def _asked(
        self, ids: Sequence[str], ask: Callable[[GlitchTipApi, list[str]], Answered[T]]
    ) -> Answered[T]:
        """One question about many issues, asked of each source for its own, the answers
        named by the relay's ids. A source without a token is not asked."""
        merged: Answered[T] = Answered()
        apis: tuple[tuple[GlitchTipApi | None, Source], ...] = (
            (self._glitchtip, GLITCHTIP),
            (self._sentry, SENTRY),
        )
        for api, source in apis:
            own = [source.own_id(i) for i in ids if source.holds(i)]
            if api is None or not own:
                continue
            answered = ask(api, own)
            merged.found.update(
                {source.relay_id(key): value for key, value in answered.found.items()}
            )
            merged.unreadable.update(
                {source.relay_id(key): why for key, why in answered.unreadable.items()}
            )
        return merged

    def _for(self, issue_id: str) -> tuple[GlitchTipApi, str]:
        """The API that owns the issue, and its id there."""
        if SENTRY.holds(issue_id):
            api: GlitchTipApi | None = self._sentry
            own_id, name = SENTRY.own_id(issue_id), "SENTRY_API_TOKEN"
        else:
            api, own_id, name = self._glitchtip, issue_id, "GLITCHTIP_API_TOKEN"
        if api is None:
            raise GlitchTipError(f"issue {issue_id}: {name} is not set", detail=f"no {name}")
        return api, own_id
