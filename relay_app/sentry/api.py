"""Sentry's API, for the calls the relay makes of an issue: the issue API's (issue_api/client.py,
which GlitchTip implements too) but for a comment's body (`{"text": …}`, Sentry's
NoteSerializer), its issues asked for by id (`group`), and where the calls are sent.

The token goes to SENTRY_URL's origin exactly (scheme, host and port), or to the region host
Sentry's own answer there names for the token's organization (`links.regionUrl` in `GET
/api/0/organizations/`: sentry.io keeps an organization's data at us.sentry.io or de.sentry.io),
and only to one under SENTRY_URL's parent domain by the same scheme and port, named as an origin
alone (core/origins.py: no user, path, query or fragment): an answer cannot send it elsewhere.
Asked once, and again after a minute while it cannot be.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from ..core.errors import IssueGone, SourceSetup, TrackerError
from ..core.json_values import json_object, json_objects
from ..core.origins import origin_of
from ..core.trackers import STATES_AT_ONCE, Answered, IssueState
from ..issue_api.client import (
    IssueApi,
    answered_about,
    check_ids,
    hours_of,
    routed_tags,
    state_of,
)

log = logging.getLogger(__name__)

# How long a region that could not be asked is left unasked: the calls go to SENTRY_URL meanwhile.
ASK_AGAIN = 60.0
_ORGANIZATIONS = "/api/0/organizations/"


class SentryApi(IssueApi):
    SETUP = SourceSetup(
        "Sentry",
        "SENTRY_API_TOKEN",
        "SENTRY_URL",
        "add a token to the internal integration in Sentry (Settings → Custom Integrations), "
        "whose permissions give Issue & Event: Read & Write, and set SENTRY_API_TOKEN to it",
        "",
    )

    def __init__(
        self,
        token: str,
        base_url: str,
        *,
        timeout: float,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__(token, base_url, timeout=timeout)
        self._region: str | None = None
        self._asked_at: float | None = None
        self._monotonic = monotonic
        self._lock = threading.Lock()

    def organizations(self) -> list[dict[str, Any]]:
        """The token's organizations, asked at SENTRY_URL itself (`org:read`): an internal
        integration's token has one. Its answer says the region the API is asked at from
        then on."""
        found = json_objects(self._call_any("GET", _ORGANIZATIONS, None, at=self._base_url))
        with self._lock:
            self._region = self._region_in(found)
        return found

    def region(self) -> str:
        """Where the API is asked: the token's organization's region host, or SENTRY_URL."""
        return self._api_base()

    def issue_in(self, org: str, issue_id: str) -> tuple[dict[str, Any], dict[str, str]]:
        """The issue, asked for as `org`'s (404, IssueGone, when it is not one of its),
        and the tags of its latest event that the routes read."""
        check_ids(org, [issue_id], 1)
        issue = self._call("GET", f"/api/0/organizations/{org}/issues/{issue_id}/", None)
        try:
            event = self._call(
                "GET", f"/api/0/organizations/{org}/issues/{issue_id}/events/latest/", None
            )
        except IssueGone:
            event = {}
        return issue, routed_tags(event)

    def _comment_body(self, text: str) -> dict[str, Any]:
        return {"text": text}

    def issue_states(self, org: str, ids: Sequence[str]) -> Answered[IssueState]:
        """Each issue's status and events so far, in one page of the organization's issues
        asked for by id (`group`, every project the token sees: `project=-1`)."""
        return answered_about(
            self._call_any("GET", _by_ids(org, ids, STATES_AT_ONCE), None), ids, state_of
        )

    def issue_counts(self, org: str, ids: Sequence[str]) -> Answered[list[list[int]]]:
        """Each issue's events by hour over the last 24 h: the same page, with the issues'
        stats (`groupStatsPeriod=24h`: `stats["24h"]`, `[unix_hour, count]` pairs)."""
        path = _by_ids(org, ids, STATES_AT_ONCE) + "&groupStatsPeriod=24h"
        return answered_about(self._call_any("GET", path, None), ids, hours_of)

    def _stats_path(self, org: str, issue_id: str, period: str) -> str:
        """The issue alone in the organization's index, with its stats over `period` (Sentry
        has no issues-stats of GlitchTip's kind)."""
        return _by_ids(org, [issue_id], 1) + f"&groupStatsPeriod={period}"

    def _latest_event_path(self, org: str, issue_id: str) -> str:
        return f"/api/0/organizations/{org}/issues/{issue_id}/events/latest/"

    def _api_base(self) -> str:
        with self._lock:
            if self._region is not None:
                return self._region
            now = self._monotonic()
            if self._asked_at is not None and now - self._asked_at < ASK_AGAIN:
                return self._base_url
            self._asked_at = now
        try:
            self.organizations()
        except TrackerError as exc:
            log.warning("Sentry's region for the token could not be asked: %s", exc)
        with self._lock:
            return self._region or self._base_url

    def _region_in(self, organizations: list[dict[str, Any]]) -> str:
        """The first organization's region host, where SENTRY_URL's origin holds it; SENTRY_URL
        when it names none (self-hosted Sentry), or only regions it does not hold (said)."""
        base = origin_of(self._base_url)
        for organization in organizations:
            region = json_object(organization.get("links")).get("regionUrl")
            if not isinstance(region, str):
                continue
            found = origin_of(region, bare=True)
            if base is not None and found is not None and base.holds(found):
                return self._base_url if found == base else str(found)
            log.warning(
                "Sentry named %r as the token's region: not an origin under SENTRY_URL's (%s) by"
                " its scheme and port, so the token is not sent there; the API is asked at"
                " SENTRY_URL",
                region[:200],
                self._base_url,
            )
        return self._base_url


def _by_ids(org: str, ids: Sequence[str], most: int) -> str:
    """Sentry's issues index asked for these issues alone (its `group` parameter: a query is
    then ignored)."""
    check_ids(org, ids, most)
    groups = "&".join(f"group={issue}" for issue in ids)
    return f"/api/0/organizations/{org}/issues/?{groups}&project=-1&limit={most}"
