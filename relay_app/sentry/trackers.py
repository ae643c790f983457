"""The issue API a press, a reply and a snooze act through, for both sources: GlitchTip's for
its issues, Sentry's for Sentry's (the relay's `sentry:<id>`, sent as Sentry's own id). A source
without a token has no API here: an issue of it has no buttons, so no press reaches this for
it, and a call that did would fail as any refused call does."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..core.errors import GlitchTipError
from ..glitchtip.api import GlitchTipApi, IssueStatus
from ..message.subjects import SENTRY_PREFIX, is_sentrys
from .api import SentryApi


class Trackers:
    def __init__(self, glitchtip: GlitchTipApi | None, sentry: SentryApi | None) -> None:
        self._glitchtip = glitchtip
        self._sentry = sentry

    def set_status(
        self, issue_id: str, status: IssueStatus, details: Mapping[str, int] | None = None
    ) -> dict[str, Any]:
        api, own_id = self._for(issue_id)
        return api.set_status(own_id, status, details)

    def comment(self, issue_id: str, text: str) -> dict[str, Any]:
        api, own_id = self._for(issue_id)
        return api.comment(own_id, text)

    def _for(self, issue_id: str) -> tuple[GlitchTipApi, str]:
        """The API that owns the issue, and its id there."""
        if is_sentrys(issue_id):
            api: GlitchTipApi | None = self._sentry
            own_id, name = issue_id.removeprefix(SENTRY_PREFIX), "SENTRY_API_TOKEN"
        else:
            api, own_id, name = self._glitchtip, issue_id, "GLITCHTIP_API_TOKEN"
        if api is None:
            raise GlitchTipError(f"issue {issue_id}: {name} is not set", detail=f"no {name}")
        return api, own_id
