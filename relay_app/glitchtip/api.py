"""GlitchTip's API, where its calls are its own: a comment's body (`{"data": {"text": …}}`), its
issues asked for by id (`id=`) and their stats (`issues-stats`), its search and a project's
issues (the hidden issues', hidden.py), and what `relay-app check` and `relay-app
glitchtip connect` ask (the token's user, a project's alert rules and keys). What every
source's API answers alike is the issue API's client (issue_api/client.py).
Facts: ../shared/reference/glitchtip-api.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from ..core.errors import IssueGone, SourceSetup
from ..core.json_values import json_objects
from ..core.trackers import STATES_AT_ONCE, STATS_AT_ONCE, Answered, IssueState
from ..issue_api.client import (
    SLUG,
    IssueApi,
    answered_about,
    check_ids,
    hours_of,
    routed_tags,
    state_of,
)

# Its name, its token's variable and its address's, how to make a token, what one lacks.
GLITCHTIP_SETUP = SourceSetup(
    "GlitchTip",
    "GLITCHTIP_API_TOKEN",
    "GLITCHTIP_URL",
    "make a new token in GlitchTip (Profile → Auth Tokens) with the event:write scope and "
    "set GLITCHTIP_API_TOKEN to it",
    " (it lacks the event:write scope)",
)


class GlitchTipApi(IssueApi):
    SETUP = GLITCHTIP_SETUP

    def _comment_body(self, text: str) -> dict[str, Any]:
        return {"data": {"text": text}}

    def issue_in(self, org: str, issue_id: str) -> tuple[dict[str, Any], dict[str, str]]:
        """The issue, asked for among `org`'s (IssueGone when it is not one of them:
        a link's organization must be the issue's), and the tags of its latest event that the
        routes read (environment, server_name, release: ROUTED_TAGS, and no other), or a
        TrackerError."""
        self._of_org(org, issue_id)
        issue = self._call("GET", f"/api/0/issues/{issue_id}/", None)
        try:
            event = self._call("GET", f"/api/0/issues/{issue_id}/events/latest/", None)
        except IssueGone:
            event = {}
        return issue, routed_tags(event)

    def issue_counts(self, org: str, ids: Sequence[str]) -> Answered[list[list[int]]]:
        """Each issue's events by hour over the last 24 h (`issues-stats`, at most
        STATS_AT_ONCE ids; `event:read`): `[unix_hour, count]` for the hours that had any. An
        issue whose answer is not such whole numbers (a NaN, a count past MAX_COUNT, a string)
        is unreadable, alone."""
        check_ids(org, ids, STATS_AT_ONCE)
        query = "&".join(f"groups={issue}" for issue in ids)
        reply = self._call_any(
            "GET", f"/api/0/organizations/{org}/issues-stats/?{query}&statsPeriod=24h", None
        )
        return answered_about(reply, ids, hours_of)

    def _stats_path(self, org: str, issue_id: str, period: str) -> str:
        return f"/api/0/organizations/{org}/issues-stats/?groups={issue_id}&statsPeriod={period}"

    def _latest_event_path(self, org: str, issue_id: str) -> str:
        return f"/api/0/issues/{issue_id}/events/latest/"

    def issue_states(self, org: str, ids: Sequence[str]) -> Answered[IssueState]:
        """Each issue's status (`unresolved`, `resolved`, `ignored`) and events so far, at most
        STATES_AT_ONCE ids (the organisation's issues, filtered by id; `event:read`). An issue
        whose status is none of those, or whose count is not a whole number up to MAX_COUNT,
        is unreadable, alone."""
        check_ids(org, ids, STATES_AT_ONCE)
        query = "&".join(f"id={issue}" for issue in ids)
        path = f"/api/0/organizations/{org}/issues/?{query}&limit={STATES_AT_ONCE}"
        return answered_about(self._call_any("GET", path, None), ids, state_of)

    def search_issues(self, org: str, words: str, *, limit: int = 5) -> list[dict[str, Any]]:
        """The organisation's issues GlitchTip's search finds for `words` (its `query`, full
        text over titles), each with `id`, `shortId`, `title` and `status` (`event:read`)."""
        if not SLUG.fullmatch(org):
            raise ValueError(f"not an organisation's slug: {org!r}")
        path = f"/api/0/organizations/{org}/issues/?{urlencode({'query': words, 'limit': limit})}"
        return json_objects(self._call_any("GET", path, None))

    def project_issues(self, org: str, project_id: str, *, limit: int) -> list[dict[str, Any]]:
        """The project's unresolved issues, the latest seen first, at most `limit` (one page:
        at most STATES_AT_ONCE), each with `id`, `shortId`, `title`, `status`, `lastSeen`
        (`event:read`)."""
        check_ids(org, [project_id], 1)
        query = urlencode(
            {
                "project": project_id,
                "query": "is:unresolved",
                "sort": "-last_seen",
                "limit": min(limit, STATES_AT_ONCE),
            }
        )
        return json_objects(
            self._call_any("GET", f"/api/0/organizations/{org}/issues/?{query}", None)
        )

    def whoami(self) -> dict[str, Any]:
        """The token's user: the cheap check that GlitchTip accepts the token."""
        return self._call("GET", "/api/0/users/me/", None)

    def alert_rules(self, project: ProjectPath) -> list[dict[str, Any]]:
        """The project's alert rules, each with its recipients (`project:read`)."""
        return json_objects(self._call_any("GET", f"{project.api_path}/alerts/", None))

    def create_alert_rule(self, project: ProjectPath, rule: dict[str, Any]) -> dict[str, Any]:
        """A new alert rule (`project:write`); GlitchTip's rule, with its id."""
        return self._call("POST", f"{project.api_path}/alerts/", rule)

    def update_alert_rule(
        self, project: ProjectPath, rule_id: int, rule: dict[str, Any]
    ) -> dict[str, Any]:
        """Rewrite an alert rule (`project:write`)."""
        return self._call("PUT", f"{project.api_path}/alerts/{int(rule_id)}/", rule)

    def project_keys(self, project: ProjectPath) -> list[dict[str, Any]]:
        """The project's client keys, each with its DSN (`project:read`)."""
        return json_objects(self._call_any("GET", f"{project.api_path}/keys/", None))


@dataclass(frozen=True)
class ProjectPath:
    """A project as GlitchTip's API names it: its organization's slug and its own."""

    organization: str
    project: str

    @classmethod
    def parse(cls, text: str) -> ProjectPath:
        """'acme/backend'; ValueError for anything else (the slugs become a path)."""
        organization, slash, project = text.strip().strip("/").partition("/")
        if not slash or not SLUG.fullmatch(organization) or not SLUG.fullmatch(project):
            raise ValueError(
                f"{text!r} is not ORG/PROJECT: the organization's slug and the project's, as in "
                "GlitchTip's address of the project (.../<org>/projects/<project>)"
            )
        return cls(organization, project)

    @property
    def api_path(self) -> str:
        return f"/api/0/projects/{self.organization}/{self.project}"

    def __str__(self) -> str:
        return f"{self.organization}/{self.project}"
