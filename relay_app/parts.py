"""The parts the wiring still builds for capabilities that do not start themselves yet, as
`relay_app.assemble` builds them from the settings: the watcher with what it keeps in step
(cards, snoozes) and posts again, the sources' APIs, and Sentry's page. Apart from `assemble`
so that the wiring stays one page."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from zoneinfo import ZoneInfo

from .cards.sent import SentStore
from .cards.verbs import CALLS, Calls
from .chat.links import LinkSource
from .core.metrics import Metrics
from .core.routing import Destination, parse_chat_id
from .delivery.outbox import Outbox
from .glitchtip.api import GlitchTipApi
from .glitchtip.lookups import CALL_TIMEOUT
from .glitchtip.webhook import source_of
from .intake.routed import RoutedWebhooks
from .message.trend import Trend
from .operating.config import Settings
from .routes.zones import Zones
from .sentry.api import SentryApi
from .sentry.deliveries import DeliveryStore
from .sentry.trackers import Trackers
from .sentry.webhook import SentryIntake, SentryPage
from .snoozes.snoozing import BringBack, Snoozing
from .snoozes.store import SnoozeStore
from .spool import Spool
from .watch.in_step import CardsInStep
from .watch.store import Watched, WatchStore
from .watch.watcher import AfterRound, Watcher, WatchPlan
from .web.relay import Relay
from .words import Words

log = logging.getLogger(__name__)

Clock = Callable[[], float]


@dataclass(frozen=True)
class Basis:
    """What every part here is made from: the settings, the spool (None: RELAY_SPOOL_PATH=off),
    the counters, the clock, the outbox every write to a chat is queued in, and the words."""

    settings: Settings
    spool: Spool | None
    metrics: Metrics
    clock: Clock
    outbox: Outbox
    words: Words  # the catalogue in the relay's language, the capabilities' words with it


def following_glitchtip(
    basis: Basis, calls: Calls | None
) -> tuple[CardsInStep | None, Snoozing | None]:
    """With GLITCHTIP_API_TOKEN and a spool: what the watcher's rounds keep in step with
    GlitchTip, the cards (in_step.py) and the snoozes (snoozing.py)."""
    settings, spool, outbox, metrics, clock = _unpacked(basis)
    token, url, links = (
        settings.glitchtip_api_token,
        settings.glitchtip_url,
        settings.glitchtip_links,
    )
    if token is None or url is None or links is None or spool is None:
        return None, None
    in_step = CardsInStep(
        spool.of(SentStore),
        outbox,
        origin=links,
        escalation=calls,
        metrics=metrics,
        clock=clock,
    )
    snoozing = Snoozing(
        spool.of(SnoozeStore),
        spool.of(WatchStore),
        BringBack(
            GlitchTipApi(token, url, timeout=settings.send_timeout),
            outbox,
            reopened=lambda issue: in_step.follow(
                {issue: "unresolved"}, asked_at=clock(), settle=0
            ),
            zone_of=zones_for(settings).of,
        ),
        events=settings.watching.snooze_events,
        metrics=metrics,
        clock=clock,
    )
    return in_step, snoozing


def watcher_for(
    basis: Basis,
    post: Callable[[Watched, Trend], None],
    in_step: CardsInStep | None,
    snoozing: Snoozing | None,
) -> Watcher | None:
    """With a source's token (GlitchTip's, Sentry's) and a spool: the watcher of the issues
    the relay alerted on."""
    settings, spool, _, metrics, clock = _unpacked(basis)
    if not settings.acts_on_issues or spool is None:
        return None
    return Watcher(
        spool.of(WatchStore),
        Trackers(*issue_apis(settings, timeout=CALL_TIMEOUT)),
        WatchPlan(
            settings.watching.every,
            settings.watching.min_events,
            settings.issue_homes,
            look_every=settings.timing.poll_interval,
        ),
        AfterRound(
            post,
            follow=(lambda states, at: in_step.follow(states, asked_at=at)) if in_step else None,
            snoozing=snoozing,
        ),
        metrics=metrics,
        clock=clock,
    )


def post_escalating(webhooks: RoutedWebhooks, issue: Watched, found: Trend) -> None:
    """An escalating issue as a webhook of its own: routes, silences and mentions apply."""
    # GlitchTip's heading; another source's alert has its own ("Sentry Alert").
    heading = "GlitchTip Alert" if source_of(issue.alert) == "glitchtip" else ""
    payload = {"alias": "GlitchTip", "text": heading, **issue.alert}
    where = Destination(parse_chat_id(issue.chat) or issue.chat, issue.thread)
    escalating = {"count": found.last_hour, "spark": found.sparkline}
    # Posted again: never said to be new, and its calls are its first message's (oncall/steps.py).
    also = {"escalating": escalating, "again": True}
    webhooks.take(payload, where, time.monotonic(), also=also)


def zones_for(settings: Settings) -> Zones:
    """The zone each chat reads times in: its routes' `timezone`, else RELAY_TIMEZONE."""
    return Zones(
        settings.routes,
        default_destination=settings.default_destination,
        default=ZoneInfo(settings.timezone),
    )


def issue_apis(
    settings: Settings, *, timeout: float
) -> tuple[GlitchTipApi | None, SentryApi | None]:
    """The sources' APIs that have a token: GlitchTip's (GLITCHTIP_API_TOKEN, to GLITCHTIP_URL)
    and Sentry's (SENTRY_API_TOKEN, to SENTRY_URL or its region)."""
    token, url, sentry = settings.glitchtip_api_token, settings.glitchtip_url, settings.sentry
    glitchtip = GlitchTipApi(token, url, timeout=timeout) if token and url else None
    if sentry is None or sentry.api_token is None:
        return glitchtip, None
    return glitchtip, SentryApi(sentry.api_token, sentry.url, timeout=timeout)


def link_sources(
    settings: Settings, glitchtip: GlitchTipApi | None, sentry: SentryApi | None
) -> list[LinkSource]:
    """The sources with a token whose issue links get cards, each at its address."""
    homes = settings.issue_homes
    sources = []
    if glitchtip is not None and homes.glitchtip is not None:
        sources.append(LinkSource(homes.glitchtip, glitchtip))
    if sentry is not None and homes.sentry is not None:
        sources.append(LinkSource(homes.sentry, sentry, "sentry"))
    return sources


def _unpacked(basis: Basis) -> tuple[Settings, Spool | None, Outbox, Metrics, Clock]:
    return basis.settings, basis.spool, basis.outbox, basis.metrics, basis.clock


def sentry_page(relay: Relay, clock: Clock) -> SentryPage | None:
    """With SENTRY_CLIENT_SECRET: Sentry's webhook (sentry/webhook.py), and, with its token
    and a spool, the cards of its issues kept in step by its issue webhooks."""
    settings = relay.settings
    config, origin = settings.sentry, settings.sentry_links
    if config is None:
        return None
    in_step = None
    if config.api_token and relay.spool is not None and relay.outbox is not None and origin:
        in_step = CardsInStep(
            relay.spool.of(SentStore),
            relay.outbox,
            origin=origin,
            escalation=relay.services.find(CALLS),
            metrics=relay.metrics,
            clock=clock,
            source="Sentry",
        )
    intake = SentryIntake(
        relay.webhooks, settings.routes, settings.default_destination, relay.last_webhook
    )
    deliveries = (relay.spool or relay.memory).of(DeliveryStore)
    return SentryPage(config, intake, deliveries, in_step=in_step, clock=clock)
