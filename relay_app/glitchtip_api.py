"""GlitchTip's API, for the one change a press asks for: an issue's status (`PUT
/api/0/issues/<id>/`), and the token check `relay-app check` makes (`GET /api/0/users/me/`).
The one place where requests' exceptions and GlitchTip's answers become the GlitchTip errors
(errors.py), each with a notice for the person who pressed. Facts:
../shared/reference/glitchtip-api.md.
"""

from __future__ import annotations

from typing import Any

import requests

from .errors import (
    GlitchTipError,
    GlitchTipIssueGone,
    GlitchTipScopeMissing,
    GlitchTipTokenRefused,
    GlitchTipUnreachable,
)
from .http_deadline import Deadline, DeadlineAdapter
from .logs import redact, register_secret
from .spool.sent import IssueStatus

_NEW_TOKEN_HOWTO = (
    "make a new token in GlitchTip (Profile → Auth Tokens) with the event:write scope and set "  # noqa: S105 (a hint, not a password)
    "GLITCHTIP_API_TOKEN to it"
)


class GlitchTipApi:
    def __init__(self, token: str, *, timeout: float) -> None:
        register_secret(token)
        self._token = token
        self._timeout = timeout
        self._session = requests.Session()
        adapter = DeadlineAdapter(pool_connections=4, pool_maxsize=8, max_retries=0)
        self._session.mount("http://", adapter)
        self._session.mount("https://", adapter)

    def set_status(self, base_url: str, issue_id: str, status: IssueStatus) -> dict[str, Any]:
        """Set the issue's status; GlitchTip's issue JSON, or a GlitchTipError."""
        return self._call("PUT", f"{base_url}/api/0/issues/{issue_id}/", {"status": status})

    def whoami(self, base_url: str) -> dict[str, Any]:
        """The token's user: the cheap check that GlitchTip accepts the token."""
        return self._call("GET", f"{base_url}/api/0/users/me/", None)

    def _call(self, method: str, url: str, body: dict[str, Any] | None) -> dict[str, Any]:
        headers = {"Authorization": f"Bearer {self._token}"}
        with Deadline(self._timeout) as watchdog:
            try:
                response = self._session.request(
                    method, url, json=body, headers=headers, timeout=self._timeout
                )
            except requests.RequestException as exc:
                said = "did not answer in time" if watchdog.expired else _cause(exc)
                raise GlitchTipUnreachable(
                    f"{method} {url}: GlitchTip {said}",
                    notice=f"GlitchTip could not be reached ({said}); nothing was changed. "
                    "Try again in a while.",
                ) from None
            try:
                reply = response.json()
            except ValueError:
                reply = None
        if response.status_code < 300 and isinstance(reply, dict):
            return reply
        raise _refusal(method, url, response.status_code, reply)


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
