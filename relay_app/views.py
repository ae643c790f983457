"""The HTTP side: GlitchTip's webhook in, one delivery attempt, an honest status code out.

GlitchTip ignores our status code and never resends, so the answer is for the operator's logs;
what protects the alert is that it is in the spool before the first attempt, and that a failed
attempt hands the prebuilt message to the retrier before the answer goes out. The answers:
200 sent; 202 queued (the chat's turn has not come: pacing, not failure); 502 the attempt
failed (queued for retry, or given up and logged); 400 a body or URL the relay cannot use.
"""

from __future__ import annotations

import hmac
import json
import logging
from typing import Any

from flask import Blueprint, Response, abort, jsonify, request
from werkzeug.exceptions import BadRequest

from .delivery import Courier, log_undelivered
from .errors import PermanentDeliveryError, RetryableDeliveryError, ThreadNotFound
from .formatting import Message, format_alert
from .glitchtip import UnrecognizedPayload, parse_alert
from .retrier import Retrier
from .routing import Destination, RouteError, destination_from_query

log = logging.getLogger(__name__)


def create_blueprint(
    *,
    webhook_secret: str,
    courier: Courier,
    retrier: Retrier,
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

    @blueprint.post("/webhook/<secret>")
    def webhook(secret: str) -> tuple[Response, int]:
        if not hmac.compare_digest(secret.encode(), expected_secret):
            abort(404)
        payload = _json_object_body()
        try:
            destination = destination_from_query(
                request.args.items(multi=True),
                default=default_destination,
                allowed_chats=allowed_chats,
            )
        except RouteError as exc:
            # GlitchTip ignores the 400 and never resends: the log is the alert's last trace.
            log_undelivered(_build_message(payload), f"the webhook URL was refused: {exc}", None)
            raise BadRequest(str(exc)) from None
        message = _build_message(payload)
        admission = retrier.admit(message, destination)  # on disk before the first attempt
        alert = admission.alert
        if not admission.send_now:
            # Pacing, not failure: the chat had a message too recently, or older alerts for it
            # are waiting, and this one joins them.
            if retrier.queue(alert) is None:
                return jsonify(status="failed", error="the alert could not be queued"), 503
            return jsonify(status="queued", alert=alert.label), 202
        try:
            courier.deliver(message, destination)
        except RetryableDeliveryError as exc:
            if retrier.retry_later(alert, exc) is None:
                return jsonify(status="failed", error=f"{exc}; no retry could be queued"), 502
            return jsonify(status="queued", alert=alert.label, error=str(exc)), 502
        except PermanentDeliveryError as exc:
            if isinstance(exc, ThreadNotFound) and destination.thread is not None:
                retrier.without_topic(alert, exc)  # logged, and sent once to the chat itself
                return jsonify(status="queued", alert=alert.label, error=str(exc)), 502
            retrier.give_up(alert, "Telegram refused it permanently", exc)
            return jsonify(status="failed", error=str(exc)), 502
        except Exception as exc:  # a bug in the relay: the alert's text must still be logged
            retrier.give_up(alert, "the relay failed while sending it", exc, exc_info=True)
            return jsonify(status="failed", error="internal error; see the relay's log"), 500
        retrier.delivered([alert])
        return jsonify(status="sent"), 200

    return blueprint


def _json_object_body() -> dict[str, Any]:
    body = request.get_data(cache=False)  # over MAX_CONTENT_LENGTH: 413 from here
    if not body.strip():
        raise BadRequest("the body is empty; expected a JSON object from GlitchTip")
    try:
        payload = json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise BadRequest(f"the body is not valid JSON: {exc}") from None
    if not isinstance(payload, dict):
        raise BadRequest(f"expected a JSON object, got a JSON {_json_kind(payload)}")
    return payload


def _build_message(payload: dict[str, Any]) -> Message:
    try:
        return format_alert(parse_alert(payload))
    except Exception:
        # A bug in reading one payload shape must not cost the alert: forward it raw instead.
        log.exception("could not format this payload as a GlitchTip alert; forwarding it raw")
        return format_alert(UnrecognizedPayload(payload))


def _json_kind(value: object) -> str:
    if isinstance(value, list):
        return "array"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool) or value is None:
        return "literal"
    return "number"
