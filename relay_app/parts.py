"""What the wiring still builds apart from `relay_app.assemble`: the sources' APIs from their
tokens (which the capabilities ask for as services), the zone each chat reads times in, and
Sentry's page, which its capability does not make itself yet."""

from __future__ import annotations

import logging
from collections.abc import Callable
from zoneinfo import ZoneInfo

from .cards.sent import SentStore
from .cards.verbs import CALLS
from .chat.links import LinkSource
from .glitchtip.api import GlitchTipApi
from .operating.config import Settings
from .routes.zones import Zones
from .sentry.api import SentryApi
from .sentry.deliveries import DeliveryStore
from .sentry.webhook import SentryIntake, SentryPage
from .watch.in_step import CardsInStep
from .web.relay import Relay

log = logging.getLogger(__name__)

Clock = Callable[[], float]


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
