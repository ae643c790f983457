"""The HTTP side: GlitchTip's webhook in, one delivery attempt, an honest status code out.

GlitchTip ignores our status code and never resends, so the answer is for the operator's logs;
what protects the alert is that it is in the spool before the first attempt, and that a failed
attempt hands the prebuilt message to the retrier before the answer goes out. The answers:
200 sent; 202 queued (the chat's turn has not come: pacing, not failure); 502 the attempt
failed (queued for retry, or given up and logged); 400 a body or URL the relay cannot use.
"""

from __future__ import annotations

import hmac
import logging
import time
from typing import Any

from flask import Blueprint, Response, jsonify, request
from werkzeug.exceptions import NotFound, RequestEntityTooLarge

from .errors import PermanentDeliveryError, RetryableDeliveryError, ThreadNotFound
from .formatting import message_for
from .glitchtip import PayloadError, payload_from_json
from .logs import event
from .metrics import CONTENT_TYPE, Metrics, WebhookOutcome
from .retrier import Retrier
from .routing import Destination, RouteError, destination_from_query
from .spool import SpooledAlert

log = logging.getLogger(__name__)

# The logged status of each outcome: failures and refusals are worth a look, the rest is flow.
_LEVELS: dict[WebhookOutcome, int] = {
    "sent": logging.INFO,
    "queued": logging.INFO,
    "failed": logging.WARNING,
    "rejected": logging.WARNING,
}


def create_blueprint(
    *,
    webhook_secret: str,
    retrier: Retrier,
    metrics: Metrics,
    serve_metrics: bool,
    default_destination: Destination,
    allowed_chats: frozenset[str],
) -> Blueprint:
    blueprint = Blueprint("relay", __name__)
    expected_secret = webhook_secret.encode()

    @blueprint.get("/healthz")
    def healthz() -> Response:
        return jsonify(status="ok")

    @blueprint.get("/readyz")
    def readyz() -> tuple[Response, int]:
        # Liveness is /healthz: an unusable spool is no reason to restart the relay, which still
        # delivers; it is a reason to look, and to stop routing to this instance if others work.
        problem = retrier.spool_problem()
        if problem is not None:
            return jsonify(status="not ready", reason=f"spool unusable: {problem}"), 503
        return jsonify(status="ready"), 200

    if serve_metrics:

        @blueprint.get("/metrics")
        def metrics_page() -> Response:
            return Response(metrics.exposition(), content_type=CONTENT_TYPE)

    @blueprint.post("/webhook/<secret>")
    def webhook(secret: str) -> tuple[Response, int]:
        started = time.monotonic()

        def record(
            outcome: WebhookOutcome,
            reason: str,
            status: int,
            alert: SpooledAlert | None,
            error: str | None,
        ) -> None:
            """Count the webhook, and log its one record."""
            metrics.webhook(outcome, reason)
            seconds = time.monotonic() - started
            label = alert.label if alert is not None else None
            log.log(
                _LEVELS[outcome],
                "webhook%s %s (%d, %s)%s in %.1f ms%s",
                f" for alert {label}" if label else "",
                outcome,
                status,
                reason,
                f" for {alert.destination.describe()}" if alert is not None else "",
                seconds * 1000,
                f": {error}" if error else "",
                extra=event(
                    event="webhook",
                    alerts=[label] if label else [],
                    destination=alert.destination.describe() if alert is not None else None,
                    outcome=outcome,
                    reason=reason,
                    status=status,
                    latency_ms=round(seconds * 1000, 1),
                    error=error,
                ),
            )

        def answer(
            outcome: WebhookOutcome,
            reason: str,
            status: int,
            alert: SpooledAlert | None = None,
            **body: Any,
        ) -> tuple[Response, int]:
            """Record the webhook, then answer GlitchTip."""
            record(outcome, reason, status, alert, body.get("error"))
            if outcome == "rejected":
                return jsonify(error=body.get("error")), status  # as the relay's other errors
            if alert is not None and outcome != "sent":
                body["alert"] = alert.label  # the id its log records and the spool carry
            return jsonify(status=outcome, **body), status

        if not hmac.compare_digest(secret.encode(), expected_secret):
            # Not logged with the path: a near miss may be an old secret, still worth hiding.
            record("rejected", "wrong_secret", 404, None, None)
            raise NotFound()
        try:
            payload = payload_from_json(request.get_data(cache=False))
        except RequestEntityTooLarge as exc:
            return answer("rejected", "too_large", 413, error=exc.description)
        except PayloadError as exc:
            return answer("rejected", "bad_body", 400, error=str(exc))
        try:
            destination = destination_from_query(
                request.args.items(multi=True),
                default=default_destination,
                allowed_chats=allowed_chats,
            )
        except RouteError as exc:
            # GlitchTip ignores the 400 and never resends: the log is the alert's last trace.
            retrier.undelivered(message_for(payload), f"the webhook URL was refused: {exc}", None)
            return answer("rejected", "bad_route", 400, error=str(exc))
        admission = retrier.admit(message_for(payload), destination)  # on disk before sending
        alert = admission.alert
        if not admission.send_now:
            # Pacing, not failure: the chat had a message too recently, or older alerts for it
            # are waiting, and this one joins them.
            if retrier.queue(alert) is None:
                return answer(
                    "failed", "cannot_queue", 503, alert, error="the alert could not be queued"
                )
            return answer("queued", "paced", 202, alert)
        try:
            retrier.send_now(alert)
        except RetryableDeliveryError as exc:
            if retrier.retry_later(alert, exc) is None:
                return answer(
                    "failed", "cannot_queue", 502, alert, error=f"{exc}; no retry could be queued"
                )
            return answer("queued", "attempt_failed", 502, alert, error=str(exc))
        except PermanentDeliveryError as exc:
            if isinstance(exc, ThreadNotFound) and destination.thread is not None:
                retrier.without_topic(alert, exc)  # logged, and sent once to the chat itself
                return answer("queued", "topic_not_found", 502, alert, error=str(exc))
            retrier.give_up(alert, "Telegram refused it permanently", exc)
            return answer("failed", "refused", 502, alert, error=str(exc))
        except Exception as exc:  # a bug in the relay: the alert's text must still be logged
            retrier.give_up(alert, "the relay failed while sending it", exc, exc_info=True)
            return answer(
                "failed", "internal_error", 500, alert, error="internal error; see the relay's log"
            )
        retrier.delivered([alert])
        return answer("sent", "delivered", 200, alert)

    return blueprint
