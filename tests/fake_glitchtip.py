"""A local stand-in for GlitchTip's API on 127.0.0.1, answering as ../shared/reference/
glitchtip-api.md says a real GlitchTip does: `PUT` and `GET /api/0/issues/<id>/` (also under
`/api/0/organizations/<slug>/`) and `GET /api/0/users/me/`, with its status codes and bodies:
403 "CSRF check Failed" for a bad token's PUT, 401 for its GET, 403 "Permission denied" without
the scope, 404 for an issue it does not have, 422 for a status it does not know. `stop()` makes
it unreachable (connections refused) and `start()` brings it back on the same port.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.e2e.relay_process import free_port

TOKEN = "0123456789abcdef" * 4  # 64 hex characters, as GlitchTip makes them
READ_ONLY_TOKEN = "fedcba9876543210" * 4
STATUSES = ("unresolved", "resolved", "ignored")
_ISSUE = re.compile(r"/api/0/(?:organizations/[^/]+/)?issues/([0-9]+)/")


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    token: str | None
    body: dict[str, Any] | None
    at: float  # time.monotonic() when it arrived


class FakeGlitchTip:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        # The tokens GlitchTip knows, each with its scopes.
        self.tokens: dict[str, set[str]] = {
            TOKEN: {"event:read", "event:write", "project:read"},
            READ_ONLY_TOKEN: {"event:read", "project:read"},
        }
        self.issues: dict[str, dict[str, Any]] = {}
        self.requests: list[Request] = []
        self._port = free_port()
        self._server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._port}"

    def add_issue(self, issue_id: int, short_id: str, *, title: str = "ZeroDivisionError") -> str:
        """An issue GlitchTip has; its link, as an alert's title_link gives it."""
        with self._lock:
            self.issues[str(issue_id)] = {
                "id": str(issue_id),
                "shortId": short_id,
                "status": "unresolved",
                "title": title,
                "level": "error",
                "count": "3",
                "project": {"slug": "backend"},
            }
        return f"{self.url}/acme/issues/{issue_id}"

    def status(self, issue_id: int) -> str:
        with self._lock:
            return str(self.issues[str(issue_id)]["status"])

    def changes(self) -> list[Request]:
        """The PUTs that reached it."""
        with self._lock:
            return [r for r in self.requests if r.method == "PUT"]

    def start(self) -> FakeGlitchTip:
        server = ThreadingHTTPServer(("127.0.0.1", self._port), _Handler)
        server.daemon_threads = True
        server.fake = self  # type: ignore[attr-defined]
        threading.Thread(target=server.serve_forever, daemon=True).start()
        self._server = server
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def answer(
        self, method: str, path: str, token: str | None, body: dict[str, Any] | None
    ) -> tuple[int, dict[str, Any]]:
        with self._lock:
            self.requests.append(Request(method, path, token, body, time.monotonic()))
            scopes = self.tokens.get(token or "")
            if path == "/api/0/users/me/" and method == "GET":
                if scopes is None:
                    return 401, {"detail": "Unauthorized"}
                return 200, {"id": "1", "email": "ada@example.org", "username": "ada"}
            found = _ISSUE.fullmatch(path)
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
            issue = self.issues.get(found.group(1))
            if issue is None:
                return 404, {"detail": "Not Found"}
            if method == "PUT":
                issue["status"] = (body or {})["status"]
            return 200, dict(issue)


@contextmanager
def running_fake_glitchtip() -> Iterator[FakeGlitchTip]:
    fake = FakeGlitchTip().start()
    try:
        yield fake
    finally:
        fake.stop()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self._handle(None)

    def do_PUT(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        try:
            body = json.loads(self.rfile.read(length) or b"{}")
        except ValueError:
            body = None
        self._handle(body if isinstance(body, dict) else None)

    def _handle(self, body: dict[str, Any] | None) -> None:
        fake: FakeGlitchTip = self.server.fake  # type: ignore[attr-defined]
        auth = self.headers.get("Authorization", "")
        token = auth.removeprefix("Bearer ") if auth.startswith("Bearer ") else None
        status, reply = fake.answer(self.command, self.path, token, body)
        payload = json.dumps(reply).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)
