"""A webhook taken in by the routes (RELAY_ROUTES, routes/): each part, one destination's
issues, taken in as a webhook of its own; what the routes dropped counted and logged at INFO.
Without a routes file, the webhook is taken in whole, where its URL says.

A route that matches on `level` needs the issue's own level, which only GlitchTip's API tells
(the webhook's colour is the same for error and fatal): such a table waits for the issues'
details within their budget (RELAY_DETAILS_BUDGET, inside the webhook's deadline) before it
routes; the details are then known when the alert is queued, so the wait is paid once."""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import Any, Protocol

from ..core.logs import event
from ..core.metrics import Metrics
from ..core.routing import Destination
from ..core.services import Key
from ..delivery.intake import deadline
from ..glitchtip.lookups import scoped
from ..glitchtip.source import GLITCHTIP
from ..glitchtip.webhook import Alert, IssueAlert, parse_alert
from ..message.subjects import issue_ref
from ..routes import RouteTable, split
from .alerts import NOT_GLITCHTIPS, GlitchTipIssues, Taken, WebhookAlerts

log = logging.getLogger(__name__)


class RoutedWebhooks:
    def __init__(
        self,
        alerts: WebhookAlerts,
        routes: RouteTable,
        *,
        default: Destination,
        metrics: Metrics,
        glitchtip: GlitchTipIssues = NOT_GLITCHTIPS,
    ) -> None:
        """`glitchtip`: its issues' details, for the levels a route reads (without them, the
        routes read the colour alone)."""
        self._alerts = alerts
        self._routes = routes
        self._default = default
        self._metrics = metrics
        self._lookups = glitchtip.lookups
        self._glitchtip_links = glitchtip.origin

    def take(
        self,
        payload: dict[str, Any],
        asked: Destination,
        started: float,
        *,
        also: Mapping[str, Any] | None = None,
        attempt: bool = True,
    ) -> list[Taken]:
        """What became of each part (at least one). `asked`: where the webhook's URL says;
        `started`: when it arrived (monotonic), which bounds every part's attempt together;
        `also`: more for each part's job (an escalating issue's trend, a Sentry issue's
        details); `attempt` False: no part's answer waits for its send."""
        # Read once: every stage after this one reads the alert, not the payload again.
        alert = parse_alert(payload)
        if not self._routes:
            return [
                self._alerts.take(payload, asked, started, also=also, attempt=attempt, alert=alert)
            ]
        levels = self._levels(alert, started)
        routed = split(payload, self._routes, asked, self._default, levels, alert=alert)
        for dropped in routed.dropped:
            self._metrics.route(dropped.route.name, dropped.count, dropped=True)
            log.info(
                "route %r dropped %d of a webhook's issues: %s",
                dropped.route.name,
                dropped.count,
                "; ".join(dropped.titles)[:500],
                extra=event(event="route", route=dropped.route.name, outcome="dropped"),
            )
        taken = []
        for part in routed.parts:
            name = part.route.name if part.route is not None else None
            self._metrics.route(name, part.count)
            taken.append(
                self._alerts.take(
                    part.payload,
                    part.destination,
                    started,
                    route=part.route,
                    also=also,
                    attempt=attempt,
                    alert=part.alert,
                )
            )
        return taken or [Taken("dropped", "route", 200)]

    def _levels(self, alert: Alert, started: float) -> dict[str, str]:
        """The levels of the webhook's issues that GlitchTip's API tells within the details'
        budget, by each issue's link; none unless a route reads them."""
        if not self._routes.reads_levels or self._lookups is None:
            return {}
        ids = _issue_ids(alert, self._glitchtip_links)
        if not ids:
            return {}
        until = min(started + self._lookups.budget, deadline(started))
        try:
            known = self._lookups.within(list(ids.values()), max(0.0, until - time.monotonic()))
        except Exception:  # a bug here must not cost the alert: it is routed by its colour
            log.exception("the levels of a webhook's issues could not be looked up")
            return {}
        return {
            link: level
            for link, issue_id in ids.items()
            if issue_id in known and (level := known[issue_id].level)
        }


def _issue_ids(alert: Alert, glitchtip_links: str | None) -> dict[str, str]:
    """The look-up keys of the webhook's issues at GlitchTip's address, by each issue's link:
    each as the organization its link names (glitchtip/lookups.py's `scoped`)."""
    if not isinstance(alert, IssueAlert):
        return {}
    ids: dict[str, str] = {}
    glitchtips = GLITCHTIP if alert.source == GLITCHTIP.name else None
    for issue in alert.issues:
        ref = issue_ref(issue.link, issue.short_id, source=glitchtips)
        if (
            issue.link
            and ref is not None
            and ref.origin == glitchtip_links
            and ref.id.isdigit()
            and ref.org is not None
        ):
            ids[issue.link] = scoped(ref.org, ref.id)
    return ids


class TakeIn(Protocol):
    """What takes an alert in as a webhook of its own (an escalating issue posted again): the
    routes, silences and mentions apply as to any."""

    def take(
        self,
        payload: dict[str, Any],
        asked: Destination,
        started: float,
        *,
        also: Mapping[str, Any] | None = None,
        attempt: bool = True,
    ) -> list[Taken]: ...


TAKE_IN: Key[TakeIn] = Key("take in")
