"""A webhook's body as a JSON object (every source posts one), read before anything else of the
relay's touches it: bounded in size (MAX_BODY_BYTES, answered 413 past it) and depth, every
string cleaned (core/client_text.py), or refused with what is wrong with it (`PayloadError`,
answered 400). Each source's page then reads the object into the alert (core/alerts.py)."""

from __future__ import annotations

import json
from typing import Any

from .client_text import cleaned

# A tracker's webhooks are a few kilobytes (GlitchTip's, Sentry's); anything near this is not
# an alert (nor one of Telegram's updates). Larger bodies are answered 413, however they are sent.
MAX_BODY_BYTES = 1024 * 1024
# A tracker's webhooks nest four or five deep; anything past this is not an alert.
MAX_JSON_DEPTH = 64
_TOO_DEEP = f"the JSON body nests deeper than {MAX_JSON_DEPTH} levels; no tracker's webhook does"


class PayloadError(ValueError):
    """The webhook's body is not a JSON object: nothing the relay can forward."""


def payload_from_json(body: bytes) -> dict[str, Any]:
    """The webhook's body as a JSON object (every source posts one), its strings cleaned
    (core/client_text.py)."""
    if not body.strip():
        raise PayloadError("the body is empty; expected a JSON object")
    try:
        payload = json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise PayloadError(f"the body is not valid JSON: {exc}") from None
    except RecursionError:
        raise PayloadError(_TOO_DEEP) from None
    if not isinstance(payload, dict):
        raise PayloadError(f"expected a JSON object, got a JSON {_json_kind(payload)}")
    if _depth_over(payload, MAX_JSON_DEPTH):
        # Shallow enough for the parser, still too deep for what renders a payload it does
        # not know (recursive, as json.dumps is): refused here, with a reason, not a crash.
        raise PayloadError(_TOO_DEEP)
    # Every string, once: no lone surrogate, control or bidirectional character goes further.
    return dict(cleaned(payload))


def _depth_over(value: dict[str, Any], limit: int) -> bool:
    """Whether `value` nests objects and arrays more than `limit` deep (without recursion)."""
    level: list[Any] = [value]
    for _ in range(limit):
        children: list[Any] = []
        for container in level:
            items = container.values() if isinstance(container, dict) else container
            children += [item for item in items if isinstance(item, dict | list)]
        if not children:
            return False
        level = children
    return True


def _json_kind(value: object) -> str:
    if isinstance(value, list):
        return "array"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool) or value is None:
        return "literal"
    return "number"
