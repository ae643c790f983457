"""What the wiring builds apart from `relay_app.assemble`: the sources' APIs from their tokens
(which the capabilities ask for as services) and the zone each chat reads times in."""

from __future__ import annotations

from functools import partial
from zoneinfo import ZoneInfo

from .chat.links import LinkSource
from .glitchtip.api import GlitchTipApi
from .operating.config import Settings
from .routes.zones import Zones
from .sentry.api import SentryApi
from .sentry.hooks import customer_domain_issue


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
    if sentry is not None and homes.sentry is not None and settings.sentry is not None:
        url = settings.sentry.url
        written_as = partial(customer_domain_issue, sentry_url=url)
        sources.append(LinkSource(homes.sentry, sentry, "sentry", written_as))
    return sources
