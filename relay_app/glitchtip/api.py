"""GlitchTip's API: the one change a press asks for, an issue's status (`PUT
/api/0/issues/<id>/`); what an alert's message adds about its issue (`GET` the issue and its
latest event, details.py); and the token check `relay-app check` makes (`GET
/api/0/users/me/`).
The one place where requests' exceptions and GlitchTip's answers become the GlitchTip errors
(errors.py), each with a notice for the person who pressed. Facts:
../shared/reference/glitchtip-api.md.
"""

from __future__ import annotations

import json
from typing import Any, Literal

import requests

from ..core.errors import (
    GlitchTipError,
    GlitchTipIssueGone,
    GlitchTipScopeMissing,
    GlitchTipTokenRefused,
    GlitchTipUnreachable,
)
from ..core.http_deadline import Deadline, DeadlineAdapter
from ..core.logs import redact, register_secret
from .details import IssueDetails, details_from

# GlitchTip's answers here are a few kilobytes; a larger one is not its API answering.
MAX_ANSWER_BYTES = 1024 * 1024
_NEW_TOKEN_HOWTO = (
    "make a new token in GlitchTip (Profile → Auth Tokens) with the event:write scope and set "  # noqa: S105 (a hint, not a password)
    "GLITCHTIP_API_TOKEN to it"
)

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

    def whoami(self) -> dict[str, Any]:
        """The token's user: the cheap check that GlitchTip accepts the token."""
        return self._call("GET", "/api/0/users/me/", None)

    def _call(self, method: str, path: str, body: dict[str, Any] | None) -> dict[str, Any]:
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
                said = "did not answer in time" if watchdog.expired else _cause(exc)
                raise GlitchTipUnreachable(
                    f"{method} {url}: GlitchTip {said}",
                    notice=f"GlitchTip could not be reached ({said}); nothing was changed. "
                    "Try again in a while.",
                ) from None
        if 300 <= status < 400:
            raise _redirected(method, url, status, location)
        try:
            reply = json.loads(answer) if answer is not None else None
        except ValueError:
            reply = None
        if status < 300 and isinstance(reply, dict):
            return reply
        raise _refusal(method, url, status, reply)


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
    return GlitchTipError(
        f"{method} {url}: GlitchTip answered {status}, a redirect to {where}, which the relay "
        "does not follow: set GLITCHTIP_URL to GlitchTip's own address",
        notice=f"GLITCHTIP_URL points at an address that redirects (to {where}); nothing was "
        "changed. The relay's operator must set GLITCHTIP_URL to GlitchTip's own address.",
        status=status,
    )


def _refusal(method: str, url: str, status: int, reply: object) -> GlitchTipError:
    detail = reply.get("detail") if isinstance(reply, dict) else None
    said = redact(str(detail))[:200] if detail else f"HTTP {status}"
    logged = f"{method} {url}: GlitchTip answered {status}: {said}"
    if status == 401 or (status == 403 and "csrf" in said.lower()):
        return GlitchTipTokenRefused(
            logged,
            notice=f"GlitchTip refused the relay's token (wrong or revoked): {_NEW_TOKEN_HOWTO}.",
            status=status,
        )
    if status == 403:
        return GlitchTipScopeMissing(
            logged,
            notice="GlitchTip says the relay's token may not change issues: it needs the "
            f"event:write scope; {_NEW_TOKEN_HOWTO}.",
            status=status,
        )
    if status == 404:
        return GlitchTipIssueGone(
            logged,
            notice="GlitchTip has no such issue any more (deleted, or in an organization the "
            "token's user is not in); nothing was changed.",
            status=status,
        )
    if status >= 500 or not isinstance(reply, dict):
        return GlitchTipUnreachable(
            logged,
            notice=f"GlitchTip is failing ({said}); nothing was changed. Try again in a while.",
            status=status,
        )
    return GlitchTipError(
        logged, notice=f"GlitchTip refused the change ({status}: {said}).", status=status
    )


def _cause(exc: requests.RequestException) -> str:
    if isinstance(exc, requests.Timeout):
        return "did not answer in time"
    if isinstance(exc, requests.ConnectionError):
        text = str(exc).lower()
        if "refused" in text:
            return "refused the connection"
        if "name or service" in text or "resolve" in text:
            return "its name could not be resolved"
        return "the connection failed"
    return "the request failed"
