"""GlitchTip's API: the one change a press asks for, an issue's status (`PUT
/api/0/issues/<id>/`); a reply in the chat as a comment on its issue (`POST
/api/0/issues/<id>/comments/`); what an alert's message adds about its issue (`GET` the issue
and its latest event, details.py); and the token check `relay-app check` makes (`GET
/api/0/users/me/`).
The one place where requests' exceptions and GlitchTip's answers become the GlitchTip errors
(errors.py). Facts: ../shared/reference/glitchtip-api.md.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import urlencode

import requests

from ..core.errors import (
    GlitchTipError,
    GlitchTipIssueGone,
    GlitchTipRedirected,
    GlitchTipScopeMissing,
    GlitchTipTokenRefused,
    GlitchTipUnreachable,
    Unreached,
)
from ..core.http_deadline import Deadline, DeadlineAdapter
from ..core.json_values import json_objects
from ..core.logs import redact, register_secret
from .details import IssueDetails, details_from

# GlitchTip's answers here are a few kilobytes; a larger one is not its API answering.
MAX_ANSWER_BYTES = 1024 * 1024
# GlitchTip answers a comment on an issue that does not exist with 400 and this (not 404).
_NO_SUCH_ISSUE = "issue does not exist"

# Issues asked about in one request: issues-stats takes 200 groups, the issue list 100 a page.
STATS_AT_ONCE = 200
STATES_AT_ONCE = 100

# What a button sets an issue to in GlitchTip.
IssueStatus = Literal["resolved", "ignored", "unresolved"]
ISSUE_STATUSES: tuple[IssueStatus, ...] = ("resolved", "ignored", "unresolved")


class GlitchTipApi:
    def __init__(self, token: str, base_url: str, *, timeout: float) -> None:
        """The token and the one address it is sent to (GLITCHTIP_URL) are bound here, so no
        call can name another."""
        register_secret(token)
        self._token = token
        self._base_url = base_url.rstrip("/")
        self._timeout = timeout
        self._session = requests.Session()
        adapter = DeadlineAdapter(pool_connections=4, pool_maxsize=8, max_retries=0)
        self._session.mount("http://", adapter)
        self._session.mount("https://", adapter)

    def set_status(self, issue_id: str, status: IssueStatus) -> dict[str, Any]:
        """Set the issue's status; GlitchTip's issue JSON, or a GlitchTipError."""
        _check_id(issue_id)
        return self._call("PUT", f"/api/0/issues/{issue_id}/", {"status": status})

    def comment(self, issue_id: str, text: str) -> dict[str, Any]:
        """Post a comment on the issue (its author is the token's user); GlitchTip's comment
        JSON, or a GlitchTipError."""
        _check_id(issue_id)
        return self._call("POST", f"/api/0/issues/{issue_id}/comments/", {"data": {"text": text}})

    def issue(self, issue_id: str) -> dict[str, Any]:
        """The issue as GlitchTip's API answers it (its title, short id, status, count, level,
        culprit, project), or a GlitchTipError."""
        _check_id(issue_id)
        return self._call("GET", f"/api/0/issues/{issue_id}/", None)

    def details(self, issue_id: str) -> IssueDetails:
        """What the issue and its latest event say (details.py), or a GlitchTipError. An issue
        without events yet still has its count and first sighting."""
        _check_id(issue_id)
        issue = self._call("GET", f"/api/0/issues/{issue_id}/", None)
        try:
            event = self._call("GET", f"/api/0/issues/{issue_id}/events/latest/", None)
        except GlitchTipIssueGone:
            event = None
        return details_from(issue, event)

    def issue_counts(self, org: str, ids: Sequence[str]) -> dict[str, list[list[float]]]:
        """Each issue's events by hour over the last 24 h (`issues-stats`, at most
        STATS_AT_ONCE ids; `event:read`): `[unix_hour, count]` for the hours that had any."""
        _check_ids(org, ids, STATS_AT_ONCE)
        query = "&".join(f"groups={issue}" for issue in ids)
        reply = self._call_any(
            "GET", f"/api/0/organizations/{org}/issues-stats/?{query}&statsPeriod=24h", None
        )
        counts: dict[str, list[list[float]]] = {}
        for issue in json_objects(reply):
            stats = issue.get("stats")
            hours = stats.get("24h") if isinstance(stats, dict) else None
            counts[str(issue.get("id"))] = [
                [float(pair[0]), float(pair[1])]
                for pair in (hours if isinstance(hours, list) else [])
                if isinstance(pair, list) and len(pair) == 2
            ]
        return counts

    def issue_states(self, org: str, ids: Sequence[str]) -> dict[str, IssueState]:
        """Each issue's status (`unresolved`, `resolved`, `ignored`) and events so far, at most
        STATES_AT_ONCE ids (the organisation's issues, filtered by id; `event:read`)."""
        _check_ids(org, ids, STATES_AT_ONCE)
        query = "&".join(f"id={issue}" for issue in ids)
        path = f"/api/0/organizations/{org}/issues/?{query}&limit={STATES_AT_ONCE}"
        return {
            str(issue.get("id")): IssueState(str(issue.get("status")), events_of(issue))
            for issue in json_objects(self._call_any("GET", path, None))
        }

    def search_issues(self, org: str, words: str, *, limit: int = 5) -> list[dict[str, Any]]:
        """The organisation's issues GlitchTip's search finds for `words` (its `query`, full
        text over titles), each with `id`, `shortId`, `title` and `status` (`event:read`)."""
        if not _SLUG.fullmatch(org):
            raise ValueError(f"not an organisation's slug: {org!r}")
        path = f"/api/0/organizations/{org}/issues/?{urlencode({'query': words, 'limit': limit})}"
        return json_objects(self._call_any("GET", path, None))

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

    def _call(self, method: str, path: str, body: dict[str, Any] | None) -> dict[str, Any]:
        reply = self._call_any(method, path, body)
        if isinstance(reply, dict):
            return reply
        raise GlitchTipUnreachable(
            f"{method} {self._base_url}{path}: GlitchTip's answer is not the JSON object its API "
            "gives",
            detail="an answer that is not GlitchTip's",
        )

    def _call_any(self, method: str, path: str, body: dict[str, Any] | None) -> object:
        url = self._base_url + path
        headers = {"Authorization": f"Bearer {self._token}"}
        with Deadline(self._timeout) as watchdog:
            try:
                # No redirects: the token goes to GLITCHTIP_URL, not wherever an answer points.
                with self._session.request(
                    method,
                    url,
                    json=body,
                    headers=headers,
                    timeout=self._timeout,
                    allow_redirects=False,
                    stream=True,
                ) as response:
                    status, location = response.status_code, response.headers.get("Location")
                    answer = _bounded(response)
            except requests.RequestException as exc:
                cause: Unreached = "timeout" if watchdog.expired else _cause(exc)
                raise GlitchTipUnreachable(
                    f"{method} {url}: {_SAID[cause]}; check GLITCHTIP_URL ({self._base_url})",
                    cause=cause,
                ) from None
        if 300 <= status < 400:
            raise _redirected(method, url, status, location)
        try:
            reply = json.loads(answer) if answer is not None else None
        except ValueError:
            reply = None
        if status < 300 and isinstance(reply, dict | list):
            return reply
        raise _refusal(method, url, status, reply)


_SLUG = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,99}")


@dataclass(frozen=True)
class IssueState:
    """What the issues list says of an issue now."""

    status: str
    events: int | None  # GlitchTip's `count` (a string in its answer); None when it has none


def events_of(issue: dict[str, Any]) -> int | None:
    """An issue's `count` as GlitchTip answers it (a string), as a number."""
    try:
        return int(str(issue.get("count")))
    except ValueError:
        return None


@dataclass(frozen=True)
class ProjectPath:
    """A project as GlitchTip's API names it: its organization's slug and its own."""

    organization: str
    project: str

    @classmethod
    def parse(cls, text: str) -> ProjectPath:
        """'acme/backend'; ValueError for anything else (the slugs become a path)."""
        organization, slash, project = text.strip().strip("/").partition("/")
        if not slash or not _SLUG.fullmatch(organization) or not _SLUG.fullmatch(project):
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


def _check_ids(org: str, ids: Sequence[str], most: int) -> None:
    if not _SLUG.fullmatch(org) or not 0 < len(ids) <= most:
        raise ValueError(f"an organisation's slug and 1 to {most} issue ids, not {org!r}")
    for issue in ids:
        _check_id(issue)


def _check_id(issue_id: str) -> None:
    if not issue_id.isdigit():  # the id is the path: nothing else may ride along
        raise ValueError(f"not a GlitchTip issue id: {issue_id!r}")


def _bounded(response: requests.Response) -> bytes | None:
    """The answer's body, or None when it is larger than any answer of GlitchTip's API: read no
    further than that."""
    body = bytearray()
    for chunk in response.iter_content(chunk_size=65536):
        body += chunk
        if len(body) > MAX_ANSWER_BYTES:
            return None
    return bytes(body)


def _redirected(method: str, url: str, status: int, location: str | None) -> GlitchTipError:
    where = redact(location)[:200] if location else "nowhere"
    return GlitchTipRedirected(
        f"{method} {url}: GlitchTip answered {status}, a redirect to {where}, which the relay "
        "does not follow: set GLITCHTIP_URL to GlitchTip's own address",
        detail=where,
        status=status,
    )


def _refusal(method: str, url: str, status: int, reply: object) -> GlitchTipError:
    detail = reply.get("detail") if isinstance(reply, dict) else None
    said = redact(str(detail))[:200] if detail else f"HTTP {status}"
    logged = f"{method} {url}: GlitchTip answered {status}: {said}"
    if status == 401 or (status == 403 and "csrf" in said.lower()):
        return GlitchTipTokenRefused(logged, detail=said, status=status)
    if status == 403:
        return GlitchTipScopeMissing(logged, detail=said, status=status)
    if _no_such_issue(status, said):
        return GlitchTipIssueGone(logged, detail=said, status=status)
    if status >= 500 or not isinstance(reply, dict):
        return GlitchTipUnreachable(logged, detail=said, status=status)
    return GlitchTipError(logged, detail=f"{status}: {said}", status=status)


def _no_such_issue(status: int, said: str) -> bool:
    return status == 404 or (status == 400 and said.lower().rstrip(".") == _NO_SUCH_ISSUE)


# How the log says why GlitchTip was not reached.
_SAID: dict[Unreached, str] = {
    "timeout": "GlitchTip did not answer in time",
    "refused": "GlitchTip refused the connection (nothing listens at that address)",
    "unresolvable": "GlitchTip's host name does not resolve",
    "connection": "the connection to GlitchTip failed",
}


def _cause(exc: requests.RequestException) -> Unreached:
    if isinstance(exc, requests.Timeout):
        return "timeout"
    if isinstance(exc, requests.ConnectionError):
        text = str(exc).lower()
        if "refused" in text:
            return "refused"
        if "name or service" in text or "resolve" in text:
            return "unresolvable"
    return "connection"
