"""A local stand-in for GlitchTip's API on 127.0.0.1, answering as ../shared/reference/
glitchtip-api.md says a real GlitchTip does: `PUT` and `GET /api/0/issues/<id>/` (also under
`/api/0/organizations/<slug>/`), `GET /api/0/issues/<id>/events/latest/`, `POST
/api/0/issues/<id>/comments/` and `GET /api/0/users/me/`, with its status codes and bodies:
400 "Issue does not exist" for a comment on an issue it does not have, 403 "CSRF check Failed"
for a bad token's PUT or POST, 401 for its GET, 403 "Permission denied" without the scope, 404
for an issue it does not have, 422 for a status it does not know. `stop()` makes
it unreachable (connections refused) and `start()` brings it back on the same port; `delay`
makes it slow.

Its issues and events are the answers a real GlitchTip gave (glitchtip_samples/, copied from
../shared/reference/glitchtip-samples/), with the id, short id, title and times of each.

One project, PROJECT (`acme/backend`), has alert rules (`GET`, `POST`, `PUT
/api/0/projects/acme/backend/alerts/`, `project:write` to change them) and a client key (`GET
.../keys/`, its DSN pointing here); an event posted to its store endpoint with that key becomes
a new issue, and, `alert_delay` seconds later (GlitchTip's periodic alert task), a webhook to
each recipient of the project's issue rules, as GlitchTip builds it (tests/payloads.py).
"""

from __future__ import annotations

import copy
import json
import re
import threading
import time
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import requests

from tests.fake_http import Handler, LocalService, running
from tests.payloads import issue, issue_alert

TOKEN = "0123456789abcdef" * 4  # 64 hex characters, as GlitchTip makes them
READ_ONLY_TOKEN = "fedcba9876543210" * 4
ADMIN_TOKEN = "a1b2c3d4e5f60718" * 4  # may change the project's alert rules
PROJECT = "acme/backend"
PROJECT_ID = 7
PUBLIC_KEY = "9f8e7d6c5b4a39281706f5e4d3c2b1a0"
_ALERTS = re.compile(r"/api/0/projects/acme/backend/alerts/(?:([0-9]+)/)?")
STATUSES = ("unresolved", "resolved", "ignored")
_ISSUE = re.compile(r"/api/0/(?:organizations/([^/]+)/)?issues/([0-9]+)/")
_LATEST_EVENT = re.compile(r"/api/0/issues/([0-9]+)/events/latest/")
_COMMENTS = re.compile(r"/api/0/issues/([0-9]+)/comments/")
_BATCH = re.compile(r"/api/0/organizations/([^/]+)/(issues-stats|issues)/\?(.*)")
SAMPLES = Path(__file__).resolve().parent / "glitchtip_samples"
SAMPLE_ISSUE: dict[str, Any] = json.loads((SAMPLES / "issue.json").read_text())
SAMPLE_EVENT: dict[str, Any] = json.loads((SAMPLES / "issue-latest-event.json").read_text())
SAMPLE_COMMENT: dict[str, Any] = json.loads((SAMPLES / "issue-comments.json").read_text())[0]


def iso_time(timestamp: float) -> str:
    """As GlitchTip writes times: '2026-12-01T17:09:24.024Z'."""
    return datetime.fromtimestamp(timestamp, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    token: str | None
    body: dict[str, Any] | None
    at: float  # time.monotonic() when it arrived


class FakeGlitchTip(LocalService):
    name = "the fake GlitchTip"

    def __init__(self) -> None:
        super().__init__()
        # Re-entrant: an event, answered under the lock, adds its issue as a test would.
        self._lock = threading.RLock()
        # The tokens GlitchTip knows, each with its scopes.
        self.tokens: dict[str, set[str]] = {
            TOKEN: {"event:read", "event:write", "project:read"},
            READ_ONLY_TOKEN: {"event:read", "project:read"},
            ADMIN_TOKEN: {"event:read", "event:write", "project:read", "project:write"},
        }
        self.rules: dict[int, dict[str, Any]] = {}
        self._next_rule = 1
        # Seconds between an event and the webhooks its new issue's rules send.
        self.alert_delay = 0.5
        self.webhooks_sent: list[tuple[str, int]] = []  # (url, the relay's answer)
        self.issues: dict[str, dict[str, Any]] = {}
        # Each issue's organization (its link names it); the token's user is in every one.
        self.org_of: dict[str, str] = {}
        # Each issue's events by hour, as issues-stats answers them: [[unix_hour, count], ...].
        self.hourly: dict[str, list[list[int]]] = {}
        self.events: dict[str, dict[str, Any]] = {}
        self._comments: dict[str, list[dict[str, Any]]] = {}
        self.requests: list[Request] = []
        # Seconds each GET waits before it is answered: a slow GlitchTip.
        self.delay = 0.0
        # Seconds each change (PUT, POST) waits before it is made and answered.
        self.write_delay = 0.0
        # Where its webhooks really go (scheme and host): a relay's address that this host
        # reaches and GlitchTip's network does not (None: where the rule says).
        self.post_to: str | None = None

    def add_issue(
        self,
        issue_id: int,
        short_id: str,
        *,
        title: str = "ZeroDivisionError",
        first_seen: float | None = None,
        count: int = 3,
        event: dict[str, Any] | None = None,
        org: str = "acme",
        project: str = "backend",
    ) -> str:
        """An issue of `org`'s `project` GlitchTip has, as the sample answers say (its latest
        event `event`, or the sample's); its link, as an alert's title_link gives it."""
        link = f"{self.url}/{org}/issues/{issue_id}"
        first = first_seen if first_seen is not None else time.time() - 3 * 86400
        issue = copy.deepcopy(SAMPLE_ISSUE)
        issue.update(
            id=str(issue_id),
            shortId=short_id,
            title=title,
            permalink=link,
            count=str(count),  # a string, as GlitchTip answers it
            firstSeen=iso_time(first),
            lastSeen=iso_time(time.time()),
        )
        issue["project"] = {**issue["project"], "slug": project, "name": project}
        latest = copy.deepcopy(event if event is not None else SAMPLE_EVENT)
        latest["groupID"] = str(issue_id)
        with self._lock:
            self.issues[str(issue_id)] = issue
            self.org_of[str(issue_id)] = org
            self.events[str(issue_id)] = latest
        return link

    def reads(self) -> list[Request]:
        """The GETs of issues and their events that reached it."""
        with self._lock:
            single = "/api/0/issues/"  # an issue and its events, not the organisation's list
            return [r for r in self.requests if r.method == "GET" and r.path.startswith(single)]

    def comments(self, issue_id: int) -> list[str]:
        """The comments' texts on an issue, oldest first."""
        with self._lock:
            return [comment["data"]["text"] for comment in self._comments.get(str(issue_id), [])]

    def status(self, issue_id: int) -> str:
        with self._lock:
            return str(self.issues[str(issue_id)]["status"])

    def changes(self) -> list[Request]:
        """The PUTs that reached it."""
        with self._lock:
            return [r for r in self.requests if r.method == "PUT"]

    def answer(
        self,
        method: str,
        path: str,
        token: str | None,
        body: dict[str, Any] | None,
        sentry_auth: str = "",
    ) -> tuple[int, Any]:
        with self._lock:
            self.requests.append(Request(method, path, token, body, time.monotonic()))
            scopes = self.tokens.get(token or "")
            if path == f"/api/{PROJECT_ID}/store/" and method == "POST":
                return self._store_event(sentry_auth, body)
            if path.startswith("/api/0/projects/"):
                return self._project(method, path, scopes, body)
            batch = _BATCH.fullmatch(path) if method == "GET" else None
            if batch is not None:
                org, which, query = batch.groups()
                return self._batch(org, which, parse_qs(query), scopes)
            if path == "/api/0/users/me/" and method == "GET":
                if scopes is None:
                    return 401, {"detail": "Unauthorized"}
                return 200, {"id": "1", "email": "ada@example.org", "username": "ada"}
            comments = _COMMENTS.fullmatch(path) if method == "POST" else None
            if comments is not None:
                return self._comment(comments.group(1), scopes, body)
            latest = _LATEST_EVENT.fullmatch(path) if method == "GET" else None
            found = latest or _ISSUE.fullmatch(path)
            if found is None:
                return 404, {"detail": "Not Found"}
            if method == "PUT":
                if scopes is None:  # session auth's CSRF check runs first
                    return 403, {"detail": "CSRF check Failed"}
                if not scopes & {"event:write", "event:admin"}:
                    return 403, {"detail": "Permission denied"}
                status = (body or {}).get("status")
                if status not in STATUSES:
                    return 422, {
                        "detail": [
                            {
                                "type": "enum",
                                "loc": ["body", "payload", "status"],
                                "msg": "Input should be 'unresolved', 'resolved' or 'ignored'",
                            }
                        ]
                    }
            elif scopes is None:
                return 401, {"detail": "Unauthorized"}
            elif latest is not None:
                event = self.events.get(latest.group(1))
                return (200, copy.deepcopy(event)) if event else (404, {"detail": "Not Found"})
            issue_id = found.group(2)
            issue = self.issues.get(issue_id)
            in_org = found.group(1) in (None, self.org_of.get(issue_id))
            if issue is None or not in_org:
                return 404, {"detail": "Not Found"}
            if method == "PUT":
                issue["status"] = (body or {})["status"]
            return 200, dict(issue)

    def _stats(self, issue: str, period: str) -> list[list[int]]:
        """An issue's events by hour (`24h`) as set in `hourly`, or by day (`14d`): its hours
        summed into their days, as GlitchTip counts them, for the days that had events."""
        hours = self.hourly.get(issue, [])
        if period != "14d":
            return hours
        days: dict[int, int] = {}
        for hour, count in hours:
            days[hour // 86400 * 86400] = days.get(hour // 86400 * 86400, 0) + count
        return [[day, count] for day, count in sorted(days.items())]

    def _batch(
        self, org: str, which: str, query: dict[str, list[str]], scopes: set[str] | None
    ) -> tuple[int, Any]:
        """The two calls that answer for many issues of an organisation: their states (its
        issues by id, 100 at most) and their hourly counts (issues-stats, 200 at most). An
        issue of another organisation is not among them."""
        if scopes is None:
            return 401, {"detail": "Unauthorized"}
        if org not in {"acme", *self.org_of.values()}:
            return 404, {"detail": "Not Found"}
        if which == "issues-stats":
            ids = query.get("groups", [])
            if len(ids) > 200:
                return 400, {"detail": "too many groups"}
            period = query.get("statsPeriod", ["24h"])[0]
            return 200, [
                {
                    "id": issue,
                    "count": self.issues[issue]["count"],
                    "firstSeen": self.issues[issue]["firstSeen"],
                    "lastSeen": self.issues[issue]["lastSeen"],
                    "stats": {period: self._stats(issue, period)},
                }
                for issue in ids
                if issue in self.issues and self.org_of.get(issue) == org
            ]
        limit = int(query.get("limit", ["50"])[0])
        if "project" in query:  # a project's issues, the latest seen first, as listed
            return 200, self._of_project(org, query, limit)
        if "query" in query:  # GlitchTip's search: words of the title
            words = query["query"][0].casefold().split()
            ids = [
                i
                for i, found in self.issues.items()
                if all(w in found["title"].casefold() for w in words)
            ]
        else:
            ids = query.get("id", [])
        ids = ids[:limit]
        return 200, [
            {key: self.issues[issue][key] for key in ("id", "shortId", "status", "count", "title")}
            for issue in ids
            if issue in self.issues and self.org_of.get(issue) == org
        ]

    def _of_project(self, org: str, query: dict[str, list[str]], limit: int) -> list[Any]:
        """`?project=<id>&query=is:unresolved&sort=-last_seen`: the project's issues (of its
        status, when the query names one), the latest seen first."""
        project = query["project"][0]
        status = query.get("query", [""])[0].removeprefix("is:") or None
        found = [
            issue
            for issue_id, issue in self.issues.items()
            if self.org_of.get(issue_id) == org
            and str(issue["project"].get("id")) == project
            and (status is None or issue["status"] == status)
        ]
        found.sort(key=lambda issue: str(issue["lastSeen"]), reverse=True)
        return [copy.deepcopy(issue) for issue in found[:limit]]

    def _project(
        self, method: str, path: str, scopes: set[str] | None, body: dict[str, Any] | None
    ) -> tuple[int, Any]:
        """The project's alert rules and keys (the lock is held)."""
        if scopes is None:
            return (
                (401, {"detail": "Unauthorized"})
                if method == "GET"
                else (
                    403,
                    {"detail": "CSRF check Failed"},
                )
            )
        if path == "/api/0/projects/acme/backend/keys/" and method == "GET":
            host = self.url.removeprefix("http://")
            dsn = f"http://{PUBLIC_KEY}@{host}/{PROJECT_ID}"
            return 200, [{"id": "k1", "isActive": True, "dsn": {"public": dsn}}]
        found = _ALERTS.fullmatch(path)
        if found is None:
            return 404, {"detail": "Not Found"}
        if method == "GET" and found.group(1) is None:
            return 200, [copy.deepcopy(rule) for rule in self.rules.values()]
        if "project:write" not in scopes:
            return 403, {"detail": "Permission denied"}
        if body is None:
            return 422, {"detail": [{"type": "missing", "loc": ["body", "payload"]}]}
        if method == "POST" and found.group(1) is None:
            rule_id, self._next_rule = self._next_rule, self._next_rule + 1
        elif method == "PUT" and found.group(1) is not None and int(found.group(1)) in self.rules:
            rule_id = int(found.group(1))
        else:
            return 404, {"detail": "Not Found"}
        recipients = [
            {"id": number + 1, "recipientType": r["recipientType"], "url": r["url"]}
            for number, r in enumerate(body.get("alertRecipients", []))
        ]
        rule = {
            "id": rule_id,
            "name": body["name"],
            "timespanMinutes": body.get("timespanMinutes", 1),
            "quantity": body.get("quantity", 1),
            "uptime": bool(body.get("uptime")),
            "alertRecipients": recipients,
        }
        self.rules[rule_id] = rule
        return (201 if method == "POST" else 200), copy.deepcopy(rule)

    def _store_event(self, sentry_auth: str, event: dict[str, Any] | None) -> tuple[int, Any]:
        """An SDK's event: a new issue, and its rules' webhooks after `alert_delay` (the lock is
        held)."""
        if f"sentry_key={PUBLIC_KEY}" not in sentry_auth:
            return 403, {"detail": "Invalid api key"}
        if event is None or not isinstance(event.get("message"), str):
            return 400, {"detail": "Invalid event"}
        number = 100 + len(self.issues)
        link = self.add_issue(number, f"BACKEND-{number}", title=event["message"])
        urls = [
            recipient["url"]
            for rule in self.rules.values()
            if not rule["uptime"]
            for recipient in rule["alertRecipients"]
            if recipient["recipientType"] == "webhook"
        ]
        payload = issue_alert(issue(number, title=event["message"], culprit=None, link=link))
        payload["sections"][0]["activitySubtitle"] = f"[View Issue BACKEND-{number}]({link})"
        threading.Timer(self.alert_delay, self._send_webhooks, (urls, payload)).start()
        return 200, {"id": event.get("event_id", "")}

    def _send_webhooks(self, urls: list[str], payload: dict[str, Any]) -> None:
        for url in urls:  # as GlitchTip: once, 10 s, whatever the answer
            if self.post_to is not None:  # what GlitchTip's network makes of the address
                url = self.post_to + urlsplit(url).path
            try:
                status = requests.post(url, json=payload, timeout=10).status_code
            except requests.RequestException:
                status = 0
            with self._lock:
                self.webhooks_sent.append((url, status))

    def _comment(
        self, issue_id: str, scopes: set[str] | None, body: dict[str, Any] | None
    ) -> tuple[int, dict[str, Any]]:
        """POST .../comments/, as a real GlitchTip answers it (the lock is held)."""
        if scopes is None:
            return 403, {"detail": "CSRF check Failed"}
        if not scopes & {"event:write", "event:admin"}:
            return 403, {"detail": "Permission denied"}
        text = (body or {}).get("data", {}).get("text") if isinstance(body, dict) else None
        if not isinstance(text, str):
            return 422, {"detail": [{"type": "missing", "loc": ["body", "payload", "data"]}]}
        if issue_id not in self.issues:
            return 400, {"detail": "Issue does not exist"}
        kept = self._comments.setdefault(issue_id, [])
        comment = copy.deepcopy(SAMPLE_COMMENT)
        comment.update(id=len(kept) + 1, dateCreated=iso_time(time.time()))
        comment["data"]["text"] = text
        kept.append(comment)
        return 201, comment


def running_fake_glitchtip() -> AbstractContextManager[FakeGlitchTip]:
    return running(FakeGlitchTip())


class _Handler(Handler):
    def do_GET(self) -> None:
        fake: FakeGlitchTip = self.service
        if fake.delay:
            time.sleep(fake.delay)  # a slow GlitchTip, on its own request thread
        self._handle(None)

    def do_POST(self) -> None:
        self.do_PUT()

    def do_PUT(self) -> None:
        fake: FakeGlitchTip = self.service
        if fake.write_delay:
            time.sleep(fake.write_delay)
        body = self.json_body()
        self._handle(body if isinstance(body, dict) else None)

    def _handle(self, body: dict[str, Any] | None) -> None:
        fake: FakeGlitchTip = self.service
        auth = self.headers.get("Authorization", "")
        token = auth.removeprefix("Bearer ") if auth.startswith("Bearer ") else None
        sentry_auth = self.headers.get("X-Sentry-Auth", "")
        status, reply = fake.answer(self.command, self.path, token, body, sentry_auth)
        self.reply(status, reply)


FakeGlitchTip.handler = _Handler
