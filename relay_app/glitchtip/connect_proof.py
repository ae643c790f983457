"""`relay-app glitchtip connect --test` (glitchtip_connect.py): the whole path proved, a test
event into the project through its DSN, GlitchTip's alert rule firing, its webhook reaching the
relay, and the alert reaching the chat, or which of those hops failed and what fixes it; then
the test event's issue resolved, so that tests leave no open issues behind."""

from __future__ import annotations

import argparse
import ipaddress
import secrets
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

import requests

from ..core.errors import SpoolError, TrackerError
from ..core.http_deadline import Deadline, DeadlineAdapter
from ..operating.config import Settings
from ..operating.console import Console, Failed, OpenSpool, Usage
from ..operating.summary import version
from ..spool import Spool
from ..spool.arrivals import SeenWebhook
from .api import GlitchTipApi, ProjectPath

# How often --test looks at the spool meanwhile.
LOOK_EVERY = 0.5
REQUEST_TIMEOUT = 10.0
SETUP_TOKEN = "GLITCHTIP_SETUP_TOKEN"  # noqa: S105 (a variable's name)
LOOPBACK_FIX = (
    "where GlitchTip runs in a container, that is the container itself, not the relay. Give "
    "--relay-url as GlitchTip reaches the relay: the relay's service name on a network the two "
    "share (http://relay:8780), or the host's address from the container "
    "(http://host.docker.internal:8780 with extra_hosts: host-gateway), and have the relay "
    "listen there (RELAY_BIND=0.0.0.0:8780)"
)


def scope_hint(exc: TrackerError) -> str:
    if exc.status in (401, 403):
        return (
            f"; alert rules need a token with the project:write scope, whose user is an "
            f"organization admin or on the project's team: set {SETUP_TOKEN} to one"
        )
    if exc.status == 404:
        return "; check --project (ORG/PROJECT, the slugs in the project's address in GlitchTip)"
    return ""


def loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def prove_path(
    api: GlitchTipApi,
    project: ProjectPath,
    settings: Settings,
    args: argparse.Namespace,
    console: Console,
    open_spool: OpenSpool,
) -> int:
    out = console.out
    try:
        spool = open_spool(console.environ)
    except (Failed, Usage) as exc:
        raise Failed(
            f"--test follows its alert through the relay's spool, and there is none here: {exc}"
        ) from None
    try:
        dsn = _public_dsn(api, project)
        mark = f"relay_app connect test {secrets.token_hex(4)}"
        started = time.time()
        try:
            _send_event(dsn, mark)
        except requests.RequestException as exc:
            raise Failed(
                f"hop 1 failed: GlitchTip did not take the test event at its DSN's address "
                f"({_dsn_host(dsn)}): {exc.__class__.__name__}. The DSN names the address "
                "GlitchTip was told is its own (GLITCHTIP_DOMAIN): it must be reachable from "
                "here, as from your apps"
            ) from None
        print(f"hop 1: GlitchTip took the test event “{mark}” (project {project})", file=out)
        try:
            return _follow(spool, mark, started, args, out)
        finally:
            print(_resolve_test_issue(api, project, mark), file=out)
    except TrackerError as exc:
        raise Failed(f"{exc}{scope_hint(exc)}") from None
    finally:
        spool.close()


def _resolve_test_issue(api: GlitchTipApi, project: ProjectPath, mark: str) -> str:
    """The test event's issue resolved, so that every --test does not leave one more open
    issue in the project; or what the operator must resolve, and why it was not."""
    try:
        found = [i for i in api.search_issues(project.organization, mark) if i.get("title") == mark]
        if not found:
            return f"the test issue “{mark}” was not found to resolve: resolve it in GlitchTip"
        label = str(found[0].get("shortId") or f"#{found[0].get('id')}")
        api.set_status(str(found[0].get("id")), "resolved")
    except (TrackerError, ValueError) as exc:
        return f"the test issue “{mark}” is still open ({exc}): resolve it in GlitchTip"
    return f"the test issue {label} is resolved in GlitchTip"


def _public_dsn(api: GlitchTipApi, project: ProjectPath) -> str:
    for key in api.project_keys(project):
        dsn = key.get("dsn")
        public = dsn.get("public") if isinstance(dsn, dict) else None
        if isinstance(public, str) and public and key.get("isActive", True):
            return public
    raise Failed(f"the project {project} has no active client key (DSN) to send a test event to")


def _dsn_host(dsn: str) -> str:
    parts = urlsplit(dsn)
    return f"{parts.scheme}://{parts.hostname}" + (f":{parts.port}" if parts.port else "")


def _send_event(dsn: str, mark: str) -> None:
    """One error event, as an SDK sends it (Sentry's store endpoint), titled `mark`."""
    parts = urlsplit(dsn)
    prefix, _, project_id = parts.path.rpartition("/")
    if not parts.username or not project_id.isdigit() or parts.hostname is None:
        raise Failed(f"the project's DSN is not one an SDK could use: {_dsn_host(dsn)}/…")
    host = parts.hostname if ":" not in parts.hostname else f"[{parts.hostname}]"
    netloc = host + (f":{parts.port}" if parts.port else "")
    store = f"{parts.scheme}://{netloc}{prefix}/api/{project_id}/store/"
    event = {
        "event_id": uuid.uuid4().hex,
        "timestamp": datetime.now(UTC).isoformat(),
        "platform": "python",
        "level": "error",
        "logger": "relay_app.connect",
        "message": mark,
        "tags": {"relay_app": "connect --test"},
    }
    auth = (
        f"Sentry sentry_version=7, sentry_client=relay_app/{version()}, sentry_key={parts.username}"
    )
    with requests.Session() as session:
        session.mount("http://", DeadlineAdapter(max_retries=0))
        session.mount("https://", DeadlineAdapter(max_retries=0))
        with Deadline(REQUEST_TIMEOUT):
            answer = session.post(
                store, json=event, headers={"X-Sentry-Auth": auth}, timeout=REQUEST_TIMEOUT
            )
    answer.raise_for_status()


def _follow(spool: Spool, mark: str, started: float, args: argparse.Namespace, out: Any) -> int:
    """Hops 2 and 3: GlitchTip's webhook reached the relay; the relay put it in the chat."""
    relay = args.relay_url.rstrip("/")
    seen = _wait_for(lambda: _arrived(spool, mark, started), args.wait)
    if seen is None:
        raise Failed(_not_reached(relay, args.wait))
    print("hop 2: GlitchTip's webhook reached the relay", file=out)
    if seen.outcome == "silenced":
        raise Failed(
            "hop 3: a silence holds the test alert back from the chat (relay-app silence list)"
        )
    if seen.alert_id is None:
        raise Failed("hop 3 failed: the relay could not keep the test alert: its log says why")
    alert_id = seen.alert_id
    left = _wait_for(lambda: _left_queue(spool, alert_id), max(30.0, args.wait / 3))
    if left != "sent":
        why = left or f"it still waits in the spool: {_waiting_because(spool, alert_id)}"
        raise Failed(
            f"hop 3 failed: the test alert (#{alert_id}) is not in the chat: {why}. relay-app "
            "check tests Telegram's side; relay-app spool list shows the alert"
        )
    print(
        f"hop 3: the relay delivered the test alert (#{alert_id}) to the chat: GlitchTip → "
        "relay → Telegram works",
        file=out,
    )
    return 0


def _not_reached(relay: str, waited: float) -> str:
    said = (
        f"hop 2 failed: GlitchTip's webhook did not reach the relay within {waited:.0f} s "
        f"(it posts to {relay}/webhook/…; GlitchTip's worker log says why)."
    )
    host = urlsplit(relay).hostname or ""
    if loopback(host):
        said += f" {host} is GlitchTip's own host: {LOOPBACK_FIX}"
    else:
        said += (
            " Check that GlitchTip's host reaches that address (a firewall, DNS, a proxy in "
            "between), and that the relay listens there (RELAY_BIND)"
        )
    return said


def _arrived(spool: Spool, mark: str, started: float) -> SeenWebhook | None:
    try:
        seen = spool.arrivals.since(started - 1.0)
    except SpoolError:
        return None
    return next((webhook for webhook in seen if mark in webhook.text), None)


def _left_queue(spool: Spool, alert_id: int) -> str | None:
    """'sent' once the alert left the queue (a dead letter stays in it: 'dead: why'); None
    while it waits."""
    try:
        for alert in spool.admin.alerts("dead"):
            if alert.id == alert_id:
                return f"it is a dead letter: {alert.last_error}"
        if any(alert.id == alert_id for alert in spool.admin.alerts("pending")):
            return None
    except SpoolError:
        return None
    return "sent"


def _waiting_because(spool: Spool, alert_id: int) -> str:
    try:
        for alert in spool.admin.alerts("pending"):
            if alert.id == alert_id:
                return alert.last_error or "its chat's turn, or Telegram, has not come yet"
    except SpoolError as exc:
        return f"the spool cannot be read ({exc})"
    return "it left meanwhile"


def _wait_for(look: Callable[[], Any], seconds: float) -> Any:
    deadline = time.monotonic() + seconds
    for _ in _bounded_looks(seconds):
        found = look()
        if found is not None:
            return found
        if time.monotonic() >= deadline:
            return None
        time.sleep(LOOK_EVERY)
    return None


def _bounded_looks(seconds: float) -> Iterator[int]:
    yield from range(int(seconds / LOOK_EVERY) + 2)
