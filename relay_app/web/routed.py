"""A webhook taken in by the routes (RELAY_ROUTES, routes/): each part, one destination's
issues, taken in as a webhook of its own; what the routes dropped counted and logged at INFO.
Without a routes file, the webhook is taken in whole, where its URL says."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from ..core.logs import event
from ..core.metrics import Metrics
from ..core.routing import Destination
from ..routes import RouteTable, split
from .webhook_alerts import Taken, WebhookAlerts

log = logging.getLogger(__name__)


class RoutedWebhooks:
    def __init__(
        self, alerts: WebhookAlerts, routes: RouteTable, *, default: Destination, metrics: Metrics
    ) -> None:
        self._alerts = alerts
        self._routes = routes
        self._default = default
        self._metrics = metrics

    def take(
        self,
        payload: dict[str, Any],
        asked: Destination,
        started: float,
        *,
        also: Mapping[str, Any] | None = None,
    ) -> list[Taken]:
        """What became of each part (at least one). `asked`: where the webhook's URL says;
        `started`: when it arrived (monotonic), which bounds every part's attempt together;
        `also`: more for each part's job (an escalating issue's trend)."""
        if not self._routes:
            return [self._alerts.take(payload, asked, started, also=also)]
        routed = split(payload, self._routes, asked, self._default)
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
                    mentions=part.mention,
                    sound=part.sound,
                    escalate=part.escalate,
                    also=also,
                )
            )
        return taken or [Taken("dropped", "route", 200)]
