"""The stage after the webhook is received: the routes (RELAY_ROUTES, routes/) split it, and
each part, one destination's issues, walks on down the stages as a webhook of its own
(alerts.py); what the routes dropped is counted and logged at INFO. Without a routes file, the
webhook goes on whole, where its URL says.

A route that matches on `level` needs the issue's own level, which GlitchTip's webhook does
not say (its colour is the same for error and fatal) and its API tells: such a table waits for
the details of the issues whose level their alert does not say, within their budget
(RELAY_DETAILS_BUDGET, inside the webhook's deadline), before it routes; the details are then
known when the alert is queued, so the wait is paid once."""

from __future__ import annotations

import logging
import time
from dataclasses import replace
from typing import Protocol

from ..core.alerts import Alert, IssueAlert
from ..core.logs import event
from ..core.lookups import scoped
from ..core.metrics import Metrics
from ..core.routing import Destination
from ..core.services import Key
from ..message.subjects import IssueHomes, issue_ref
from ..routes import RouteTable, split
from .alerts import NO_SOURCE_ISSUES, SourceIssues, WebhookAlerts
from .receive import Received
from .taken import Taken

log = logging.getLogger(__name__)


class RoutedWebhooks:
    def __init__(
        self,
        alerts: WebhookAlerts,
        routes: RouteTable,
        *,
        default: Destination,
        metrics: Metrics,
        issues: SourceIssues = NO_SOURCE_ISSUES,
    ) -> None:
        """`issues`: their details, for the levels a route reads (without them, the
        routes read the colour alone)."""
        self._alerts = alerts
        self._routes = routes
        self._default = default
        self._metrics = metrics
        self._lookups = issues.lookups
        self._homes = issues.homes

    def route(self, received: Received) -> list[Taken]:
        """What became of each part (at least one). `received.started` bounds every part's
        attempt together; `received.also`: more for each part's job; `received.attempt`
        False: no part's answer waits for its send."""
        if not self._routes:
            return [self._alerts.take(received, received.asked)]
        levels = self._levels(received)
        routed = split(received.alert, self._routes, received.asked, self._default, levels)
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
            walked = replace(received, alert=part.alert)
            taken.append(self._alerts.take(walked, part.destination, route=part.route))
        return taken or [Taken("dropped", "route", 200)]

    def _levels(self, received: Received) -> dict[str, str]:
        """The levels of the webhook's issues that GlitchTip's API tells within the details'
        budget, by each issue's link; none unless a route reads them."""
        if not self._routes.reads_levels or self._lookups is None:
            return {}
        ids = _issue_ids(received.alert, self._homes)
        if not ids:
            return {}
        until = min(received.started + self._lookups.budget, received.deadline)
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


def _issue_ids(alert: Alert, homes: IssueHomes) -> dict[str, str]:
    """The look-up keys of the alert's issues whose own level it does not say (GlitchTip's
    webhook gives only a colour; Sentry's says it), of a source with a token, at its own
    address (`homes`), by each issue's link: each as the organization its link names, where it
    names one (core/lookups.py's `scoped`)."""
    if not isinstance(alert, IssueAlert) or (source := homes.source(alert.source)) is None:
        return {}
    ids: dict[str, str] = {}
    for issue in alert.issues:
        ref = issue_ref(issue.link, issue.short_id, source=source) if issue.link else None
        if issue.link and not issue.level and ref is not None and homes.owns(ref):
            ids[issue.link] = scoped(ref.org, ref.id) if ref.org else ref.id
    return ids


class TakeIn(Protocol):
    """What takes an alert in as a webhook of its own (an escalating issue posted again, a
    hidden issue named, Sentry's page), once it is received (receive.py): the routes, holds and
    mentions apply as to any."""

    def route(self, received: Received) -> list[Taken]: ...


TAKE_IN: Key[TakeIn] = Key("take in")
