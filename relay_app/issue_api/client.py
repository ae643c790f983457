"""The issue API's client: the calls every source's API answers alike (an issue's status, `PUT
/api/0/issues/<id>/`; a comment on it; what an alert's message adds about it, the issue and its
latest event, details.py; its history for a chart), and the one place where requests'
exceptions and the API's answers become the trackers' errors (core/errors.py), each naming the
source whose API it was (`SETUP`). Where a source's calls differ (a comment's body, the paths of
its stats, its issues asked for by id) its own package says, in a class of its own.
Facts: ../shared/reference/glitchtip-api.md.
"""

from __future__ import annotations

import json
import logging
import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

import requests

from ..core.client_text import cleaned
from ..core.errors import (
    IssueGone,
    ScopeMissing,
    SourceSetup,
    TokenRefused,
    TrackerError,
    TrackerRedirected,
    TrackerUnreachable,
    Unreached,
)
from ..core.http_deadline import Deadline, DeadlineAdapter
from ..core.issue_details import IssueDetails, field_text
from ..core.json_values import MAX_COUNT, json_count, json_objects
from ..core.logs import redact, register_secret
from ..core.trackers import (
    ISSUE_STATUSES,
    Answered,
    IssueHistory,
    IssueState,
    IssueStatus,
)
from .details import details_from, iso_time

log = logging.getLogger(__name__)

# The API's answers here are a few kilobytes; a larger one is not the API answering.
MAX_ANSWER_BYTES = 1024 * 1024
# GlitchTip answers a comment on an issue that does not exist with 400 and this (not 404).
_NO_SUCH_ISSUE = "issue does not exist"


T = TypeVar("T")


class IssueApi(ABC):
    # Who answers, and the variables that say where, as errors name them: each source's own.
    SETUP: SourceSetup

    def __init__(self, token: str, base_url: str, *, timeout: float) -> None:
        """The token and the one address it is sent to (the source's URL) are bound here, so no
        call can name another."""
        register_secret(token)
        self._token = token
        self._base_url = base_url.rstrip("/")
        self._timeout = timeout
        self._session = requests.Session()
        adapter = DeadlineAdapter(pool_connections=4, pool_maxsize=8, max_retries=0)
        self._session.mount("http://", adapter)
        self._session.mount("https://", adapter)

    def set_status(
        self,
        issue_id: str,
        status: IssueStatus,
        details: Mapping[str, int] | None = None,
        *,
        org: str | None = None,
    ) -> dict[str, Any]:
        """Set the issue's status (`details`: Sentry's `statusDetails`, an ignore's condition
        Sentry keeps itself); the issue's JSON, or a TrackerError. `org`: the organization the
        issue must be of, as its alert named it: asked among that organization's issues, the API
        answers 404 (IssueGone) for any other's, whatever the token may reach."""
        _check_id(issue_id)
        body: dict[str, Any] = {"status": status}
        if details:
            body["statusDetails"] = dict(details)
        return self._call("PUT", self._issue_path(issue_id, org), body)

    def comment(self, issue_id: str, text: str, *, org: str | None = None) -> dict[str, Any]:
        """Post a comment on the issue (its author is the token's user); the comment's JSON, or
        a TrackerError. `org`: as `set_status`'s; GlitchTip has no comments path under an
        organization, so the issue is first asked for among its issues."""
        _check_id(issue_id)
        if org is not None:
            self._of_org(org, issue_id)
        return self._call("POST", f"/api/0/issues/{issue_id}/comments/", self._comment_body(text))

    def _issue_path(self, issue_id: str, org: str | None) -> str:
        if org is None:
            return f"/api/0/issues/{issue_id}/"
        check_ids(org, [issue_id], 1)
        return f"/api/0/organizations/{org}/issues/{issue_id}/"

    def _of_org(self, org: str, issue_id: str) -> None:
        """Raises IssueGone unless the issue is one of the organization's."""
        check_ids(org, [issue_id], 1)
        listed = self._call_any("GET", f"/api/0/organizations/{org}/issues/?id={issue_id}", None)
        if not any(str(found.get("id")) == issue_id for found in json_objects(listed)):
            raise IssueGone(
                f"issue {issue_id} is not one of organization {org}'s",
                detail="not found",
                setup=self.SETUP,
            )

    @abstractmethod
    def _comment_body(self, text: str) -> dict[str, Any]:
        """A comment's body, as the source's API takes it."""

    def issue(self, issue_id: str) -> dict[str, Any]:
        """The issue as the API answers it (its title, short id, status, count, level, culprit,
        project), or a TrackerError."""
        _check_id(issue_id)
        return self._call("GET", f"/api/0/issues/{issue_id}/", None)

    @abstractmethod
    def issue_in(self, org: str, issue_id: str) -> tuple[dict[str, Any], dict[str, str]]:
        """The issue, asked for among `org`'s (IssueGone when it is not one of them: a link's
        organization must be the issue's), and the tags of its latest event that the routes
        read (ROUTED_TAGS, and no other), or a TrackerError."""

    def details(self, issue_id: str, *, org: str | None = None) -> IssueDetails:
        """What the issue and its latest event say (details.py), or a TrackerError. An issue
        without events yet still has its count and first sighting. `org`: the organization its
        alert's link names, which must be the issue's (IssueGone otherwise): a webhook
        may name any link, and the token's user may be in several organizations."""
        _check_id(issue_id)
        if org is not None:
            self._of_org(org, issue_id)
        issue = self._call("GET", f"/api/0/issues/{issue_id}/", None)
        try:
            event = self._call("GET", f"/api/0/issues/{issue_id}/events/latest/", None)
        except IssueGone:
            event = None
        return details_from(issue, event)

    @abstractmethod
    def issue_counts(self, org: str, ids: Sequence[str]) -> Answered[list[list[int]]]:
        """Each issue's events by hour over the last 24 h: `[unix_hour, count]` for the hours
        that had any. An issue whose answer is not such whole numbers (a NaN, a count past
        MAX_COUNT, a string) is unreadable, alone."""

    def issue_history(self, org: str, issue_id: str) -> IssueHistory:
        """One issue's events by hour over the last 24 h and by day over 14 days, when it was
        first seen, and the release of its latest event (`event:read`): the chart's. Raises
        TrackerError, for the stats; the latest event is a detail, whose failure costs only
        the release."""
        check_ids(org, [issue_id], 1)
        periods: dict[str, list[list[int]]] = {}
        first_seen = None
        for period in ("24h", "14d"):
            answered = self._call_any("GET", self._stats_path(org, issue_id, period), None)
            issue = next(
                (each for each in json_objects(answered) if str(each.get("id")) == issue_id), {}
            )
            found = counts_of(issue, period)
            if isinstance(found, str):
                raise TrackerUnreachable(
                    f"{self.SETUP.name}'s stats of issue {issue_id} cannot be read: {found}",
                    detail="unreadable stats",
                    setup=self.SETUP,
                )
            periods[period] = found
            first_seen = first_seen or iso_time(issue.get("firstSeen"))
        try:
            event = self._call("GET", self._latest_event_path(org, issue_id), None)
        except TrackerError as exc:
            log.info("issue %s's latest event could not be read (%s): no release", issue_id, exc)
            event = {}
        # A tag of the event: anyone's who holds the project's DSN, shown cleaned and short.
        release = field_text(routed_tags(event).get("Release"))
        return IssueHistory(periods["24h"], periods["14d"], first_seen, release)

    @abstractmethod
    def _stats_path(self, org: str, issue_id: str, period: str) -> str:
        """Where one issue's stats over `period` ('24h', '14d') are asked."""

    @abstractmethod
    def _latest_event_path(self, org: str, issue_id: str) -> str:
        """Where an issue's latest event is asked, as its organization's."""

    @abstractmethod
    def issue_states(self, org: str, ids: Sequence[str]) -> Answered[IssueState]:
        """Each issue's status (`unresolved`, `resolved`, `ignored`) and events so far, at most
        STATES_AT_ONCE ids. An issue whose status is none of those, or whose count is not a
        whole number up to MAX_COUNT, is unreadable, alone."""

    def _call(self, method: str, path: str, body: dict[str, Any] | None) -> dict[str, Any]:
        reply = self._call_any(method, path, body)
        if isinstance(reply, dict):
            return reply
        raise TrackerUnreachable(
            f"{method} {self._base_url}{path}: {self.SETUP.name}'s answer is not the JSON object "
            "its API gives",
            detail=f"an answer that is not {self.SETUP.name}'s",
            setup=self.SETUP,
        )

    def _call_any(
        self, method: str, path: str, body: dict[str, Any] | None, *, at: str | None = None
    ) -> object:
        """`at`: the base URL to ask (the configured one's, by default `_api_base`)."""
        try:
            return self._ask(method, (at or self._api_base()) + path, body)
        except TrackerError as exc:
            exc.setup = self.SETUP
            raise

    def _ask(self, method: str, url: str, body: dict[str, Any] | None) -> object:
        headers = {"Authorization": f"Bearer {self._token}"}
        with Deadline(self._timeout) as watchdog:
            try:
                # No redirects: the token goes to the source's URL, not wherever an answer points.
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
                said = _SAID[cause].format(name=self.SETUP.name)
                raise TrackerUnreachable(
                    f"{method} {url}: {said}; check {self.SETUP.url} ({self._base_url})",
                    cause=cause,
                ) from None
        if 300 <= status < 400:
            raise _redirected(method, url, status, location, self)
        reply = _json_of(answer)
        if status < 300 and isinstance(reply, dict | list):
            return reply
        raise _refusal(method, url, status, reply, self.SETUP.name)

    def _api_base(self) -> str:
        """Where the API's paths are asked: the configured address."""
        return self._base_url


SLUG = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,99}")
# The tags of an event the routes read, as GlitchTip's webhook names them in its fields.
ROUTED_TAGS = {"environment": "Environment", "server_name": "Server Name", "release": "Release"}


def routed_tags(event: dict[str, Any]) -> dict[str, str]:
    """The event's tags the routes read, by the field name GlitchTip's webhook gives each; no
    other tag is looked at (tags hold users' e-mails and ids, and whatever an app adds)."""
    tags: dict[str, str] = {}
    for tag in json_objects(event.get("tags")):
        key, value = tag.get("key"), tag.get("value")
        if isinstance(key, str) and key in ROUTED_TAGS and isinstance(value, str):
            tags.setdefault(ROUTED_TAGS[key], value)
    return tags


# An hour of issues-stats is a Unix time (seconds) before this, in the year 5138.
MAX_HOUR = 10**11


def events_of(issue: dict[str, Any]) -> int | None:
    """An issue's `count` as GlitchTip answers it (a string), as a number; None when it has
    none, or one that is not a whole number up to MAX_COUNT."""
    return json_count(issue.get("count"), MAX_COUNT)


def state_of(issue: dict[str, Any]) -> IssueState | str:
    status, count = issue.get("status"), issue.get("count")
    if status not in ISSUE_STATUSES:
        return f"its status is {str(status)[:40]!r}"
    events = events_of(issue)
    if count is not None and events is None:
        return f"its count is {str(count)[:40]!r}"
    return IssueState(status, events)


def hours_of(issue: dict[str, Any]) -> list[list[int]] | str:
    """An issue's `stats["24h"]`: `[unix_hour, count]` for the hours that had events."""
    return counts_of(issue, "24h")


def counts_of(issue: dict[str, Any], period: str) -> list[list[int]] | str:
    """An issue's `stats[period]` (`24h`: by hour; `14d`: by day), `[unix_time, count]` pairs
    for the hours or days that had events; why, when they are not such whole numbers."""
    stats = issue.get("stats")
    spans = stats.get(period) if isinstance(stats, dict) else None
    if spans is None:
        return []
    if not isinstance(spans, list):
        return f"its {period} are not a list"
    counted: list[list[int]] = []
    for pair in spans:
        at = json_count(pair[0], MAX_HOUR) if isinstance(pair, list) and len(pair) == 2 else None
        count = json_count(pair[1], MAX_COUNT) if at is not None else None
        if at is None or count is None:
            return f"a part of its {period} is {str(pair)[:60]}"
        counted.append([at, count])
    return counted


def answered_about(
    reply: object, asked: Sequence[str], read: Callable[[dict[str, Any]], T | str]
) -> Answered[T]:
    """Each asked issue's part of one answer about many, read by `read` (which says why when it
    cannot); the parts naming no issue asked about are left out."""
    answered: Answered[T] = Answered()
    wanted = set(asked)
    for issue in json_objects(reply):
        issue_id = issue.get("id")
        if not isinstance(issue_id, str | int) or str(issue_id) not in wanted:
            continue
        found = read(issue)
        if isinstance(found, str):
            answered.unreadable[str(issue_id)] = found
        else:
            answered.found[str(issue_id)] = found
    return answered


def check_ids(org: str, ids: Sequence[str], most: int) -> None:
    if not SLUG.fullmatch(org) or not 0 < len(ids) <= most:
        raise ValueError(f"an organisation's slug and 1 to {most} issue ids, not {org!r}")
    for issue in ids:
        _check_id(issue)


def _check_id(issue_id: str) -> None:
    if not issue_id.isdigit():  # the id is the path: nothing else may ride along
        raise ValueError(f"not an issue's id: {issue_id!r}")


def _json_of(answer: bytes | None) -> object:
    """The API's answer as JSON, every string in it cleaned as a webhook's are (a title or a
    culprit is anyone's who holds a project's DSN: core/client_text.py); None for an answer
    that is not JSON, or nests deeper than Python reads."""
    if answer is None:
        return None
    try:
        return cleaned(json.loads(answer))
    except (ValueError, RecursionError):
        return None


def _bounded(response: requests.Response) -> bytes | None:
    """The answer's body, or None when it is larger than any answer of the API: read no further
    than that."""
    body = bytearray()
    for chunk in response.iter_content(chunk_size=65536):
        body += chunk
        if len(body) > MAX_ANSWER_BYTES:
            return None
    return bytes(body)


def _redirected(
    method: str, url: str, status: int, location: str | None, api: IssueApi
) -> TrackerError:
    where = redact(location)[:200] if location else "nowhere"
    return TrackerRedirected(
        f"{method} {url}: {api.SETUP.name} answered {status}, a redirect to {where}, which the "
        f"relay does not follow: set {api.SETUP.url} to {api.SETUP.name}'s own address",
        detail=where,
        status=status,
        setup=api.SETUP,
    )


def _refusal(method: str, url: str, status: int, reply: object, name: str) -> TrackerError:
    detail = reply.get("detail") if isinstance(reply, dict) else None
    said = redact(str(detail))[:200] if detail else f"HTTP {status}"
    logged = f"{method} {url}: {name} answered {status}: {said}"
    if status == 401 or (status == 403 and "csrf" in said.lower()):
        return TokenRefused(logged, detail=said, status=status)
    if status == 403:
        return ScopeMissing(logged, detail=said, status=status)
    if _no_such_issue(status, said):
        return IssueGone(logged, detail=said, status=status)
    if status >= 500 or not isinstance(reply, dict):
        return TrackerUnreachable(logged, detail=said, status=status)
    return TrackerError(logged, detail=f"{status}: {said}", status=status)


def _no_such_issue(status: int, said: str) -> bool:
    return status == 404 or (status == 400 and said.lower().rstrip(".") == _NO_SUCH_ISSUE)


# How the log says why the API was not reached.
_SAID: dict[Unreached, str] = {
    "timeout": "{name} did not answer in time",
    "refused": "{name} refused the connection (nothing listens at that address)",
    "unresolvable": "{name}'s host name does not resolve",
    "connection": "the connection to {name} failed",
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
