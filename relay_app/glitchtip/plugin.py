"""GlitchTip, as a capability: the relay's first source (its webhook at /webhook/<secret>, its
issues' ids kept bare), and with GLITCHTIP_API_TOKEN its issues' buttons, their details looked
up for alerts' messages (its API's failing known to every process on the spool), the issues an
alert counted and did not attach named, its cards kept in step by the watcher's rounds;
`relay-app check`'s question of its token, its line of `/status` and of the start-up line, and
`relay-app glitchtip connect`."""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from functools import partial
from typing import Any

from ..cards.in_step import FOLLOWS_ROUNDS
from ..cards.sent import SentStore
from ..core.alerts import Alert
from ..core.issue_details import IssueDetails
from ..core.lookups import CALL_TIMEOUT, DetailSource, unscoped
from ..core.routing import Destination
from ..intake.receive import receive
from ..intake.record import AFTER_WEBHOOK
from ..intake.route import TAKE_IN
from ..message.subjects import Home
from ..operating.capability import Capability, Core, Running, SourceOf
from ..operating.config import Settings
from ..spool import Spool
from .api import GLITCHTIP_SETUP, GlitchTipApi
from .check import glitchtip_verdicts
from .connect import add_glitchtip_commands
from .counters import HIDDEN, LOOKUPS
from .health import SpoolGlitchTipHealth
from .hidden import NAMED_HIDDEN, HiddenIssues
from .settings import GLITCHTIP_SETTINGS
from .source import GLITCHTIP
from .status import glitchtip_state, glitchtip_status

log = logging.getLogger(__name__)


def glitchtip_api(settings: Settings, timeout: float) -> GlitchTipApi | None:
    """GlitchTip's API with GLITCHTIP_API_TOKEN, at GLITCHTIP_URL alone."""
    config = settings.of(GLITCHTIP_SETTINGS)
    if config is None or not config.api_token or not config.url:
        return None
    return GlitchTipApi(config.api_token, config.url, timeout=timeout)


def glitchtip_home(settings: Settings) -> Home | None:
    """Where GlitchTip's issues get buttons, with GLITCHTIP_API_TOKEN: its links' origin
    (GLITCHTIP_PUBLIC_URL, or GLITCHTIP_URL), within GLITCHTIP_ORGANIZATIONS."""
    config = settings.of(GLITCHTIP_SETTINGS)
    if config is None or config.api_token is None or config.links is None:
        return None
    return Home(config.links, config.organizations)


def _start(core: Core) -> Running:
    """Its line of /status; with its token, its issues' details; with a spool too, the cards
    the watcher's rounds keep in step and the naming of the issues an alert left out."""
    config = core.settings.of(GLITCHTIP_SETTINGS)
    health = core.shared.of(SpoolGlitchTipHealth)
    api = glitchtip_api(core.settings, CALL_TIMEOUT)
    status = glitchtip_status(health, connected=api is not None)
    if config is None or api is None:
        return Running(service_status=(status,))
    counted = core.metrics.of(LOOKUPS)
    details = DetailSource(
        GLITCHTIP.holds,
        partial(_as_its_organizations, api),
        GLITCHTIP_SETUP,
        lambda outcome: counted.labels(outcome).inc(),
        health=health,
    )
    spool, origin = core.spool, config.links
    if spool is None or origin is None:
        return Running(service_status=(status,), details=(details,))
    in_step = core.cards_in_step(spool, origin=origin, source=GLITCHTIP.shown)
    core.services.provide(FOLLOWS_ROUNDS, in_step)
    hidden = _hidden_issues(core, api, spool, origin)
    core.services.provide(AFTER_WEBHOOK, hidden)
    return Running(service_status=(status,), details=(details,), stop=hidden.shutdown)


def _as_its_organizations(api: GlitchTipApi, key: str) -> IssueDetails:
    """A GlitchTip issue's details, read as the organization its look-up key names (`acme/12`)."""
    org, issue_id = unscoped(key)
    return api.details(issue_id, org=org)


def _hidden_issues(core: Core, api: GlitchTipApi, spool: Spool, origin: str) -> HiddenIssues:
    """The issues an alert counts and does not attach, named through GlitchTip's API and taken
    in as a webhook of their own (hidden.py)."""
    counted = core.metrics.of(HIDDEN)

    def take(alert: Alert, destination: Destination, also: Mapping[str, Any]) -> None:
        take_in = core.services.find(TAKE_IN)  # provided once the routes take webhooks in
        if take_in is None:
            log.error("issues an alert left out were named, but nothing takes alerts in")
            return
        take_in.route(receive(alert, destination, time.monotonic(), also=also))

    return HiddenIssues(
        api,
        take,
        origin=origin,
        told=spool.of(SentStore).shows,
        counted=lambda outcome, count: counted.labels(outcome).inc(count),
        clock=core.clock,
    )


def _configured(settings: Settings) -> bool:
    config = settings.of(GLITCHTIP_SETTINGS)
    return config is not None and config.url is not None


CAPABILITY = Capability(
    "glitchtip",
    settings=GLITCHTIP_SETTINGS,
    counters=(LOOKUPS, HIDDEN),
    notes=(NAMED_HIDDEN,),
    checks=(glitchtip_verdicts,),
    says=(glitchtip_state,),
    cli=(add_glitchtip_commands,),
    tables=("glitchtip_api",),
    source=SourceOf(
        GLITCHTIP,
        glitchtip_home,
        glitchtip_api,
        token_name="GLITCHTIP_API_TOKEN",  # noqa: S106 (a variable's name)
        configured=_configured,
    ),
    words={
        "en": {
            "status_glitchtip": "GlitchTip: {state}",
            "status_glitchtip_up": "answers",
            "status_glitchtip_failing": "failing; asked again after a pause",
            "status_glitchtip_off": "not connected (no GLITCHTIP_API_TOKEN)",
        },
        "ru": {
            "status_glitchtip": "GlitchTip: {state}",
            "status_glitchtip_up": "отвечает",
            "status_glitchtip_failing": "не отвечает; бот спросит снова после паузы",
            "status_glitchtip_off": "не подключён (нет GLITCHTIP_API_TOKEN)",
        },
    },
    start=_start,
)
