"""The HTTP side, as plain functions over the assembled relay (relay.py): GlitchTip's webhook in,
its alert queued and its first attempt waited for, an honest status code out; Telegram's
updates; health, readiness and the metrics.

GlitchTip ignores our status code and never resends, so the answer is for the operator's logs;
what protects the alert is that it is in the spool before the first attempt, and that a failed
attempt has left its job to the retrier (due again) before the answer goes out. The answers:
200 sent; 202 queued (it waits its turn: older alerts for its chat go first, the chat's pacing,
Telegram is failing, or its attempt was still under way when the answer was due); 502 the
attempt failed (queued for retry, or given up and logged); 400 a body or URL the relay cannot
use.
"""

from __future__ import annotations

import hmac
import logging
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any
from urllib.parse import unquote

from flask import Blueprint, Flask, Response, jsonify, request
from werkzeug.exceptions import HTTPException, NotFound, RequestEntityTooLarge
from werkzeug.routing import Map

from ..core.errors import SpoolError
from ..core.json_body import MAX_BODY_BYTES, PayloadError, payload_from_json
from ..core.logs import client_sample, event
from ..core.metrics import CONTENT_TYPE, Metrics, WebhookOutcome
from ..core.routing import RouteError, destination_from_query
from ..intake.pages import Feed, Page, PageReply
from ..intake.receive import receive
from ..intake.record import record
from ..intake.taken import Taken
from ..message.formatting import message_for
from ..telegram.updates_webhook import (
    SECRET_HEADER,
    handle_update,
    telegram_secret_token,
    webhook_path,
)
from ..words import ENGLISH
from .relay import Relay, current_relay

log = logging.getLogger(__name__)

# The logged status of each outcome: failures and refusals are worth a look, the rest is flow.
# From the best answer to the worst: a webhook split by the routes answers its worst part's.
_STATUS_RANK = (200, 202, 502, 503, 500)
_LEVELS: dict[WebhookOutcome, int] = {
    "sent": logging.INFO,
    "queued": logging.INFO,
    "silenced": logging.INFO,
    "dropped": logging.INFO,
    "failed": logging.WARNING,
    "rejected": logging.WARNING,
}


# What an exception's line shows of the request's path: a stranger's until the secret is checked.
_PATH_SHOWN = 200


class RelayFlask(Flask):
    """Flask, but an exception's log line names the request's path cut short and escaped (as
    any value a stranger chose): Flask's own writes the whole path, which may be 4 KB."""

    def log_exception(self, exc_info: Any) -> None:
        self.logger.error(
            "Exception on %s [%s]",
            client_sample(request.path, _PATH_SHOWN),
            client_sample(request.method, 32),
            exc_info=exc_info,
        )


# The endpoints whose body is read: a request's secret decides whether it is wanted.
_BODY_ENDPOINTS = frozenset({"relay.webhook", "relay.telegram_update"})
# The endpoints that RELAY_ADMIN_BIND moves to a listener of their own.
_ADMIN_ENDPOINTS = frozenset({"relay.healthz", "relay.readyz", "relay.metrics_page"})


def _local_port(environ: dict[str, Any]) -> int | None:
    """The port this request came in on: the accepted socket's own address under gunicorn, which
    a client cannot forge (a Host header can say anything); elsewhere the server's word."""
    sock = environ.get("gunicorn.socket")
    if sock is not None:
        try:
            return int(sock.getsockname()[1])
        except (OSError, IndexError, TypeError, ValueError):
            return None
    port = str(environ.get("SERVER_PORT", ""))
    return int(port) if port.isascii() and port.isdigit() and len(port) <= 5 else None


def read_body() -> bytes:
    """The request's body, refused (413) past MAX_BODY_BYTES however it is sent. With a
    Content-Length, Flask refuses a larger one before reading it; a chunked body is read one
    byte past the limit to tell, since Flask would cut it at the limit and read on."""
    if request.content_length is not None:
        return request.get_data(cache=False)
    terminated = request.environ.get("wsgi.input_terminated")
    stream = request.environ["wsgi.input"] if terminated else request.stream
    try:
        body: bytes = stream.read(MAX_BODY_BYTES + 1)
    except Exception as exc:  # the server's own errors, for a chunked body that is broken
        raise PayloadError(f"the body could not be read: {exc or type(exc).__name__}") from None
    if len(body) > MAX_BODY_BYTES:
        raise RequestEntityTooLarge()
    return body


def _utc(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).isoformat(timespec="seconds")


def answered(metrics: Metrics, started: float, taken: Taken) -> tuple[Response, int]:
    """Count the webhook and log its one record, then answer its sender."""
    metrics.webhook(taken.outcome, taken.reason)
    label = taken.alert.label if taken.alert is not None else None
    _log_webhook(taken, label, time.monotonic() - started)
    if taken.outcome == "rejected":
        return jsonify(error=taken.error), taken.status  # as the relay's other errors
    body = {"status": taken.outcome, "error": taken.error, "silence": taken.silence}
    if taken.outcome != "sent":
        body["alert"] = label  # the id its log records and the spool carry
    return jsonify({key: value for key, value in body.items() if value is not None}), taken.status


def _log_webhook(taken: Taken, label: str | None, seconds: float) -> None:
    where = taken.alert.destination.describe() if taken.alert is not None else None
    log.log(
        _LEVELS[taken.outcome],
        "webhook%s %s (%d, %s)%s in %.1f ms%s",
        f" for alert {label}" if label else "",
        taken.outcome,
        taken.status,
        taken.reason,
        f" for {where}" if where else "",
        seconds * 1000,
        f": {taken.error}" if taken.error else "",
        extra=event(
            event="webhook",
            alerts=[label] if label else [],
            destination=where,
            outcome=taken.outcome,
            reason=taken.reason,
            status=taken.status,
            latency_ms=round(seconds * 1000, 1),
            error=taken.error,
        ),
    )


def body_gate(url_map: Map, webhook_secret: str) -> Callable[[bytes, bytes], bool]:
    """What the worker asks before it tells a client that expects 100 Continue to send its body
    (http_worker.BODY_GATE): only a POST to the webhook or Telegram's updates, with the secret.
    The routes are the app's own (`url_map`), matched as a request to them would be."""
    routes = url_map.bind("relay")
    expected_secret = webhook_secret.encode()

    def wants_body(method: bytes, target: bytes) -> bool:
        path = unquote(target.decode("latin-1").partition("?")[0])
        try:
            endpoint, arguments = routes.match(path, method=method.decode("latin-1"))
        except HTTPException:  # no such page, another method, a redirect
            return False
        secret = arguments.get("secret")
        return (
            endpoint in _BODY_ENDPOINTS
            and isinstance(secret, str)
            and hmac.compare_digest(secret.encode(), expected_secret)
        )

    return wants_body


def blueprint() -> Blueprint:
    """The relay's pages: the functions below, each at its path."""
    pages = Blueprint("relay", __name__)
    pages.before_request(one_listener_each)
    pages.add_url_rule("/healthz", view_func=healthz, methods=["GET"])
    pages.add_url_rule("/readyz", view_func=readyz, methods=["GET"])
    pages.add_url_rule("/metrics", view_func=metrics_page, methods=["GET"])
    # With a trailing slash too: people add one, and GlitchTip would not say its alert was lost.
    pages.add_url_rule("/webhook/<secret>", view_func=webhook, methods=["POST"])
    pages.add_url_rule("/webhook/<secret>/", view_func=webhook, methods=["POST"])
    pages.add_url_rule(webhook_path("<secret>"), view_func=telegram_update, methods=["POST"])
    return pages


def one_listener_each() -> None:
    """With RELAY_ADMIN_BIND, /metrics, /readyz and /healthz answer on the admin listener only,
    and it takes no alerts: the metrics say how much fails and readiness says what, for the
    operator's network, not for whoever can reach the webhook."""
    admin_port = current_relay().settings.admin_port
    if admin_port is None:
        return
    on_admin_listener = _local_port(request.environ) == admin_port
    if (request.endpoint in _ADMIN_ENDPOINTS) != on_admin_listener:
        raise NotFound()


def healthz() -> Response:
    return jsonify(status="ok")


def readyz() -> tuple[Response, int]:
    """Liveness is /healthz: an unusable spool is no reason to restart the relay, which still
    delivers; it is a reason to look, and to stop routing to this instance if others work.
    When GlitchTip last reached the relay, in every answer: null, with alerts expected, says
    GlitchTip cannot reach it (intake/record.py)."""
    relay = current_relay()
    last = relay.last_webhook.last()
    seen = {
        "last_webhook": None if last is None else _utc(last),
        **_held_here(relay),
        **_routes_refused(relay),
    }
    spool = _spool_verdict(relay, seen)
    if spool is not None:
        return spool
    unreached = relay.setup.unreachable() if relay.setup is not None else None
    if unreached is not None:
        reason = f"Telegram cannot be reached: {unreached}"
        return jsonify(status="not ready", reason=reason, **seen), 503
    # Still ready: alerts are taken and kept, and a retry sends them once it is fixed.
    refused = relay.setup.problems() if relay.setup is not None else []
    if refused:
        return jsonify(status="ready", telegram_refuses=refused, **seen), 200
    return jsonify(status="ready", **seen), 200


def _spool_verdict(relay: Relay, seen: dict[str, Any]) -> tuple[Response, int] | None:
    """/readyz's answer while the spool cannot be used; None while it can."""
    problem = relay.spool.problem() if relay.spool is not None else None
    if problem is None:
        return None
    if relay.local is not None and relay.local.spool.problem() is None:
        # Alerts are kept on this host's disk meanwhile: taking them is better than sending
        # GlitchTip, which never retries, to a balancer with no replica left.
        return jsonify(status="ready", spool=f"unusable: {problem}", **seen), 200
    return jsonify(status="not ready", reason=f"spool unusable: {problem}", **seen), 503


def _routes_refused(relay: Relay) -> dict[str, str]:
    """Whether the routes file on disk was refused, said while it is: not a reason to be
    unready, since the last good routes route every alert meanwhile."""
    routes = relay.settings.routes_in_force
    if routes.refused is None:
        return {}
    accepted = "an unknown time" if routes.accepted_at is None else _utc(routes.accepted_at)
    return {
        "routes": f"refused: {routes.refused}; routing by the last good file, accepted at "
        f"{accepted}"
    }


def _held_here(relay: Relay) -> dict[str, str]:
    """What waits in this host's own file beside a spool in PostgreSQL, said while any does."""
    if relay.local is None:
        return {}
    try:
        waiting = relay.local.spool.admin.counts()["pending"]
    except SpoolError:
        return {}
    if not waiting:
        return {}
    where = relay.local.spool.admin.path
    return {"local_spool": f"{waiting} alert(s) wait in {where} until the spool takes them"}


def metrics_page() -> Response:
    relay = current_relay()
    if not relay.settings.metrics:
        raise NotFound()
    return Response(relay.metrics.exposition(), content_type=CONTENT_TYPE)


def webhook(secret: str) -> tuple[Response, int]:
    started = time.monotonic()
    relay = current_relay()
    settings, metrics = relay.settings, relay.metrics
    if not hmac.compare_digest(secret.encode(), settings.webhook_secret.encode()):
        # Counted here; logged at most once a minute, without the path (misses.py).
        metrics.webhook("rejected", "wrong_secret")
        raise NotFound()
    try:
        alert = relay.sources.read_posted(payload_from_json(read_body()))
    except RequestEntityTooLarge as exc:
        return answered(
            metrics, started, Taken("rejected", "too_large", 413, error=exc.description)
        )
    except PayloadError as exc:
        return answered(metrics, started, Taken("rejected", "bad_body", 400, error=str(exc)))
    try:
        destination = destination_from_query(
            request.args.items(multi=True),
            default=settings.default_destination,
            allowed_chats=settings.allowed_chat_ids,
        )
    except RouteError as exc:
        # GlitchTip ignores the 400 and never resends: the log is the alert's last trace. Its
        # text for the log, which stays English.
        text = message_for(alert, ENGLISH, sources=relay.sources).text
        relay.jobs.undelivered(text, f"the webhook URL was refused: {exc}", None)
        return answered(metrics, started, Taken("rejected", "bad_route", 400, error=str(exc)))
    received = receive(alert, destination, started)
    parts = relay.webhooks.route(received)
    record(received, parts, relay.last_webhook, relay.after_webhook)
    return _parts_answered(metrics, started, parts)


def _parts_answered(metrics: Metrics, started: float, parts: list[Taken]) -> tuple[Response, int]:
    """A webhook's answer: its alert's, or, split by the routes, the worst part's status and
    each part's own answer."""
    if len(parts) == 1:
        return answered(metrics, started, parts[0])
    answers = [answered(metrics, started, taken) for taken in parts]
    worst = max(parts, key=lambda taken: _STATUS_RANK.index(taken.status))
    body = {"status": worst.outcome, "parts": [answer.get_json() for answer, _ in answers]}
    return jsonify(body), worst.status


def add_page(app: Flask, page: Page) -> None:
    """A capability's page (intake/pages.py), at its path with or without a trailing slash:
    a POST whose body is read within MAX_BODY_BYTES, on the webhook's listener."""

    def view() -> tuple[Response, int]:
        started = time.monotonic()
        one_listener_each()
        relay = current_relay()
        try:
            body = read_body()
        except PayloadError as exc:
            return jsonify(error=str(exc)), 400
        said = page.answer(body, request.headers.get, started)
        if isinstance(said, PageReply):
            if said.status == 401:  # counted, and said once a minute (misses.py)
                relay.misses.record(request.method, page.path, 401, refusal=page.refusal)
            return jsonify(said.body), said.status
        return _parts_answered(relay.metrics, started, said)

    endpoint = "page" + page.path.replace("/", "_")
    app.add_url_rule(page.path, endpoint=endpoint, view_func=view, methods=["POST"])
    app.add_url_rule(page.path + "/", endpoint=endpoint + "_", view_func=view, methods=["POST"])


def add_feed(app: Flask, feed: Feed) -> None:
    """A capability's feed (intake/pages.py): every path under its prefix, by GET, on the
    webhook's listener; one it has nothing at is 404, counted as any miss."""

    def view(tail: str) -> Response:
        one_listener_each()
        found = feed.get(tail)
        if found.body is None:
            raise NotFound()
        return Response(found.body, mimetype=found.content_type)

    endpoint = "feed" + feed.prefix.replace("/", "_")
    app.add_url_rule(f"{feed.prefix}/<path:tail>", endpoint=endpoint, view_func=view)


def telegram_update(secret: str) -> tuple[Response, int]:
    """Telegram's updates (TELEGRAM_UPDATES=webhook): presses on the alerts' buttons, and
    replies to the relay's messages."""
    relay = current_relay()
    settings = relay.settings
    if settings.telegram_updates != "webhook" or relay.updates is None:
        raise NotFound()
    if not hmac.compare_digest(secret.encode(), settings.webhook_secret.encode()):
        raise NotFound()
    header = request.headers.get(SECRET_HEADER, "").encode()
    expected = telegram_secret_token(settings.telegram_bot_token).encode()
    if not hmac.compare_digest(header, expected):
        # Whoever knows GlitchTip's URL knows this path; only Telegram knows the header.
        # Counted, and said at most once a minute: forgeries must not flood the log.
        relay.misses.record(request.method, request.path, 403)
        return jsonify(error="missing or wrong X-Telegram-Bot-Api-Secret-Token"), 403
    try:
        update = payload_from_json(read_body())
    except PayloadError as exc:
        return jsonify(error=str(exc)), 400
    handle_update(update, relay.updates)
    return jsonify(ok=True), 200
