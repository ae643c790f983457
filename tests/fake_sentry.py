"""A local stand-in for Sentry on 127.0.0.1, both of its sides the relay meets:

- its API, as Sentry's documentation and source say it answers the calls the relay makes:
  `GET /api/0/organizations/` (the token's organization, with `links.regionUrl`: on
  127.0.0.1 its own address), `GET /api/0/organizations/<org>/issues/?group=…` (the issues
  asked for by id, with `stats["24h"]` when `groupStatsPeriod=24h`: organization_group_index.py
  in getsentry/sentry), `PUT
  /api/0/issues/<id>/` (`status`), `GET /api/0/issues/<id>/` (the issue: its `shortId`, count,
  first seen, level) and `GET /api/0/issues/<id>/events/latest/` (the event `latest` holds,
  404 without one), `POST /api/0/issues/<id>/comments/` (`{"text": …}`, 400
  without it, as Sentry's NoteSerializer), 401 for another token, 404 for an issue it does not
  have;
- its integration platform: `send` posts a webhook to the relay as Sentry's `AppPlatformEvent`
  does, with `Request-ID`, `Sentry-Hook-Resource`, `Sentry-Hook-Timestamp` and
  `Sentry-Hook-Signature` over the exact bytes sent, and a timeout of 1 s as Sentry's.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import threading
import time
import uuid
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import requests

from tests.fake_http import Handler, LocalService, running

TOKEN = "9a8b" * 16
CLIENT_SECRET = "c0ffee" * 10 + "c0ff"
ORG = "acme"
_ISSUE = re.compile(r"/api/0/issues/([0-9]+)/")
_COMMENTS = re.compile(r"/api/0/issues/([0-9]+)/comments/")
_LATEST = re.compile(r"/api/0/issues/([0-9]+)/events/latest/")
_INDEX = re.compile(r"/api/0/organizations/([^/]+)/issues/\?(.*)")
_NOT_FOUND = {"detail": "The requested resource does not exist"}
# Sentry's integration platform gives a webhook this long to be answered.
SENTRY_TIMEOUT = 1.0


@dataclass(frozen=True)
class Call:
    method: str
    path: str
    body: dict[str, Any] | None


@dataclass(frozen=True)
class Sent:
    """A webhook Sentry sent: its status, and how long the relay took to answer."""

    status: int
    seconds: float
    body: Any


class FakeSentry(LocalService):
    name = "the fake Sentry"

    def __init__(self) -> None:
        super().__init__()
        self.lock = threading.Lock()
        self.issues: dict[str, str] = {}  # id -> status
        self.counts: dict[str, int] = {}
        self.hourly: dict[str, list[list[int]]] = {}
        self.comments: dict[str, list[str]] = {}
        self.short_ids: dict[str, str] = {}
        # An issue's latest event, as Sentry's API answers it (`entries`, camelCase frames).
        self.latest: dict[str, dict[str, Any]] = {}
        self.calls: list[Call] = []
        # Seconds each change (PUT, POST) waits before it is answered: a Sentry that hangs.
        self.write_delay = 0.0
        # Seconds each read (GET) waits before it is answered: a Sentry whose API hangs.
        self.read_delay = 0.0

    def add_issue(
        self, issue_id: int, status: str = "unresolved", *, short_id: str | None = None
    ) -> None:
        with self.lock:
            self.issues[str(issue_id)] = status
            if short_id is not None:
                self.short_ids[str(issue_id)] = short_id

    def status(self, issue_id: int) -> str:
        with self.lock:
            return self.issues[str(issue_id)]

    def send(
        self, relay_url: str, resource: str, body: dict[str, Any], *, secret: str = CLIENT_SECRET
    ) -> Sent:
        """A webhook to the relay, signed over the bytes sent, as Sentry sends one."""
        data = json.dumps(body).encode("utf-8")
        headers = {
            "Content-Type": "application/json",
            "Request-ID": uuid.uuid4().hex,
            "Sentry-Hook-Resource": resource,
            "Sentry-Hook-Timestamp": str(int(time.time())),
            "Sentry-Hook-Signature": hmac.new(
                secret.encode("utf-8"), data, hashlib.sha256
            ).hexdigest(),
        }
        started = time.monotonic()
        answer = requests.post(
            f"{relay_url}/sentry/webhook", data=data, headers=headers, timeout=SENTRY_TIMEOUT
        )
        seconds = time.monotonic() - started
        try:
            said = answer.json()
        except ValueError:
            said = answer.text
        return Sent(answer.status_code, seconds, said)

    def answer(
        self, method: str, path: str, token: str | None, body: dict[str, Any] | None
    ) -> tuple[int, Any]:
        if method in ("PUT", "POST") and self.write_delay:
            time.sleep(self.write_delay)  # this request's own thread: a Sentry that hangs
        if method == "GET" and self.read_delay:
            time.sleep(self.read_delay)
        with self.lock:
            self.calls.append(Call(method, path, body))
            if token != TOKEN:
                return 401, {"detail": "Invalid token"}
            if method == "GET" and path == "/api/0/organizations/":
                links = {"organizationUrl": self.url, "regionUrl": self.url}
                return 200, [{"id": "1", "slug": ORG, "name": "Acme", "links": links}]
            if method == "GET" and (found := _INDEX.fullmatch(path)):
                return self._index(found.group(1), parse_qs(found.group(2)))
            if method == "GET" and (found := _ISSUE.fullmatch(path)):
                return self._issue(found.group(1))
            if method == "GET" and (found := _LATEST.fullmatch(path)):
                event = self.latest.get(found.group(1))
                return (200, event) if event is not None else (404, _NOT_FOUND)
            if method == "POST" and (found := _COMMENTS.fullmatch(path)):
                return self._comment(found.group(1), body)
            if method == "PUT" and (found := _ISSUE.fullmatch(path)):
                return self._status(found.group(1), body)
            return 404, {"detail": "The requested resource does not exist"}

    def _index(self, org: str, query: dict[str, list[str]]) -> tuple[int, Any]:
        if org != ORG:
            return 404, {"detail": "The requested resource does not exist"}
        if query.get("project") != ["-1"]:
            return 200, []  # no project the token is a member of: Sentry answers none
        found = []
        for issue_id in query.get("group", []):
            if issue_id not in self.issues:
                continue
            issue: dict[str, Any] = {
                "id": issue_id,
                "status": self.issues[issue_id],
                "count": str(self.counts.get(issue_id, 1)),
            }
            if query.get("groupStatsPeriod") == ["24h"]:
                issue["stats"] = {"24h": self.hourly.get(issue_id, [])}
            found.append(issue)
        return 200, found

    def _issue(self, issue_id: str) -> tuple[int, Any]:
        """The issue as Sentry's issue details answer it (the fields the relay reads)."""
        if issue_id not in self.issues:
            return 404, _NOT_FOUND
        return 200, {
            "id": issue_id,
            "shortId": self.short_ids.get(issue_id, f"FRONT-END-{issue_id}"),
            "title": "ReferenceError: heck is not defined",
            "culprit": "?(runner)",
            "level": "error",
            "status": self.issues[issue_id],
            "count": str(self.counts.get(issue_id, 1)),
            "firstSeen": "2026-12-01T17:09:24.024000Z",
            "project": {"id": "2", "name": "Front End", "slug": "front-end"},
            "metadata": {"type": "ReferenceError", "value": "heck is not defined"},
        }

    def _comment(self, issue_id: str, body: dict[str, Any] | None) -> tuple[int, Any]:
        if issue_id not in self.issues:
            return 404, {"detail": "The requested resource does not exist"}
        text = (body or {}).get("text")
        if not isinstance(text, str) or not text:
            return 400, {"text": ["This field is required."]}
        self.comments.setdefault(issue_id, []).append(text)
        return 201, {"id": "1", "type": "note", "data": {"text": text}}

    def _status(self, issue_id: str, body: dict[str, Any] | None) -> tuple[int, Any]:
        if issue_id not in self.issues:
            return 404, {"detail": "The requested resource does not exist"}
        status = (body or {}).get("status")
        if status not in ("resolved", "unresolved", "ignored"):
            return 400, {"status": ["Invalid status"]}
        self.issues[issue_id] = status
        return 200, {"id": issue_id, "status": status}


# A routes file whose one route takes every alert to the tests' chat, Sentry's new issues
# (`issue.created`) included, which only a route naming them takes.
NEW_ISSUES_ROUTE = '[[route]]\nkind = "created"\nchat = "{chat}"\n'


def relay_variables(sentry: FakeSentry, routes: Path, chat: str) -> dict[str, str]:
    """A relay's variables for the fake Sentry: its signed webhooks taken, its issues acted on
    and looked up, and a routes file (written at `routes`) that takes its new issues too."""
    routes.write_text(NEW_ISSUES_ROUTE.format(chat=chat))
    return {
        "SENTRY_CLIENT_SECRET": CLIENT_SECRET,
        "SENTRY_API_TOKEN": TOKEN,
        "SENTRY_URL": sentry.url,
        "RELAY_ROUTES": str(routes),
    }


def running_fake_sentry() -> AbstractContextManager[FakeSentry]:
    return running(FakeSentry())


class _Handler(Handler):
    def do_GET(self) -> None:
        self._handle(None)

    def do_POST(self) -> None:
        body = self.json_body()
        self._handle(body if isinstance(body, dict) else None)

    do_PUT = do_POST

    def _handle(self, body: dict[str, Any] | None) -> None:
        fake: FakeSentry = self.service
        auth = self.headers.get("Authorization", "")
        token = auth.removeprefix("Bearer ") if auth.startswith("Bearer ") else None
        status, reply = fake.answer(self.command, self.path, token, body)
        self.reply(status, reply)


FakeSentry.handler = _Handler
