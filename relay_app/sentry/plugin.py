"""Sentry, as a capability: its webhook's page (with SENTRY_CLIENT_SECRET), its issues' cards
kept in step by its issue webhooks and their details looked up in its API (with
SENTRY_API_TOKEN), `relay-app check`'s questions of its settings, its state in the start-up
line, and the deliveries it counted once."""

from __future__ import annotations

import logging
from functools import partial

from ..core.issue_details import IssueDetails
from ..core.lookups import CALL_TIMEOUT, DetailSource
from ..intake.route import TAKE_IN
from ..message.subjects import Home
from ..operating.capability import Capability, Core, Running, SourceOf
from ..operating.config import Settings
from .api import SentryApi
from .assignments import AssignmentStore, assigned
from .check import sentry_verdicts
from .cli import add_sentry_commands
from .counters import LOOKUPS
from .deliveries import DeliveryStore
from .hooks import customer_domain_issue
from .reading import read_sentry
from .settings import SENTRY_SETTINGS, SentryConfig, sentry_links
from .source import SENTRY
from .status import sentry_state, sentry_status
from .webhook import SentryIntake, SentryPage

log = logging.getLogger(__name__)


def _start(core: Core) -> Running:
    """Its page, made once the relay is assembled (its alerts go in through the routes), and
    with its token what the relay reads of its issues."""
    settings = core.settings
    config = settings.of(SENTRY_SETTINGS)
    if config is None:
        return Running()
    details = (_details(config, core),) if config.api_token is not None else ()

    def page() -> SentryPage | None:
        take_in = core.services.find(TAKE_IN)
        if take_in is None:
            log.error("Sentry's webhook is not served: nothing takes alerts in")
            return None
        origin, spool = sentry_links(config), core.spool
        in_step = None
        if config.api_token and spool is not None and origin:
            in_step = core.cards_in_step(spool, origin=origin, source=SENTRY.shown)
        intake = SentryIntake(
            take_in, settings.routes, settings.default_destination, core.last_webhook
        )
        deliveries = core.shared.of(DeliveryStore)
        return SentryPage(
            config,
            intake,
            deliveries,
            in_step=in_step,
            assignments=core.shared.of(AssignmentStore),
            clock=core.clock,
        )

    status = sentry_status(
        core.shared.of(DeliveryStore),
        buttons=config.api_token is not None,
        zone_of=core.zone_of,
        clock=core.clock,
    )
    return Running(pages=(page,), status=(status,), details=details)


def _details(config: SentryConfig, core: Core) -> DetailSource:
    """Its issues' details, read in its API (`details`: the issue, and its latest event) by
    Sentry's own id, each call within the look-ups' deadline."""
    assert config.api_token is not None
    api = SentryApi(config.api_token, config.url, timeout=CALL_TIMEOUT)
    counted = core.metrics.of(LOOKUPS)

    def read(issue_id: str) -> IssueDetails:
        return api.details(SENTRY.own_id(issue_id))

    return DetailSource(
        SENTRY.holds, read, SentryApi.SETUP, lambda outcome: counted.labels(outcome).inc()
    )


def sentry_home(settings: Settings) -> Home | None:
    """Where Sentry's issues get buttons, with SENTRY_API_TOKEN: SENTRY_URL's origin; a link
    at one of sentry.io's customer domains is read as the same issue's there."""
    config = settings.of(SENTRY_SETTINGS)
    links = sentry_links(config)
    if config is None or config.api_token is None or links is None:
        return None
    return Home(links, written_as=partial(customer_domain_issue, sentry_url=config.url))


def sentry_api(settings: Settings, timeout: float) -> SentryApi | None:
    """Sentry's API with SENTRY_API_TOKEN, at SENTRY_URL (or the region it names)."""
    config = settings.of(SENTRY_SETTINGS)
    if config is None or config.api_token is None:
        return None
    return SentryApi(config.api_token, config.url, timeout=timeout)


CAPABILITY = Capability(
    "sentry",
    on=lambda settings: settings.of(SENTRY_SETTINGS) is not None,
    settings=SENTRY_SETTINGS,
    counters=(LOOKUPS,),
    checks=(sentry_verdicts,),
    readers=(read_sentry,),
    says=(sentry_state,),
    cli=(add_sentry_commands,),
    tables=("sentry_deliveries", "sentry_assignments"),
    marks=(assigned,),
    source=SourceOf(SENTRY, sentry_home, sentry_api, token_name="SENTRY_API_TOKEN"),  # noqa: S106
    words={
        "en": {
            "status_sentry": "Sentry: {state}; {last}",
            "assigned_in_sentry": "👤 Assigned to {user} in Sentry at {time}",
            "issue_assigned_in_sentry": "👤 {label} assigned to {user} in Sentry at {time}",
            "status_sentry_buttons": "signed alerts, buttons and details",
            "status_sentry_alerts_only": "signed alerts only (no SENTRY_API_TOKEN: no buttons)",
            "status_sentry_last": "last delivery {when}",
            "status_sentry_none": "no delivery in the last 7 days",
        },
        "ru": {
            "status_sentry": "Sentry: {state}; {last}",
            "assigned_in_sentry": "👤 Назначена в Sentry: {user} ({time})",
            "issue_assigned_in_sentry": "👤 {label}: назначена в Sentry: {user} ({time})",
            "status_sentry_buttons": "подписанные алерты, кнопки и подробности",
            "status_sentry_alerts_only": (
                "только подписанные алерты (нет SENTRY_API_TOKEN: нет кнопок)"
            ),
            "status_sentry_last": "последняя доставка {when}",
            "status_sentry_none": "доставок не было 7 дней",
        },
    },
    start=_start,
)
