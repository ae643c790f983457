"""The HTTP side: GlitchTip's webhook in, one delivery attempt, an honest status code out.

GlitchTip ignores our status code and never resends, so the answer is for the operator's logs;
what protects the alert is that it is in the spool before the first attempt, and that a failed
attempt hands the prebuilt message to the retrier before the answer goes out.
"""

from __future__ import annotations

import hmac
import json
import logging
from typing import Any

from flask import Blueprint, Response, abort, jsonify, request
from werkzeug.exceptions import BadRequest

from .delivery import Courier
from .errors import PermanentDeliveryError, RetryableDeliveryError
from .formatting import Message, format_alert
from .glitchtip import UnrecognizedPayload, parse_alert
from .retrier import Retrier

log = logging.getLogger(__name__)


def create_blueprint(*, webhook_secret: str, courier: Courier, retrier: Retrier) -> Blueprint:
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
        message = _build_message(_json_object_body())
        alert = retrier.admit(message)  # on disk before the first attempt
        try:
            courier.deliver(message)
        except RetryableDeliveryError as exc:
            if retrier.retry_later(alert, exc) is None:
                return jsonify(status="failed", error=f"{exc}; no retry could be queued"), 502
            return jsonify(status="queued", error=str(exc)), 502
        except PermanentDeliveryError as exc:
            retrier.give_up(alert, "Telegram refused it permanently", exc)
            return jsonify(status="failed", error=str(exc)), 502
        except Exception as exc:  # a bug in the relay: the alert's text must still be logged
            retrier.give_up(alert, "the relay failed while sending it", exc, exc_info=True)
            return jsonify(status="failed", error="internal error; see the relay's log"), 500
        retrier.delivered(alert)
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
