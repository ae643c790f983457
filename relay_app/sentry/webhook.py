"""`POST /sentry/webhook`: a Sentry internal integration's webhooks (docs/sentry.md).

What a stranger's bytes reach before the signature is checked is the body's size and the
signature's comparison: the body is read (at most MAX_BODY_BYTES, web/views.py), its HMAC
compared with `Sentry-Hook-Signature` in constant time, and only then parsed. A wrong or missing
signature is answered 401, counted, and said at WARNING at most once a minute with the fix
(web/misses.py); the body is never logged.

Sentry waits about a second for the answer and disables an integration whose webhooks keep
timing out, so an alert is answered as soon as it is queued (on disk, with a spool), 202, and
the dispatcher sends it: the answer never waits for Telegram. Sentry reads no more than the
status; the body says what became of the delivery, for whoever replays it by hand.

Each delivery counts once (sentry/deliveries.py keeps what was taken in for KEPT, a week): by its
`Request-ID`, and, since Sentry's retry of a delivery builds a new one, by what it is about: an
event alert by its event and rule, a metric alert by its incident and state, a new issue by its
id, an issue's change by the issue, the change and the body's digest (the same issue resolved
again later is another body). One stamped (`Sentry-Hook-Timestamp`) before that week, or
minutes ahead of the relay's clock, is a replay: answered 200 and not taken in. The stamp is
not signed, so it bounds a replay of the bytes as sent, not a forger who changes it; and a
change of an issue stamped before its card last changed (a press, or a later webhook) is older
than what the card shows, and leaves it.
"""

from __future__ import annotations

import hashlib
import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from ..cards.in_step import CardsInStep
from ..core.errors import SpoolError
from ..core.json_body import PayloadError, payload_from_json
from ..core.routing import Destination
from ..intake.pages import Answer, Header, PageReply, Refusal
from ..intake.receive import receive
from ..intake.record import LastWebhook
from ..intake.route import TakeIn
from ..intake.taken import Taken
from ..routes import RouteTable
from ..routes.split import facts_of
from .assignments import AssignmentStore
from .deliveries import KEPT, MAX_ID, DeliveryStore
from .hooks import Alerting, Assigned, InStep, Noted, read_hook
from .settings import SentryConfig
from .signature import SIGNATURE_HEADER, signature_of, signed

log = logging.getLogger(__name__)

# What its 401 means, counted in relay_requests_missed_total and said once a minute.
SIGNATURE_REFUSED = Refusal(
    "sentry_signature",
    "a Sentry webhook whose Sentry-Hook-Signature is missing or wrong was refused, and if Sentry"
    " sent it, its alert is lost. Set SENTRY_CLIENT_SECRET to the Client Secret of the internal"
    " integration whose webhook URL this is (Sentry → Settings → Custom Integrations; a secret"
    " rotated since?), then run relay-app check",
)

PATH = "/sentry/webhook"
RESOURCE_HEADER = "Sentry-Hook-Resource"
REQUEST_ID_HEADER = "Request-ID"
STAMP_HEADER = "Sentry-Hook-Timestamp"
# What a whole-second stamp covers: the latest moment of its second.
STAMP_SECOND = 0.999
# How far ahead of the relay's clock a stamp may be: Sentry's clock and the relay's differ a
# little.
STAMP_AHEAD = 300.0


def signed_headers(body: bytes, secret: str, resource: str) -> dict[str, str]:
    """The headers Sentry posts a webhook's body with, signed with the client secret, stamped
    now and named anew: what `relay-app sentry send` and `relay-app check` post as Sentry
    would."""
    return {
        "Content-Type": "application/json",
        SIGNATURE_HEADER: signature_of(body, secret),
        RESOURCE_HEADER: resource,
        STAMP_HEADER: str(int(time.time())),
        REQUEST_ID_HEADER: uuid.uuid4().hex,
    }


@dataclass(frozen=True)
class SentryIntake:
    """Where a Sentry alert goes: the relay's webhooks taken in by the routes (whose table says
    whether a new issue is asked for), TELEGRAM_CHAT_ID's place when no route takes it, and
    what notes when a source last reached the relay."""

    webhooks: TakeIn
    routes: RouteTable
    default: Destination
    last_webhook: LastWebhook


class SentryPage:
    def __init__(
        self,
        config: SentryConfig,
        intake: SentryIntake,
        deliveries: DeliveryStore,
        *,
        in_step: CardsInStep | None,
        assignments: AssignmentStore,
        clock: Callable[[], float] = time.time,
    ) -> None:
        """`in_step`: the cards of Sentry's issues, brought in step by its issue webhooks (None
        without SENTRY_API_TOKEN: Sentry's issues have no buttons then); `assignments`: whom
        its issues are assigned to, which their cards show."""
        self._config = config
        self._intake = intake
        self._deliveries = deliveries
        self._in_step = in_step
        self._assignments = assignments
        self._clock = clock

    @property
    def refusal(self) -> Refusal:
        return SIGNATURE_REFUSED

    @property
    def path(self) -> str:
        return PATH

    def answer(self, body: bytes, header: Header, started: float) -> Answer:
        if not signed(body, header(SIGNATURE_HEADER), self._config.client_secret):
            return PageReply({"error": f"missing or wrong {SIGNATURE_HEADER}"}, 401)
        try:
            payload = payload_from_json(body)
        except PayloadError as exc:
            log.warning("a signed Sentry webhook was refused: %s", exc)
            return PageReply({"error": str(exc)}, 400)
        resource = (header(RESOURCE_HEADER) or "")[:40]
        stamped = self._stamped(header(STAMP_HEADER), resource)
        if stamped is None:
            return PageReply({"status": "stale"})
        hook = read_hook(resource, payload, sentry_url=self._config.url)
        request_id = (header(REQUEST_ID_HEADER) or "").strip()[:MAX_ID] or None
        if isinstance(hook, Alerting):
            return self._alert(hook, request_id, started)
        return self._changed(hook, request_id, _digest(body), stamped)

    def _changed(
        self, hook: InStep | Assigned | Noted, request_id: str | None, digest: str, stamped: float
    ) -> PageReply:
        """An issue's change, once: the same change again is the same body (Sentry's retry
        sends the data it had; `digest`), and the issue's next change is another."""
        if isinstance(hook, Noted):
            log.info("Sentry webhook noted: %s", hook.said)
            return PageReply({"status": "noted"})
        keys = [key for key in (request_id, f"{hook.key}:{digest}") if key]
        if not self._claimed(keys):
            return self._repeated(keys)
        if isinstance(hook, Assigned):
            return self._assigned(hook)
        return self._in_step_with(hook, stamped)

    def _stamped(self, raw: str | None, resource: str) -> float | None:
        """When the delivery says it was sent (`Sentry-Hook-Timestamp`; now, without one), no
        later than now; None (said) for a replay: stamped before the week deliveries are kept,
        or ahead of the relay's clock."""
        now = self._clock()
        stamp = _stamp(raw)
        if stamp is None:
            return now
        if now - KEPT <= stamp <= now + STAMP_AHEAD:
            # Whole seconds: a change stamped S happened before S + 1. Taken as of the end of
            # its second, so that a press earlier in that second does not hide what Sentry
            # says (which of the two came last cannot be told; Sentry's state is the truth, and
            # the watcher's next round reads it again).
            return min(stamp + STAMP_SECOND, now)
        log.warning(
            "a signed Sentry delivery (%s) stamped %d was not taken in: more than %d days"
            " before the relay's clock (%d), or ahead of it; a replay",
            resource or "no resource",
            stamp,
            KEPT // 86400,
            now,
        )
        return None

    def _assigned(self, hook: Assigned) -> PageReply:
        changed = 0
        if self._in_step is not None and self._assign(hook):
            changed = self._in_step.shown_again(hook.issue_id, "show whom it is assigned to")
        log.info("Sentry webhook: %s; %d card(s) changed", hook.said, changed)
        return PageReply({"status": "in_step", "changed": changed})

    def _assign(self, hook: Assigned) -> bool:
        """Whether whom the issue is assigned to changed (kept for its cards to show)."""
        try:
            return self._assignments.assign(hook.issue_id, hook.assignee, now=self._clock())
        except SpoolError as exc:
            log.warning("whom %s is assigned to could not be kept: %s", hook.issue_id, exc)
            return False

    def _in_step_with(self, hook: InStep, stamped: float) -> PageReply:
        """The issue's new state on its cards, unless a card changed since the delivery was
        stamped (by a press, or a later change of Sentry's): that is newer."""
        changed = 0
        if self._in_step is not None:
            changed = self._in_step.follow(hook.states, asked_at=stamped, settle=0, newer_wins=True)
        log.info("Sentry webhook: %s; %d card button(s) changed", hook.said, changed)
        return PageReply({"status": "in_step", "changed": changed})

    def _alert(self, hook: Alerting, request_id: str | None, started: float) -> Answer:
        if hook.created and not self._asked_for(hook):
            log.info('Sentry webhook: a new issue, which no route asks for (kind = "created")')
            return PageReply({"status": "dropped", "reason": "not_asked"})
        keys = [key for key in (request_id, hook.key) if key is not None]
        if keys and not self._claimed(keys):
            return self._repeated(keys)
        parts = self._taken(hook, started)
        if keys and all(taken.alert is None for taken in parts):
            self._release(keys)  # nothing of it waits anywhere: its next try is taken
        return parts

    def _repeated(self, keys: list[str]) -> PageReply:
        log.info("Sentry's delivery %s was taken in before: answered, nothing done", keys[0])
        return PageReply({"status": "repeated"})

    def _taken(self, hook: Alerting, started: float) -> list[Taken]:
        """The alert taken in by the routes, each part queued and left to the dispatcher."""
        received = receive(
            hook.alert,
            self._intake.default,
            started,
            also={"details": hook.details} if hook.details else None,
            attempt=False,
        )
        parts = self._intake.webhooks.route(received)
        for taken in parts:
            self._intake.last_webhook.accepted(taken.outcome, taken.in_spool, taken.text)
        return parts

    def _asked_for(self, hook: Alerting) -> bool:
        """Whether a route takes the alert (a new issue goes only where one asks for it)."""
        return any(self._intake.routes.first(facts) for facts in facts_of(hook.alert))

    def _claimed(self, keys: list[str]) -> bool:
        """Whether the delivery is new; when the spool cannot say, it is taken as new: a copy
        in the chat is better than an alert lost."""
        try:
            return self._deliveries.claim(keys, now=self._clock())
        except SpoolError as exc:
            log.warning("whether Sentry's delivery %s was seen could not be read: %s", keys[0], exc)
            return True

    def _release(self, keys: list[str]) -> None:
        try:
            self._deliveries.release(keys, now=self._clock())
        except SpoolError as exc:
            log.warning("Sentry's delivery %s could not be given back: %s", keys[0], exc)


def _stamp(raw: str | None) -> int | None:
    """`Sentry-Hook-Timestamp`: whole seconds of Unix time; None when absent or unreadable."""
    text = (raw or "").strip()
    return int(text) if text.isascii() and text.isdigit() and len(text) <= 12 else None


def _digest(body: bytes) -> str:
    return hashlib.sha256(body).hexdigest()[:32]
