"""Requests that reach no page, or are refused: counted by reason and logged, so that a
near-miss URL in GlitchTip (which never retries) or Telegram (after RELAY_WEBHOOK_SECRET changed)
is seen, not lost in a generic 404.

Reasons: `webhook_secret` (POST /webhook/<something else than the secret>), `webhook_path`
(anything else under /webhook or /webhooks: `/webhook/`, `/webhook/<secret>/more`),
`telegram_secret` (/telegram/<a wrong secret>: Telegram posting to an old address),
`telegram_header` (an update posted without Telegram's secret header: forged, or an old
registration), `method` (a GET to the webhook, say), `unknown_path` (anything else); and a
capability's page's own (`Refusal`, intake/pages.py: Sentry's `sentry_signature`). Each
reason's WARNING comes at most once a minute with how many there were, never with a secret:
only the path's first segment is shown, cut to SHOWN_CHARS (and the method likewise). A
stranger's thousand guesses make one short line.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from ..core.logs import REDACTED, client_sample
from ..core.metrics import MissReason
from ..core.tally import EVERY, Tally
from ..intake.pages import Refusal

log = logging.getLogger(__name__)

WARN_EVERY = EVERY
# What a line shows of a stranger's method and first path segment: enough to recognise a near
# miss (/webhooks, /hooks), never a 4 KB path.
SHOWN_CHARS = 32

_ADVICE: dict[MissReason, str] = {
    "webhook_secret": "a webhook with a wrong secret was refused, and if GlitchTip sent it, its "
    "alert is lost (GlitchTip never sends it again). Fix the URL of the webhook recipient in "
    "GlitchTip's project alert settings: it must be the relay's address, then /webhook/ and "
    "RELAY_WEBHOOK_SECRET's value (an old secret, or one cut short?); relay-app glitchtip connect "
    "sets it",
    "webhook_path": "a near miss of the webhook URL (it must be the relay's address, then "
    "/webhook/ and RELAY_WEBHOOK_SECRET's value, nothing after it): if GlitchTip sent it, its "
    "alert is lost; fix the URL in GlitchTip's alert settings",
    "telegram_secret": "Telegram posts updates to an old address (RELAY_WEBHOOK_SECRET changed "
    "since it was registered): presses and replies are lost until 'relay-app telegram-webhook "
    "set' is run again",
    "telegram_header": "an update posted without Telegram's secret header, refused: forged, or, "
    "if Telegram sent it, its registration is older than this relay or the bot token changed: "
    "run 'relay-app telegram-webhook set' again",
    "method": "a request with the wrong method (GlitchTip and Telegram POST)",
    "unknown_path": "a request for a path the relay does not serve",
}


# A page that refuses a request with a status of its own: a wrong header, a wrong signature.
_REFUSED: dict[tuple[int, str], MissReason] = {
    (403, "telegram"): "telegram_header",
}


def miss_reason(method: str, path: str, status: int) -> MissReason:
    first, _, rest = path.lstrip("/").partition("/")
    if status == 405:
        return "method"
    if (refused := _REFUSED.get((status, first))) is not None:
        return refused
    if first == "webhook" and rest and "/" not in rest.rstrip("/"):
        return "webhook_secret"
    if first in ("webhook", "webhooks"):
        return "webhook_path"
    if first == "telegram" and rest:
        return "telegram_secret"
    return "unknown_path"


class Misses:
    def __init__(
        self,
        count: Callable[[str], None],
        *,
        shared: Callable[[str, float], bool] | None = None,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        """`shared` says whether this process is the one to give a warning now, among all
        that share the spool (SpoolWarnings.says); without it, each process gives its own."""
        self._count = count
        self._tally = Tally(every=WARN_EVERY, shared=shared, monotonic=monotonic)

    def record(
        self, method: str, path: str, status: int, *, refusal: Refusal | None = None
    ) -> None:
        """A request that reached no page, or that a page refused (its `refusal`)."""
        reason: str = refusal.reason if refusal is not None else miss_reason(method, path, status)
        advice = (
            refusal.advice if refusal is not None else _ADVICE[miss_reason(method, path, status)]
        )
        self._count(reason)
        count = self._tally.note(f"missed:{reason}")
        if count is None:
            return
        first = client_sample(path.lstrip("/").split("/", 1)[0], SHOWN_CHARS)
        shown = f"/{first}/{REDACTED}" if "/" in path.lstrip("/") else f"/{first}"
        log.warning(
            "%s %s answered %d: %s (%s; at most one such line a minute; "
            "relay_requests_missed_total{reason=%r} counts them)",
            client_sample(method, SHOWN_CHARS),
            shown,
            status,
            advice,
            "once" if count == 1 else f"{count} times since this process last said so",
            reason,
        )
